#!/usr/bin/env bun
/**
 * The dashboard's overview at scale: GET /api/v1/usage/overview (hour / day / 30d) for a tenant
 * with N usage records spread over 30 days (default 1,000,000), through the front door in process
 * (app.fetch: auth, permission, validation, SQLite, JSON), without HTTP noise. The target is
 * ≤ 50 ms at 1,000,000 records: the overview reads the per-minute rollup (at most 43,200 rows per
 * tenant for 30 days), never usage_records. For comparison, the same totals scanned from
 * usage_records (GET /api/v1/usage?group_by=day over 30 days), and what the rollups cost
 * each insert.
 *   bun scripts/bench/ui-overview.ts [--records 1000000] [--runs 30]
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { createApp, closeApp } from "../../src/app";
import { Logger } from "../../src/core/log";
import { UsageStore, type UsageRow } from "../../src/gateway/usage";
import { median, BENCH_JWT_SECRET, benchToken } from "./harness";
import { mulberry32 } from "./data";

const { values } = parseArgs({ options: { records: { type: "string", default: "1000000" }, runs: { type: "string", default: "30" } } });
const N = Number(values.records);
const runs = Number(values.runs);

const dir = mkdtempSync(join(tmpdir(), "svc-bench-ui-"));
const app = createApp(loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: BENCH_JWT_SECRET }, { rate_limits: { enabled: false } }), {
  logger: new Logger("error", () => {}),
});
const T = "bench";
const rnd = mulberry32(42);
const now = Date.now();
const MONTH = 30 * 86_400_000;

const row = (i: number, tenant: string): UsageRow => {
  const status = rnd() < 0.45 ? "HIT" : rnd() < 0.95 ? "MISS" : "BYPASS";
  return {
    id: `${tenant}-${i}`,
    tenantId: tenant,
    createdAt: new Date(now - Math.floor(rnd() * MONTH)).toISOString(),
    requestId: crypto.randomUUID(),
    keyId: `key-${i % 50}`,
    style: "openai",
    provider: "openai",
    endpoint: "/v1/chat/completions",
    model: ["gpt-4o", "gpt-4o-mini", "gpt-4.1"][i % 3]!,
    cacheStatus: status,
    cacheTier: status === "HIT" ? (["exact", "semantic", "l2_context"] as const)[i % 3] : undefined,
    streamed: false,
    inputTokens: 100 + (i % 900),
    outputTokens: 20 + (i % 300),
    latencyMs: status === "HIT" ? 0.2 + rnd() * 5 : 200 + rnd() * 2000,
    costUsd: status === "MISS" ? rnd() / 100 : 0,
    costSavedUsd: status === "HIT" ? rnd() / 100 : 0,
  };
};

// N records for the measured tenant, N/10 for another (the rollup is per tenant)
const t0 = performance.now();
const BATCH = 10_000;
for (let start = 0; start < N + N / 10; start += BATCH) {
  const rows = new Map<string, UsageRow[]>();
  for (let i = start; i < Math.min(start + BATCH, N + N / 10); i++) {
    const tenant = i < N ? T : "other";
    rows.set(tenant, [...(rows.get(tenant) ?? []), row(i, tenant)]);
  }
  // as the usage writer does: one transaction per batch, each tenant's rows and their rollups
  await app.data.tx(async () => {
    for (const [tenant, rs] of rows) await new UsageStore(app.data.tenant(tenant)).insertMany(rs);
  });
}
const insertMs = performance.now() - t0;
const rollupRows = app.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM usage_rollup_minute WHERE tenant_id = $t", { t: T })!.n;

const token = await benchToken({ tenantId: T, permissions: ["ViewMetrics"] });
const call = async (path: string) => {
  const t = performance.now();
  const r = await app.fetch(new Request(`http://bench${path}`, { headers: { authorization: `Bearer ${token}` } }));
  const body = (await r.json()) as any;
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(body)}`);
  return { ms: performance.now() - t, body };
};

const results: Record<string, unknown> = {};
for (const range of ["hour", "day", "30d"]) {
  await call(`/api/v1/usage/overview?range=${range}`); // warm: statements prepared
  const times: number[] = [];
  let requests = 0;
  for (let i = 0; i < runs; i++) {
    const r = await call(`/api/v1/usage/overview?range=${range}`);
    times.push(r.ms);
    requests = r.body.totals.requests;
  }
  times.sort((a, b) => a - b);
  results[`overview ${range}`] = { requests, medianMs: +median(times).toFixed(2), maxMs: +times[times.length - 1]!.toFixed(2) };
}
{
  const from = new Date(now - MONTH - 60_000).toISOString();
  const times: number[] = [];
  let requests = 0;
  for (let i = 0; i < Math.min(runs, 5); i++) {
    const r = await call(`/api/v1/usage?from=${from}&group_by=day`);
    times.push(r.ms);
    requests = r.body.totals.requests;
  }
  results["scan of usage_records (GET /api/v1/usage, 30 days by day)"] = { requests, medianMs: +median(times).toFixed(1) };
}
await closeApp(app);
rmSync(dir, { recursive: true, force: true });

/** What the rollups cost a write: µs per record, 100k records in batches, with and without them (fresh databases, alternated). */
async function insertCost(rollups: boolean): Promise<number> {
  const d = mkdtempSync(join(tmpdir(), "svc-bench-ui-ins-"));
  const a = createApp(loadConfig({ SVC_STORAGE__PATH: join(d, "svc.db"), SVC_AUTH__JWT_SECRET: BENCH_JWT_SECRET }, { rate_limits: { enabled: false } }), { logger: new Logger("error", () => {}) });
  const n = 100_000;
  const t = performance.now();
  for (let start = 0; start < n; start += BATCH) {
    const rows = Array.from({ length: BATCH }, (_, i) => row(start + i, T));
    await a.data.tx(() => new UsageStore(a.data.tenant(T), rollups).insertMany(rows));
  }
  const us = ((performance.now() - t) * 1000) / n;
  await closeApp(a);
  rmSync(d, { recursive: true, force: true });
  return us;
}
const withT: number[] = [];
const without: number[] = [];
for (let i = 0; i < 3; i++) {
  without.push(await insertCost(false));
  withT.push(await insertCost(true));
}

console.log(
  JSON.stringify(
    {
      records: N,
      otherTenantRecords: N / 10,
      rollupRowsOfTenant: rollupRows,
      insertUsPerRecord: +((insertMs * 1000) / (N + N / 10)).toFixed(1),
      insertUsPerRecord100k: { recordsOnly: +median(without).toFixed(1), withRollups: +median(withT).toFixed(1) },
      runs,
      results,
    },
    null,
    2,
  ),
);
