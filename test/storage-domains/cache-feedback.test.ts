/**
 * Wrong-hit feedback in the database (issue 25), the same tests on bun:sqlite and PostgreSQL: a
 * "wrong" verdict survives a restart (a new engine on a new connection to the same database: the
 * question misses, the point is where it was, the request stays judged, a hit served before the
 * restart can still be judged); a verdict sent to a replica that did not serve the request; two
 * engines following one change stream (a real Redis): the one that did not receive the verdict
 * stops serving the pair once the message arrives, and its point follows; hits served on two
 * replicas add up in the counters; the bounds (negatives per tenant, remembered hits by count and
 * age) in the database; tenant isolation; and `svc storage copy` (copyDatabase) takes a SQLite
 * deployment's feedback to PostgreSQL.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { copyDatabase } from "../../src/storage/copy";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { dropSchema, freshSchema } from "../helpers/postgres";
import type { AsyncStorage } from "../../src/storage/async";
import { CACHE_MIGRATIONS, createCacheEngine, SemanticCacheEngine } from "../../src/cache";
import { FeedbackStore, pruneHits, writeHits, type StoredHit } from "../../src/cache/feedback-store";
import { STEP_UP, STORED_HIT_TTL_MS } from "../../src/cache/feedback";
import { loadConfig } from "../../src/config";
import { RedisHotState } from "../../src/core/redis";
import { Logger } from "../../src/core/log";
import { Metrics } from "../../src/core/metrics";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import { ask, answer, HashEmbedder } from "../cache/helpers";
import { TestRedis } from "../helpers/redis";
import { until } from "../hotstate/replicas";

const SETS = [{ domain: "cache", migrations: CACHE_MIGRATIONS }];
const config = loadConfig({ SVC_STORAGE__PATH: ":memory:" });

let redis: TestRedis;
const hotStates: RedisHotState[] = [];
beforeAll(async () => {
  redis = await TestRedis.start();
}, 30_000);
afterAll(async () => {
  for (const h of hotStates) h.close();
  await redis.stop();
});

/** a replica's view of Redis (its own connections), under this test's prefix */
function sharing(prefix: string) {
  const hs = new RedisHotState({ url: redis.url, fail_mode: "open", prefix, command_timeout_ms: 1_000 }, new Logger("error"), new Metrics().counter("x_total", "x", ["kind", "mode"]));
  hotStates.push(hs);
  return { hs, shared: { store: hs, log: hs, prefix } };
}

const engineOn = (storage: AsyncStorage, shared?: ReturnType<typeof sharing>["shared"]) =>
  createCacheEngine(config, { storage, embedder: new HashEmbedder(), timers: false, verify: () => ({ accept: true, score: 1, reason: "ok" }), ...(shared ? { shared } : {}) } as any) as SemanticCacheEngine;

// the HashEmbedder embeds a bag of words: these three are one vector; the first two one surface form
const Q = "red green blue";
const Q_HIT = "Red, green, blue!";
const Q_NEAR = "blue green red";

/** store Q for the tenant, then a semantic hit on it with a request id */
async function servedHit(e: SemanticCacheEngine, tenantId: string, requestId: string, text = Q_HIT, stored = Q) {
  const miss = await e.lookup(ask(tenantId, stored));
  if (!miss.hit) await e.store(ask(tenantId, stored), answer(`answer to ${stored}`), miss);
  const hit = await e.lookup(ask(tenantId, text, { requestId, caller: "key-1" }));
  expect(hit.hit && hit.tier).toBe("semantic");
  return hit;
}

const hitRow = (i: number, createdAt: number): StoredHit => ({ requestId: `r${i}`, caller: null, tier: "exact", entryId: `e${i}`, query: null, queryVec: null, createdAt });

eachBackend("cache-feedback", (b) => {
  let s: AsyncStorage;
  beforeAll(async () => {
    s = await b.open();
    await s.migrate(SETS);
  }, SETUP_TIMEOUT);

  test("a wrong verdict survives a restart: the question and a near-identical one miss, the point and counters stay, the request stays judged", async () => {
    const first = await b.open();
    let a = engineOn(first);
    await servedHit(a, "t-restart", "req-wrong");
    const unreported = await a.lookup(ask("t-restart", "RED green blue", { requestId: "req-later", caller: "key-1" }));
    expect(unreported.hit).toBe(true);
    const r = await a.reportFeedback("t-restart", "req-wrong", "wrong", "key-1", false);
    expect(r).toMatchObject({ wrong: 1, right: 0 });
    expect(r.point).toBeCloseTo(a.singlePoint + STEP_UP, 9);
    expect((await a.lookup(ask("t-restart", Q_HIT))).hit).toBe(false);
    await a.close();
    await first.close();

    // a new process on the same database
    const again = await b.open();
    a = engineOn(again);
    try {
      const stats = (await a.stats("t-restart")).feedback;
      expect(stats).toMatchObject({ wrong: 1, right: 0 });
      expect(stats.point).toBeCloseTo(a.singlePoint + STEP_UP, 9);
      for (const text of [Q_HIT, Q_NEAR]) {
        const m = await a.lookup(ask("t-restart", text));
        expect(m.hit).toBe(false);
        expect(!m.hit && m.pointSource).toBe("feedback");
      }
      // the stored question itself is an exact hit (the entry was only blocked for the reported question)
      expect((await a.lookup(ask("t-restart", Q))).hit).toBe(true);
      // judged once, also after the restart; the hit served before it can still be judged, by its caller only
      await expect(a.reportFeedback("t-restart", "req-wrong", "right", "key-1", false)).rejects.toMatchObject({ type: "conflict" });
      await expect(a.reportFeedback("t-restart", "req-later", "right", "key-2", false)).rejects.toMatchObject({ type: "authorization_error" });
      expect(await a.reportFeedback("t-restart", "req-later", "right", "key-1", false)).toMatchObject({ wrong: 1, right: 1 });
      await expect(a.reportFeedback("t-restart", "req-never", "wrong", "key-1", true)).rejects.toMatchObject({ type: "not_found" });
    } finally {
      await a.close();
    }
  });

  test("a verdict sent to a replica that did not serve the request; the other replica cannot judge it again", async () => {
    const other = await b.open();
    const a = engineOn(s);
    const c = engineOn(other);
    try {
      await servedHit(a, "t-cross", "req-1");
      await a.feedback.flush(); // the hit is written (within 200 ms by itself)
      const r = await c.reportFeedback("t-cross", "req-1", "wrong", undefined, true);
      expect(r.wrong).toBe(1);
      // a remembers the request in memory, unjudged: the database says it was judged
      await expect(a.reportFeedback("t-cross", "req-1", "right", "key-1", false)).rejects.toMatchObject({ type: "conflict", message: expect.stringContaining("wrong") });
      // c, which received the verdict, stops serving the pair at once
      expect((await c.lookup(ask("t-cross", Q_HIT))).hit).toBe(false);

      // the same request judged on both replicas at once: one verdict counts, the other is a 409
      await servedHit(a, "t-cross", "req-2", "Three two one", "one two three");
      await a.feedback.flush();
      const both = await Promise.allSettled([a.reportFeedback("t-cross", "req-2", "right", "key-1", false), c.reportFeedback("t-cross", "req-2", "right", "key-1", false)]);
      expect(both.filter((x) => x.status === "fulfilled").length).toBe(1);
      expect((both.find((x) => x.status === "rejected") as PromiseRejectedResult).reason).toMatchObject({ type: "conflict" });
      expect(await new FeedbackStore(s.tenant("t-cross")).counters()).toMatchObject({ wrong: 1, right: 1 });
    } finally {
      await a.close();
      await c.close();
    }
  });

  test("two replicas on one database and one change stream: the other stops serving the pair once the message arrives, its point follows", async () => {
    const other = await b.open();
    const prefix = `fb-${b.name}:`;
    const ra = sharing(prefix);
    const rc = sharing(prefix);
    await until("both replicas follow the stream", async () => ra.hs.ready() && rc.hs.ready(), 15_000);
    const a = engineOn(s, ra.shared);
    const c = engineOn(other, rc.shared);
    try {
      await servedHit(a, "t-bus", "req-a");
      // c serves the pair from its memory (tenant, index and feedback loaded)
      const before = await c.lookup(ask("t-bus", Q_HIT));
      expect(before.hit).toBe(true);
      expect(before.hit && before.pointSource).toBe("config");
      await a.reportFeedback("t-bus", "req-a", "wrong", "key-1", false);
      await until("c misses the reported pair", async () => !(await c.lookup(ask("t-bus", Q_HIT))).hit, 10_000);
      expect((await c.lookup(ask("t-bus", Q_NEAR))).hit).toBe(false);
      expect(c.feedbackStats("t-bus")).toMatchObject({ wrong: 1, raisedBy: STEP_UP });
      expect(c.feedbackStats("t-bus").point).toBeCloseTo(c.singlePoint + STEP_UP, 9);

      // hits served on both replicas after the verdict add up in the database (neither overwrites the other's)
      await a.store(ask("t-bus", "one two three"), answer("numbers"));
      const again = (e: SemanticCacheEngine) => e.lookup(ask("t-bus", "Three two one", { requestId: crypto.randomUUID() }));
      expect((await again(a)).hit).toBe(true);
      await until("c has the new entry (its add arrived)", async () => (await again(c)).hit, 10_000); // misses count nothing
      expect((await again(c)).hit).toBe(true);
      await Promise.all([a.feedback.flush(), c.feedback.flush()]);
      expect((await new FeedbackStore(s.tenant("t-bus")).counters())!.hits).toBe(3);
      // a purge on one replica forgets the feedback on both
      await a.purge("t-bus");
      await until("c forgot the purged tenant's feedback", async () => (await c.stats("t-bus")).feedback.wrong === 0, 10_000);
      expect(await new FeedbackStore(s.tenant("t-bus")).counters()).toBeUndefined();
    } finally {
      await a.close();
      await c.close();
    }
  }, 60_000);

  test("bounds in the database: negatives per tenant (oldest dropped), remembered hits by count and by age", async () => {
    const st = new FeedbackStore(s.tenant("t-bounds"));
    for (let i = 0; i < 5; i++) await st.addNegative({ entryId: `e${i}`, surface: `q${i}`, vec: Float32Array.of(i, 1) }, 1_000 + i, 3);
    const negs = await st.negatives();
    expect(negs.map((n) => n.entryId)).toEqual(["e2", "e3", "e4"]);
    expect([...negs[2]!.vec!]).toEqual([4, 1]);

    const t = s.tenant("t-bounds");
    await s.tx(() => writeHits(t, [0, 1, 2, 3, 4].map((i) => hitRow(i, 10_000 + i)), 0, 3));
    for (const i of [0, 1]) expect(await st.hit(`r${i}`)).toBeUndefined();
    for (const i of [2, 3, 4]) expect(await st.hit(`r${i}`)).toMatchObject({ entryId: `e${i}`, verdict: null });
    // older than the age bound: gone with the next batch
    await s.tx(() => writeHits(t, [hitRow(5, 20_000)], 10_004, 3));
    expect(await st.hit("r2")).toBeUndefined();
    expect(await st.hit("r3")).toBeUndefined();
    expect(await st.hit("r5")).toBeDefined();
    // a judged hit is not overwritten by its late batch
    expect(await st.claim(hitRow(6, 20_001), "wrong")).toBe(true);
    expect(await st.claim(hitRow(6, 20_001), "right")).toBe(false);
    await s.tx(() => writeHits(t, [hitRow(6, 20_001)], 0, 10));
    expect((await st.hit("r6"))!.verdict).toBe("wrong");
    // every tenant's old hits go in the periodic prune
    await s.tx(() => writeHits(s.tenant("t-bounds-2"), [hitRow(7, 5)], 0, 10));
    expect(await pruneHits(s, 20_000)).toBeGreaterThanOrEqual(2);
    expect(await new FeedbackStore(s.tenant("t-bounds-2")).hit("r7")).toBeUndefined();
    expect(await st.hit("r6")).toBeDefined();
    expect(STORED_HIT_TTL_MS).toBe(24 * 3_600_000);
  });

  test("a batch of hits larger than one INSERT is written whole (multi-row statements), and without the count prune nothing is dropped", async () => {
    const t = s.tenant("t-many");
    const rows = Array.from({ length: 450 }, (_, i) => ({ ...hitRow(i, 30_000 + i), queryVec: Float32Array.of(i, 1), query: `q${i}` }));
    await s.tx(() => writeHits(t, rows, 0, 100, false));
    const n = async () => (await t.get<{ n: number }>("SELECT COUNT(*) AS n FROM cache_feedback_requests WHERE tenant_id = $tenant"))!.n;
    expect(await n()).toBe(450);
    expect(await new FeedbackStore(t).hit("r449")).toMatchObject({ entryId: "e449", verdict: null });
    await s.tx(() => writeHits(t, rows.slice(0, 10), 0, 100, true)); // rows already there are kept; the prune keeps the newest 100
    expect(await n()).toBe(100);
  });

  test("tenant isolation: one tenant's verdicts change neither another's decisions nor its stored feedback", async () => {
    const a = engineOn(s);
    try {
      await servedHit(a, "t-iso-a", "req-iso");
      await servedHit(a, "t-iso-b", "req-iso-b");
      await a.reportFeedback("t-iso-a", "req-iso", "wrong", "key-1", false);
      await expect(a.reportFeedback("t-iso-b", "req-iso", "wrong", undefined, true)).rejects.toMatchObject({ type: "not_found" });
      expect((await a.lookup(ask("t-iso-a", Q_HIT))).hit).toBe(false);
      const other = await a.lookup(ask("t-iso-b", Q_HIT));
      expect(other.hit && other.pointSource).toBe("config");
      expect((await a.stats("t-iso-b")).feedback).toMatchObject({ wrong: 0, right: 0, raisedBy: 0, point: a.singlePoint });
      expect(await new FeedbackStore(s.tenant("t-iso-b")).counters()).toBeUndefined();
      expect(await new FeedbackStore(s.tenant("t-iso-b")).negatives()).toEqual([]);
      expect((await new FeedbackStore(s.tenant("t-iso-a")).negatives()).length).toBe(1);
    } finally {
      await a.close();
    }
  });
});

test(
  "a SQLite deployment's feedback copied to PostgreSQL (svc storage copy): the pair still misses, the point and counters hold, new negatives get new keys",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-feedback-copy-"));
    const db = new Db(join(dir, "svc.db"), SETS);
    const src = openStorage({ path: "", db });
    const pg = await freshSchema("cache-feedback-copy");
    const target = openStorage({ url: pg.url, schema: pg.schema, path: "" });
    try {
      const a = engineOn(src);
      await servedHit(a, "t-copy", "req-1");
      await a.reportFeedback("t-copy", "req-1", "wrong", "key-1", false);
      await servedHit(a, "t-copy", "req-2", "Three two one", "one two three");
      const before = (await a.stats("t-copy")).feedback;
      await a.close();

      await target.migrate(SETS);
      const counts = await copyDatabase(db, target);
      for (const table of ["cache_feedback_state", "cache_feedback_negatives", "cache_feedback_requests"]) expect(counts.find((c) => c.table === table)!.target).toBeGreaterThan(0);

      const p = engineOn(target);
      try {
        expect((await p.stats("t-copy")).feedback).toEqual(before);
        expect((await p.lookup(ask("t-copy", Q_NEAR))).hit).toBe(false);
        // the hit served before the copy is judged there; its negative gets a key after the copied one
        await p.reportFeedback("t-copy", "req-2", "wrong", "key-1", false);
        expect((await new FeedbackStore(target.tenant("t-copy")).negatives()).map((n) => n.surface)).toEqual(["red green blue", "three two one"]);
        expect((await p.lookup(ask("t-copy", "three, two, one"))).hit).toBe(false);
      } finally {
        await p.close();
      }
    } finally {
      await target.close();
      await src.close();
      db.close();
      await dropSchema(pg.url, pg.schema);
      rmSync(dir, { recursive: true, force: true });
    }
  },
  SETUP_TIMEOUT,
);
