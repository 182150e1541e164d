/**
 * Roles and assignments (doc3 §4.5). Built-in roles (builtin.ts) are listed first and cannot be
 * changed; custom roles are per workspace, names unique case-insensitively (built-in names
 * included). An assignment is (user, role, scope) with an optional expiry: from the moment it
 * expires it grants nothing — every reader compares with the clock, no job has to run.
 */
import { badRequest, conflict, forbidden, notFound } from "../../core/errors";
import { uuid } from "../../core/ids";
import type { Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import { implies, PERMISSION_NAMES, RESOURCE_TYPES } from "../../core/permissions";
import { fold, iso, uniqueOr409, type Assignment, type Role, type WallClock } from "../types";
import type { UserService } from "../users/service";
import { BUILTIN_ROLES, builtinById, builtinByName } from "./builtin";
import type { AssignmentRow, RoleStore } from "./store";

export const ROLE_LIMITS = { name: 128, description: 1_000, scope: 256 } as const;
export const WORKSPACE_SCOPE = "workspace";
/** `workspace`, or `<resource_type>:<resource id>` */
const SCOPE_RE = new RegExp(`^(${WORKSPACE_SCOPE}|(${RESOURCE_TYPES.join("|")}):[A-Za-z0-9._:@/-]{1,200})$`);

export interface RoleInput {
  name: string;
  description?: string;
  permissions?: string[];
}

export interface AssignInput {
  roleId: string;
  scope?: string | null;
  expiresAt?: string | null;
}

/** An assignment as the check and the audit see it: its role resolved. */
export interface Held {
  row: AssignmentRow;
  role: Role;
  expired: boolean;
}

function checkPermissions(perms: string[]) {
  for (const p of perms) if (!(PERMISSION_NAMES as string[]).includes(p)) throw badRequest(`permissions: unknown permission "${p}" (one of ${PERMISSION_NAMES.join(", ")})`);
}

const dupName = (name: string) => conflict(`a role named ${name} already exists in this workspace`);
const systemRole = (r: Role) => conflict(`built-in role ${r.name} cannot be changed or deleted`);

export class RoleService {
  constructor(
    private readonly store: ForTenant<RoleStore>,
    private readonly users: UserService,
    private readonly clock: WallClock,
    private readonly changed: (tenantId: string, userId?: string) => void,
  ) {}

  // ------------------------------------------------------------------ roles

  async get(tenantId: string, id: string): Promise<Role | undefined> {
    return builtinById(id) ?? (await this.store(tenantId).get(id));
  }

  async require(tenantId: string, id: string): Promise<Role> {
    const r = await this.get(tenantId, id);
    if (!r) throw notFound("role");
    return r;
  }

  async findByName(tenantId: string, name: string): Promise<Role | undefined> {
    return builtinByName(name) ?? (await this.store(tenantId).byName(name));
  }

  /** built-in roles first (by name), then custom roles by name */
  async list(tenantId: string, q: { name?: string; is_system?: boolean; permission?: string; offset: number; limit: number }): Promise<Listed<Role>> {
    const needle = q.name ? fold(q.name) : undefined;
    const builtins =
      q.is_system === false
        ? []
        : BUILTIN_ROLES.filter((r) => (!needle || r.name.includes(needle)) && (!q.permission || r.permissions.includes(q.permission)));
    const pageBuiltins = builtins.slice(q.offset, q.offset + q.limit);
    if (q.is_system === true) return { items: pageBuiltins, total: builtins.length };
    const customOffset = Math.max(0, q.offset - builtins.length);
    const custom = await this.store(tenantId).list({ name: q.name, permission: q.permission }, q.limit - pageBuiltins.length, customOffset);
    return { items: [...pageBuiltins, ...(pageBuiltins.length < q.limit ? custom.items : [])], total: builtins.length + custom.total };
  }

  /** `held`: the caller's permissions — a role may not grant what its creator does not hold (403) */
  async create(tenantId: string, input: RoleInput, held?: ReadonlySet<string>): Promise<Role> {
    const permissions = input.permissions ?? [];
    checkPermissions(permissions);
    if (held) for (const p of permissions) if (!implies(held, p)) throw forbidden(`cannot create a role with permission ${p}: the caller does not hold it`);
    const s = this.store(tenantId);
    const at = iso(this.clock());
    const role: Role = { id: uuid(), name: input.name, description: input.description ?? "", permissions: [...new Set(permissions)], is_system: false, created_at: at, updated_at: at };
    return s.db.tx(async () => {
      if (await this.findByName(tenantId, role.name)) throw dupName(role.name);
      await uniqueOr409(() => s.insert(role), () => dupName(role.name));
      return role;
    });
  }

  /** `held`: the caller's permissions — a permission added to a role reaches everyone who holds the role at
   *  once, without the assignment check, so adding one the caller does not hold is 403 (else a ManageKeys
   *  holder with any custom role could PATCH WorkspaceAdmin into it) */
  async update(tenantId: string, id: string, patch: Partial<RoleInput>, held?: ReadonlySet<string>): Promise<Role> {
    if (patch.permissions) checkPermissions(patch.permissions);
    const builtin = builtinById(id);
    if (builtin) throw systemRole(builtin);
    const s = this.store(tenantId);
    const role = await s.db.tx(async () => {
      const r = await s.get(id);
      if (!r) throw notFound("role");
      if (held && patch.permissions)
        for (const p of patch.permissions)
          if (!r.permissions.includes(p) && !implies(held, p)) throw forbidden(`cannot add ${p} to role ${r.name}: the caller does not hold it`);
      const next: Role = {
        ...r,
        name: patch.name ?? r.name,
        description: patch.description ?? r.description,
        permissions: patch.permissions ? [...new Set(patch.permissions)] : r.permissions,
        updated_at: iso(this.clock()),
      };
      if (fold(next.name) !== fold(r.name) && (await this.findByName(tenantId, next.name))) throw dupName(next.name);
      await uniqueOr409(() => s.update(next), () => dupName(next.name));
      return next;
    });
    this.changed(tenantId);
    return role;
  }

  /** a custom role and every assignment of it; `held`: when someone holds the role, the caller must hold every
   *  permission it grants (taking a grant away is as strong as giving it); an unassigned role takes nothing away */
  async remove(tenantId: string, id: string, held?: ReadonlySet<string>): Promise<void> {
    const builtin = builtinById(id);
    if (builtin) throw systemRole(builtin);
    const s = this.store(tenantId);
    await s.db.tx(async () => {
      const r = await s.get(id);
      if (!r) throw notFound("role");
      if (held && (await s.isAssigned(id)))
        for (const p of r.permissions) if (!implies(held, p)) throw forbidden(`cannot delete role ${r.name}: it is assigned and grants ${p}, which the caller does not hold`);
      await s.delete(id);
    });
    this.changed(tenantId);
  }

  // ------------------------------------------------------------------ assignments

  /**
   * Assign a role (idempotent for the same role and scope: the expiry is updated). `created` says
   * whether a new assignment was made.
   */
  async assign(tenantId: string, userId: string, input: AssignInput, by?: string, held?: ReadonlySet<string>): Promise<Assignment & { created: boolean }> {
    const scope = input.scope ?? WORKSPACE_SCOPE;
    if (scope.length > ROLE_LIMITS.scope || !SCOPE_RE.test(scope))
      throw badRequest(`scope: "${WORKSPACE_SCOPE}" or "<resource_type>:<resource id>" with a resource type of ${RESOURCE_TYPES.join(", ")}`);
    const nowMs = this.clock();
    let expiresAt: string | null = null;
    if (input.expiresAt != null) {
      const ms = Date.parse(input.expiresAt);
      if (Number.isNaN(ms)) throw badRequest("expiresAt: expected an ISO 8601 date-time");
      if (ms <= nowMs) throw badRequest("expiresAt: must be in the future");
      expiresAt = iso(ms);
    }
    await this.users.require(tenantId, userId);
    const role = await this.require(tenantId, input.roleId);
    // nobody grants what they do not hold (a ManageKeys holder cannot make anyone an admin)
    if (held) for (const p of role.permissions) if (!implies(held, p)) throw forbidden(`cannot assign role ${role.name}: it grants ${p}, which the caller does not hold`);
    const s = this.store(tenantId);
    const out = await s.db.tx(async () => {
      const existing = await s.assignment(userId, role.id, scope);
      if (existing) {
        await s.setExpiry(existing.id, expiresAt, by ?? null);
        return { row: { ...existing, expires_at: expiresAt, assigned_by: by ?? existing.assigned_by }, created: false };
      }
      const row: AssignmentRow = { id: uuid(), user_id: userId, role_id: role.id, scope, expires_at: expiresAt, assigned_by: by ?? null, created_at: iso(nowMs) };
      await s.insertAssignment(row);
      return { row, created: true };
    });
    this.changed(tenantId, userId);
    return { ...this.view({ row: out.row, role, expired: false }), created: out.created };
  }

  /** every assignment of a user, expired ones included (marked); a soft-deleted user's too, since
   *  doc3 §3 keeps them ("role assignments not removed") — they grant nothing while the user is deleted */
  async assignments(tenantId: string, userId: string): Promise<Assignment[]> {
    await this.users.view(tenantId, userId);
    return (await this.held(tenantId, userId)).map((h) => this.view(h));
  }

  /** Revoke a user's assignments of a role (every scope, or one); `held` as for assign: nobody revokes what they could not grant. */
  async revoke(tenantId: string, userId: string, roleId: string, scope?: string, held?: ReadonlySet<string>): Promise<number> {
    await this.users.require(tenantId, userId);
    if (held) {
      const role = builtinById(roleId) ?? (await this.store(tenantId).get(roleId));
      if (role) for (const p of role.permissions) if (!implies(held, p)) throw forbidden(`cannot revoke role ${role.name}: it grants ${p}, which the caller does not hold`);
    }
    const n = await this.store(tenantId).revoke(userId, roleId, scope ?? null);
    if (n === 0) throw notFound("role assignment");
    this.changed(tenantId, userId);
    return n;
  }

  /** Assignments with their roles resolved, expired or not (roles deleted since are skipped). */
  async held(tenantId: string, userId: string): Promise<Held[]> {
    const s = this.store(tenantId);
    const rows = await s.assignments(userId);
    const custom = new Map((await s.byIds(rows.filter((r) => !builtinById(r.role_id)).map((r) => r.role_id))).map((r) => [r.id, r]));
    const nowMs = this.clock();
    const out: Held[] = [];
    for (const row of rows) {
      const role = builtinById(row.role_id) ?? custom.get(row.role_id);
      if (role) out.push({ row, role, expired: row.expires_at !== null && Date.parse(row.expires_at) <= nowMs });
    }
    return out;
  }

  /**
   * What the user's unexpired workspace-wide assignments grant now, and until when that answer
   * holds (the earliest expiry among them; Infinity without one).
   */
  async effective(tenantId: string, userId: string): Promise<{ permissions: string[]; validUntil: number }> {
    const perms = new Set<string>();
    let validUntil = Infinity;
    for (const h of await this.held(tenantId, userId)) {
      if (h.expired || h.row.scope !== WORKSPACE_SCOPE) continue;
      for (const p of h.role.permissions) perms.add(p);
      if (h.row.expires_at) validUntil = Math.min(validUntil, Date.parse(h.row.expires_at));
    }
    return { permissions: [...perms], validUntil };
  }

  /** The permissions a user's unexpired workspace-wide role assignments grant now. */
  async permissionsOf(tenantId: string, userId: string): Promise<string[]> {
    return (await this.effective(tenantId, userId)).permissions;
  }

  private view(h: Held): Assignment {
    return {
      id: h.row.id,
      userId: h.row.user_id,
      roleId: h.role.id,
      roleName: h.role.name,
      scope: h.row.scope,
      expiresAt: h.row.expires_at,
      expired: h.expired,
      assignedBy: h.row.assigned_by,
      createdAt: h.row.created_at,
    };
  }
}
