/**
 * The dashboard's aggregate endpoints (src/gateway/overview-api.ts) without a browser:
 *  - the per-minute rollup the overview reads equals a scan of usage_records (random traffic,
 *    two tenants), percentiles land in the bucket of the exact percentile;
 *  - records written before the rollup existed are backfilled by its migration;
 *  - over HTTP: permissions (ViewMetrics / ViewLogs), tenant scoping, range validation, and the
 *    /ui page's security headers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Db } from "../../src/storage/db";
import { storageOf } from "../../src/storage/scoped";
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

function expectOverviewMatches(db: Db, q: OverviewQuery) {
  for (const tenant of ["a", "b"])
    // the last 60 whole minutes, 24 whole hours, 720 whole hours (the current one included)
    for (const [range, count, unitMs, chars] of [["hour", 60, 60_000, 16], ["day", 24, 3_600_000, 13], ["30d", 720, 3_600_000, 13]] as const) {
      const o = q.overview(tenant, range);
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
  test("equals a scan of usage_records for every range and tenant (random traffic over 26 h)", () => {
    const db = new Db(":memory:", [{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] }]);
    const storage = storageOf(db);
    const rows = records(3000, 7);
    for (const r of rows) new UsageStore(storage.tenant(r.tenantId)).insert(r);
    const q = new OverviewQuery(storage, () => {}, () => NOW);
    expectOverviewMatches(db, q);
    // the hour range is the last 60 whole minutes: a record 61 minutes ago is in the day only
    const old = { ...rows[0]!, id: "old", tenantId: "c", createdAt: new Date(NOW - 61 * 60_000).toISOString() };
    new UsageStore(storage.tenant("c")).insert(old);
    expect(q.overview("c", "hour").totals.requests).toBe(0);
    expect(q.overview("c", "day").totals.requests).toBe(1);
    db.close();
  });

  test("records written before the rollup existed are backfilled by its migration", () => {
    const db = new Db(":memory:", [{ domain: "gateway", migrations: GATEWAY_MIGRATIONS }]);
    const storage = storageOf(db);
    for (const r of records(1500, 11)) new UsageStore(storage.tenant(r.tenantId)).insert(r);
    db.migrate([{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] }]);
    expectOverviewMatches(db, new OverviewQuery(storage, () => {}, () => NOW));
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
    `## x\n\n| decisionThreshold | hits | precision | recall | false-hit rate | other |\n|---|---|---|---|---|---|\n${rows}\n\nafter`;
  test("read from BENCHMARKS.md's decisionThreshold table (bold, footnotes and labels kept readable)", () => {
    expect(operatingPoints(table("| 1 (the rules alone)¹ | 177 | 0.977 | 0.346 | 0.008 | x |\n| **0.92 (default)** | 184 | **0.978** | 0.360 | 0.008 | y |"))).toEqual([
      { threshold: 1, label: "1 (the rules alone)", precision: 0.977, recall: 0.346, falseHitRate: 0.008 },
      { threshold: 0.92, label: "0.92 (default)", precision: 0.978, recall: 0.36, falseHitRate: 0.008 },
    ]);
    // the real file parses, and has the default operating point
    const real = operatingPoints(readFileSync(join(import.meta.dir, "../../BENCHMARKS.md"), "utf8"));
    expect(real.length).toBeGreaterThan(3);
  });
  test("a table that cannot be read fails the build instead of vanishing from the page", () => {
    expect(() => operatingPoints("no table here")).toThrow("no `| decisionThreshold |` table");
    expect(() => operatingPoints(table("| 0.9 | 187 | n/a | 0.364 | 0.010 | z |"))).toThrow("unreadable row");
    expect(() => operatingPoints(table(""))).toThrow("has no rows");
  });
});

describe("aggregate endpoints over HTTP", () => {
  let env: ProxyEnv;
  beforeAll(async () => {
    env = await startProxyEnv();
  });
  afterAll(() => env.stop());

  const chat = (token: string, text: string) =>
    fetch(`${env.gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: text }] }),
    });

  test("tenant-scoped and permission-checked: ViewMetrics for the overview, ViewLogs for the records", async () => {
    const a = await env.gw.token("ta", ["WorkspaceAdmin"]);
    const b = await env.gw.token("tb", ["WorkspaceAdmin"]);
    for (const text of ["one", "two", "one"]) expect((await chat(a, text)).status).toBe(200);
    expect((await chat(b, "other tenant")).status).toBe(200);

    const oa = (await (await env.gw.api("/api/v1/usage/overview?range=hour", { token: a })).json()) as any;
    expect(oa.totals).toMatchObject({ requests: 3, misses: 2, hits: { exact: 1, total: 1 } });
    const ob = (await (await env.gw.api("/api/v1/usage/overview?range=hour", { token: b })).json()) as any;
    expect(ob.totals.requests).toBe(1);
    const list = (await (await env.gw.api("/api/v1/usage/requests?cache_status=HIT", { token: a })).json()) as any;
    expect(list.total).toBe(1);
    expect(list.requests[0]).toMatchObject({ cacheStatus: "HIT", cacheTier: "exact", model: "gpt-4o-mini" });

    const viewer = await env.gw.token("ta", ["ViewMetrics"]);
    expect((await env.gw.api("/api/v1/usage/overview", { token: viewer })).status).toBe(200);
    const refused = await env.gw.api("/api/v1/usage/requests", { token: viewer });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ error: { message: "missing permission ViewLogs", type: "authorization_error" } });
    expect((await env.gw.api("/api/v1/usage/overview", { token: await env.gw.token("ta", ["ViewKeys"]) })).status).toBe(403);
    expect((await env.gw.api("/api/v1/usage/overview")).status).toBe(401);
    const bad = await env.gw.api("/api/v1/usage/overview?range=week", { token: viewer });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.type).toBe("validation_error");
  });

  test("documented in OpenAPI", async () => {
    const spec = (await (await env.gw.api("/openapi.json")).json()) as any;
    expect(spec.paths["/api/v1/usage/overview"].get.parameters.map((p: any) => p.name)).toEqual(["range"]);
    expect(Object.keys(spec.paths["/api/v1/usage/requests"].get.responses)).toContain("200");
  });

  test("/ui: one page, embedded assets, strict CSP, no framing, no referrer", async () => {
    for (const path of ["/ui", "/ui/"]) {
      const r = await fetch(env.gw.url + path);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
      const csp = r.headers.get("content-security-policy")!;
      for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) expect(csp).toContain(d);
      expect(csp).not.toContain("unsafe");
      expect(r.headers.get("x-frame-options")).toBe("DENY");
      expect(r.headers.get("referrer-policy")).toBe("no-referrer");
      const html = await r.text();
      expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script
      const js = html.match(/src="([^"]+)"/)![1]!;
      expect(new URL(js, env.gw.url + path).pathname).toBe("/ui/app.js");
    }
    const js = await fetch(`${env.gw.url}/ui/app.js`);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const body = await js.text();
    expect(body.length).toBeGreaterThan(10_000);
    expect(Bun.gzipSync(body).length).toBeLessThan(200 * 1024);
    const again = await fetch(`${env.gw.url}/ui/app.js`, { headers: { "if-none-match": js.headers.get("etag")! } });
    expect(again.status).toBe(304);
  });
});
