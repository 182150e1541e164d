/**
 * The cache domain over the async storage, the same tests on bun:sqlite and PostgreSQL: the store
 * (insert with its generated vec_key, replacement of an exact key, lookup by exact key and by
 * vec_key, vectors round trip bit for bit, hit bookkeeping, TTL and code-scope deletes, listing,
 * settings), LRU eviction decided by the database, tenant isolation, and two engines on one
 * database ("replicas"): entries one stored are served by the other, exact and semantic. The
 * HTTP behaviour is tested over SQLite in test/cache/.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { CACHE_MIGRATIONS, createCacheEngine } from "../../src/cache";
import { CacheStore, type NewEntry } from "../../src/cache/store";
import { loadConfig } from "../../src/config";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import { ask, answer, HashEmbedder } from "../cache/helpers";

const SETS = [{ domain: "cache", migrations: CACHE_MIGRATIONS }];

const vec = (seed: number, d = 8) => Float32Array.from({ length: d }, (_, i) => Math.sin(seed * 7.1 + i) / (i + 1.5));

function entry(i: number, o: Partial<NewEntry> = {}): NewEntry {
  return {
    id: `e${i}-${crypto.randomUUID()}`,
    exactKey: `k${i}`,
    partition: "p1",
    mode: "single",
    style: "openai",
    model: "m",
    queryText: `question ${i}`,
    queryVec: vec(i),
    contextVec: null,
    contextUsers: null,
    codeScope: null,
    codeHash: null,
    payload: JSON.stringify({ answer: i }),
    inputTokens: 3,
    outputTokens: 4,
    createdAt: 1_700_000_000_000 + i,
    expiresAt: null,
    ...o,
  };
}

eachBackend("cache", (b) => {
  let s: AsyncStorage;
  let other: AsyncStorage; // a second storage on the same database: another replica
  beforeAll(async () => {
    s = await b.open();
    await s.migrate(SETS);
    other = await b.open();
  }, SETUP_TIMEOUT);

  test("insert returns increasing vec_keys; an exact key is replaced; lookup by exact key and vec_key; vectors round trip bit for bit", async () => {
    const st = new CacheStore(s.tenant("t-store"));
    const users = [
      { text: "first", vec: vec(11) },
      { text: "second", vec: vec(12) },
    ];
    const a = await st.insert(entry(1, { mode: "context", contextVec: vec(10), contextUsers: users, expiresAt: 1_800_000_000_000 }));
    const b2 = await st.insert(entry(2));
    expect(a.replaced).toEqual([]);
    expect(typeof a.vecKey).toBe("number");
    expect(b2.vecKey).toBeGreaterThan(a.vecKey);

    const exact = await st.findExact("k1", 1_700_000_000_000);
    expect(exact).toEqual({ vecKey: a.vecKey, id: expect.stringMatching(/^e1-/), payload: '{"answer":1}', inputTokens: 3, outputTokens: 4, expiresAt: 1_800_000_000_000 });
    expect(await st.findExact("k1", 1_800_000_000_000)).toBeUndefined(); // expired at that time
    expect(await st.payload(b2.vecKey)).toMatchObject({ vecKey: b2.vecKey, payload: '{"answer":2}', expiresAt: null });

    const c = (await st.candidate(a.vecKey))!;
    expect(c.queryText).toBe("question 1");
    expect([...c.queryVec]).toEqual([...vec(1)]);
    expect([...c.contextVec!]).toEqual([...vec(10)]);
    expect(c.contextUsers!.map((u) => [u.text, [...u.vec]])).toEqual(users.map((u) => [u.text, [...u.vec]]));
    expect((await st.candidate(b2.vecKey))!.contextUsers).toBeNull();

    // the same exact key again: the old row goes (reported for the in-memory structures), a new key comes
    const again = await st.insert(entry(2, { payload: '{"answer":"2b"}' }));
    expect(again.replaced).toEqual([{ vecKey: b2.vecKey, partition: "p1", exactKey: "k2" }]);
    expect((await st.findExact("k2", 0))!.payload).toBe('{"answer":"2b"}');
    expect(await st.count()).toBe(2);

    const pv = await st.partitionVectors("p1");
    expect(pv.map((r) => r.vecKey)).toEqual([a.vecKey, again.vecKey]);
    expect([...pv[1]!.vec]).toEqual([...vec(2)]);
    expect(await st.partitionFingerprint("p1")).toEqual({ count: 2, maxKey: again.vecKey, sumKey: a.vecKey + again.vecKey });
    expect(await st.partitionFingerprint("none")).toEqual({ count: 0, maxKey: 0, sumKey: 0 });
  });

  test("hit bookkeeping, listing, TTL and code-scope deletes, settings", async () => {
    const st = new CacheStore(s.tenant("t-misc"));
    const keys = [];
    for (let i = 0; i < 3; i++) keys.push((await st.insert(entry(i, { expiresAt: i === 0 ? 1_700_000_000_500 : null, codeScope: i === 2 ? "repo" : null, codeHash: i === 2 ? "h1" : null }))).vecKey);
    await st.touch([keys[1]!], 1_700_000_009_000, [3]);
    await st.touch([keys[1]!], 1_700_000_001_000, [2]); // an older time never moves last_used_at back
    const listed = await st.list(10, 0);
    expect(listed.total).toBe(3);
    expect(listed.entries.map((e) => e.query)).toEqual(["question 2", "question 1", "question 0"]); // newest first
    expect(listed.entries[1]).toMatchObject({ hits: 5, lastUsedAt: 1_700_000_009_000, createdAt: 1_700_000_000_001, mode: "single", style: "openai", model: "m", expiresAt: null });
    expect((await st.list(1, 1)).entries.map((e) => e.query)).toEqual(["question 1"]);

    expect(await st.deleteExpired(1_700_000_000_400)).toEqual([]);
    expect(await st.deleteExpired(1_700_000_000_500)).toEqual([{ vecKey: keys[0]!, partition: "p1", exactKey: "k0" }]);
    expect(await st.deleteCodeScopeExcept("repo", "h1")).toEqual([]);
    expect(await st.deleteCodeScopeExcept("repo", "h2")).toEqual([{ vecKey: keys[2]!, partition: "p1", exactKey: "k2" }]);
    expect(await st.deleteByVecKey(keys[2]!)).toBeUndefined();
    const id1 = listed.entries[1]!.id;
    expect(await st.deleteById(id1)).toEqual({ vecKey: keys[1]!, partition: "p1", exactKey: "k1" });
    expect(await st.count()).toBe(0);

    expect(await st.settings()).toEqual({ decisionThreshold: null });
    await st.putSettings({ decisionThreshold: 0.7 }, 1);
    await st.putSettings({ decisionThreshold: 0.42 }, 2);
    expect(await new CacheStore(other.tenant("t-misc")).settings()).toEqual({ decisionThreshold: 0.42 }); // DOUBLE PRECISION: no 0.41999998
    await st.putSettings({ decisionThreshold: null }, 3);
    expect(await st.settings()).toEqual({ decisionThreshold: null });
  });

  test("LRU eviction: the database's count decides, coldest first; a second replica over the same bound evicts nothing", async () => {
    const a = new CacheStore(s.tenant("t-evict"));
    const b2 = new CacheStore(other.tenant("t-evict"));
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push((await a.insert(entry(i))).vecKey);
    await a.touch([keys[0]!], 1_700_000_010_000, [1]); // k0 is used: k1 and k2 are the coldest now
    expect((await a.evictOver(3)).map((r) => r.exactKey).sort()).toEqual(["k1", "k2"]);
    expect(await b2.evictOver(3)).toEqual([]);
    expect(await a.count()).toBe(3);
    expect(await a.evictOver(10)).toEqual([]);
  });

  test("two replicas storing the same exact key at once: both succeed, one entry remains", async () => {
    const a = new CacheStore(s.tenant("t-race"));
    const c = new CacheStore(other.tenant("t-race"));
    for (let i = 0; i < 20; i++) {
      const [x, y] = await Promise.all([a.insert(entry(i, { exactKey: "same" })), c.insert(entry(i + 100, { exactKey: "same" }))]);
      expect(await a.count()).toBe(1);
      const kept = (await c.findExact("same", 0))!.vecKey;
      expect([x.vecKey, y.vecKey]).toContain(kept); // (SQLite may give the new row the key of the one it replaced)
    }
  });

  test("tenant isolation: another tenant neither reads, lists, counts nor deletes the entries", async () => {
    const mine = new CacheStore(s.tenant("t-iso-a"));
    const theirs = new CacheStore(s.tenant("t-iso-b"));
    const { vecKey } = await mine.insert(entry(7, { exactKey: "shared-key" }));
    expect(await theirs.findExact("shared-key", 0)).toBeUndefined();
    expect(await theirs.candidate(vecKey)).toBeUndefined();
    expect(await theirs.payload(vecKey)).toBeUndefined();
    expect(await theirs.count()).toBe(0);
    expect((await theirs.list(10, 0)).entries).toEqual([]);
    expect(await theirs.partitionVectors("p1")).toEqual([]);
    expect(await theirs.deleteByVecKey(vecKey)).toBeUndefined();
    expect(await theirs.deleteAll()).toEqual([]);
    expect(await theirs.evictOver(0)).toEqual([]);
    // the same exact key in the other tenant is its own entry, not a replacement
    expect((await theirs.insert(entry(8, { exactKey: "shared-key" }))).replaced).toEqual([]);
    expect((await mine.findExact("shared-key", 0))!.vecKey).toBe(vecKey);
    expect((await mine.deleteAll()).map((r) => r.vecKey)).toEqual([vecKey]);
    expect(await theirs.count()).toBe(1);
  });

  describe("two engines on one database", () => {
    const config = loadConfig({ SVC_STORAGE__PATH: ":memory:" });
    const engineOn = (storage: AsyncStorage) =>
      createCacheEngine(config, { storage, embedder: new HashEmbedder(), timers: false, verify: () => ({ accept: true, score: 1, reason: "ok" }) });

    test("entries stored by one are served by the other (exact and semantic); a purge there removes them", async () => {
      const a = engineOn(s);
      const c = engineOn(other);
      try {
        const q = ask("t-rep", "red green blue");
        const miss = await a.lookup(q);
        expect(miss.hit).toBe(false);
        await a.store(q, answer("colours"), miss);
        await a.store(ask("t-rep", "the second question"), answer("two"));

        const exact = await c.lookup(ask("t-rep", "red green blue"));
        expect(exact.hit && exact.tier).toBe("exact");
        expect(exact.hit && exact.payload).toEqual(answer("colours"));
        const semantic = await c.lookup(ask("t-rep", "Red, green, blue!")); // the index is built from the table
        expect(semantic.hit && semantic.tier).toBe("semantic");
        expect(semantic.hit && semantic.payload.body).toEqual(answer("colours").body);
        expect((await c.stats("t-rep")).entries).toBe(2);
        expect((await c.lookup(ask("t-rep-other", "red green blue"))).hit).toBe(false);

        await c.flushTouches();
        const listed = await a.listEntries("t-rep", 10, 0);
        expect(listed.entries.find((e) => e.query === "red green blue")!.hits).toBe(2);

        expect(await c.purge("t-rep")).toBe(2);
        expect((await engineOn(s).lookup(ask("t-rep", "red green blue"))).hit).toBe(false);
      } finally {
        await a.close();
        await c.close();
      }
    });

    test("a replica starting loads the indexes of the partitions used last before it is ready", async () => {
      const a = engineOn(s);
      await a.store(ask("t-warm", "alpha beta gamma"), answer("greek"));
      await a.store(ask("t-warm", "one two three", { model: "other-model" }), answer("numbers")); // another partition
      await a.close();
      const fresh = engineOn(other);
      try {
        expect(fresh.ready()).toBe(true); // nothing to wait for before warmUp starts
        const warming = fresh.warmUp();
        expect(fresh.ready()).toBe(false); // /ready waits (the database answers asynchronously on both backends)
        expect(await warming).toBeGreaterThanOrEqual(2);
        expect(fresh.ready()).toBe(true);
        expect(fresh.loadedTenants()).toContain("t-warm");
        const hit = await fresh.lookup(ask("t-warm", "Gamma beta alpha"));
        expect(hit.hit && hit.tier).toBe("semantic");
      } finally {
        await fresh.close();
      }
    });

    test("settings written through one engine are read by another; eviction over the bound", async () => {
      const a = engineOn(s);
      const small = createCacheEngine(loadConfig({ SVC_STORAGE__PATH: ":memory:" }, { cache: { max_entries_per_tenant: 2 } }), {
        storage: other,
        embedder: new HashEmbedder(),
        timers: false,
      });
      try {
        await a.setTenantSettings("t-set", { decisionThreshold: 0.6 });
        expect(await small.tenantSettings("t-set")).toEqual({ decisionThreshold: 0.6 });
        for (const text of ["one apple", "two pears", "three plums"]) await small.store(ask("t-set", text), answer(text));
        const stats = await small.stats("t-set");
        expect(stats.entries).toBe(2);
        expect(stats.evictions).toBe(1);
        expect((await a.listEntries("t-set", 10, 0)).entries.map((e) => e.query).sort()).toEqual(["three plums", "two pears"]);
      } finally {
        await a.close();
        await small.close();
      }
    });
  });
});
