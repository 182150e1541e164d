/**
 * The SCIM 2.0 service provider (RFC 7643/7644) identity providers call, at /scim/v2:
 * ServiceProviderConfig, ResourceTypes, Schemas, Users and Groups (create, get, replace, PATCH,
 * delete, list with filter / startIndex / count / sortBy / attributes / excludedAttributes).
 *
 * SCIMMY does the protocol work — schema validation and coercion, filters (eq, ne, co, sw, ew, pr,
 * gt/ge/lt/le, and/or/not, complex `emails[type eq "work"]` filters), PatchOp (any op case,
 * filtered paths such as `members[value eq "…"]`), attribute selection, list responses and the
 * error schema. This file maps its resources onto the workspace:
 *   User  <-> a part-1 user: userName/emails -> email (the primary or work e-mail, else an e-mail
 *             userName), displayName/name -> name, externalId -> external_id, identity_provider
 *             `scim` for users it creates, active:false -> SUSPENDED (true -> ACTIVE); SCIM-only
 *             attributes (userName when it differs, name parts, the enterprise extension) are kept
 *             under metadata.scim. DELETE soft-deletes. Suspension and deletion reach the user's
 *             tokens at once (UserService reports the change to the per-request access check).
 *   Group <-> a team (displayName -> name, externalId, members <-> team members, kept in sync on
 *             every write: the team's members become exactly the group's).
 * Entra ID sends booleans as strings ("True"/"False") which SCIMMY rightly rejects: `active` and
 * `primary` values are normalised first (normaliseBooleans).
 * The bearer is a SCIM token (tokens.ts); each operation needs its scope (users:read for reading
 * users, users:write for writing them, groups:* likewise). Every write is recorded as an activity
 * with its outcome.
 */
import SCIMMY from "scimmy";
import type { Kernel } from "../../core/kernel";
import { ApiError, toApiError, type Envelope, type ErrorType } from "../../core/errors";
import type { Principal } from "../../core/auth";
import type { User, Team } from "../types";
import type { UserService } from "../users/service";
import type { TeamService } from "../teams/service";
import type { ActivityService, Operation, ResourceType } from "./activities";
import type { ScimTokenService } from "./tokens";
import { canonicalPatch, listParams, MAX_RESULTS, normaliseBooleans, searchParams } from "./requests";

export const SCIM_BASE = "/scim/v2";
export const SCIM_CONTENT_TYPE = "application/scim+json";
const ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error";
const ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";

const SCIM_TYPE_OF: Partial<Record<ErrorType, string>> = { validation_error: "invalidValue", invalid_request_error: "invalidSyntax", conflict: "uniqueness" };

/** SCIM's error schema (RFC 7644 §3.12) as the mount's envelope. */
export const SCIM_ENVELOPE: Envelope = {
  name: "scim",
  contentType: SCIM_CONTENT_TYPE,
  body: (err) => {
    const scimType = (err.extra?.scimType as string | undefined) ?? (err.status === 400 ? SCIM_TYPE_OF[err.type] : undefined) ?? (err.status === 409 ? "uniqueness" : undefined);
    return { schemas: [ERROR_SCHEMA], status: String(err.status), ...(scimType ? { scimType } : {}), detail: err.message };
  },
};

const TYPE_OF_STATUS: Record<number, ErrorType> = { 400: "validation_error", 401: "authentication_error", 403: "authorization_error", 404: "not_found", 409: "conflict", 413: "invalid_request_error", 501: "internal_error" };

/** A SCIMMY error (or ours) as an ApiError with the SCIM status and scimType. */
function scimError(e: unknown): ApiError {
  if (e instanceof SCIMMY.Types.Error) {
    const err = e as unknown as { status: number; scimType?: string; message: string };
    return new ApiError(TYPE_OF_STATUS[err.status] ?? "internal_error", err.message, err.scimType ? { scimType: err.scimType } : undefined, undefined, err.status);
  }
  return toApiError(e);
}

/** ApiErrors from part 1's services, inside SCIMMY handlers, become SCIMMY errors (else SCIMMY calls everything a 404). */
function asScim(e: unknown): never {
  if (e instanceof ApiError) {
    const scimType = e.status === 409 ? "uniqueness" : e.status === 400 ? "invalidValue" : null;
    throw new SCIMMY.Types.Error(e.status, scimType as never, e.message);
  }
  throw e;
}

/**
 * Attributes SCIM compares case-insensitively (RFC 7643 caseExact=false: userName, emails, names,
 * displayName); SCIMMY's filter compares exactly, so both the candidates and the filter's values
 * of these attributes are lower-cased before matching.
 */
const CASE_INSENSITIVE = new Set(["username", "displayname", "value", "type", "givenname", "familyname", "formatted", "middlename", "title", "display", "nickname"]);

function lowerView(v: unknown, key = ""): unknown {
  if (typeof v === "string") return CASE_INSENSITIVE.has(key.toLowerCase()) ? v.toLowerCase() : v;
  if (Array.isArray(v)) return v.map((x) => lowerView(x, key));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, lowerView(x, k)]));
  return v;
}

const COMPARATORS = new Set(["eq", "ne", "co", "sw", "ew", "gt", "lt", "ge", "le", "pr", "np", "not"]);

function lowerFilter(node: unknown, key = ""): unknown {
  if (Array.isArray(node)) {
    if (typeof node[0] === "string" && COMPARATORS.has(node[0].toLowerCase())) {
      const last = node.at(-1);
      return typeof last === "string" && node.length > 1 && CASE_INSENSITIVE.has(key.toLowerCase()) && node[0].toLowerCase() !== "pr" ? [...node.slice(0, -1), last.toLowerCase()] : node;
    }
    return node.map((x) => lowerFilter(x, key));
  }
  if (node && typeof node === "object") return Object.fromEntries(Object.entries(node).map(([k, x]) => [k, lowerFilter(x, k)]));
  return node;
}

/** the candidates a SCIM filter selects, comparing caseExact=false attributes without case */
function matching<T>(filter: { match(v: unknown[]): unknown[] } | undefined, all: T[]): T[] {
  if (!filter) return all;
  const views = all.map((x) => lowerView(x));
  let f: { match(v: unknown[]): unknown[] };
  try {
    f = new SCIMMY.Types.Filter(lowerFilter([...(filter as unknown as unknown[])]) as never) as unknown as typeof f;
  } catch (e) {
    throw new SCIMMY.Types.Error(400, "invalidFilter", String((e as Error)?.message ?? e));
  }
  const hit = new Set(f.match(views));
  return all.filter((_, i) => hit.has(views[i]));
}

/**
 * The value of a filter that is exactly `<attr> eq "<string>"` (what identity providers send before
 * creating: userName, externalId, displayName), for an indexed lookup of the candidates; the filter
 * itself is still applied to them.
 */
function eqValue(filter: unknown, attr: string): string | undefined {
  if (!Array.isArray(filter) || filter.length !== 1) return undefined;
  const entries = Object.entries(filter[0] as Record<string, unknown>);
  if (entries.length !== 1 || entries[0]![0].toLowerCase() !== attr.toLowerCase()) return undefined;
  const e = entries[0]![1];
  return Array.isArray(e) && e.length === 2 && String(e[0]).toLowerCase() === "eq" && typeof e[1] === "string" ? e[1] : undefined;
}

interface Ctx {
  tenantId: string;
  dir: ScimDirectory;
  by: string;
}

const ALL = 1_000_000;

/** Users and groups of a workspace in SCIM shape, and their writes onto part 1's services. */
export class ScimDirectory {
  constructor(
    readonly users: UserService,
    readonly teams: TeamService,
  ) {}

  private async allUsers(tenantId: string): Promise<User[]> {
    const out: User[] = [];
    for (let offset = 0; ; offset += 1000) {
      const { items } = await this.users.list(tenantId, { offset, limit: 1000 });
      out.push(...items);
      if (items.length < 1000) return out;
    }
  }

  private async allTeams(tenantId: string): Promise<Team[]> {
    return (await this.teams.list(tenantId, { offset: 0, limit: ALL })).items;
  }

  userOut(tenantId: string, u: User, groups?: Map<string, Array<{ value: string; display: string }>>) {
    const scim = (u.metadata.scim ?? {}) as { userName?: string; name?: Record<string, string>; enterprise?: Record<string, unknown>; title?: string };
    return {
      id: u.id,
      ...(u.external_id ? { externalId: u.external_id } : {}),
      userName: scim.userName ?? u.email,
      ...(scim.name || u.name ? { name: { ...(u.name ? { formatted: u.name } : {}), ...scim.name } } : {}),
      ...(u.name ? { displayName: u.name } : {}),
      ...(scim.title ? { title: scim.title } : {}),
      emails: [{ value: u.email, type: "work", primary: true }],
      active: u.status === "ACTIVE",
      ...(groups ? { groups: groups.get(u.id) ?? [] } : {}),
      ...(scim.enterprise ? { [ENTERPRISE]: scim.enterprise } : {}),
      meta: { resourceType: "User", created: u.created_at, lastModified: u.updated_at },
    };
  }

  /** live users with their groups: one, the candidates of a filter's indexed fast path, or all */
  async readUsers(tenantId: string, id?: string, filter?: unknown) {
    let users: User[];
    if (id) users = [await this.users.get(tenantId, id)].filter((u): u is User => !!u);
    else {
      const login = eqValue(filter, "userName");
      const ext = eqValue(filter, "externalId");
      users =
        login !== undefined ? await this.users.findByLogin(tenantId, login) : ext !== undefined ? await this.users.findAllByExternalId(tenantId, ext) : await this.allUsers(tenantId);
    }
    const groups = await this.teams.memberships(tenantId, id ?? (users.length === 1 ? users[0]!.id : undefined));
    return users.map((u) => this.userOut(tenantId, u, groups));
  }

  async writeUser(tenantId: string, id: string | undefined, instance: Record<string, any>): Promise<User> {
    const emails = (instance.emails ?? []) as Array<{ value?: string; type?: string; primary?: boolean }>;
    const email = (emails.find((e) => e.primary)?.value ?? emails.find((e) => e.type === "work")?.value ?? emails[0]?.value ?? (String(instance.userName).includes("@") ? instance.userName : undefined)) as string | undefined;
    if (!email) throw new SCIMMY.Types.Error(400, "invalidValue", "a user needs an e-mail address: emails, or a userName that is one");
    const given = instance.name?.givenName as string | undefined;
    const family = instance.name?.familyName as string | undefined;
    const name = (instance.displayName as string | undefined) ?? (instance.name?.formatted as string | undefined) ?? ([given, family].filter(Boolean).join(" ") || null);
    const scim: Record<string, unknown> = {};
    if (instance.userName && instance.userName !== email) scim.userName = instance.userName;
    const nameParts = Object.fromEntries(Object.entries(instance.name ?? {}).filter(([k, v]) => k !== "formatted" && typeof v === "string"));
    if (Object.keys(nameParts).length) scim.name = nameParts;
    if (instance.title) scim.title = instance.title;
    if (instance[ENTERPRISE] && Object.keys(instance[ENTERPRISE]).length) scim.enterprise = instance[ENTERPRISE];
    const status = instance.active === false ? ("SUSPENDED" as const) : ("ACTIVE" as const);
    const externalId = (instance.externalId as string | undefined) ?? null;
    try {
      if (id === undefined) {
        const existing = await this.users.findByEmail(tenantId, email);
        if (existing) throw new SCIMMY.Types.Error(409, "uniqueness", `a user with the userName/e-mail ${email} already exists (id ${existing.id})`);
        return await this.users.create(tenantId, { email, name, external_id: externalId, identity_provider: "scim", metadata: Object.keys(scim).length ? { scim } : {}, status });
      }
      const cur = await this.users.get(tenantId, id);
      if (!cur) throw new SCIMMY.Types.Error(404, null as never, `User ${id} not found`);
      const { scim: _old, ...rest } = cur.metadata as Record<string, unknown>;
      void _old;
      return await this.users.update(tenantId, id, {
        email,
        name,
        external_id: externalId,
        identity_provider: cur.identity_provider ?? "scim",
        metadata: Object.keys(scim).length ? { ...rest, scim } : rest,
        status,
      });
    } catch (e) {
      return asScim(e);
    }
  }

  async deleteUser(tenantId: string, id: string) {
    try {
      await this.users.remove(tenantId, id);
    } catch (e) {
      asScim(e);
    }
  }

  async groupOut(tenantId: string, t: Team, emails?: Map<string, string>, known?: string[]) {
    const members = known ?? (await this.teams.members(tenantId, t.id));
    return {
      id: t.id,
      displayName: t.name,
      ...(t.external_id ? { externalId: t.external_id } : {}),
      members: members.map((m) => ({ value: m, display: emails?.get(m) ?? m, type: "User" })),
      meta: { resourceType: "Group", created: t.createdAt, lastModified: t.updatedAt },
    };
  }

  async readGroups(tenantId: string, id?: string, filter?: unknown) {
    let teams: Team[];
    const name = id ? undefined : eqValue(filter, "displayName");
    if (id) teams = [await this.teams.get(tenantId, id)].filter((t): t is Team => !!t);
    else if (name !== undefined) teams = [await this.teams.findByName(tenantId, name)].filter((t): t is Team => !!t);
    else teams = await this.allTeams(tenantId);
    const members = new Map<string, string[]>();
    for (const t of teams) members.set(t.id, await this.teams.members(tenantId, t.id));
    const emails = await this.users.emailsOf(tenantId, [...new Set([...members.values()].flat())]);
    return Promise.all(teams.map((t) => this.groupOut(tenantId, t, emails, members.get(t.id))));
  }

  async writeGroup(tenantId: string, id: string | undefined, instance: Record<string, any>, by: string): Promise<Team> {
    const members = ((instance.members ?? []) as Array<{ value?: string; type?: string }>).map((m) => {
      if (m.type && m.type !== "User") throw new SCIMMY.Types.Error(400, "invalidValue", `members: ${m.type} members are not supported (teams hold users)`);
      return String(m.value ?? "");
    });
    const ids = [...new Set(members)];
    const live = await this.teams.liveUserIds(tenantId, ids);
    const unknown = ids.filter((m) => !live.has(m));
    if (unknown.length) throw new SCIMMY.Types.Error(400, "invalidValue", `members: no user with id ${unknown.slice(0, 5).join(", ")}`);
    try {
      let team: Team;
      if (id === undefined) {
        if (await this.teams.findByName(tenantId, instance.displayName)) throw new SCIMMY.Types.Error(409, "uniqueness", `a group named ${instance.displayName} already exists`);
        team = await this.teams.create(tenantId, { name: instance.displayName, external_id: instance.externalId ?? null }, by);
      } else {
        if (!(await this.teams.get(tenantId, id))) throw new SCIMMY.Types.Error(404, null as never, `Group ${id} not found`);
        team = await this.teams.update(tenantId, id, { name: instance.displayName, external_id: instance.externalId ?? null });
      }
      await this.teams.setMembers(tenantId, team.id, ids);
      return team;
    } catch (e) {
      return asScim(e);
    }
  }

  async deleteGroup(tenantId: string, id: string) {
    try {
      await this.teams.remove(tenantId, id);
    } catch (e) {
      asScim(e);
    }
  }
}

let declared = false;

/** SCIMMY's resources are process-wide: declared once, the workspace travels in the handler context. */
function declareOnce() {
  if (declared) return;
  declared = true;
  SCIMMY.Config.set({
    patch: true,
    filter: { supported: true, maxResults: MAX_RESULTS },
    sort: true,
    bulk: false,
    etag: false,
    changePassword: false,
  } as never);
  SCIMMY.Config.set("authenticationSchemes", [
    { type: "oauthbearertoken", name: "OAuth Bearer Token", description: "A SCIM token created at POST /api/v1/scim/tokens, sent as Authorization: Bearer <token>" },
  ] as never);
  SCIMMY.Resources.declare(SCIMMY.Resources.User, {
    basepath: SCIM_BASE,
    ingress: async (res: { id?: string }, instance: Record<string, any>, ctx: Ctx) => ctx.dir.userOut(ctx.tenantId, await ctx.dir.writeUser(ctx.tenantId, res.id, instance)),
    egress: async (res: { id?: string; filter?: { match(v: unknown[]): unknown[] } }, ctx: Ctx) => {
      const all = await ctx.dir.readUsers(ctx.tenantId, res.id, res.filter);
      if (res.id) {
        if (!all.length) throw new SCIMMY.Types.Error(404, null as never, `User ${res.id} not found`);
        return all[0];
      }
      return matching(res.filter, all);
    },
    degress: async (res: { id: string }, ctx: Ctx) => ctx.dir.deleteUser(ctx.tenantId, res.id),
    extensions: [{ schema: SCIMMY.Schemas.EnterpriseUser, required: false }],
  } as never);
  SCIMMY.Resources.declare(SCIMMY.Resources.Group, {
    basepath: SCIM_BASE,
    ingress: async (res: { id?: string }, instance: Record<string, any>, ctx: Ctx) => (await ctx.dir.readGroups(ctx.tenantId, (await ctx.dir.writeGroup(ctx.tenantId, res.id, instance, ctx.by)).id))[0],
    egress: async (res: { id?: string; filter?: { match(v: unknown[]): unknown[] }; attributes?: unknown }, ctx: Ctx) => {
      const all = await ctx.dir.readGroups(ctx.tenantId, res.id, res.filter);
      if (res.id) {
        if (!all.length) throw new SCIMMY.Types.Error(404, null as never, `Group ${res.id} not found`);
        return all[0];
      }
      return matching(res.filter, all);
    },
    degress: async (res: { id: string }, ctx: Ctx) => ctx.dir.deleteGroup(ctx.tenantId, res.id),
  } as never);
  SCIMMY.Resources.ResourceType.basepath(SCIM_BASE);
  SCIMMY.Resources.Schema.basepath(SCIM_BASE);
  SCIMMY.Resources.ServiceProviderConfig.basepath(SCIM_BASE);
}

/** absolute meta.location (RFC 7643 §3.1) and itemsPerPage = the resources on this page (RFC 7644 §3.4.2) */
function finish(body: unknown, origin: string): unknown {
  const v = JSON.parse(JSON.stringify(body)) as Record<string, any>;
  const fix = (r: Record<string, any>) => {
    // `schemas` is always returned (RFC 7643 §3), also when `attributes` selects others
    if (r && typeof r === "object" && typeof r.id === "string" && !Array.isArray(r.schemas)) {
      const kind = typeof r.meta?.resourceType === "string" ? r.meta.resourceType : typeof r.userName === "string" ? "User" : undefined;
      if (kind === "User" || kind === "Group") r.schemas = [`urn:ietf:params:scim:schemas:core:2.0:${kind}`];
    }
    if (typeof r?.meta?.location === "string" && r.meta.location.startsWith("/")) r.meta.location = origin + r.meta.location;
  };
  if (Array.isArray(v.Resources)) {
    v.Resources.forEach(fix);
    v.itemsPerPage = v.Resources.length;
  } else fix(v);
  return v;
}

const reply = (request: Request, status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(body === undefined ? null : JSON.stringify(finish(body, new URL(request.url).origin)), { status, headers: body === undefined ? headers : { "content-type": SCIM_CONTENT_TYPE, ...headers } });

const SCOPE = { Users: "users", Groups: "groups" } as const;
type Kind = keyof typeof SCOPE;

function requireScope(p: Principal, kind: Kind, access: "read" | "write") {
  const scope = `${SCOPE[kind]}:${access}`;
  if (!p.permissions.has(scope)) throw new ApiError("authorization_error", `the SCIM token lacks the scope ${scope}`);
}

export const scimProviderRoutes = (kernel: Kernel, tokens: ScimTokenService, dir: ScimDirectory, activities: ActivityService) => {
  declareOnce();
  const ctxOf = (p: Principal): Ctx => ({ tenantId: p.tenantId, dir, by: p.sub });
  const resource = (kind: Kind) => (kind === "Users" ? SCIMMY.Resources.User : SCIMMY.Resources.Group);
  const typeOf = (kind: Kind): ResourceType => (kind === "Users" ? "user" : "group");

  /** run a write, record it as an activity with its outcome */
  async function write(p: Principal, kind: Kind, operation: Operation, id: string | undefined, details: Record<string, unknown>, fn: () => Promise<{ id?: string } | undefined | void>) {
    const tokenId = p.sub.startsWith("scim:") ? p.sub.slice(5) : null;
    try {
      requireScope(p, kind, "write");
      const out = await fn();
      await activities.record(p.tenantId, { tokenId, operation, resourceType: typeOf(kind), resourceId: (out && "id" in out ? out.id : undefined) ?? id ?? null, status: "success", errorMessage: null, details });
      return out;
    } catch (e) {
      const err = scimError(e);
      await activities.record(p.tenantId, { tokenId, operation, resourceType: typeOf(kind), resourceId: id ?? null, status: "error", errorMessage: err.message, details: { ...details, httpStatus: err.status } });
      throw err;
    }
  }

  const summary = (kind: Kind, body: any) =>
    kind === "Users" ? { userName: body?.userName ?? null, externalId: body?.externalId ?? null } : { displayName: body?.displayName ?? null, externalId: body?.externalId ?? null, members: Array.isArray(body?.members) ? body.members.length : 0 };

  /** a list (GET or .search): parameters bounded and parsed, a startIndex past the total answers an empty page (RFC 7644 §3.4.2.4) */
  async function list(principal: Principal, kind: Kind, paramsOf: () => Record<string, unknown>, request: Request) {
    requireScope(principal, kind, "read");
    const R = resource(kind) as any;
    try {
      const params = paramsOf();
      let r: any;
      try {
        r = new R(params);
      } catch (e) {
        // a filter or attribute list that does not parse (RFC 7644 §3.4.2.2: invalidFilter)
        const err = scimError(e);
        if (err.status === 400) throw new ApiError("validation_error", err.message, { scimType: "invalidFilter" });
        throw err;
      }
      const out = await r.read(ctxOf(principal));
      // SCIMMY pages only when startIndex is within the results; past them the page is empty
      const startIndex = (params.startIndex as number | undefined) ?? 1;
      if (startIndex > out.totalResults) {
        out.Resources = [];
        out.startIndex = startIndex;
      }
      return reply(request, 200, out);
    } catch (e) {
      throw scimError(e);
    }
  }

  let app = kernel.mount({ prefix: SCIM_BASE, envelope: SCIM_ENVELOPE, auth: Object.assign(async (request: Request) => tokens.authenticate(request), {
      credential: "a SCIM token of the tenant in `Authorization: Bearer` (created with POST /api/v1/scim/tokens; its scopes decide what it may read and write)",
    }) });

  app = app
    .get("/ServiceProviderConfig", async ({ request }) => reply(request, 200, await new SCIMMY.Resources.ServiceProviderConfig().read()), { detail: { summary: "SCIM service provider configuration", description: "What this SCIM service supports (RFC 7643 §5): PATCH, filtering, sorting, bulk and authentication schemes, for the identity provider to adapt to.", tags: ["scim-provider"] } })
    .get("/ResourceTypes", async ({ request }) => reply(request, 200, await new SCIMMY.Resources.ResourceType().read()), { detail: { summary: "SCIM resource types", description: "The resource types served (User, Group) with their endpoints and schemas.", tags: ["scim-provider"] } })
    .get("/ResourceTypes/:id", async ({ params, request }) => {
      try {
        return reply(request, 200, await new SCIMMY.Resources.ResourceType(params.id).read());
      } catch (e) {
        throw scimError(e);
      }
    }, { detail: { summary: "A SCIM resource type", description: "One resource type (User or Group) with its endpoint and schema.", tags: ["scim-provider"] } })
    .get("/Schemas", async ({ request }) => reply(request, 200, await new SCIMMY.Resources.Schema().read()), { detail: { summary: "SCIM schemas", description: "The SCIM schemas of users and groups as this service implements them.", tags: ["scim-provider"] } })
    .get("/Schemas/:id", async ({ params, request }) => {
      try {
        return reply(request, 200, await new SCIMMY.Resources.Schema(params.id).read());
      } catch (e) {
        throw scimError(e);
      }
    }, { detail: { summary: "A SCIM schema", description: "One SCIM schema by its URN.", tags: ["scim-provider"] } }) as typeof app;

  for (const kind of ["Users", "Groups"] as const) {
    const R = resource(kind) as any;
    const what = kind === "Users" ? "the workspace's users" : "the workspace's teams (SCIM groups are svc teams)";
    app = app
      .get(`/${kind}`, async ({ principal, query, request }) => list(principal, kind, () => listParams(query as Record<string, string>), request), {
        detail: { summary: `List ${kind} (filter, startIndex, count, sortBy, attributes, excludedAttributes)`, description: `Lists ${what} as a SCIM ListResponse, with SCIM filters, paging, sorting and attribute selection.`, tags: ["scim-provider"] },
      })
      // RFC 7644 §3.4.3: the same query as a SearchRequest body (filters too long for a URL)
      .post(`/${kind}/.search`, async ({ principal, body, request }) => list(principal, kind, () => searchParams(body), request), {
        detail: { summary: `Search ${kind} with a SearchRequest body (RFC 7644 §3.4.3)`, description: "The same query as the list, sent as a SearchRequest body (for filters too long for a URL).", tags: ["scim-provider"] },
      })
      .get(`/${kind}/:id`, async ({ principal, params, query, request }) => {
        requireScope(principal, kind, "read");
        try {
          const q = query as Record<string, string | undefined>;
          const opts: Record<string, string> = {};
          if (q.attributes) opts.attributes = q.attributes;
          if (q.excludedAttributes) opts.excludedAttributes = q.excludedAttributes;
          return reply(request, 200, await new R(params.id, opts).read(ctxOf(principal)));
        } catch (e) {
          throw scimError(e);
        }
      }, { detail: { summary: `Get one of ${kind}`, description: `Answers one of ${what} as a SCIM resource; 404 in the SCIM error format if there is none.`, tags: ["scim-provider"] } })
      .post(`/${kind}`, async ({ principal, body, request }) => {
        const input = normaliseBooleans(body);
        const out = (await write(principal, kind, "create", undefined, { method: "POST", ...summary(kind, input) }, () => new R().write(input, ctxOf(principal)))) as { id: string };
        return reply(request, 201, out, { location: `${new URL(request.url).origin}${SCIM_BASE}/${kind}/${out.id}` });
      }, { detail: { summary: `Create one of ${kind}`, description: `Creates one of ${what} from a SCIM resource and answers it with its Location; the write is recorded in the SCIM activity log.`, tags: ["scim-provider"] } })
      .put(`/${kind}/:id`, async ({ principal, params, body, request }) => {
        const input = normaliseBooleans(body);
        const out = await write(principal, kind, "update", params.id, { method: "PUT", ...summary(kind, input) }, () => new R(params.id).write(input, ctxOf(principal)));
        return reply(request, 200, out);
      }, { detail: { summary: `Replace one of ${kind}`, description: `Replaces one of ${what} with the SCIM resource sent; recorded in the SCIM activity log.`, tags: ["scim-provider"] } })
      .patch(`/${kind}/:id`, async ({ principal, params, body, request }) => {
        // attribute names in paths and values case-insensitively (RFC 7643 §2.1), paths bounded before SCIMMY parses them
        const input = normaliseBooleans(canonicalPatch(kind, body)) as { Operations?: Array<{ op?: string; path?: string }> };
        const ops = Array.isArray(input?.Operations) ? input.Operations.slice(0, 50).map((o) => ({ op: String(o?.op ?? ""), path: o?.path ?? null })) : [];
        const out = await write(principal, kind, "update", params.id, { method: "PATCH", operations: ops }, () => new R(params.id).patch(input, ctxOf(principal)));
        // no change: SCIMMY answers nothing; RFC 7644 §3.5.2 allows 204
        return out ? reply(request, 200, out) : reply(request, 204, undefined);
      }, { detail: { summary: `Patch one of ${kind} (PatchOp)`, description: `Applies a SCIM PatchOp (add, replace, remove; attribute names case-insensitive) to one of ${what}; 204 when nothing changed.`, tags: ["scim-provider"] } })
      .delete(`/${kind}/:id`, async ({ principal, params, request }) => {
        await write(principal, kind, "delete", params.id, { method: "DELETE" }, () => new R(params.id).dispose(ctxOf(principal)));
        return reply(request, 204, undefined);
      }, { detail: { summary: `Delete one of ${kind} (soft delete)`, description: `Soft-deletes one of ${what} (204); recorded in the SCIM activity log.`, tags: ["scim-provider"] } }) as typeof app;
  }
  return app;
};
