/**
 * The one table from permission names to what they allow: (resource type, action) pairs. Real
 * authorisation (`hasPermission` in core/auth.ts, behind every route's `perm`) and the permission
 * audit (`/api/v1/permissions/check`) both read it, so audit and enforcement cannot disagree.
 *
 * A principal holds a permission when the grants of the permissions it carries, together, cover
 * every grant of the permission asked for: `WorkspaceAdmin` covers everything (`*`), `ManageKeys`
 * covers `ViewKeys` (keys:read is part of keys:*). Names outside the table grant nothing.
 */

export const ACTIONS = ["read", "write", "delete"] as const;
export type Action = (typeof ACTIONS)[number];

/** Resource types the audit accepts (`resource_type`). */
export const RESOURCE_TYPES = [
  "metrics",
  "rate_limits",
  "logs",
  "configs",
  "keys",
  "roles",
  "users",
  "teams",
  "invitations",
  "permissions",
  "sso",
  "scim",
] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export interface Grant {
  /** a resource type, or `*` for every type */
  resource: ResourceType | "*";
  /** actions on it, or `*` for every action */
  actions: readonly Action[] | "*";
}

const ALL: readonly Action[] | "*" = "*";

/** What each permission allows. Keep it the only place this is said. */
export const PERMISSION_GRANTS = {
  ViewMetrics: [
    { resource: "metrics", actions: ["read"] },
    { resource: "rate_limits", actions: ["read"] },
  ],
  ManageConfig: [
    { resource: "configs", actions: ALL },
    { resource: "rate_limits", actions: ALL },
  ],
  ManageKeys: [
    { resource: "keys", actions: ALL },
    { resource: "roles", actions: ALL },
  ],
  ViewKeys: [{ resource: "keys", actions: ["read"] }],
  ViewLogs: [{ resource: "logs", actions: ["read"] }],
  WorkspaceAdmin: [{ resource: "*", actions: ALL }],
} as const satisfies Record<string, readonly Grant[]>;

export type PermissionName = keyof typeof PERMISSION_GRANTS;
export const PERMISSION_NAMES = Object.keys(PERMISSION_GRANTS) as PermissionName[];

/** own entries only: a held name like `__proto__` or `constructor` must not reach Object.prototype */
const grantsOf = (name: string): readonly Grant[] | undefined =>
  Object.hasOwn(PERMISSION_GRANTS, name) ? (PERMISSION_GRANTS as Record<string, readonly Grant[]>)[name] : undefined;

const covers = (g: Grant, resource: string, action: Action) =>
  (g.resource === "*" || g.resource === resource) && (g.actions === "*" || g.actions.includes(action));

/** Whether one permission allows `action` on `resource`. */
export function permits(permission: string, resource: string, action: Action): boolean {
  return grantsOf(permission)?.some((g) => covers(g, resource, action)) ?? false;
}

/** Whether any of the held permissions allows `action` on `resource`. */
export function allows(held: Iterable<string>, resource: string, action: Action): boolean {
  for (const p of held) if (permits(p, resource, action)) return true;
  return false;
}

/** Every (resource, action) pair a grant covers, spelled out over the known types and actions. */
export function expand(g: Grant): Array<{ resource: ResourceType; action: Action }> {
  const resources = g.resource === "*" ? RESOURCE_TYPES : [g.resource];
  const actions = g.actions === "*" ? ACTIONS : g.actions;
  return resources.flatMap((resource) => actions.map((action) => ({ resource, action })));
}

/** The (resource, action) pairs a permission allows, spelled out. */
export function pairsOf(permission: string): Array<{ resource: ResourceType; action: Action }> {
  return (grantsOf(permission) ?? []).flatMap(expand);
}

/** Memo: the held set's answer per asked permission (sets are reused: verified principals are memoised). */
const memo = new WeakMap<ReadonlySet<string>, Map<string, boolean>>();

/** Whether the held permissions, together, cover every grant of `permission`. */
export function implies(held: ReadonlySet<string>, permission: string): boolean {
  if (held.has(permission) || held.has("WorkspaceAdmin")) return true;
  let answers = memo.get(held);
  const known = answers?.get(permission);
  if (known !== undefined) return known;
  const need = pairsOf(permission);
  const answer = need.length > 0 && need.every(({ resource, action }) => allows(held, resource, action));
  if (!answers) memo.set(held, (answers = new Map()));
  answers.set(permission, answer);
  return answer;
}
