/**
 * /api/v1/permissions (tree, check) and /api/v1/virtual-keys/{id}/analytics over HTTP. The check
 * reads the same permission table as the routes' authorisation: for every permission and every
 * (resource type, action) the audit's answer is compared with what the gateway enforces.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, uuid, FakeWallClock, type IdentityEnv } from "./helpers";
import { ACTIONS, RESOURCE_TYPES, PERMISSION_NAMES, allows } from "../../src/core/permissions";
import { hasPermission, type Principal } from "../../src/core/auth";

const clock = new FakeWallClock(Date.parse("2030-06-12T10:30:00.000Z"));
let env: IdentityEnv;
const P = "/api/v1/permissions";
beforeAll(async () => (env = await startIdentity({}, { wallClock: clock.now })));
afterAll(() => env.gw.stop());

const roleId = async (name: string) => (await env.call("GET", `/api/v1/roles?name=${name}`, env.A)).body.roles.find((r: any) => r.name === name).id;

describe("permission audit", () => {
  test("tree: user → roles (scope, expiry) → permissions → resource actions; resource-type filter", async () => {
    const { call, A } = env;
    const u = (await call("POST", "/api/v1/users", A, { email: "tree@example.com" })).body;
    const viewer = await roleId("viewer");
    const custom = (await call("POST", "/api/v1/roles", A, { name: "key-admin", permissions: ["ManageKeys"] })).body;
    const exp = new Date(clock.ms + 60_000).toISOString();
    await call("POST", `/api/v1/users/${u.id}/roles`, A, { roleId: viewer });
    await call("POST", `/api/v1/users/${u.id}/roles`, A, { roleId: custom.id, scope: "keys:k1", expiresAt: exp });
    const tree = (await call("GET", `${P}/tree?user_id=${u.id}`, A)).body;
    expect(tree).toMatchObject({ user_id: u.id, email: "tree@example.com", status: "ACTIVE", resource_type: null, effective_permissions: ["ViewKeys", "ViewLogs", "ViewMetrics"] });
    expect(tree.roles).toHaveLength(2);
    expect(tree.roles[0]).toMatchObject({ role_id: viewer, role_name: "viewer", is_system: true, scope: "workspace", expires_at: null, expired: false });
    expect(tree.roles[0].permissions.find((p: any) => p.permission === "ViewLogs")).toEqual({ permission: "ViewLogs", grants: [{ resource_type: "logs", action: "read" }] });
    expect(tree.roles[1]).toMatchObject({ role_name: "key-admin", scope: "keys:k1", expires_at: exp, expired: false });
    expect(tree.roles[1].permissions[0].grants).toContainEqual({ resource_type: "keys", action: "delete" });
    const logsOnly = (await call("GET", `${P}/tree?user_id=${u.id}&resource_type=logs`, A)).body;
    expect(logsOnly.resource_type).toBe("logs");
    expect(logsOnly.roles[0].permissions).toEqual([{ permission: "ViewLogs", grants: [{ resource_type: "logs", action: "read" }] }]);
    expect(logsOnly.roles[1].permissions).toEqual([]);
    clock.advance(60_000);
    expect((await call("GET", `${P}/tree?user_id=${u.id}`, A)).body.roles[1].expired).toBe(true);
  });

  test("check: allowed with the granting roles; denied with the reasons (no permission, expired, out of scope)", async () => {
    const { call, A } = env;
    const u = (await call("POST", "/api/v1/users", A, { email: "check@example.com" })).body;
    const viewer = await roleId("viewer");
    const editor = await roleId("editor");
    await call("POST", `/api/v1/users/${u.id}/roles`, A, { roleId: viewer });
    await call("POST", `/api/v1/users/${u.id}/roles`, A, { roleId: editor, scope: "keys:k1" });
    const read = (await call("GET", `${P}/check?user_id=${u.id}&resource_type=logs&action=read`, A)).body;
    expect(read).toMatchObject({ allowed: true, user_id: u.id, resource_type: "logs", action: "read", resource_id: null });
    expect(read.granted_by).toEqual([expect.objectContaining({ role_name: "viewer", permissions: ["ViewLogs"], reason: "granted", scope: "workspace" })]);
    expect(read.denied_by).toEqual([expect.objectContaining({ role_name: "editor", reason: "out_of_scope" })]);
    const del = (await call("GET", `${P}/check?user_id=${u.id}&resource_type=keys&action=delete`, A)).body;
    expect(del.allowed).toBe(false);
    expect(del.denied_by.map((d: any) => [d.role_name, d.reason])).toEqual([
      ["viewer", "no_permission"],
      ["editor", "out_of_scope"],
    ]);
    const scoped = (await call("GET", `${P}/check?user_id=${u.id}&resource_type=keys&action=delete&resource_id=k1`, A)).body;
    expect(scoped.allowed).toBe(true);
    expect(scoped.granted_by).toEqual([expect.objectContaining({ role_name: "editor", permissions: ["ManageKeys"] })]);
    // an expiring grant: allowed until the moment it expires
    const u2 = (await call("POST", "/api/v1/users", A, { email: "check2@example.com" })).body;
    const admin = await roleId("admin");
    await call("POST", `/api/v1/users/${u2.id}/roles`, A, { roleId: admin, expiresAt: new Date(clock.ms + 1000).toISOString() });
    expect((await call("GET", `${P}/check?user_id=${u2.id}&resource_type=configs&action=write`, A)).body.allowed).toBe(true);
    clock.advance(1000);
    const after = (await call("GET", `${P}/check?user_id=${u2.id}&resource_type=configs&action=write`, A)).body;
    expect(after).toMatchObject({ allowed: false, denied_by: [expect.objectContaining({ role_name: "admin", reason: "expired" })] });
  });

  test("audit and enforcement read one table: for every permission, check answers what the routes enforce", async () => {
    const { call, A, gw } = env;
    for (const perm of PERMISSION_NAMES) {
      const role = (await call("POST", "/api/v1/roles", A, { name: `only ${perm}`, permissions: [perm] })).body;
      const u = (await call("POST", "/api/v1/users", A, { email: `only-${perm.toLowerCase()}@example.com` })).body;
      await call("POST", `/api/v1/users/${u.id}/roles`, A, { roleId: role.id });
      const principal: Principal = { tenantId: "tenant-a", sub: `user:${u.id}`, permissions: new Set([perm]), via: "jwt" };
      for (const resource of RESOURCE_TYPES)
        for (const action of ACTIONS) {
          const audit = (await call("GET", `${P}/check?user_id=${u.id}&resource_type=${resource}&action=${action}`, A)).body.allowed;
          expect({ perm, resource, action, audit }).toEqual({ perm, resource, action, audit: allows([perm], resource, action) });
        }
      // the routes: WorkspaceAdmin for users, ManageKeys for roles, ViewKeys to read keys
      const token = await gw.token("tenant-a", [], `user:${u.id}`);
      const routes: Array<[string, "users" | "roles" | "keys"]> = [
        ["/api/v1/users", "users"],
        ["/api/v1/roles", "roles"],
        ["/api/v1/virtual-keys", "keys"],
      ];
      for (const [path, resource] of routes) {
        const status = (await call("GET", path, token)).status;
        const audit = (await call("GET", `${P}/check?user_id=${u.id}&resource_type=${resource}&action=read`, A)).body.allowed;
        expect({ perm, path, status }).toEqual({ perm, path, status: audit ? 200 : 403 });
      }
      expect(hasPermission(principal, "ViewKeys")).toBe(allows([perm], "keys", "read"));
    }
  });

  test("validation, 404, 401/403, isolation", async () => {
    const { call, A, B, none } = env;
    const u = (await call("POST", "/api/v1/users", A, { email: "audit-iso@example.com" })).body;
    expectError(await call("GET", `${P}/tree`, A), 400, "validation_error", "user_id");
    expectError(await call("GET", `${P}/tree?user_id=${u.id}&resource_type=planets`, A), 400, "validation_error", "resource_type");
    expectError(await call("GET", `${P}/check?user_id=${u.id}&resource_type=logs`, A), 400, "validation_error", "action");
    expectError(await call("GET", `${P}/check?user_id=${u.id}&resource_type=logs&action=fly`, A), 400, "validation_error", "action");
    expectError(await call("GET", `${P}/check?user_id=${uuid()}&resource_type=logs&action=read`, A), 404, "not_found");
    expectError(await call("GET", `${P}/tree?user_id=${u.id}`, B), 404, "not_found");
    expectError(await call("GET", `${P}/check?user_id=${u.id}&resource_type=logs&action=read`, B), 404, "not_found");
    expectError(await call("GET", `${P}/tree?user_id=${u.id}`, undefined), 401, "authentication_error");
    expectError(await call("GET", `${P}/tree?user_id=${u.id}`, none), 403, "authorization_error");
  });

  test("invitations without SMTP: not e-mailed, the link built from the request's origin", async () => {
    const { call, A, gw } = env;
    const r = (await call("POST", "/api/v1/invitations", A, { emails: ["manual@example.com"] })).body;
    expect(r.invitations[0]).toMatchObject({ emailStatus: "not_configured", link: expect.stringMatching(new RegExp(`^${gw.url}/api/v1/invitations/accept\\?token=`)) });
    // the answer does not claim an e-mail went out: none was sent, and it says why and what to do
    expect(r).toMatchObject({ sent: 0, created: 1, unsent: 1, failed: 0 });
    expect(r.message).toContain("no SMTP server is configured");
    expect(r.message).toContain("link");
  });
});

describe("virtual-key analytics", () => {
  test("totals, hourly breakdown and anomalies (spend_spike, request_spike, new_model) from the key's usage records", async () => {
    const { call, A, gw } = env;
    const k = (await call("POST", "/api/v1/virtual-keys", A, { name: "analysed" })).body;
    const other = (await call("POST", "/api/v1/virtual-keys", A, { name: "other" })).body;
    const HOUR = 3_600_000;
    const nowHour = Math.floor(clock.ms / HOUR) * HOUR;
    const store = gw.ctx.usage.store("tenant-a");
    let n = 0;
    const row = (at: number, model: string, costUsd: number, keyId = k.id) =>
      store.insert({
        id: uuid(),
        tenantId: "tenant-a",
        keyId,
        requestId: `r${n++}`,
        createdAt: new Date(at).toISOString(),
        style: "openai",
        provider: "openai",
        endpoint: "chat",
        model,
        cacheStatus: "MISS",
        streamed: false,
        inputTokens: 10,
        outputTokens: 5,
        latencyMs: 1,
        costUsd,
        costSavedUsd: 0,
      });
    // history: one request of $0.01 per hour in each of the 24 hours before the last 6 hours
    // (every insert awaited: on PostgreSQL an insert is a round trip the analytics must not overtake)
    for (let h = 6; h < 30; h++) await row(nowHour - h * HOUR + 60_000, "gpt-4o", 0.01);
    // in the last 6 hours: hour -3 has 6 requests costing $0.05 each (spend 30×, requests 6×); hour -1 uses a new model
    for (let i = 0; i < 6; i++) await row(nowHour - 3 * HOUR + i * 1000, "gpt-4o", 0.05);
    await row(nowHour - HOUR + 5000, "claude-3-5-sonnet", 0.01);
    await row(nowHour - HOUR + 6000, "gpt-4o", 0.01, other.id);
    const r = await call("GET", `/api/v1/virtual-keys/${k.id}/analytics?period=6h`, A);
    expect(r.status).toBe(200);
    const a = r.body;
    expect(a).toMatchObject({ keyId: k.id, period: "6h", totalRequests: 7, totalTokens: 105, totalSpendCents: 31, baselineHours: 24 });
    expect(a.hourlyBreakdown).toHaveLength(6);
    expect(a.hourlyBreakdown.map((b: any) => b.requests)).toEqual([0, 0, 6, 0, 1, 0]);
    expect(a.hourlyBreakdown[2]).toEqual({ hour: new Date(nowHour - 3 * HOUR).toISOString(), requests: 6, tokens: 90, spendCents: 30 });
    expect(a.from).toBe(new Date(nowHour - 5 * HOUR).toISOString());
    expect(a.to).toBe(new Date(nowHour + HOUR).toISOString());
    const bucket = new Date(nowHour - 3 * HOUR).toISOString();
    expect(a.anomalies).toEqual([
      expect.objectContaining({ type: "spend_spike", bucket, value: 30 }),
      expect.objectContaining({ type: "request_spike", bucket, value: 6 }),
      expect.objectContaining({ type: "new_model", bucket: new Date(nowHour - HOUR).toISOString(), model: "claude-3-5-sonnet", value: 1, baseline: 0 }),
    ]);
    // baseline of hour -3: the 24 hours before it (-4 … -27) held 22 requests of $0.01 (hours -6 … -27)
    expect(a.anomalies[0].baseline).toBeCloseTo(22 / 24, 5);
    expect(a.anomalies[1].baseline).toBeCloseTo(22 / 24, 5);
    // the default period is 24h; 30d has 720 hourly buckets
    const day = (await call("GET", `/api/v1/virtual-keys/${k.id}/analytics`, A)).body;
    expect(day).toMatchObject({ period: "24h", totalRequests: 7 + 18 });
    expect(day.hourlyBreakdown).toHaveLength(24);
    expect((await call("GET", `/api/v1/virtual-keys/${k.id}/analytics?period=30d`, A)).body.hourlyBreakdown).toHaveLength(720);
    for (const p of ["1h", "7d"]) expect((await call("GET", `/api/v1/virtual-keys/${k.id}/analytics?period=${p}`, A)).status).toBe(200);
    expectError(await call("GET", `/api/v1/virtual-keys/${k.id}/analytics?period=2h`, A), 400, "validation_error", "period");
    expectError(await call("GET", `/api/v1/virtual-keys/${uuid()}/analytics`, A), 404, "not_found");
    expectError(await call("GET", `/api/v1/virtual-keys/${k.id}/analytics`, env.none), 403, "authorization_error");
  });
});
