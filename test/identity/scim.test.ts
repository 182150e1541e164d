/**
 * /api/v1/scim management over HTTP (doc3 §2.2, §3, §4.2): tokens (plain value once, hashed at
 * rest, masked, scopes, expiry, revoke refused at once, delete with its activity), activities
 * with filters and date range, statistics with every counter; limits, 404, 401/403, isolation.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { FakeWallClock, startIdentity, expectError, uuid, type IdentityEnv } from "./helpers";
import { PATCH_OP, SCIM_GROUP, SCIM_USER, scimClient, scimToken, expectScimError } from "./scim-helpers";

let env: IdentityEnv;
const clock = new FakeWallClock(Date.now());
const TK = "/api/v1/scim/tokens";
beforeAll(async () => (env = await startIdentity({}, { wallClock: clock.now })));
afterAll(() => env.gw.stop());

describe("SCIM tokens", () => {
  test("create: plainValue once, stored hashed, maskedValue, default scopes, no expiry", async () => {
    const r = await env.call("POST", TK, env.A, { name: "Entra ID" });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      token: {
        id: expect.any(String),
        name: "Entra ID",
        maskedValue: expect.stringMatching(/^scim_[A-Za-z0-9_-]{4}•{12}$/),
        status: "active",
        scopes: ["users:read", "users:write"],
        createdAt: new Date(clock.ms).toISOString(),
        expiry: null,
        expiresAt: null,
        lastUsedAt: null,
        revokedAt: null,
        createdBy: "admin-a",
      },
      plainValue: expect.stringMatching(/^scim_[A-Za-z0-9_-]{43}$/),
    });
    const plain: string = r.body.plainValue;
    expect(r.body.token.maskedValue.slice(0, 9)).toBe(plain.slice(0, 9));
    const row = (await env.gw.ctx.data.tenant("tenant-a").get<Record<string, string>>(`SELECT * FROM scim_tokens WHERE id = $id AND tenant_id = $tenant`, { id: r.body.token.id }))!;
    expect(JSON.stringify(row)).not.toContain(plain.slice(5));
    expect(row.hash).toMatch(/^[0-9a-f]{64}$/);
    // never again in clear
    const got = await env.call("GET", `${TK}/${r.body.token.id}`, env.A);
    expect(got.body).toEqual(r.body.token);
    expect(JSON.stringify((await env.call("GET", TK, env.A)).body)).not.toContain(plain);
    // it authenticates at the SCIM provider, and records its use
    expect((await scimClient(env.gw.url, plain)("GET", "/Users")).status).toBe(200);
    expect((await env.call("GET", `${TK}/${r.body.token.id}`, env.A)).body.lastUsedAt).toBe(new Date(clock.ms).toISOString());
  });

  test("validation: scopes a subset of the four (unknown 400), name 128, expiresInDays integer or null", async () => {
    const { call, A } = env;
    const all = ["users:read", "users:write", "groups:read", "groups:write"];
    expect((await call("POST", TK, A, { name: "all", scopes: all })).body.token.scopes).toEqual(all);
    expect((await call("POST", TK, A, { name: "g", scopes: ["groups:read"] })).body.token.scopes).toEqual(["groups:read"]);
    expectError(await call("POST", TK, A, { name: "x", scopes: ["users:read", "admin"] }), 400, "validation_error", "admin");
    expectError(await call("POST", TK, A, { name: "x", scopes: [] }), 400, "validation_error", "scopes");
    expectError(await call("POST", TK, A, { name: "x", scopes: "users:read" }), 400, "validation_error", "scopes");
    expect((await call("POST", TK, A, { name: "n".repeat(128) })).status).toBe(201);
    // a name is unique among usable tokens (409); revoked ones free it
    const dup = (await call("POST", TK, A, { name: "Okta prod" })).body.token;
    expectError(await call("POST", TK, A, { name: "OKTA PROD" }), 409, "conflict");
    await call("POST", `${TK}/${dup.id}/revoke`, A);
    expect((await call("POST", TK, A, { name: "Okta prod" })).status).toBe(201);
    expect((await call("POST", TK, env.B, { name: "Okta prod" })).status).toBe(201);
    expectError(await call("POST", TK, A, { name: "n".repeat(129) }), 400, "validation_error", "name");
    expectError(await call("POST", TK, A, { name: "" }), 400, "validation_error", "name");
    expectError(await call("POST", TK, A, {}), 400, "validation_error", "name");
    expectError(await call("POST", TK, A, { name: "x", expiresInDays: 0 }), 400, "validation_error", "expiresInDays");
    expectError(await call("POST", TK, A, { name: "x", expiresInDays: 1.5 }), 400, "validation_error", "expiresInDays");
    expectError(await call("POST", TK, A, { name: "x", expiresInDays: 3651 }), 400, "validation_error", "expiresInDays");
    expect((await call("POST", TK, A, { name: "x", expiresInDays: 3650 })).status).toBe(201);
    expect((await call("POST", TK, A, { name: "y", expiresInDays: null })).body.token.expiresAt).toBeNull();
  });

  test("revoke: refused at the SCIM provider at once; expiry: `expired` and refused; list filters; delete removes the token and its activity", async () => {
    const t = await env.gw.token("tenant-scim-life", ["WorkspaceAdmin"]);
    const a = await scimToken(env, undefined, t, { name: "alpha" });
    const b = await scimToken(env, undefined, t, { name: "beta", expiresInDays: 30 });
    const c = await scimToken(env, undefined, t, { name: "gamma" });
    const scimA = scimClient(env.gw.url, a.plain);
    expect((await scimA("POST", "/Users", { schemas: [SCIM_USER], userName: "rev@x.test" })).status).toBe(201);
    const rev = await env.call("POST", `${TK}/${a.id}/revoke`, t);
    const revokedAt = rev.body.revokedAt;
    expect(rev.body).toMatchObject({ id: a.id, status: "revoked", revokedAt: new Date(clock.ms).toISOString() });
    expectScimError(await scimA("GET", "/Users"), 401, undefined, "revoked");
    // revoking again keeps the first revocation
    clock.advance(1000);
    expect((await env.call("POST", `${TK}/${a.id}/revoke`, t)).body.revokedAt).toBe(revokedAt);
    // expiry
    const b0 = (await env.call("GET", `${TK}/${b.id}`, t)).body;
    expect(b0).toMatchObject({ status: "active" });
    expect(Date.parse(b0.expiresAt) - Date.parse(b0.createdAt)).toBe(30 * 86_400_000);
    expect(b0.expiry).toBe(b0.expiresAt); // doc3 §2.2 names the field `expiry`
    expect((await scimClient(env.gw.url, b.plain)("GET", "/Users")).status).toBe(200);
    clock.advance(30 * 86_400_000 + 1);
    expect((await env.call("GET", `${TK}/${b.id}`, t)).body.status).toBe("expired");
    expectScimError(await scimClient(env.gw.url, b.plain)("GET", "/Users"), 401, undefined, "expired");
    // list filters
    const names = async (q: string) => (await env.call("GET", `${TK}${q}`, t)).body.tokens.map((x: any) => x.name);
    expect(await names("")).toEqual(["alpha", "beta", "gamma"]);
    expect(await names("?status=active")).toEqual(["gamma"]);
    expect(await names("?status=revoked")).toEqual(["alpha"]);
    expect(await names("?status=expired")).toEqual(["beta"]);
    expect(await names("?name=MM")).toEqual(["gamma"]);
    const page = (await env.call("GET", `${TK}?page=2&pageSize=2`, t)).body;
    expect(page).toMatchObject({ total: 3, page: 2, pageSize: 2, totalPages: 2 });
    expect((await env.call("GET", `${TK}?pageSize=100`, t)).status).toBe(200);
    expectError(await env.call("GET", `${TK}?pageSize=101`, t), 400, "validation_error", "pageSize");
    expectError(await env.call("GET", `${TK}?status=gone`, t), 400, "validation_error");
    // delete: token and its activity log are gone
    expect((await env.call("GET", "/api/v1/scim/activities", t)).body.activities.filter((x: any) => x.tokenId === a.id).length).toBe(1);
    expect((await env.call("DELETE", `${TK}/${a.id}`, t)).body).toEqual({ deleted: true, id: a.id });
    expectError(await env.call("GET", `${TK}/${a.id}`, t), 404, "not_found");
    expect((await env.call("GET", "/api/v1/scim/activities", t)).body.activities.filter((x: any) => x.tokenId === a.id)).toEqual([]);
    expectError(await env.call("DELETE", `${TK}/${a.id}`, t), 404, "not_found");
    expectError(await env.call("POST", `${TK}/${uuid()}/revoke`, t), 404, "not_found");
    expectError(await env.call("GET", `${TK}/not-a-uuid`, t), 400, "validation_error");
    void c;
  });
});

describe("activities and statistics", () => {
  test("every SCIM write recorded with its outcome; filters operation, resourceType, status and a date range; statistics count them", async () => {
    const t = await env.gw.token("tenant-scim-act", ["WorkspaceAdmin"]);
    const tok = await scimToken(env, ["users:read", "users:write", "groups:read", "groups:write"], t);
    const scim = scimClient(env.gw.url, tok.plain);
    const empty = (await env.call("GET", "/api/v1/scim/statistics", t)).body;
    expect(empty).toEqual({ totalUsers: 0, totalGroups: 0, usersAdded24h: 0, usersRemoved24h: 0, groupsAdded24h: 0, groupsRemoved24h: 0, lastSyncAt: null, errorCount24h: 0, activeTokens: 1 });
    const t0 = new Date(clock.ms).toISOString();
    const u1 = (await scim("POST", "/Users", { schemas: [SCIM_USER], userName: "one@x.test" })).body;
    const u2 = (await scim("POST", "/Users", { schemas: [SCIM_USER], userName: "two@x.test" })).body;
    clock.advance(60_000);
    const t1 = new Date(clock.ms).toISOString();
    const g = (await scim("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: "Ops", members: [{ value: u1.id }] })).body;
    expect((await scim("PATCH", `/Users/${u2.id}`, { schemas: [PATCH_OP], Operations: [{ op: "replace", path: "active", value: false }] })).status).toBe(200);
    expect((await scim("POST", "/Users", { schemas: [SCIM_USER], userName: "one@x.test" })).status).toBe(409);
    expect((await scim("DELETE", `/Users/${u2.id}`)).status).toBe(204);
    expect((await scim("DELETE", `/Groups/${g.id}`)).status).toBe(204);
    const list = (await env.call("GET", "/api/v1/scim/activities", t)).body;
    expect(list).toMatchObject({ total: 7, page: 1, pageSize: 20, totalPages: 1 });
    // newest first, every field
    expect(list.activities[0]).toEqual({
      id: expect.any(String),
      tokenId: tok.id,
      operation: "delete",
      resourceType: "group",
      resourceId: g.id,
      status: "success",
      errorMessage: null,
      details: { method: "DELETE" },
      timestamp: new Date(clock.ms).toISOString(),
    });
    const failed = list.activities.find((a: any) => a.status === "error");
    expect(failed).toMatchObject({ operation: "create", resourceType: "user", resourceId: null, errorMessage: expect.stringContaining("already exists"), details: { method: "POST", userName: "one@x.test", httpStatus: 409 } });
    const patch = list.activities.find((a: any) => a.details.method === "PATCH");
    expect(patch).toMatchObject({ operation: "update", resourceType: "user", resourceId: u2.id, details: { operations: [{ op: "replace", path: "active" }] } });
    const q = async (s: string) => (await env.call("GET", `/api/v1/scim/activities?${s}`, t)).body;
    expect((await q("operation=create")).total).toBe(4);
    expect((await q("operation=create&status=success")).total).toBe(3);
    expect((await q("resourceType=group")).total).toBe(2);
    expect((await q("status=error")).activities.length).toBe(1);
    expect((await q(`endDate=${encodeURIComponent(t0)}`)).total).toBe(2);
    expect((await q(`startDate=${encodeURIComponent(t1)}`)).total).toBe(5);
    expect((await q(`startDate=${t1.slice(0, 10)}`)).total).toBe(7 - (t0.slice(0, 10) < t1.slice(0, 10) ? 2 : 0));
    // both ends inclusive: a bare date as endDate is the whole of that day (not its first instant)
    expect((await q(`endDate=${t1.slice(0, 10)}`)).total).toBe(7);
    expect((await q(`startDate=${t1.slice(0, 10)}&endDate=${t1.slice(0, 10)}`)).total).toBe(7 - (t0.slice(0, 10) < t1.slice(0, 10) ? 2 : 0));
    expect((await q("pageSize=2&page=4")).activities.length).toBe(1);
    expectError(await env.call("GET", `/api/v1/scim/activities?startDate=${encodeURIComponent(t1)}&endDate=${encodeURIComponent(t0)}`, t), 400, "validation_error", "startDate");
    expectError(await env.call("GET", "/api/v1/scim/activities?startDate=yesterday", t), 400, "validation_error", "startDate");
    expectError(await env.call("GET", "/api/v1/scim/activities?operation=read", t), 400, "validation_error");
    expectError(await env.call("GET", "/api/v1/scim/activities?resourceType=role", t), 400, "validation_error");
    expectError(await env.call("GET", "/api/v1/scim/activities?pageSize=101", t), 400, "validation_error");
    expect((await env.call("GET", "/api/v1/scim/activities?pageSize=100", t)).status).toBe(200);
    const stats = (await env.call("GET", "/api/v1/scim/statistics", t)).body;
    expect(stats).toEqual({
      totalUsers: 1,
      totalGroups: 0,
      usersAdded24h: 2,
      usersRemoved24h: 1,
      groupsAdded24h: 1,
      groupsRemoved24h: 1,
      lastSyncAt: new Date(clock.ms).toISOString(),
      errorCount24h: 1,
      activeTokens: 1,
    });
    // 24 hours later the counters are empty, the totals stay
    clock.advance(24 * 3_600_000 + 1);
    expect((await env.call("GET", "/api/v1/scim/statistics", t)).body).toMatchObject({ totalUsers: 1, usersAdded24h: 0, usersRemoved24h: 0, errorCount24h: 0, activeTokens: 1 });
  });
});

describe("authentication and isolation", () => {
  test("401 without a token, 403 without WorkspaceAdmin, workspaces never see each other's tokens or activity", async () => {
    const { call, A, B, none } = env;
    const a = await scimToken(env);
    for (const [m, p] of [
      ["GET", TK],
      ["POST", TK],
      ["GET", `${TK}/${a.id}`],
      ["POST", `${TK}/${a.id}/revoke`],
      ["DELETE", `${TK}/${a.id}`],
      ["GET", "/api/v1/scim/activities"],
      ["GET", "/api/v1/scim/statistics"],
    ] as const) {
      expectError(await call(m, p, undefined, m === "POST" ? { name: "x" } : undefined), 401, "authentication_error");
      expectError(await call(m, p, none, m === "POST" ? {} : undefined), 403, "authorization_error");
    }
    // a SCIM token is no admin credential
    expectError(await call("GET", TK, a.plain), 401, "authentication_error");
    expectError(await call("GET", `${TK}/${a.id}`, B), 404, "not_found");
    expectError(await call("POST", `${TK}/${a.id}/revoke`, B), 404, "not_found");
    expectError(await call("DELETE", `${TK}/${a.id}`, B), 404, "not_found");
    expect((await call("GET", TK, B)).body.tokens.map((x: any) => x.id)).not.toContain(a.id);
    expect((await call("GET", `${TK}/${a.id}`, A)).body.status).toBe("active");
  });
});
