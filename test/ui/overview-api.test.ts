/**
 * The dashboard's aggregate endpoints (src/gateway/overview-api.ts) without a browser:
 *  - the per-minute rollup the overview reads equals a scan of usage_records (random traffic,
 *    two tenants), percentiles land in the bucket of the exact percentile;
 *  - records written before the rollup existed are backfilled by its migration; a database whose
 *    rollups 0005's row trigger kept goes on with the writer's upserts (0009 drops the trigger);
 *  - over HTTP: permissions (ViewMetrics / ViewLogs), tenant scoping, range validation, and the
 *    /ui page's security headers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { GATEWAY_MIGRATIONS } from "../../src/gateway/migrations";
import { LATENCY_BOUNDS, OVERVIEW_MIGRATIONS, OverviewQuery, quantile } from "../../src/gateway/overview-api";
import { UsageStore, type UsageRow } from "../../src/gateway/usage";
import { startProxyEnv, type ProxyEnv } from "../gateway/setup";
import { operatingPoints } from "../../src/ui/bundle";
import { ensureChromium, INSTALL } from "./browser";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const NOW = Date.parse("2026-11-20T12:34:56.000Z");
const TIERS = ["exact", "semantic", "l2_context"] as const;

function rng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
}

function records(n: number, seed: number): UsageRow[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const status = r() < 0.5 ? "HIT" : r() < 0.9 ? "MISS" : "BYPASS";
    return {
      id: `u${seed}-${i}`,
      tenantId: r() < 0.7 ? "a" : "b",
      createdAt: new Date(NOW - Math.floor(r() * 26 * 3_600_000)).toISOString(),
      requestId: `r${i}`,
      style: "openai",
      provider: "openai",
      endpoint: "/v1/chat/completions",
      model: r() < 0.5 ? "gpt-4o" : "gpt-4o-mini",
      cacheStatus: status,
      cacheTier: status === "HIT" ? TIERS[Math.floor(r() * 3)] : undefined,
      streamed: false,
      inputTokens: Math.floor(r() * 500),
      outputTokens: Math.floor(r() * 200),
      latencyMs: r() < 0.1 ? r() * 90_000 : r() * 800,
      costUsd: status === "MISS" ? r() / 100 : 0,
      costSavedUsd: status === "HIT" ? r() / 100 : 0,
    } as UsageRow;
  });
}

/** What the overview must say, computed by scanning usage_records over the same whole minutes. */
function scan(db: Db, tenant: string, from: string, to: string) {
  const rows = db.sqlite
    .query<{ cache_status: string; cache_tier: string | null; latency_ms: number; cost_usd: number; cost_saved_usd: number; input_tokens: number }, [string, string, string]>(
      "SELECT * FROM usage_records WHERE tenant_id = ? AND substr(created_at, 1, length(?2)) >= ?2 AND substr(created_at, 1, length(?2)) <= ?3",
    )
    .all(tenant, from, to);
  const hit = (t: string) => rows.filter((x) => x.cache_status === "HIT" && x.cache_tier === t).length;
  const lat = rows.map((x) => x.latency_ms).sort((a, b) => a - b);
  return {
    requests: rows.length,
    hits: { exact: hit("exact"), semantic: hit("semantic"), l2_context: hit("l2_context") },
    misses: rows.filter((x) => x.cache_status === "MISS").length,
    bypassed: rows.filter((x) => x.cache_status === "BYPASS").length,
    cost: rows.reduce((s, x) => s + x.cost_usd, 0),
    saved: rows.reduce((s, x) => s + x.cost_saved_usd, 0),
    inputTokens: rows.reduce((s, x) => s + x.input_tokens, 0),
    latency: lat,
  };
}

const bucketOf = (ms: number) => {
  const i = LATENCY_BOUNDS.findIndex((b) => ms <= b);
  return i < 0 ? LATENCY_BOUNDS.length : i;
};

async function expectOverviewMatches(db: Db, q: OverviewQuery) {
  for (const tenant of ["a", "b"])
    // the last 60 whole minutes, 24 whole hours, 720 whole hours (the current one included)
    for (const [range, count, unitMs, chars] of [["hour", 60, 60_000, 16], ["day", 24, 3_600_000, 13], ["30d", 720, 3_600_000, 13]] as const) {
      const o = await q.overview(tenant, range);
      const to = new Date(NOW).toISOString().slice(0, chars);
      const from = new Date(NOW - (count - 1) * unitMs).toISOString().slice(0, chars);
      const s = scan(db, tenant, from, to);
      expect(o.from).toBe(new Date(Date.parse(from.padEnd(16, ":00").slice(0, 16) + ":00.000Z")).toISOString());
      expect(o.totals.requests).toBe(s.requests);
      expect(o.totals.hits).toEqual({ ...s.hits, total: s.hits.exact + s.hits.semantic + s.hits.l2_context });
      expect(o.totals.misses).toBe(s.misses);
      expect(o.totals.bypassed).toBe(s.bypassed);
      expect(o.totals.inputTokens).toBe(s.inputTokens);
      expect(o.totals.costUsd).toBeCloseTo(s.cost, 5);
      expect(o.totals.costSavedUsd).toBeCloseTo(s.saved, 5);
      expect(o.series.reduce((n, p) => n + p.requests, 0)).toBe(s.requests);
      expect(o.series.reduce((n, p) => n + p.hits, 0)).toBe(o.totals.hits.total);
      if (s.requests > 0) {
        // the interpolated percentile lies in the bucket of the exact one
        const exact = (p: number) => s.latency[Math.max(0, Math.ceil(p * s.latency.length) - 1)]!;
        expect(bucketOf(o.totals.latencyMs.p50)).toBe(bucketOf(exact(0.5)));
        expect(bucketOf(o.totals.latencyMs.p99)).toBe(bucketOf(exact(0.99)));
      }
    }
}

describe("overview rollup", () => {
  test("equals a scan of usage_records for every range and tenant (random traffic over 26 h)", async () => {
    const db = new Db(":memory:", [{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] }]);
    const storage = openStorage({ path: ":memory:", db });
    const rows = records(3000, 7);
    for (const r of rows) await new UsageStore(storage.tenant(r.tenantId)).insert(r);
    const q = new OverviewQuery(storage, () => {}, () => NOW);
    await expectOverviewMatches(db, q);
    // the hour range is the last 60 whole minutes: a record 61 minutes ago is in the day only
    const old = { ...rows[0]!, id: "old", tenantId: "c", createdAt: new Date(NOW - 61 * 60_000).toISOString() };
    await new UsageStore(storage.tenant("c")).insert(old);
    expect((await q.overview("c", "hour")).totals.requests).toBe(0);
    expect((await q.overview("c", "day")).totals.requests).toBe(1);
    db.close();
  });

  test("the same when the records come in batches of 500 that span many minutes and hours (as the write-behind writes them)", async () => {
    const db = new Db(":memory:", [{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] }]);
    const storage = openStorage({ path: ":memory:", db });
    const rows = records(3000, 7);
    for (const tenant of new Set(rows.map((r) => r.tenantId))) {
      const mine = rows.filter((r) => r.tenantId === tenant);
      for (let i = 0; i < mine.length; i += 500) await new UsageStore(storage.tenant(tenant)).insertMany(mine.slice(i, i + 500));
    }
    await expectOverviewMatches(db, new OverviewQuery(storage, () => {}, () => NOW));
    db.close();
  });

  test("records written before the rollup existed are backfilled by its migration", async () => {
    const db = new Db(":memory:", [{ domain: "gateway", migrations: GATEWAY_MIGRATIONS }]);
    const storage = openStorage({ path: ":memory:", db });
    // records only: the rollup tables do not exist yet
    for (const r of records(1500, 11)) await new UsageStore(storage.tenant(r.tenantId), false).insert(r);
    db.migrate([{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] }]);
    await expectOverviewMatches(db, new OverviewQuery(storage, () => {}, () => NOW));
    db.close();
  });

  test("a database whose rollups a row trigger kept goes on with the writer's upserts: nothing counted twice", async () => {
    // migrated up to the trigger's last day (0005's row trigger in place), records counted by it
    const before = OVERVIEW_MIGRATIONS.filter((m) => m.id !== "0009_usage_rollups_by_writer");
    const db = new Db(":memory:", [{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...before] }]);
    const storage = openStorage({ path: ":memory:", db });
    const [early, late] = [records(800, 13), records(800, 17).map((r) => ({ ...r, id: `late-${r.id}` }))];
    for (const r of early) await new UsageStore(storage.tenant(r.tenantId), false).insert(r);
    db.migrate([{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] }]);
    expect(db.sqlite.query("SELECT name FROM sqlite_master WHERE type = 'trigger'").all()).toEqual([]);
    // the writer's way: each tenant's batch and its rollups in one transaction
    for (const t of ["a", "b"]) await storage.tx(() => new UsageStore(storage.tenant(t)).insertMany(late.filter((r) => r.tenantId === t)));
    await expectOverviewMatches(db, new OverviewQuery(storage, () => {}, () => NOW));
    db.close();
  });

  test("quantile interpolates inside the bucket and is 0 without data", () => {
    const counts = new Array(LATENCY_BOUNDS.length + 1).fill(0);
    expect(quantile(counts, 0.5)).toBe(0);
    counts[bucketOf(100)] = 10; // (80, 100]
    expect(quantile(counts, 0.5)).toBe(90);
    expect(quantile(counts, 1)).toBe(100);
  });
});

describe("the browser tests' Chromium", () => {
  test("missing and not root: the setup fails naming the command to run (never a silent skip)", () => {
    expect(() => ensureChromium({ candidates: ["/nonexistent/chromium"], uid: 1000, chromiumPath: undefined })).toThrow(`run \`${INSTALL}\` as root`);
    expect(() => ensureChromium({ chromiumPath: "/nonexistent/chromium" })).toThrow("CHROMIUM_PATH=/nonexistent/chromium does not exist");
  });
});

describe("operating points compiled into the dashboard", () => {
  const table = (rows: string) =>
    `## x\n\n| floor | precision 50/50 | recall | Quora false-hit rate | antonym |\n|---|---|---|---|---|\n${rows}\n\nafter`;
  test("read from BENCHMARKS.md's cross-validated floor table (bold kept readable)", () => {
    expect(operatingPoints(table("| 0.90 | 0.962 | 0.188 | 0.013 | 0.004 |\n| **0.94** | **0.971** | **0.139** | **0.007** | 0.004 |"))).toEqual([
      { threshold: 0.9, label: "0.90", precision: 0.962, recall: 0.188, falseHitRate: 0.013 },
      { threshold: 0.94, label: "0.94", precision: 0.971, recall: 0.139, falseHitRate: 0.007 },
    ]);
    // the real file parses, and has the shipped floor
    const real = operatingPoints(readFileSync(join(import.meta.dir, "../../BENCHMARKS.md"), "utf8"));
    expect(real.length).toBeGreaterThan(3);
    expect(real.some((p) => p.threshold === 0.94)).toBe(true);
  });
  test("a table that cannot be read fails the build instead of vanishing from the page", () => {
    expect(() => operatingPoints("no table here")).toThrow("no `| floor |` table");
    expect(() => operatingPoints(table("| 0.9 | n/a | 0.364 | 0.010 | z |"))).toThrow("unreadable row");
    expect(() => operatingPoints(table(""))).toThrow("has no rows");
  });
});
