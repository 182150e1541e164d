#!/usr/bin/env bun
/**
 * Issue 2 (foundation) benchmarks, recorded in BENCHMARKS.md:
 *  1. GET /health at 64 connections
 *  2. GET /api/v1/rate-limits/tiers with a bearer token (auth + permission + a no-op handler) at 64 connections
 *     (rate limits off for this run: at 64 connections any tier would answer 429s, see 3)
 *  3. the rate limiter's per-request cost (in-process, enforce() on a warm tenant)
 *  4. cold start of dist/svc to the first 200 on /health (median, min and max of --starts starts,
 *     default 15): on a new database file (first start: creates it) and on an existing one (restart)
 *
 *   npm run build && bun scripts/bench/foundation.ts [--binary dist/svc] [-d 10] [--starts 15] [--cold-only]
 *
 * Where the start-up time goes: scripts/bench/startup-profile.ts.
 */
import { parseArgs } from "node:util";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startTarget, load, coldStarts, median, machine, ROOT, BENCH_JWT_SECRET } from "./harness";
import { TokenService } from "../../src/core/auth";
import { RateLimiter } from "../../src/ratelimit";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { binary: { type: "string", default: "dist/svc" }, d: { type: "string", default: "10" }, starts: { type: "string", default: "15" }, "cold-only": { type: "boolean" } },
});
const binary = resolve(ROOT, values.binary!);
if (!existsSync(binary)) throw new Error(`${binary} not found: run npm run build first`);
const d = Number(values.d);

const m = machine();
console.log(`machine: nproc=${m.nproc}, cpu="${m.cpu}", bun ${m.bun}`);

if (!values["cold-only"]) {
  const gw = await startTarget({ binary, env: { SVC_RATE_LIMITS__ENABLED: "false" } });
  try {
    await load({ url: gw.url + "/health", connections: 64, durationSecs: 2 }); // warm-up
    const health = await load({ url: gw.url + "/health", connections: 64, durationSecs: d });
    console.log(`GET /health: ${JSON.stringify(health)}`);
    const token = await new TokenService(BENCH_JWT_SECRET).sign({ tenantId: "bench", permissions: ["ViewMetrics"] });
    const headers = { authorization: `Bearer ${token}` };
    await load({ url: gw.url + "/api/v1/rate-limits/tiers", headers, connections: 64, durationSecs: 2 });
    const authed = await load({ url: gw.url + "/api/v1/rate-limits/tiers", headers, connections: 64, durationSecs: d });
    console.log(`GET /api/v1/rate-limits/tiers (bearer): ${JSON.stringify(authed)}`);
  } finally {
    await gw.stop();
  }

  // rate limiter cost per request (in-process): enterprise tenant on the proxy group, allowed path
  {
    const store = (t: string) => ({ get: async () => undefined, set: async (tier: any, by: string) => ({ tenantId: t, tier, updatedAt: "", updatedBy: by }), remove: async () => false });
    let now = 0;
    // each call 100 ms after the previous one (fake clock), so every bucket has refilled: the allowed path
    const l = new RateLimiter(store, { clock: { now: () => (now += 100) } });
    await l.setTier("bench", "enterprise", "bench");
    const principal = { tenantId: "bench", sub: "b", permissions: new Set<string>(), via: "jwt" as const };
    const req = "proxy"; // the group the proxies' mount declares
    const N = 1_000_000;
    let rejected = 0;
    for (let i = 0; i < 10_000; i++) try { l.enforce(principal, req, {}); } catch { rejected++; }
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      try {
        l.enforce(principal, req, {});
      } catch {
        rejected++;
      }
    }
    const ns = ((performance.now() - t0) * 1e6) / N;
    console.log(`rate limiter enforce(), allowed path: ${ns.toFixed(0)} ns per request (${N} calls, ${rejected} rejected)`);
    // rejected path (throws ApiError with headers)
    const l2 = new RateLimiter(store, { clock: { now: () => 0 } });
    await l2.load("bench"); // a known tenant: decided synchronously
    const t1 = performance.now();
    let r2 = 0;
    for (let i = 0; i < 100_000; i++) {
      try {
        l2.enforce(principal, req, {});
      } catch {
        r2++;
      }
    }
    console.log(`rate limiter enforce(), rejected path: ${(((performance.now() - t1) * 1e6) / 100_000).toFixed(0)} ns per request (${r2} of 100000 rejected)`);
  }
}

// cold starts: spawn -> first 200 on GET /health (polled every ~1 ms by a separate process)
const n = Number(values.starts);
const summary = (xs: number[]) =>
  `median ${median(xs).toFixed(1)} ms, range ${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)} (${xs.length} starts: ${xs.map((x) => x.toFixed(1)).join(", ")})`;
const fresh = await coldStarts(binary, n);
console.log(`cold start dist/svc -> first 200 on /health, new database file: ${summary(fresh)}`);
// restart: the same database file every time (created by one start before the measured ones)
const dbDir = mkdtempSync(join(tmpdir(), "svc-bench-db-"));
try {
  const env = { SVC_STORAGE__PATH: join(dbDir, "svc.db") };
  await (await startTarget({ binary, env })).stop();
  const restarts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = await startTarget({ binary, env });
    restarts.push(t.startMs);
    await t.stop();
  }
  console.log(`cold start dist/svc -> first 200 on /health, existing database: ${summary(restarts)}`);
} finally {
  rmSync(dbDir, { recursive: true, force: true });
}
