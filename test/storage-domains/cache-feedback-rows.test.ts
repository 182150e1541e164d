/**
 * The remembered-hit rows (cache_feedback_requests, written for every hit) on bun:sqlite and
 * PostgreSQL, each case on its own database: migration cache/0005 keeps every row a verdict needs
 * (verdicts, questions and vectors included) while it leaves the table two B-trees (the key, the age
 * index); the count prune keeps exactly the newest `max` rows, rows of one millisecond ordered by
 * request id; the global age prune reaches every tenant's old rows and no newer one.
 */
import { beforeAll, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { CACHE_MIGRATIONS } from "../../src/cache";
import { FeedbackStore, pruneHits, writeHits, type StoredHit } from "../../src/cache/feedback-store";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";

const row = (id: string, createdAt: number, extra: Partial<StoredHit> = {}): StoredHit => ({ requestId: id, caller: null, tier: "exact", entryId: `e-${id}`, query: null, queryVec: null, createdAt, ...extra });

/** the stored request ids of a tenant, oldest first */
const ids = async (s: AsyncStorage, tenant: string) =>
  (await s.tenant(tenant).all<{ id: string }>("SELECT request_id AS id FROM cache_feedback_requests WHERE tenant_id = $tenant ORDER BY created_at, request_id")).map((r) => r.id);

eachBackend("cache-feedback-rows", (b) => {
  let s: AsyncStorage;
  beforeAll(async () => {
    s = await b.open();
    // the schema as 0004 left it, with rows in it
    await s.migrate([{ domain: "cache", migrations: CACHE_MIGRATIONS.filter((m) => m.id < "0005") }]);
    await s.tx(() => writeHits(s.tenant("t-old"), [row("a", 100, { caller: "key-1" }), row("b", 101, { tier: "semantic", query: "red green blue", queryVec: Float32Array.of(0.25, -1, 3) })], 0, 100, false));
    expect(await new FeedbackStore(s.tenant("t-old")).claim(row("c", 102, { tier: "l2_context", caller: "key-2" }), "wrong")).toBe(true);
    await s.tx(() => writeHits(s.tenant("t-old-2"), [row("a", 100)], 0, 100, false));
    await s.migrate([{ domain: "cache", migrations: CACHE_MIGRATIONS }]);
  }, SETUP_TIMEOUT);

  test("0005 keeps every remembered hit as it was (caller, tier, question, vector, verdict), per tenant", async () => {
    const st = new FeedbackStore(s.tenant("t-old"));
    expect(await st.hit("a")).toMatchObject({ caller: "key-1", tier: "exact", entryId: "e-a", query: null, queryVec: null, verdict: null, createdAt: 100 });
    const h = (await st.hit("b"))!;
    expect(h).toMatchObject({ tier: "semantic", query: "red green blue", verdict: null, createdAt: 101 });
    expect([...h.queryVec!]).toEqual([0.25, -1, 3]);
    expect(await st.hit("c")).toMatchObject({ caller: "key-2", tier: "l2_context", verdict: "wrong" });
    // judged once, after the rebuild too
    expect(await st.claim(row("c", 103), "right")).toBe(false);
    expect(await new FeedbackStore(s.tenant("t-old-2")).hit("a")).toMatchObject({ entryId: "e-a" });
    expect(await ids(s, "t-old")).toEqual(["a", "b", "c"]);
  });

  test("after 0005 a remembered hit is written to two B-trees: the key (tenant_id, request_id) and the age index (tenant_id, created_at, request_id)", async () => {
    const g = s.global("test: the schema of cache_feedback_requests");
    if (b.name === "sqlite") {
      const table = await g.get<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'cache_feedback_requests'");
      expect(table!.sql).toMatch(/WITHOUT ROWID\s*$/);
      const trees = await g.get<{ n: number }>("SELECT COUNT(DISTINCT rootpage) AS n FROM sqlite_master WHERE tbl_name = 'cache_feedback_requests' AND rootpage > 0");
      expect(Number(trees!.n)).toBe(2);
      const age = await g.all<{ name: string }>("SELECT name FROM pragma_index_info('cache_feedback_requests_age') ORDER BY seqno");
      expect(age.map((c) => c.name)).toEqual(["tenant_id", "created_at", "request_id"]);
    } else {
      const idx = await g.all<{ indexname: string; indexdef: string }>("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'cache_feedback_requests' ORDER BY indexname");
      expect(idx.map((i) => i.indexname)).toEqual(["cache_feedback_requests_age", "cache_feedback_requests_pkey"]);
      expect(idx[0]!.indexdef).toContain("(tenant_id, created_at, request_id)");
    }
  });

  test("the count prune keeps exactly the newest max rows: rows of one millisecond are ordered by request id", async () => {
    const t = s.tenant("t-ties");
    // six rows in one millisecond, written in an order unlike their ids, then one older row
    await s.tx(() => writeHits(t, ["r4", "r1", "r5", "r0", "r3", "r2"].map((id) => row(id, 5_000)).concat(row("q", 4_999)), 0, 100, false));
    await s.tx(() => writeHits(t, [row("r6", 5_000)], 0, 3, true));
    expect(await ids(s, "t-ties")).toEqual(["r4", "r5", "r6"]);
    // at the bound nothing goes; below it neither
    await s.tx(() => writeHits(t, [], 0, 3, true));
    expect(await ids(s, "t-ties")).toEqual(["r4", "r5", "r6"]);
    await s.tx(() => writeHits(t, [row("s", 5_001)], 0, 10, true));
    expect(await ids(s, "t-ties")).toEqual(["r4", "r5", "r6", "s"]);
    await s.tx(() => writeHits(t, [row("u", 5_002)], 0, 1, true));
    expect(await ids(s, "t-ties")).toEqual(["u"]);
  });

  test("the global age prune reaches every tenant (first, middle and last by id) and keeps the rows at or after the cut", async () => {
    const tenants = ["p-a", "p-m", "p-z"];
    for (const tenant of tenants) await s.tx(() => writeHits(s.tenant(tenant), [row("old-1", 1_000), row("old-2", 8_999), row("at", 9_000), row("new", 9_500)], 0, 100, false));
    const others = { old: await ids(s, "t-old"), ties: await ids(s, "t-ties") };
    // every row of the other tests is older than the cut too (created 100 … 5_002)
    const removed = await pruneHits(s, 9_000);
    expect(removed).toBe(tenants.length * 2 + others.old.length + others.ties.length + 1);
    for (const tenant of tenants) expect(await ids(s, tenant)).toEqual(["at", "new"]);
    expect(await ids(s, "t-old")).toEqual([]);
    expect(await pruneHits(s, 9_000)).toBe(0);
  });
});
