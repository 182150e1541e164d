/**
 * /api/v1/roles and /api/v1/users/{id}/roles over HTTP, and the per-request check of user tokens
 * (sub = "user:<id>"): suspended/deleted users refused, permissions from unexpired assignments.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, uuid, FakeWallClock, type IdentityEnv } from "./helpers";

const clock = new FakeWallClock();
let env: IdentityEnv;
const R = "/api/v1/roles";
const U = "/api/v1/users";
beforeAll(async () => (env = await startIdentity({}, { wallClock: clock.now })));
afterAll(() => env.gw.stop());

const user = async (email: string, token = env.A) => (await env.call("POST", U, token, { email })).body;

describe("roles", () => {
  test("built-in roles are listed first, is_system true, and cannot be changed or deleted (409)", async () => {
    const { call, A } = env;
    const r = await call("GET", `${R}?is_system=true`, A);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ total: 3, page: 1, page_size: 20, total_pages: 1 });
    expect(r.body.roles.map((x: any) => [x.name, x.is_system])).toEqual([
      ["admin", true],
      ["editor", true],
      ["viewer", true],
    ]);
    const admin = r.body.roles[0];
    expect(admin).toEqual({ id: expect.any(String), name: "admin", description: expect.any(String), permissions: ["WorkspaceAdmin"], is_system: true, created_at: null, updated_at: null });
    expectError(await call("PATCH", `${R}/${admin.id}`, A, { description: "x" }), 409, "conflict", "built-in");
    expectError(await call("DELETE", `${R}/${admin.id}`, A), 409, "conflict", "built-in");
    expectError(await call("POST", R, A, { name: "Admin", permissions: [] }), 409, "conflict");
  });

  test("custom role CRUD with PATCH, filters name / is_system / permission, duplicate name 409", async () => {
    const t = await env.gw.token("tenant-roles", ["ManageKeys", "ViewLogs", "ManageConfig"]);
    const { call } = env;
    const c = await call("POST", R, t, { name: "Key Auditor", description: "reads keys and logs", permissions: ["ViewKeys", "ViewLogs"] });
    expect(c.status).toBe(201);
    expect(c.body).toEqual({
      id: expect.any(String),
      name: "Key Auditor",
      description: "reads keys and logs",
      permissions: ["ViewKeys", "ViewLogs"],
      is_system: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expectError(await call("POST", R, t, { name: "key auditor", permissions: [] }), 409, "conflict");
    const other = (await call("POST", R, t, { name: "Ops", permissions: ["ManageConfig"] })).body;
    expectError(await call("PATCH", `${R}/${other.id}`, t, { name: "KEY AUDITOR" }), 409, "conflict");
    const p = await call("PATCH", `${R}/${c.body.id}`, t, { permissions: ["ViewKeys"] });
    expect(p.body).toMatchObject({ name: "Key Auditor", description: "reads keys and logs", permissions: ["ViewKeys"] });
    expect((await call("GET", `${R}/${c.body.id}`, t)).body).toEqual(p.body);
    const custom = (await call("GET", `${R}?is_system=false`, t)).body;
    expect(custom.roles.map((x: any) => x.name)).toEqual(["Key Auditor", "Ops"]);
    expect((await call("GET", `${R}?name=audit`, t)).body.roles.map((x: any) => x.name)).toEqual(["Key Auditor"]);
    expect((await call("GET", `${R}?permission=ManageConfig`, t)).body.roles.map((x: any) => x.name)).toEqual(["editor", "Ops"]);
    const all = (await call("GET", `${R}?page_size=4&page=1`, t)).body;
    expect(all).toMatchObject({ total: 5, page_size: 4, total_pages: 2 });
    expect(all.roles.map((x: any) => x.name)).toEqual(["admin", "editor", "viewer", "Key Auditor"]);
    expect((await call("GET", `${R}?page_size=4&page=2`, t)).body.roles.map((x: any) => x.name)).toEqual(["Ops"]);
    expect((await call("DELETE", `${R}/${other.id}`, t)).body).toEqual({ deleted: true, id: other.id });
    expectError(await call("GET", `${R}/${other.id}`, t), 404, "not_found");
    expectError(await call("PATCH", `${R}/${other.id}`, t, { name: "x" }), 404, "not_found");
    expectError(await call("DELETE", `${R}/${other.id}`, t), 404, "not_found");
  });

  test("validation: page_size 1000 accepted and 1001 rejected, limits, unknown permission", async () => {
    const { call, A } = env;
    expect((await call("GET", `${R}?page_size=1000`, A)).status).toBe(200);
    expectError(await call("GET", `${R}?page_size=1001`, A), 400, "validation_error", "page_size");
    expectError(await call("GET", `${R}?is_system=maybe`, A), 400, "validation_error");
    expectError(await call("GET", `${R}?permission=Fly`, A), 400, "validation_error");
    expectError(await call("POST", R, A, { name: "x", permissions: ["Fly"] }), 400, "validation_error", "permissions");
    expectError(await call("POST", R, A, { permissions: [] }), 400, "validation_error", "name");
    // permissions is not required (doc3 §4.5 marks nothing required on role create): an empty role, filled by PATCH
    const bare = await call("POST", R, A, { name: "starts-empty" });
    expect(bare.status).toBe(201);
    expect(bare.body).toMatchObject({ name: "starts-empty", description: "", permissions: [], is_system: false });
    expect((await call("PATCH", `${R}/${bare.body.id}`, A, { permissions: ["ViewLogs"] })).body.permissions).toEqual(["ViewLogs"]);
    expect((await call("POST", R, A, { name: "n".repeat(128), permissions: [] })).status).toBe(201);
    expectError(await call("POST", R, A, { name: "n".repeat(129), permissions: [] }), 400, "validation_error", "name");
    expectError(await call("POST", R, A, { name: "d", description: "d".repeat(1001), permissions: [] }), 400, "validation_error", "description");
  });

  test("role operations need ManageKeys (403), 401 without a token; isolation", async () => {
    const { call, A, B, none } = env;
    expectError(await call("GET", R, undefined), 401, "authentication_error");
    expectError(await call("GET", R, none), 403, "authorization_error", "ManageKeys");
    expectError(await call("POST", R, none, { name: 5 }), 403, "authorization_error");
    const viewKeys = await env.gw.token("tenant-a", ["ViewKeys"]);
    expectError(await call("GET", R, viewKeys), 403, "authorization_error");
    const a = (await call("POST", R, A, { name: "A only", permissions: ["ViewLogs"] })).body;
    expectError(await call("GET", `${R}/${a.id}`, B), 404, "not_found");
    expectError(await call("PATCH", `${R}/${a.id}`, B, { name: "mine" }), 404, "not_found");
    expectError(await call("DELETE", `${R}/${a.id}`, B), 404, "not_found");
    expect((await call("GET", `${R}?name=A%20only`, B)).body.total).toBe(0);
    // same name in another workspace is fine
    expect((await call("POST", R, B, { name: "A only", permissions: [] })).status).toBe(201);
  });
});

describe("assignments", () => {
  test("assign (201), again with the same role and scope (200, expiry updated), list, revoke", async () => {
    const { call, A } = env;
    const u = await user("assignee@example.com");
    const viewer = (await call("GET", `${R}?name=viewer`, A)).body.roles[0];
    const exp = new Date(clock.ms + 3_600_000).toISOString();
    const a = await call("POST", `${U}/${u.id}/roles`, A, { roleId: viewer.id, scope: "workspace", expiresAt: exp });
    expect(a.status).toBe(201);
    expect(a.body).toEqual({
      id: expect.any(String),
      userId: u.id,
      roleId: viewer.id,
      roleName: "viewer",
      scope: "workspace",
      expiresAt: exp,
      expired: false,
      assignedBy: "admin-a",
      createdAt: expect.any(String),
    });
    const again = await call("POST", `${U}/${u.id}/roles`, A, { roleId: viewer.id });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: a.body.id, expiresAt: null });
    const scoped = await call("POST", `${U}/${u.id}/roles`, A, { roleId: viewer.id, scope: "keys:abc" });
    expect(scoped.status).toBe(201);
    const list = (await call("GET", `${U}/${u.id}/roles`, A)).body;
    expect(list.total).toBe(2);
    expect(list.assignments.map((x: any) => x.scope)).toEqual(["workspace", "keys:abc"]);
    const del = await call("DELETE", `${U}/${u.id}/roles/${viewer.id}?scope=keys:abc`, A);
    expect(del.body).toEqual({ deleted: true, id: viewer.id, revoked: 1 });
    expect((await call("DELETE", `${U}/${u.id}/roles/${viewer.id}`, A)).body.revoked).toBe(1);
    expectError(await call("DELETE", `${U}/${u.id}/roles/${viewer.id}`, A), 404, "not_found");
    expect((await call("GET", `${U}/${u.id}/roles`, A)).body).toEqual({ assignments: [], total: 0 });
  });

  test("validation and 404s: unknown user or role, bad scope, past expiry", async () => {
    const { call, A, B } = env;
    const u = await user("v@example.com");
    const viewer = (await call("GET", `${R}?name=viewer`, A)).body.roles[0];
    expectError(await call("POST", `${U}/${u.id}/roles`, A, {}), 400, "validation_error", "roleId");
    expectError(await call("POST", `${U}/${u.id}/roles`, A, { roleId: viewer.id, scope: "planet:1" }), 400, "validation_error", "scope");
    expectError(await call("POST", `${U}/${u.id}/roles`, A, { roleId: viewer.id, expiresAt: "tomorrow" }), 400, "validation_error", "expiresAt");
    expectError(await call("POST", `${U}/${u.id}/roles`, A, { roleId: viewer.id, expiresAt: new Date(clock.ms - 1000).toISOString() }), 400, "validation_error", "future");
    expectError(await call("POST", `${U}/${uuid()}/roles`, A, { roleId: viewer.id }), 404, "not_found", "user");
    expectError(await call("POST", `${U}/${u.id}/roles`, A, { roleId: uuid() }), 404, "not_found", "role");
    // B cannot assign to A's user, nor use A's custom role
    expectError(await call("POST", `${U}/${u.id}/roles`, B, { roleId: viewer.id }), 404, "not_found");
    const custom = (await call("POST", R, A, { name: "custom-a", permissions: [] })).body;
    const ub = (await call("POST", U, B, { email: "b@example.com" })).body;
    expectError(await call("POST", `${U}/${ub.id}/roles`, B, { roleId: custom.id }), 404, "not_found", "role");
    expectError(await call("GET", `${U}/${u.id}/roles`, B), 404, "not_found");
  });

  test("nobody assigns what they do not hold: ManageKeys cannot make anyone admin (403)", async () => {
    const { call } = env;
    const km = await env.gw.token("tenant-a", ["ManageKeys"], "key-manager");
    const u = await user("escalate@example.com");
    const admin = (await call("GET", `${R}?name=admin`, env.A)).body.roles[0];
    const viewer = (await call("GET", `${R}?name=viewer`, env.A)).body.roles[0];
    expectError(await call("POST", `${U}/${u.id}/roles`, km, { roleId: admin.id }), 403, "authorization_error", "WorkspaceAdmin");
    expectError(await call("POST", `${U}/${u.id}/roles`, km, { roleId: viewer.id }), 403, "authorization_error", "ViewMetrics");
    const keysOnly = (await call("POST", R, km, { name: "keys only", permissions: ["ViewKeys", "ManageKeys"] })).body;
    expect((await call("POST", `${U}/${u.id}/roles`, km, { roleId: keysOnly.id })).status).toBe(201);
    // nor by editing a role someone already holds: adding a permission the caller lacks is 403 and changes nothing
    const userToken = await env.gw.token("tenant-a", [], `user:${u.id}`);
    expectError(await call("PATCH", `${R}/${keysOnly.id}`, km, { permissions: ["ViewKeys", "ManageKeys", "WorkspaceAdmin"] }), 403, "authorization_error", "WorkspaceAdmin");
    expect((await call("GET", `${R}/${keysOnly.id}`, km)).body.permissions).toEqual(["ViewKeys", "ManageKeys"]);
    expectError(await call("GET", U, userToken), 403, "authorization_error", "WorkspaceAdmin");
    // removing one, or keeping one already there, is fine; an admin may add anything
    expect((await call("PATCH", `${R}/${keysOnly.id}`, km, { permissions: ["ViewKeys"] })).body.permissions).toEqual(["ViewKeys"]);
    expect((await call("PATCH", `${R}/${keysOnly.id}`, env.A, { permissions: ["ViewKeys", "ViewLogs"] })).body.permissions).toEqual(["ViewKeys", "ViewLogs"]);
    expect((await call("PATCH", `${R}/${keysOnly.id}`, km, { permissions: ["ViewLogs"], description: "logs" })).body).toMatchObject({ permissions: ["ViewLogs"], description: "logs" });
  });

  test("nobody takes away what they could not grant: ManageKeys cannot revoke an admin role or delete a role granting more than it holds (403)", async () => {
    const { call } = env;
    const km = await env.gw.token("tenant-a", ["ManageKeys"], "key-manager");
    const boss = await user("boss@example.com");
    const admin = (await call("GET", `${R}?name=admin`, env.A)).body.roles[0];
    expect((await call("POST", `${U}/${boss.id}/roles`, env.A, { roleId: admin.id })).status).toBe(201);
    expectError(await call("DELETE", `${U}/${boss.id}/roles/${admin.id}`, km), 403, "authorization_error", "WorkspaceAdmin");
    expect((await call("GET", `${U}/${boss.id}/roles`, env.A)).body.assignments.map((a: any) => a.roleId)).toEqual([admin.id]);
    const powerful = (await call("POST", R, env.A, { name: "powerful", permissions: ["ManageKeys", "ManageConfig"] })).body;
    expect((await call("POST", `${U}/${boss.id}/roles`, env.A, { roleId: powerful.id })).status).toBe(201);
    expectError(await call("DELETE", `${R}/${powerful.id}`, km), 403, "authorization_error", "ManageConfig");
    expect((await call("GET", `${R}/${powerful.id}`, km)).status).toBe(200);
    // what the caller could grant it may take away; an admin may take away anything
    const small = (await call("POST", R, km, { name: "small", permissions: ["ViewKeys"] })).body;
    expect((await call("POST", `${U}/${boss.id}/roles`, km, { roleId: small.id })).status).toBe(201);
    expect((await call("DELETE", `${U}/${boss.id}/roles/${small.id}`, km)).status).toBe(200);
    expect((await call("DELETE", `${R}/${small.id}`, km)).status).toBe(200);
    expect((await call("DELETE", `${R}/${powerful.id}`, env.A)).status).toBe(200);
    expect((await call("DELETE", `${U}/${boss.id}/roles/${admin.id}`, env.A)).status).toBe(200);
    // an unassigned role takes nothing from anyone: deleting it needs only ManageKeys
    const unassigned = (await call("POST", R, env.A, { name: "unassigned", permissions: ["ManageConfig"] })).body;
    expect((await call("DELETE", `${R}/${unassigned.id}`, km)).status).toBe(200);
  });
});

describe("user tokens (sub user:<id>)", () => {
  test("permissions come from the unexpired assignments; an expired one grants nothing from that moment", async () => {
    const { call, A, gw } = env;
    const u = await user("expiring@example.com");
    const token = await gw.token("tenant-a", [], `user:${u.id}`);
    expectError(await call("GET", U, token), 403, "authorization_error");
    const admin = (await call("GET", `${R}?name=admin`, A)).body.roles[0];
    const exp = clock.ms + 60_000;
    await call("POST", `${U}/${u.id}/roles`, A, { roleId: admin.id, expiresAt: new Date(exp).toISOString() });
    expect((await call("GET", U, token)).status).toBe(200);
    clock.ms = exp - 1;
    expect((await call("GET", U, token)).status).toBe(200);
    clock.ms = exp;
    expectError(await call("GET", U, token), 403, "authorization_error");
    const list = (await call("GET", `${U}/${u.id}/roles`, A)).body.assignments;
    expect(list).toEqual([expect.objectContaining({ roleName: "admin", expired: true })]);
    // a scoped assignment grants nothing workspace-wide
    const viewer = (await call("GET", `${R}?name=viewer`, A)).body.roles[0];
    await call("POST", `${U}/${u.id}/roles`, A, { roleId: admin.id, scope: "teams:t1" });
    await call("POST", `${U}/${u.id}/roles`, A, { roleId: viewer.id });
    expectError(await call("GET", U, token), 403, "authorization_error");
    expect((await call("GET", "/api/v1/virtual-keys", token)).status).toBe(200);
  });

  test("a suspended or deleted user's token is refused (401) from the next request on; unknown users too", async () => {
    const { call, A, gw } = env;
    const u = await user("suspend-me@example.com");
    const admin = (await call("GET", `${R}?name=admin`, A)).body.roles[0];
    await call("POST", `${U}/${u.id}/roles`, A, { roleId: admin.id });
    const token = await gw.token("tenant-a", [], `user:${u.id}`);
    expect((await call("GET", U, token)).status).toBe(200);
    // also on the proxies: the check runs on every authenticated request
    await call("PUT", `${U}/${u.id}`, A, { status: "SUSPENDED" });
    expectError(await call("GET", U, token), 401, "authentication_error", "suspended");
    expect((await gw.api("/v1/models", { token })).status).toBe(401);
    await call("PUT", `${U}/${u.id}`, A, { status: "ACTIVE" });
    expect((await call("GET", U, token)).status).toBe(200);
    await call("DELETE", `${U}/${u.id}`, A);
    expectError(await call("GET", U, token), 401, "authentication_error", "deleted");
    const ghost = await gw.token("tenant-a", ["WorkspaceAdmin"], `user:${uuid()}`);
    expectError(await call("GET", U, ghost), 401, "authentication_error");
    // a user id of workspace A in a token of workspace B is unknown there
    const cross = await gw.token("tenant-b", [], `user:${(await user("cross@example.com")).id}`);
    expectError(await call("GET", U, cross), 401, "authentication_error");
  });

  test("the service contract: permissionsOf, findByName, assign idempotent", async () => {
    const s = env.gw.ctx.identity;
    const u = await s.users.create("tenant-svc", { email: "svc@example.com", external_id: "x1", identity_provider: "okta" });
    expect((await s.users.findByEmail("tenant-svc", "SVC@example.com"))?.id).toBe(u.id);
    expect((await s.users.findByExternalId("tenant-svc", "x1", "okta"))?.id).toBe(u.id);
    expect(await s.users.findByExternalId("tenant-svc", "x1", "azure")).toBeUndefined();
    const editor = (await s.roles.findByName("tenant-svc", "Editor"))!;
    expect(editor.is_system).toBe(true);
    await s.roles.assign("tenant-svc", u.id, { roleId: editor.id });
    await s.roles.assign("tenant-svc", u.id, { roleId: editor.id, scope: null, expiresAt: null });
    expect(await s.roles.assignments("tenant-svc", u.id)).toHaveLength(1);
    expect((await s.roles.permissionsOf("tenant-svc", u.id)).sort()).toEqual(["ManageConfig", "ManageKeys", "ViewKeys", "ViewLogs", "ViewMetrics"]);
    await s.users.remove("tenant-svc", u.id);
    expect(await s.users.get("tenant-svc", u.id)).toBeUndefined();
    expect((await s.users.list("tenant-svc", { offset: 0, limit: 10 })).total).toBe(0);
  });
});
