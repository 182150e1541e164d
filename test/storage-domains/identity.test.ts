/**
 * The identity domain's services over the async storage, on both backends (SQLite and a real
 * PostgreSQL, test/storage/backends.ts): the main operations, tenant isolation, the transactions
 * (rolled back on a refusal, nested ones in an invitation's acceptance, concurrent creates), and
 * every query that differs between the dialects (JSON arrays and paths, LIKE over folded text, the
 * recursive team tree, ON CONFLICT DO NOTHING, the insertion-order tie-break, unique violations).
 * The HTTP behaviour is tested in test/identity/ (SQLite).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import type { AsyncStorage } from "../../src/storage/async";
import { StorageConstraintError } from "../../src/storage/errors";
import { loadConfig } from "../../src/config";
import { identityServices, type IdentityServices, type KeyRecord, type KeyRegistry } from "../../src/identity";
import { IDENTITY_MIGRATIONS } from "../../src/identity/migrations";
import { UserStore } from "../../src/identity/users/store";
import { SsoDirectory, SsoStore } from "../../src/identity/sso/store";
import { PasswordStore, resetByHash } from "../../src/identity/passwords/store";
import { ApiError } from "../../src/core/errors";
import type { Principal } from "../../src/core/auth";

const config = loadConfig({}, { identity: { passwords: { argon2_memory_kib: 8_192, argon2_time_cost: 1 } } }).identity;

/** keys in memory (the keys domain is not under test here) */
function memoryKeys(): KeyRegistry {
  const keys: KeyRecord[] = [];
  return {
    create(tenantId, name, permissions = []) {
      const record: KeyRecord = { id: crypto.randomUUID(), tenantId, name, prefix: "svc_", permissions, createdAt: new Date().toISOString(), lastUsedAt: null, revokedAt: null };
      keys.push(record);
      return { key: `svc_${record.id}`, record };
    },
    list: (t) => keys.filter((k) => k.tenantId === t),
    get: (t, id) => keys.find((k) => k.tenantId === t && k.id === id),
    revoke(t, id) {
      const k = keys.find((k) => k.tenantId === t && k.id === id);
      if (k) k.revokedAt = new Date().toISOString();
    },
  };
}

const status = async (p: Promise<unknown>) => {
  try {
    await p;
    return 200;
  } catch (e) {
    if (e instanceof ApiError) return e.status;
    throw e;
  }
};

eachBackend("identity", (b) => {
  let storage: AsyncStorage;
  let s: IdentityServices;
  /** a wall clock that stands still: rows created in one test share created_at (the tie-break is tested) */
  let nowMs = Date.parse("2030-06-12T10:30:00.000Z");
  const spend = new Map<string, number>();
  beforeAll(async () => {
    storage = await b.open();
    await storage.migrate([{ domain: "identity", migrations: IDENTITY_MIGRATIONS }]);
    s = identityServices({
      config,
      storage,
      keys: memoryKeys(),
      usage: { flush() {}, spendUsd: (_t, keyIds) => keyIds.reduce((n, k) => n + (spend.get(k) ?? 0), 0), hourly: () => [], modelsBefore: () => [] },
      secret: "identity-storage-test",
      clock: () => nowMs,
      outbound: () => Promise.reject(new Error("no network in this test")),
      allowInsecureIdp: false,
      tokens: { sign: async (c) => `token-for-${c.sub}`, maxTtlSecs: 3600 },
      dataPath: ":memory:",
      warn: () => {},
    });
  }, SETUP_TIMEOUT);

  test("users: case-insensitive unique e-mail, search with LIKE metacharacters, SCIM userName by JSON path, id lists, isolation", async () => {
    const a = await s.users.create("t1", { email: "Ann_Lee@example.com", name: "Ann 100% Lee" });
    const b2 = await s.users.create("t1", { email: "bob@example.com", metadata: { scim: { userName: "Bobby.Tables" } } });
    await s.users.create("t2", { email: "ann_lee@example.com" });
    expect(await status(s.users.create("t1", { email: "ANN_LEE@example.com" }))).toBe(409);
    // `_` and `%` are literal in a search; the fold makes it case-insensitive
    expect((await s.users.list("t1", { offset: 0, limit: 10, search: "N_L" })).items.map((u) => u.id)).toEqual([a.id]);
    expect((await s.users.list("t1", { offset: 0, limit: 10, search: "nxl" })).total).toBe(0);
    expect((await s.users.list("t1", { offset: 0, limit: 10, search: "100%" })).items.map((u) => u.id)).toEqual([a.id]);
    expect((await s.users.findByLogin("t1", "bobby.TABLES")).map((u) => u.id)).toEqual([b2.id]);
    expect((await s.users.findByLogin("t1", "BOB@example.com")).map((u) => u.id)).toEqual([b2.id]);
    expect(await s.users.emailsOf("t1", [a.id, b2.id, crypto.randomUUID()])).toEqual(new Map([[a.id, a.email], [b2.id, b2.email]]));
    // another workspace sees none of it
    expect(await s.users.get("t2", a.id)).toBeUndefined();
    expect((await s.users.list("t2", { offset: 0, limit: 10 })).total).toBe(1);
    // same created_at (the clock stands still): listed in insertion order
    const more = [];
    for (let i = 0; i < 5; i++) more.push((await s.users.create("t1", { email: `z${9 - i}@example.com` })).id);
    expect((await s.users.list("t1", { offset: 2, limit: 10 })).items.map((u) => u.id)).toEqual(more);
    // soft delete: gone from lookups, the e-mail is free again
    await s.users.remove("t1", a.id);
    expect(await s.users.findByEmail("t1", a.email)).toBeUndefined();
    expect((await s.users.view("t1", a.id)).deleted_at).not.toBeNull();
    await s.users.create("t1", { email: a.email });
  });

  test("a unique violation is a StorageConstraintError of kind unique; concurrent creates of one e-mail give one user and one 409", async () => {
    const store = new UserStore(storage.tenant("t-unique"), storage.dialect);
    const at = new Date(nowMs).toISOString();
    const user = { id: crypto.randomUUID(), email: "dup@example.com", name: null, external_id: null, identity_provider: null, metadata: {}, status: "ACTIVE" as const, created_at: at, updated_at: at, deleted_at: null };
    await store.insert(user);
    const err = await store.insert({ ...user, id: crypto.randomUUID(), email: "DUP@example.com" }).catch((e) => e);
    expect(err).toBeInstanceOf(StorageConstraintError);
    expect((err as StorageConstraintError).kind).toBe("unique");
    const results = await Promise.all([0, 1, 2].map(() => status(s.users.create("t-race", { email: "race@example.com" }))));
    expect(results.sort()).toEqual([200, 409, 409]);
    expect((await s.users.list("t-race", { offset: 0, limit: 10 })).total).toBe(1);
  });

  test("roles: filter by a permission inside the JSON array and by name; assignments grant until revoked; a deleted role takes its assignments along", async () => {
    const u = await s.users.create("t3", { email: "r@example.com" });
    const ops = await s.roles.create("t3", { name: "Ops_Team", permissions: ["ViewLogs", "ViewMetrics"] });
    await s.roles.create("t3", { name: "Auditors", permissions: ["ViewLogs"] });
    await s.roles.create("t4", { name: "Ops_Team", permissions: ["ManageKeys"] });
    expect(await status(s.roles.create("t3", { name: "ops_team" }))).toBe(409);
    const custom = async (q: { name?: string; permission?: string }) => (await s.roles.list("t3", { ...q, is_system: false, offset: 0, limit: 10 })).items.map((r) => r.name);
    expect(await custom({ permission: "ViewMetrics" })).toEqual(["Ops_Team"]);
    expect(await custom({ permission: "ViewLogs" })).toEqual(["Auditors", "Ops_Team"]);
    expect(await custom({ name: "s_t" })).toEqual(["Ops_Team"]);
    expect(await custom({ name: "sxt" })).toEqual([]);
    const first = await s.roles.assign("t3", u.id, { roleId: ops.id });
    const again = await s.roles.assign("t3", u.id, { roleId: ops.id });
    expect([first.created, again.created]).toEqual([true, false]);
    expect((await s.roles.permissionsOf("t3", u.id)).sort()).toEqual(["ViewLogs", "ViewMetrics"]);
    expect(await s.roles.permissionsOf("t4", u.id)).toEqual([]);
    await s.roles.remove("t3", ops.id);
    expect(await s.roles.assignments("t3", u.id)).toEqual([]);
  });

  test("teams: the recursive tree refuses a cycle and rolls the update back; members added twice once; spend over the subtree's keys", async () => {
    const root = await s.teams.create("t5", { name: "root", maxBudgetCents: 1000 });
    const mid = await s.teams.create("t5", { name: "mid", parentTeamId: root.id });
    const leaf = await s.teams.create("t5", { name: "leaf", parentTeamId: mid.id });
    expect(await status(s.teams.update("t5", root.id, { name: "renamed", parentTeamId: leaf.id }))).toBe(400);
    expect((await s.teams.require("t5", root.id)).name).toBe("root");
    expect(await s.teams.get("t6", root.id)).toBeUndefined();
    const u1 = await s.users.create("t5", { email: "m1@example.com" });
    const u2 = await s.users.create("t5", { email: "m2@example.com" });
    await s.teams.addMembers("t5", leaf.id, [u1.id, u2.id]);
    await s.teams.addMembers("t5", leaf.id, [u1.id]);
    expect(await s.teams.members("t5", leaf.id)).toEqual([u1.id, u2.id]);
    expect(await status(s.teams.addMembers("t5", leaf.id, [crypto.randomUUID()]))).toBe(404);
    expect((await s.teams.memberships("t5", u2.id)).get(u2.id)).toEqual([{ value: leaf.id, display: "leaf" }]);
    const k1 = await s.keys.create("t5", { name: "leaf key", teamId: leaf.id });
    const k2 = await s.keys.create("t5", { name: "root key", teamId: root.id });
    spend.set(k1.id, 1.5);
    spend.set(k2.id, 2);
    expect(await s.teams.spend("t5", root.id)).toMatchObject({ totalSpendCents: 350, teamSpendCents: 200, totalKeys: 1 });
    expect((await s.keys.list("t5", { teamId: leaf.id, offset: 0, limit: 10 })).items.map((k) => k.id)).toEqual([k1.id]);
    // soft delete: the leaf's key is unlinked, its children (none) reparented; the subtree shrinks
    await s.teams.remove("t5", mid.id);
    expect((await s.teams.require("t5", leaf.id)).parentTeamId).toBe(root.id);
    await s.teams.remove("t5", leaf.id);
    expect(await s.teams.teamOfKey("t5", k1.id)).toBeNull();
    expect((await s.teams.spend("t5", root.id)).totalSpendCents).toBe(200);
  });

  test("the budget guard reads the key's chain once, then admits from memory; a team change is seen after invalidation", async () => {
    const team = await s.teams.create("t7", { name: "budgeted", maxBudgetCents: 100 });
    const key = await s.keys.create("t7", { name: "k", teamId: team.id });
    const spender = { tenantId: "t7", sub: "k", keyId: key.id };
    const first = s.guard.admit(spender, "m");
    expect(first).toBeInstanceOf(Promise);
    (await first).settle(0);
    const warm = s.guard.admit(spender, "m");
    expect(warm).not.toBeInstanceOf(Promise);
    (warm as { settle(c: number): void }).settle(1.5);
    expect(await status(Promise.resolve().then(() => s.guard.admit(spender, "m")))).toBe(429);
    await s.teams.update("t7", team.id, { maxBudgetCents: 1000 });
    (await s.guard.admit(spender, "m")).settle(0);
  });

  test("the per-request check: a miss loads (async), a hit answers synchronously; a suspension is refused at once", async () => {
    const u = await s.users.create("t8", { email: "check@example.com" });
    const viewer = (await s.roles.findByName("t8", "viewer"))!;
    await s.roles.assign("t8", u.id, { roleId: viewer.id });
    const p: Principal = { tenantId: "t8", sub: `user:${u.id}`, permissions: new Set(), via: "jwt" };
    const loaded = s.access.check(p);
    expect(loaded).toBeInstanceOf(Promise);
    expect([...((await loaded) as Principal).permissions].sort()).toEqual([...viewer.permissions].sort());
    const hit = s.access.check(p);
    expect(hit).not.toBeInstanceOf(Promise);
    await s.users.update("t8", u.id, { status: "SUSPENDED" });
    expect(await status(Promise.resolve().then(() => s.access.check(p)))).toBe(401);
    // another workspace's token for the same id finds no user
    expect(await status(Promise.resolve().then(() => s.access.check({ ...p, tenantId: "t9" })))).toBe(401);
  });

  test("two replicas on one database: a user, role and team written through one are read through the other; concurrent creates across them give one user", async () => {
    const other = identityServices({
      config,
      storage: await b.open(),
      keys: memoryKeys(),
      usage: { flush() {}, spendUsd: () => 0, hourly: () => [], modelsBefore: () => [] },
      secret: "identity-storage-test",
      clock: () => nowMs,
      outbound: () => Promise.reject(new Error("no network in this test")),
      allowInsecureIdp: false,
      tokens: { sign: async (c) => `token-for-${c.sub}`, maxTtlSecs: 3600 },
      dataPath: ":memory:",
      warn: () => {},
    });
    const u = await s.users.create("t17", { email: "replica@example.com" });
    const role = await s.roles.create("t17", { name: "Shared", permissions: ["ViewLogs"] });
    await s.roles.assign("t17", u.id, { roleId: role.id });
    const team = await s.teams.create("t17", { name: "shared team" });
    await s.teams.addMembers("t17", team.id, [u.id]);
    expect((await other.users.findByEmail("t17", "REPLICA@example.com"))?.id).toBe(u.id);
    expect(await other.roles.permissionsOf("t17", u.id)).toEqual(["ViewLogs"]);
    expect(await other.teams.members("t17", team.id)).toEqual([u.id]);
    const results = await Promise.all([s, other, s, other].map((x) => status(x.users.create("t17", { email: "both@example.com" }))));
    expect(results.sort()).toEqual([200, 409, 409, 409]);
    expect((await other.users.list("t17", { offset: 0, limit: 10, search: "both@" })).total).toBe(1);
  });

  test("the per-request check does not cache a load that a change overtook", async () => {
    const u = await s.users.create("t16", { email: "race@example.com" });
    const p: Principal = { tenantId: "t16", sub: `user:${u.id}`, permissions: new Set(), via: "jwt" };
    const pending = s.access.check(p);
    expect(pending).toBeInstanceOf(Promise);
    // a change lands while the load is in flight (here: before it resolves): its answer serves its own
    // request but is not kept, so the next request reads the user again
    s.access.forget("t16", u.id);
    await pending;
    expect(s.access.check(p)).toBeInstanceOf(Promise);
    await s.access.check(p);
    expect(s.access.check(p)).not.toBeInstanceOf(Promise);
  });

  test("invitations: acceptance runs nested transactions (user, role, password) in one; a refused acceptance leaves nothing", async () => {
    const role = await s.roles.create("t10", { name: "Invited", permissions: ["ViewLogs"] });
    const out = await s.invitations.create("t10", { emails: ["new@example.com", "bad address", "new@example.com"], roleId: role.id }, "admin", "http://svc.test");
    expect(out.created).toBe(1);
    expect(out.failures.map((f) => f.reason)).toEqual(["not a valid e-mail address", "listed twice in this request"]);
    const token = out.invitations[0]!.link!.split("token=")[1]!;
    expect(await status(s.invitations.accept(token, { password: "short" }))).toBe(400);
    expect(await s.users.findByEmail("t10", "new@example.com")).toBeUndefined();
    const accepted = await s.invitations.accept(token, { name: "New", password: "a long enough passphrase 42" });
    expect(accepted).toMatchObject({ workspace: "t10", passwordSet: true, invitation: { status: "accepted" } });
    expect(await s.roles.permissionsOf("t10", accepted.user.id)).toEqual(["ViewLogs"]);
    expect(await s.passwords.hasPassword("t10", accepted.user.id)).toBe(true);
    expect(await status(s.invitations.accept(token, { password: "a long enough passphrase 42" }))).toBe(409);
    expect((await s.invitations.list("t10", { status: "accepted", offset: 0, limit: 10 }, "")).total).toBe(1);
    expect((await s.invitations.list("t10", { email: "W@E", offset: 0, limit: 10 }, "")).total).toBe(1);
    // the sign-in finds the account across workspaces
    expect(await s.passwords.login({ email: "NEW@example.com", password: "a long enough passphrase 42" }, "127.0.0.1")).toMatchObject({ accessToken: `token-for-user:${accepted.user.id}` });
  });

  test("SSO: connections and domains per workspace, a verified domain unique across workspaces, sign-in state and replay refusal", async () => {
    const oidc = { issuerUrl: "https://idp.example.com", clientId: "c", clientSecret: "secret" };
    const c = await s.sso.create("t11", { name: "Okta_1", protocol: "oidc", oidcConfig: oidc });
    expect(await status(s.sso.create("t11", { name: "okta_1", protocol: "oidc", oidcConfig: oidc }))).toBe(409);
    await s.sso.create("t12", { name: "Okta_1", protocol: "oidc", oidcConfig: oidc });
    expect((await s.sso.list("t11", { name: "A_1", offset: 0, limit: 10 })).items.map((x) => x.id)).toEqual([c.id]);
    expect((await s.sso.list("t11", { name: "Ax1", offset: 0, limit: 10 })).total).toBe(0);
    const added = await s.sso.addDomain("t11", c.id, { domain: `d${crypto.randomUUID().slice(0, 8)}.example.com` });
    expect(added.domain).toMatchObject({ status: "pending", isPrimary: true });
    expect((await s.sso.get("t11", c.id)).domains).toHaveLength(1);
    expect(await status(s.sso.get("t12", c.id))).toBe(404);
    await s.sso.remove("t11", c.id);
    expect((await s.sso.list("t11", { offset: 0, limit: 10 })).total).toBe(0);
  });

  test("SCIM tokens: a presented token names its workspace; revoked is refused; activity statistics count by kind", async () => {
    const { token, plainValue } = await s.scimTokens.create("t13", { name: "Entra_ID" });
    expect(await status(s.scimTokens.create("t13", { name: "entra_id" }))).toBe(409);
    const req = (v: string) => new Request("http://svc.test/scim/v2/Users", { headers: { authorization: `Bearer ${v}` } });
    expect(await s.scimTokens.authenticate(req(plainValue))).toMatchObject({ tenantId: "t13", sub: `scim:${token.id}` });
    expect((await s.scimTokens.list("t13", { name: "A_I", offset: 0, limit: 10 })).items.map((t) => t.id)).toEqual([token.id]);
    expect((await s.scimTokens.list("t14", { offset: 0, limit: 10 })).total).toBe(0);
    await s.scim.writeUser("t13", undefined, { userName: "sam@example.com" });
    await s.scim.writeGroup("t13", undefined, { displayName: "group" }, `scim:${token.id}`);
    await s.scimActivities.record("t13", { tokenId: token.id, operation: "create", resourceType: "user", resourceId: null, status: "success", errorMessage: null, details: {} });
    await s.scimActivities.record("t13", { tokenId: token.id, operation: "create", resourceType: "user", resourceId: null, status: "error", errorMessage: "x", details: {} });
    expect(await s.scimActivities.statistics("t13")).toMatchObject({ totalUsers: 1, totalGroups: 1, usersAdded24h: 1, errorCount24h: 1, activeTokens: 1 });
    await s.scimTokens.revoke("t13", token.id);
    expect(await status(s.scimTokens.authenticate(req(plainValue)))).toBe(401);
    await s.scimTokens.remove("t13", token.id);
    expect((await s.scimActivities.list("t13", { offset: 0, limit: 10 })).total).toBe(0);
  });

  test("sign-in state, SAML replay, domain status and primary, reset links, assignment expiry, invitation status by expiry", async () => {
    const t = "t15";
    const c = await s.sso.create(t, { name: "saml", protocol: "oidc", oidcConfig: { issuerUrl: "https://idp.example.com", clientId: "c", clientSecret: "s" } });
    const d1 = (await s.sso.addDomain(t, c.id, { domain: `a${crypto.randomUUID().slice(0, 8)}.example.com` })).domain;
    const d2 = (await s.sso.addDomain(t, c.id, { domain: `b${crypto.randomUUID().slice(0, 8)}.example.com` })).domain;
    const store = new SsoStore(storage.tenant(t));
    const dir = new SsoDirectory(storage.global("test: cross-workspace SSO lookups"));
    const at = new Date(nowMs).toISOString();
    await store.setDomainStatus(d2.id, "verified", at, null);
    expect(await store.domain(c.id, d2.id)).toMatchObject({ status: "verified", verified_at: at, last_error: null });
    await store.setDomainStatus(d1.id, "failed", at, "no TXT record");
    expect(await store.domain(c.id, d1.id)).toMatchObject({ status: "failed", verified_at: null, last_error: "no TXT record" });
    await s.sso.setPrimary(t, c.id, d2.id);
    expect((await s.sso.get(t, c.id)).domains.map((d) => [d.id, d.isPrimary])).toEqual([[d1.id, false], [d2.id, true]]);
    expect(await dir.routeOf(d2.domain)).toEqual({ tenantId: t, connectionId: c.id });
    expect(await dir.verifiedOwner(d1.domain)).toBeUndefined();
    expect(await s.sso.verifiedDomains(t, c.id)).toEqual([d2.domain]);
    await store.insertLogin({ id: "state-1", connection_id: c.id, protocol: "oidc", nonce: "n", code_verifier: "v", request_id: null, redirect_uri: "https://svc/cb", created_at: at, expires_at: new Date(nowMs + 60_000).toISOString() });
    await store.insertLogin({ id: "state-2", connection_id: c.id, protocol: "oidc", nonce: null, code_verifier: null, request_id: null, redirect_uri: "https://svc/cb", created_at: at, expires_at: new Date(nowMs - 1).toISOString() });
    expect(await store.pendingLogins()).toBe(2);
    await store.pruneLogins(at);
    expect(await store.pendingLogins()).toBe(1);
    expect(await dir.login("state-1")).toMatchObject({ tenant_id: t, nonce: "n" });
    expect([await store.consumeLogin("state-1"), await store.consumeLogin("state-1")]).toEqual([true, false]);
    expect([await store.rememberAssertion(c.id, "_a1", at), await store.rememberAssertion(c.id, "_a1", at)]).toEqual([true, false]);
    await s.sso.removeDomain(t, c.id, d1.id);
    expect(await status(s.sso.removeDomain(t, c.id, d1.id))).toBe(404);

    // password reset links: found by hash across workspaces, used once, the others voided
    const u = await s.users.create(t, { email: "reset@example.com" });
    const p = new PasswordStore(storage.tenant(t));
    await p.set(u.id, "hash-1", at);
    await p.set(u.id, "hash-2", at);
    expect(await p.hashOf(u.id)).toBe("hash-2");
    for (const id of ["r1", "r2"]) await p.insertReset({ id, tenant_id: t, user_id: u.id, expires_at: at, used_at: null, created_at: at }, `h-${id}`);
    expect(await resetByHash(storage.global("test: reset link"), "h-r1")).toMatchObject({ id: "r1", tenant_id: t, used_at: null });
    expect([await p.useReset("r1", at), await p.useReset("r1", at)]).toEqual([true, false]);
    await p.voidResets(u.id, at);
    expect(await p.useReset("r2", at)).toBe(false);
    expect(await p.passwordLogin()).toBeUndefined();
    await p.setPasswordLogin(false, at);
    await p.setPasswordLogin(true, at);
    expect(await p.passwordLogin()).toBe(true);

    // an assignment's expiry is updated in place, by whom kept when not given; it stops granting once passed
    const role = await s.roles.create(t, { name: "Temp", permissions: ["ViewLogs"] });
    await s.roles.assign(t, u.id, { roleId: role.id, expiresAt: new Date(nowMs + 60_000).toISOString() }, "admin");
    await s.roles.assign(t, u.id, { roleId: role.id, expiresAt: new Date(nowMs + 120_000).toISOString() });
    expect(await s.roles.assignments(t, u.id)).toMatchObject([{ assignedBy: "admin", expiresAt: new Date(nowMs + 120_000).toISOString(), expired: false }]);
    expect(await s.roles.revoke(t, u.id, role.id, "workspace")).toBe(1);

    // invitations: pending until expiry, then listed as expired; a resend makes it pending again
    const inv = (await s.invitations.create(t, { emails: ["later@example.com"] }, undefined, "http://svc.test")).invitations[0]!;
    expect(await status(s.invitations.create(t, { emails: ["later@example.com"] }, undefined, "http://svc.test").then((r) => (r.failures.length ? Promise.reject(new ApiError("conflict", r.failures[0]!.reason)) : r)))).toBe(409);
    const saved = nowMs;
    nowMs += config.invitation_ttl_hours * 3_600_000 + 1;
    try {
      expect((await s.invitations.list(t, { status: "expired", offset: 0, limit: 10 }, "")).items.map((i) => i.id)).toEqual([inv.id]);
      expect((await s.invitations.resend(t, inv.id, "")).status).toBe("pending");
      expect((await s.invitations.list(t, { status: "pending", offset: 0, limit: 10 }, "")).total).toBe(1);
      expect((await s.invitations.revoke(t, inv.id, "")).status).toBe("revoked");
    } finally {
      nowMs = saved;
    }
  });
});

describe("identity migrations", () => {
  test("every identity migration has a PostgreSQL side", () => {
    for (const m of IDENTITY_MIGRATIONS) expect(typeof m.up === "object" && typeof (m.up as { postgres: unknown }).postgres).toBe("string");
  });
});
