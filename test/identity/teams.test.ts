/** /api/v1/teams over HTTP: CRUD, hierarchy rules, members, keys, spend; /api/v1/virtual-keys admin. */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, uuid, type IdentityEnv } from "./helpers";

let env: IdentityEnv;
const T = "/api/v1/teams";
const K = "/api/v1/virtual-keys";
beforeAll(async () => (env = await startIdentity()));
afterAll(() => env.gw.stop());

const team = async (body: Record<string, unknown>, token = env.A) => {
  const r = await env.call("POST", T, token, body);
  expect(r.status).toBe(201);
  return r.body;
};

describe("teams", () => {
  test("create with every field, get, partial update, list with includeDeleted, soft delete", async () => {
    const { call, A } = env;
    const parent = await team({ name: "Engineering" });
    expect(parent).toEqual({
      id: expect.any(String),
      name: "Engineering",
      description: "",
      parentTeamId: null,
      maxBudgetCents: null,
      budgetPeriod: "monthly",
      externalId: null,
      createdBy: "admin-a",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      deletedAt: null,
    });
    const child = await team({ name: "Platform", description: "infra", parentTeamId: parent.id, maxBudgetCents: 5000, budgetPeriod: "weekly" });
    expect(child).toMatchObject({ name: "Platform", description: "infra", parentTeamId: parent.id, maxBudgetCents: 5000, budgetPeriod: "weekly" });
    expect((await call("GET", `${T}/${child.id}`, A)).body).toEqual(child);
    const up = await call("PUT", `${T}/${child.id}`, A, { maxBudgetCents: null, budgetPeriod: "daily" });
    expect(up.body).toMatchObject({ name: "Platform", description: "infra", maxBudgetCents: null, budgetPeriod: "daily", parentTeamId: parent.id });
    expect((await call("PUT", `${T}/${child.id}`, A, { parentTeamId: null })).body.parentTeamId).toBeNull();
    const t = await env.gw.token("tenant-teams", ["WorkspaceAdmin"]);
    const a = await team({ name: "a" }, t);
    const b = await team({ name: "b", parentTeamId: a.id }, t);
    const c = await team({ name: "c", parentTeamId: b.id }, t);
    const list = (await call("GET", T, t)).body;
    expect(list).toMatchObject({ total: 3, page: 1, pageSize: 20, totalPages: 1 });
    expect(list.teams.map((x: any) => x.name)).toEqual(["a", "b", "c"]);
    expect((await call("DELETE", `${T}/${b.id}`, t)).body).toEqual({ deleted: true, id: b.id });
    // the deleted team's children move up to its parent
    expect((await call("GET", `${T}/${c.id}`, t)).body.parentTeamId).toBe(a.id);
    expectError(await call("GET", `${T}/${b.id}`, t), 404, "not_found");
    expectError(await call("GET", `${T}/${b.id}?includeDeleted=false`, t), 404, "not_found");
    // "excluded unless requested" (doc3 §2.3): a single get can request the soft-deleted team
    const gone = await call("GET", `${T}/${b.id}?includeDeleted=true`, t);
    expect(gone.status).toBe(200);
    expect(Date.parse(gone.body.deletedAt)).not.toBeNaN();
    expect(gone.body).toMatchObject({ id: b.id, name: "b" });
    expectError(await call("GET", `${T}/${b.id}?includeDeleted=true`, env.A), 404, "not_found");
    expectError(await call("GET", `${T}/${b.id}?includeDeleted=perhaps`, t), 400, "validation_error");
    expect((await call("GET", T, t)).body.teams.map((x: any) => x.name)).toEqual(["a", "c"]);
    const withDeleted = (await call("GET", `${T}?includeDeleted=true&pageSize=2&page=1`, t)).body;
    expect(withDeleted).toMatchObject({ total: 3, pageSize: 2, totalPages: 2 });
    expect(withDeleted.teams[1]).toMatchObject({ name: "b", deletedAt: expect.any(String) });
    // the name of a deleted team is free again
    expect((await call("POST", T, t, { name: "B" })).status).toBe(201);
  });

  test("parent must exist in the workspace and never make a cycle; duplicate names 409", async () => {
    const { call, A, B } = env;
    const x = await team({ name: "X" });
    const y = await team({ name: "Y", parentTeamId: x.id });
    const z = await team({ name: "Z", parentTeamId: y.id });
    expectError(await call("POST", T, A, { name: "orphan", parentTeamId: uuid() }), 404, "not_found", "parent team");
    expectError(await call("POST", T, B, { name: "theirs", parentTeamId: x.id }), 404, "not_found");
    expectError(await call("PUT", `${T}/${x.id}`, A, { parentTeamId: x.id }), 400, "validation_error", "own parent");
    expectError(await call("PUT", `${T}/${x.id}`, A, { parentTeamId: z.id }), 400, "validation_error", "cycle");
    expectError(await call("PUT", `${T}/${x.id}`, A, { parentTeamId: y.id }), 400, "validation_error", "cycle");
    expectError(await call("POST", T, A, { name: "x" }), 409, "conflict");
    expectError(await call("PUT", `${T}/${z.id}`, A, { name: "Y" }), 409, "conflict");
    expect((await call("POST", T, B, { name: "X" })).status).toBe(201);
  });

  test("validation: name, budget >= 0 or null, budgetPeriod enum, page sizes", async () => {
    const { call, A } = env;
    expectError(await call("POST", T, A, {}), 400, "validation_error", "name");
    expectError(await call("POST", T, A, { name: "" }), 400, "validation_error", "name");
    expect((await call("POST", T, A, { name: "n".repeat(128) })).status).toBe(201);
    expectError(await call("POST", T, A, { name: "n".repeat(129) }), 400, "validation_error", "name");
    // a nullable field's error names what it takes (TypeBox alone says "Expected union value")
    expectError(await call("POST", T, A, { name: "neg", maxBudgetCents: -1 }), 400, "validation_error", "maxBudgetCents': Expected an integer from 0 to 10000000000000 or null");
    expectError(await call("POST", T, A, { name: "frac", maxBudgetCents: 1.5 }), 400, "validation_error", "or null");
    expectError(await call("POST", T, A, { name: "badparent", parentTeamId: "abc" }), 400, "validation_error", "parentTeamId': Expected a string in uuid format or null");
    // 128 characters, not UTF-16 units (doc3 §8): 128 emoji are accepted, 129 are not, on create and update
    const emoji = await call("POST", T, A, { name: "😀".repeat(128) });
    expect(emoji.status).toBe(201);
    expect(emoji.body.name).toBe("😀".repeat(128));
    expectError(await call("POST", T, A, { name: "😀".repeat(129) }), 400, "validation_error", "128");
    expectError(await call("PUT", `${T}/${emoji.body.id}`, A, { name: "é".repeat(129) }), 400, "validation_error", "128");
    expect((await call("PUT", `${T}/${emoji.body.id}`, A, { name: "é".repeat(128) })).status).toBe(200);
    expectError(await call("POST", T, A, { name: "neg", maxBudgetCents: -1 }), 400, "validation_error", "maxBudgetCents");
    expectError(await call("POST", T, A, { name: "frac", maxBudgetCents: 1.5 }), 400, "validation_error", "maxBudgetCents");
    expect((await call("POST", T, A, { name: "zero", maxBudgetCents: 0 })).body.maxBudgetCents).toBe(0);
    expectError(await call("POST", T, A, { name: "p", budgetPeriod: "yearly" }), 400, "validation_error", "budgetPeriod");
    for (const p of ["daily", "weekly", "monthly"]) expect((await call("POST", T, A, { name: `period-${p}`, budgetPeriod: p })).body.budgetPeriod).toBe(p);
    expectError(await call("POST", T, A, { name: "bad parent", parentTeamId: "nope" }), 400, "validation_error", "parentTeamId");
    expect((await call("GET", `${T}?pageSize=100`, A)).status).toBe(200);
    expectError(await call("GET", `${T}?pageSize=101`, A), 400, "validation_error", "pageSize");
    expectError(await call("GET", `${T}?includeDeleted=perhaps`, A), 400, "validation_error");
    expectError(await call("GET", `${T}/${uuid()}`, A), 404, "not_found");
    expectError(await call("PUT", `${T}/${uuid()}`, A, { name: "q" }), 404, "not_found");
    expectError(await call("DELETE", `${T}/${uuid()}`, A), 404, "not_found");
    expectError(await call("GET", `${T}/${uuid()}/spend`, A), 404, "not_found");
    expectError(await call("GET", `${T}/${uuid()}/keys`, A), 404, "not_found");
  });

  test("members: add, replace, remove; unknown users 404; deleted users drop out", async () => {
    const { call, A, B } = env;
    const t = await team({ name: "Members" });
    const u1 = (await call("POST", "/api/v1/users", A, { email: "m1@example.com" })).body;
    const u2 = (await call("POST", "/api/v1/users", A, { email: "m2@example.com" })).body;
    expect((await call("POST", `${T}/${t.id}/members`, A, { userIds: [u1.id, u2.id, u1.id] })).body).toEqual({ teamId: t.id, userIds: [u1.id, u2.id], total: 2 });
    expect((await call("DELETE", `${T}/${t.id}/members/${u1.id}`, A)).body.userIds).toEqual([u2.id]);
    expect((await call("PUT", `${T}/${t.id}/members`, A, { userIds: [u1.id] })).body.userIds).toEqual([u1.id]);
    expectError(await call("POST", `${T}/${t.id}/members`, A, { userIds: [uuid()] }), 404, "not_found", "user");
    const ub = (await call("POST", "/api/v1/users", B, { email: "mb@example.com" })).body;
    expectError(await call("POST", `${T}/${t.id}/members`, A, { userIds: [ub.id] }), 404, "not_found");
    expectError(await call("GET", `${T}/${t.id}/members`, B), 404, "not_found");
    await call("DELETE", `/api/v1/users/${u1.id}`, A);
    expect((await call("GET", `${T}/${t.id}/members`, A)).body).toEqual({ teamId: t.id, userIds: [], total: 0 });
    // the service contract
    const s = env.gw.ctx.identity.teams;
    await s.setMembers("tenant-a", t.id, [u2.id]);
    expect(await s.members("tenant-a", t.id)).toEqual([u2.id]);
    await s.removeMembers("tenant-a", t.id, [u2.id]);
    expect(await s.members("tenant-a", t.id)).toEqual([]);
    const scim = await s.create("tenant-a", { name: "scim group", external_id: "grp-1" });
    expect((await s.findByExternalId("tenant-a", "grp-1"))?.id).toBe(scim.id);
    expect((await s.findByName("tenant-a", "SCIM Group"))?.id).toBe(scim.id);
    expect((await s.update("tenant-a", scim.id, { external_id: null })).external_id).toBeNull();
  });

  test("tenant isolation: B never sees or changes A's teams", async () => {
    const { call, A, B } = env;
    const t = await team({ name: "A private" });
    for (const [m, p, body] of [
      ["GET", `${T}/${t.id}`],
      ["PUT", `${T}/${t.id}`, { name: "mine" }],
      ["DELETE", `${T}/${t.id}`],
      ["GET", `${T}/${t.id}/keys`],
      ["GET", `${T}/${t.id}/spend`],
    ] as const)
      expectError(await call(m, p, B, body), 404, "not_found");
    expect((await call("GET", `${T}?includeDeleted=true&pageSize=100`, B)).body.teams.some((x: any) => x.id === t.id)).toBe(false);
    expect((await call("GET", `${T}/${t.id}`, A)).body.name).toBe("A private");
  });

  test("401 / 403 (WorkspaceAdmin) before validation", async () => {
    const { call, none } = env;
    expectError(await call("POST", T, undefined, {}), 401, "authentication_error");
    expectError(await call("POST", T, none, {}), 403, "authorization_error");
    expectError(await call("GET", T, none), 403, "authorization_error");
    const km = await env.gw.token("tenant-a", ["ManageKeys"]);
    expectError(await call("GET", T, km), 403, "authorization_error");
  });
});

describe("virtual keys", () => {
  test("create for a team (key shown once), list, get, assign, unassign; team keys; deleting the team unlinks without revoking", async () => {
    const { call, A } = env;
    const t1 = await team({ name: "Keys team" });
    const t2 = await team({ name: "Other keys team" });
    const c = await call("POST", K, A, { name: "ci", permissions: ["ViewKeys"], teamId: t1.id });
    expect(c.status).toBe(201);
    expect(c.body).toEqual({
      key: expect.stringMatching(/^svc_/),
      id: expect.any(String),
      name: "ci",
      prefix: c.body.key.slice(0, 12),
      permissions: ["ViewKeys"],
      teamId: t1.id,
      status: "active",
      createdAt: expect.any(String),
      lastUsedAt: null,
      revokedAt: null,
    });
    const { key, ...view } = c.body;
    expect((await call("GET", `${K}/${view.id}`, A)).body).toEqual(view);
    const loose = (await call("POST", K, A, { name: "loose" })).body;
    expect(loose.teamId).toBeNull();
    const listed = (await call("GET", `${K}?teamId=${t1.id}`, A)).body;
    expect(listed).toMatchObject({ total: 1, page: 1, pageSize: 20 });
    expect(listed.keys[0]).toEqual(view);
    expect((await call("GET", `${T}/${t1.id}/keys`, A)).body).toEqual({ keys: [view], total: 1 });
    expect((await call("PUT", `${K}/${loose.id}/team`, A, { teamId: t2.id })).body.teamId).toBe(t2.id);
    expect((await call("PUT", `${K}/${loose.id}/team`, A, { teamId: null })).body.teamId).toBeNull();
    expectError(await call("PUT", `${K}/${loose.id}/team`, A, { teamId: uuid() }), 404, "not_found", "team");
    // the key works on the proxies until revoked
    expect((await env.gw.api("/api/v1/virtual-keys", { token: key })).status).toBe(200);
    await call("DELETE", `${T}/${t1.id}`, A);
    const after = (await call("GET", `${K}/${view.id}`, A)).body;
    expect(after).toMatchObject({ teamId: null, status: "active" });
    const revoked = await call("DELETE", `${K}/${view.id}`, A);
    expect(revoked.body).toMatchObject({ id: view.id, status: "revoked", revokedAt: expect.any(String) });
    expect((await call("DELETE", `${K}/${view.id}`, A)).body.status).toBe("revoked");
    expect((await env.gw.api("/api/v1/virtual-keys", { token: key })).status).toBe(401);
    expect((await call("GET", `${K}?status=revoked`, A)).body.keys.map((k: any) => k.id)).toContain(view.id);
    expect((await call("GET", `${K}?status=active`, A)).body.keys.map((k: any) => k.id)).not.toContain(view.id);
  });

  test("permissions: ViewKeys reads, ManageKeys writes, a key carries only what its creator holds", async () => {
    const { call, none } = env;
    const viewer = await env.gw.token("tenant-a", ["ViewKeys"]);
    const manager = await env.gw.token("tenant-a", ["ManageKeys"]);
    expectError(await call("GET", K, none), 403, "authorization_error");
    expect((await call("GET", K, viewer)).status).toBe(200);
    expectError(await call("POST", K, viewer, { name: "x" }), 403, "authorization_error", "ManageKeys");
    expect((await call("POST", K, manager, { name: "x", permissions: ["ViewKeys"] })).status).toBe(201);
    expectError(await call("POST", K, manager, { name: "x", permissions: ["WorkspaceAdmin"] }), 403, "authorization_error", "WorkspaceAdmin");
    expectError(await call("POST", K, manager, { name: "" }), 400, "validation_error", "name");
    expectError(await call("POST", K, manager, { name: "x", permissions: ["Fly"] }), 400, "validation_error", "permissions");
    expectError(await call("GET", `${K}?pageSize=101`, viewer), 400, "validation_error");
    expectError(await call("GET", `${K}/${uuid()}`, viewer), 404, "not_found");
    expectError(await call("DELETE", `${K}/${uuid()}`, manager), 404, "not_found");
  });

  test("isolation: B never sees, assigns or revokes A's keys", async () => {
    const { call, A, B } = env;
    const k = (await call("POST", K, A, { name: "a-key" })).body;
    const tb = await team({ name: "B team" }, B);
    expectError(await call("GET", `${K}/${k.id}`, B), 404, "not_found");
    expectError(await call("DELETE", `${K}/${k.id}`, B), 404, "not_found");
    expectError(await call("PUT", `${K}/${k.id}/team`, B, { teamId: tb.id }), 404, "not_found");
    expectError(await call("GET", `${K}/${k.id}/analytics`, B), 404, "not_found");
    expect((await call("GET", `${K}?pageSize=100`, B)).body.keys.some((x: any) => x.id === k.id)).toBe(false);
    // A cannot put its key into B's team either
    expectError(await call("PUT", `${K}/${k.id}/team`, A, { teamId: tb.id }), 404, "not_found", "team");
  });
});
