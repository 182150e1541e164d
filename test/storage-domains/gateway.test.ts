/**
 * The gateway's storage over the async storage, the same tests on bun:sqlite and PostgreSQL:
 * usage records written behind (multi-row INSERTs per tenant), listed newest first per tenant;
 * the overview's rollups (the writer's upserts per batch, on both backends)
 * equal a scan of the records; the usage report's sums and day breakdown; the request-outcome
 * counters; the per-request list with filters; identity's usage reader (spend, hourly, models).
 */
import { beforeAll, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { GATEWAY_MIGRATIONS } from "../../src/gateway/migrations";
import { OVERVIEW_MIGRATIONS, OutcomeCounter, OverviewQuery } from "../../src/gateway/overview-api";
import { UsageQuery } from "../../src/gateway/usage-api";
import { UsageRecorder, UsageStore, type UsageRecord, type UsageRow } from "../../src/gateway/usage";
import { usageReader } from "../../src/app";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";

const SETS = [{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] }];
const NOW = Date.parse("2026-11-20T12:34:56.000Z");
const TIERS = ["exact", "semantic", "l2_context"] as const;

function rng(seed: number) {
  return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
}

/** n records of tenant `tenant` over the 26 hours before NOW */
function records(tenant: string, n: number, seed: number): UsageRow[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const status = r() < 0.5 ? "HIT" : r() < 0.9 ? "MISS" : "BYPASS";
    return {
      id: `${tenant}-${seed}-${i}`,
      tenantId: tenant,
      keyId: r() < 0.5 ? "k1" : "k2",
      createdAt: new Date(NOW - Math.floor(r() * 26 * 3_600_000)).toISOString(),
      requestId: `r${i}`,
      style: "openai",
      provider: "openai",
      endpoint: "openai.chat_completions",
      model: r() < 0.5 ? "gpt-4o" : "gpt-4o-mini",
      cacheStatus: status,
      cacheTier: status === "HIT" ? TIERS[Math.floor(r() * 3)] : undefined,
      streamed: false,
      inputTokens: Math.floor(r() * 500),
      outputTokens: Math.floor(r() * 200),
      latencyMs: r() < 0.1 ? r() * 90_000 : r() * 800,
      costUsd: status === "MISS" ? r() / 100 : 0,
      costSavedUsd: status === "HIT" ? r() / 100 : 0,
      priced: r() < 0.9,
    } as UsageRow;
  });
}

const rec = (tenantId: string, i: number): UsageRecord => ({
  tenantId,
  keyId: "k1",
  requestId: `req-${i}`,
  style: "openai",
  provider: "openai",
  endpoint: "openai.chat_completions",
  model: "gpt-4o-mini",
  cacheStatus: i % 3 === 0 ? "HIT" : "MISS",
  cacheTier: i % 3 === 0 ? "exact" : undefined,
  streamed: i % 2 === 0,
  inputTokens: 10,
  outputTokens: 5,
  latencyMs: 12.5,
  similarity: 0.93,
});

eachBackend("gateway", (b) => {
  let s: AsyncStorage;
  beforeAll(async () => {
    s = await b.open();
    await s.migrate(SETS);
  }, SETUP_TIMEOUT);

  test("recorded usage is written behind in multi-row batches, listed newest first per tenant; close flushes", async () => {
    const usage = new UsageRecorder(s);
    for (let i = 0; i < 150; i++) usage.record(rec("wa", i)); // 64 + 64 + 16 + 4 + 2 rows
    for (let i = 0; i < 3; i++) usage.record(rec("wb", i));
    expect(await usage.store("wa").list()).toEqual([]); // queued, not written yet
    await usage.flush("wa");
    const a = await usage.store("wa").list(500);
    expect(a.map((r) => r.requestId)).toEqual(Array.from({ length: 150 }, (_, i) => `req-${149 - i}`));
    expect(a.every((r) => r.tenantId === "wa")).toBe(true);
    expect(a[0]).toMatchObject({ keyId: "k1", model: "gpt-4o-mini", cacheStatus: "MISS", streamed: false, inputTokens: 10, latencyMs: 12.5, similarity: 0.93, priced: true });
    expect(a[0]!.costUsd).toBeGreaterThan(0);
    expect(a[149]).toMatchObject({ cacheStatus: "HIT", cacheTier: "exact", streamed: true, costUsd: 0 });
    await usage.close();
    expect((await usage.store("wb").list()).map((r) => r.requestId)).toEqual(["req-2", "req-1", "req-0"]);
    usage.record(rec("wb", 9)); // after close: dropped
    expect(await usage.store("wb").list()).toHaveLength(3);
  });

  test("the overview's rollups equal a scan of the records (per tenant, every range)", async () => {
    const rows = { ra: records("ra", 700, 7), rb: records("rb", 130, 9) };
    await s.tx(async () => {
      for (const [t, rs] of Object.entries(rows)) await UsageStore.of(s, t).insertMany(rs);
    });
    const q = new OverviewQuery(s, () => {}, () => NOW);
    for (const [t, rs] of Object.entries(rows))
      for (const [range, count, unitMs, chars] of [["hour", 60, 60_000, 16], ["day", 24, 3_600_000, 13], ["30d", 720, 3_600_000, 13]] as const) {
        const to = new Date(NOW).toISOString().slice(0, chars);
        const from = new Date(NOW - (count - 1) * unitMs).toISOString().slice(0, chars);
        const inRange = rs.filter((r) => r.createdAt.slice(0, chars) >= from && r.createdAt.slice(0, chars) <= to);
        const o = await q.overview(t, range);
        const hit = (tier: string) => inRange.filter((r) => r.cacheStatus === "HIT" && r.cacheTier === tier).length;
        expect(o.totals.requests).toBe(inRange.length);
        expect(o.totals.hits).toEqual({ exact: hit("exact"), semantic: hit("semantic"), l2_context: hit("l2_context"), total: hit("exact") + hit("semantic") + hit("l2_context") });
        expect(o.totals.misses).toBe(inRange.filter((r) => r.cacheStatus === "MISS").length);
        expect(o.totals.inputTokens).toBe(inRange.reduce((n, r) => n + r.inputTokens, 0));
        expect(o.totals.costUsd).toBeCloseTo(inRange.reduce((n, r) => n + r.costUsd, 0), 5);
        expect(o.series.reduce((n, p) => n + p.requests, 0)).toBe(inRange.length);
        if (inRange.length) expect(o.totals.latencyMs.p99).toBeGreaterThan(0);
      }
    // a second batch into the same minutes adds to the rollup rows
    const more = records("rb", 20, 9).map((r) => ({ ...r, id: `${r.id}-again` }));
    await s.tx(() => UsageStore.of(s, "rb").insertMany(more));
    const all = [...rows.rb, ...more].filter((r) => r.createdAt.slice(0, 13) >= new Date(NOW - 23 * 3_600_000).toISOString().slice(0, 13));
    expect((await q.overview("rb", "day")).totals.requests).toBe(all.length);
  });

  test("the usage report: sums, cost status and the day breakdown; another tenant's records are not in it", async () => {
    const rs = records("ua", 90, 21);
    await UsageStore.of(s, "ua").insertMany(rs);
    await UsageStore.of(s, "ub").insertMany(records("ub", 10, 22));
    const report = await new UsageQuery(s, () => {}, () => NOW).report("ua", { from: "2026-11-01", group_by: "day,key,model" });
    const t = report.totals;
    expect(t.requests).toBe(90);
    expect(t.cacheHits).toBe(rs.filter((r) => r.cacheStatus === "HIT").length);
    expect(t.cacheBypassed).toBe(rs.filter((r) => r.cacheStatus === "BYPASS").length);
    expect(t.inputTokens).toBe(rs.reduce((n, r) => n + r.inputTokens, 0));
    expect(t.cacheHitInputTokens).toBe(rs.filter((r) => r.cacheStatus === "HIT").reduce((n, r) => n + r.inputTokens, 0));
    expect(t.unpricedRequests).toBe(rs.filter((r) => r.priced === false).length);
    expect(t.costStatus).toBe(t.unpricedRequests ? "partial" : "known");
    const days = [...new Set(rs.map((r) => r.createdAt.slice(0, 10)))].sort();
    expect(report.breakdowns.day!.map((d) => d.key)).toEqual(days);
    expect(report.breakdowns.day!.reduce((n, d) => n + d.requests, 0)).toBe(90);
    expect(report.breakdowns.key!.map((k) => k.key).sort()).toEqual(["k1", "k2"]);
    expect(report.breakdowns.model!.reduce((n, d) => n + d.costUsd, 0)).toBeCloseTo(t.costUsd, 5);
  });

  test("request outcomes (5xx, 429) are counted per tenant and minute, written behind, in the overview", async () => {
    let nowMs = NOW;
    const outcomes = new OutcomeCounter(s, (e) => { throw e; }, () => nowMs);
    for (let i = 0; i < 3; i++) outcomes.observe("oa", 502);
    outcomes.observe("oa", 429);
    outcomes.observe("oa", 200); // not counted
    outcomes.observe("ob", 500);
    await outcomes.flush();
    nowMs += 60_000;
    outcomes.observe("oa", 429);
    const q = new OverviewQuery(s, () => {}, () => nowMs, outcomes);
    const a = await q.overview("oa", "hour");
    expect(a.totals).toMatchObject({ errors: 3, rateLimited: 2, requests: 0 });
    expect(a.series.map((p) => [p.errors, p.rateLimited])).toEqual([[3, 1], [0, 1]]);
    expect((await q.overview("ob", "day")).totals).toMatchObject({ errors: 1, rateLimited: 0 });
    await outcomes.close();
  });

  test("the per-request list: newest first, filters, paging, tenant scoped", async () => {
    const usage = new UsageRecorder(s);
    for (let i = 0; i < 12; i++) usage.record({ ...rec("la", i), keyId: i < 4 ? "kx" : "ky" });
    usage.record(rec("lb", 0));
    await usage.flush();
    const q = new OverviewQuery(s, (t) => usage.flush(t));
    const all = await q.requests("la", { limit: 5 });
    expect(all.total).toBe(12);
    expect(all.requests.map((r) => r.requestId)).toEqual(["req-11", "req-10", "req-9", "req-8", "req-7"]);
    expect((await q.requests("la", { limit: 5, offset: 10 })).requests.map((r) => r.requestId)).toEqual(["req-1", "req-0"]);
    const hits = await q.requests("la", { cache_status: "HIT" });
    expect(hits.requests.map((r) => r.requestId)).toEqual(["req-9", "req-6", "req-3", "req-0"]);
    expect(hits.requests[0]).toMatchObject({ cacheTier: "exact", streamed: false, similarity: 0.93, keyId: "ky" });
    expect((await q.requests("la", { key_id: "kx" })).total).toBe(4);
    expect((await q.requests("lb", {})).requests.map((r) => r.requestId)).toEqual(["req-0"]);
    await usage.close();
  });

  test("identity's usage reader: spend of keys since a time, hourly per model, models used before", async () => {
    const hour = (h: number, min = 5) => new Date(NOW - h * 3_600_000 + min * 60_000).toISOString();
    const row = (id: string, keyId: string, at: string, model: string, costUsd: number): UsageRow => ({ ...rec("ia", 0), id, keyId, createdAt: at, model, costUsd, costSavedUsd: 0 });
    await UsageStore.of(s, "ia").insertMany([
      row("i1", "ka", hour(3), "gpt-4o", 0.25),
      row("i2", "ka", hour(1), "gpt-4o", 0.5),
      row("i3", "ka", hour(1, 20), "gpt-4o-mini", 0.125),
      row("i4", "kb", hour(1), "gpt-4o", 1),
    ]);
    await UsageStore.of(s, "ib").insertMany([{ ...row("i5", "ka", hour(1), "gpt-4o", 7), tenantId: "ib" }]);
    let flushed = 0;
    const reader = usageReader(s, () => ({ flush: async () => void flushed++ }));
    await reader.flush();
    expect(flushed).toBe(1);
    expect(await reader.spendUsd("ia", ["ka"], hour(2))).toBeCloseTo(0.625, 9);
    expect(await reader.spendUsd("ia", ["ka", "kb"], hour(4))).toBeCloseTo(1.875, 9);
    expect(await reader.spendUsd("ia", [], hour(4))).toBe(0);
    const hourly = await reader.hourly("ia", "ka", hour(4, 0), new Date(NOW).toISOString());
    const h1 = hour(1, 0).slice(0, 13) + ":00:00.000Z";
    expect(hourly.sort((x, y) => x.hour.localeCompare(y.hour) || x.model.localeCompare(y.model))).toEqual([
      { hour: hour(3, 0).slice(0, 13) + ":00:00.000Z", model: "gpt-4o", requests: 1, tokens: 15, costUsd: 0.25 },
      { hour: h1, model: "gpt-4o", requests: 1, tokens: 15, costUsd: 0.5 },
      { hour: h1, model: "gpt-4o-mini", requests: 1, tokens: 15, costUsd: 0.125 },
    ]);
    expect((await reader.modelsBefore("ia", "ka", hour(2))).sort()).toEqual(["gpt-4o"]);
  });
});
