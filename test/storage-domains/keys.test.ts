/**
 * The keys domain (API keys) over the async storage, the same tests on bun:sqlite and PostgreSQL:
 * create/list/get/revoke and tenant isolation; verification across two storages on one database
 * (two "replicas"); the hot path — a key verified in the last 5 s answers from memory, without a
 * promise and without the database; one lookup for a burst of requests with an unseen key; a
 * revocation racing a lookup; and migration 0002 (the order of keys created in one millisecond).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { KEYS_MIGRATIONS } from "../../src/keys";
import { ApiKeyService } from "../../src/keys/service";
import { keyStores } from "../../src/keys/store";
import { Authenticator, TokenService, type Principal } from "../../src/core/auth";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import { AccessCheck } from "../../src/identity/access";
import type { KeyRecord, KeyRegistry } from "../../src/identity/ports";

const SETS = [{ domain: "keys", migrations: KEYS_MIGRATIONS }];

/** a key service whose presented-key lookups are counted */
function counted(storage: AsyncStorage) {
  const stores = keyStores(storage);
  const calls = { byHash: 0 };
  const svc = new ApiKeyService({ ...stores, byHash: (h: string) => (calls.byHash++, stores.byHash(h)) });
  return { svc, calls };
}

eachBackend("keys", (b) => {
  let s: AsyncStorage;
  let other: AsyncStorage; // a second storage on the same database: another replica
  beforeAll(async () => {
    s = await b.open();
    await s.migrate(SETS);
    other = await b.open();
  }, SETUP_TIMEOUT);

  test("create, list in creation order, get, revoke; other tenants see and revoke nothing", async () => {
    const { svc } = counted(s);
    const made = [];
    for (let i = 0; i < 8; i++) made.push(await svc.create("ta", `k${i}`, i % 2 ? ["ViewMetrics"] : []));
    expect(made[0]!.key).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    const { svc: svc2 } = counted(other);
    const listed = await svc2.list("ta");
    expect(listed.map((k) => k.name)).toEqual(made.map((m) => m.record.name)); // same-millisecond keys keep their order
    expect(listed[1]).toEqual({ ...made[1]!.record, permissions: ["ViewMetrics"] });
    expect(await svc2.get("ta", made[0]!.record.id)).toMatchObject({ name: "k0", revokedAt: null, lastUsedAt: null });
    expect(await svc2.list("tb")).toEqual([]);
    expect(await svc2.get("tb", made[0]!.record.id)).toBeUndefined();
    await expect(svc2.revoke("tb", made[0]!.record.id)).rejects.toMatchObject({ status: 404 });
    await svc2.revoke("ta", made[0]!.record.id);
    await expect(svc2.revoke("ta", made[0]!.record.id)).rejects.toMatchObject({ status: 404 }); // already revoked
    expect((await svc.get("ta", made[0]!.record.id))!.revokedAt).toEqual(expect.any(String));
    // the hash only is stored
    const raw = await s.global("test: what api_keys holds").all<Record<string, unknown>>("SELECT * FROM api_keys");
    expect(JSON.stringify(raw)).not.toContain(made[1]!.key);
  });

  test("a key created on one replica authenticates on the other; a revocation there is refused by a replica that has not seen the key", async () => {
    const { svc: a } = counted(s);
    const { svc: bSvc } = counted(other);
    const { key, record } = await a.create("tr", "ci", ["ManageConfig"]);
    const auth = new Authenticator(new TokenService("x".repeat(32)), [bSvc]);
    expect(await auth.authenticateCredential(key)).toMatchObject({ tenantId: "tr", sub: `key:${record.id}`, via: "api_key", keyId: record.id });
    expect([...(await auth.authenticateCredential(key)).permissions]).toEqual(["ManageConfig"]);
    expect((await a.get("tr", record.id))!.lastUsedAt).toEqual(expect.any(String)); // touched on first use
    await expect(auth.authenticateCredential("svc_nope")).rejects.toMatchObject({ status: 401, message: "invalid API key" });
    await a.revoke("tr", record.id);
    const { svc: fresh } = counted(other);
    await expect(Promise.resolve().then(() => fresh.verify(key))).rejects.toMatchObject({ status: 401 });
  });

  test("hot path: a key verified in the last 5 s answers synchronously from memory (no promise, no database); a burst with an unseen key makes one lookup", async () => {
    const { svc, calls } = counted(s);
    const { key, record } = await svc.create("th", "hot");
    const burst = Array.from({ length: 20 }, () => svc.verify(key));
    expect(burst.every((p) => p instanceof Promise)).toBe(true);
    const principals = await Promise.all(burst);
    expect(new Set(principals).size).toBe(1);
    expect(calls.byHash).toBe(1);
    // the row goes away behind the service's back: the memoised key still answers, synchronously, without a lookup
    await s.global("test: remove the row behind the service").run("DELETE FROM api_keys WHERE id = $id", { id: record.id });
    const hit = svc.verify(key);
    expect(hit).not.toBeInstanceOf(Promise);
    expect((hit as Principal).keyId).toBe(record.id);
    expect(calls.byHash).toBe(1);
  });

  test("a revocation in this process while a lookup of the key is in flight: the key is refused afterwards (the lookup does not memoise what it read)", async () => {
    for (let i = 0; i < 5; i++) {
      const { svc } = counted(s);
      const { key, record } = await svc.create("tv", `race${i}`);
      const inFlight = Promise.resolve(svc.verify(key)).catch(() => undefined);
      await svc.revoke("tv", record.id);
      await inFlight;
      await expect(Promise.resolve().then(() => svc.verify(key))).rejects.toMatchObject({ status: 401 });
    }
  });
});

eachBackend("keys-migrations", (b) => {
  test("keys stored before 0002 (one timestamp) list in a stable order after it; new keys list after them", async () => {
    const s = await b.open();
    await s.migrate([{ domain: "keys", migrations: KEYS_MIGRATIONS.filter((m) => m.id === "0001_api_keys") }]);
    const g = s.global("test: rows as the build before 0002 wrote them");
    for (const id of ["k-3", "k-1", "k-2"])
      await g.run(`INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, permissions, created_at) VALUES ($id, 'ta', $id, 'svc_x', $h, '[]', '2020-01-01T00:00:00.000Z')`, {
        id,
        h: `hash-${id}`,
      });
    await s.migrate(SETS);
    expect(await s.pendingMigrations()).toEqual([]);
    const svc = new ApiKeyService(keyStores(s));
    const made = await svc.create("ta", "new");
    const names = (await svc.list("ta")).map((k) => k.name);
    // SQLite keeps the insertion order (rowid → seq); PostgreSQL had none to keep and falls back to the id
    expect(names).toEqual([...(b.name === "sqlite" ? ["k-3", "k-1", "k-2"] : ["k-1", "k-2", "k-3"]), made.record.name]);
  });
});

describe("identity's check of tokens exchanged for a key, over the async key registry", () => {
  /** a registry whose get answers when the test says so */
  function gated(record: KeyRecord) {
    const waiting: Array<() => void> = [];
    let gets = 0;
    let revoked = false;
    const registry: KeyRegistry = {
      create: () => Promise.reject(new Error("unused")),
      list: () => Promise.resolve([]),
      revoke: () => Promise.reject(new Error("unused")),
      get: () => {
        gets++;
        const answer = { ...record, revokedAt: revoked ? "2026-01-01T00:00:00.000Z" : null };
        return new Promise((r) => waiting.push(() => r(answer)));
      },
    };
    return { registry, release: () => waiting.splice(0).forEach((f) => f()), gets: () => gets, revoke: () => (revoked = true) };
  }
  const record: KeyRecord = { id: "k1", tenantId: "t", name: "k", prefix: "svc_x", permissions: [], createdAt: "2026-01-01T00:00:00.000Z", lastUsedAt: null, revokedAt: null };
  const token = (): Principal => ({ tenantId: "t", sub: "key:k1", permissions: new Set(), via: "jwt" });
  const check = (registry: KeyRegistry) => new AccessCheck((() => undefined) as never, undefined as never, registry, Date.now, 60_000);

  test("requests while the key's state is looked up share one lookup; afterwards the check answers synchronously", async () => {
    const g = gated(record);
    const access = check(g.registry);
    const first = Array.from({ length: 10 }, () => access.check(token()));
    expect(first.every((p) => p instanceof Promise)).toBe(true);
    g.release();
    expect((await Promise.all(first)).map((p) => (p as Principal).keyId)).toEqual(Array(10).fill("k1"));
    expect(g.gets()).toBe(1);
    const later = access.check(token());
    expect(later).not.toBeInstanceOf(Promise);
    expect((later as Principal).keyId).toBe("k1");
  });

  test("a revocation in this process while the lookup runs: what the lookup read is not cached, the token is refused afterwards", async () => {
    const g = gated(record);
    const access = check(g.registry);
    const inFlight = access.check(token());
    g.revoke();
    access.forgetKey("t", "k1"); // what identity's key registry does on revoke
    g.release();
    await inFlight; // it read the key before the revocation
    const after = Promise.resolve().then(() => access.check(token()));
    g.release();
    await new Promise((r) => setTimeout(r, 0));
    g.release();
    await expect(after).rejects.toMatchObject({ status: 401 });
  });
});
