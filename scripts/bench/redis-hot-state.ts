#!/usr/bin/env bun
/**
 * The shared hot state's costs (issue 24), on loopback against a throwaway redis-server:
 *  1. added latency of the rate limiter + team budget on the proxy miss path: per request the
 *     kernel's `enforce` (proxy group: tier buckets + group bucket, one Lua round trip) and the
 *     budget guard's admission and settle (a key of a team with a budget under a parent with one:
 *     one Lua round trip, settle sent without waiting), in-process vs Redis, interleaved request
 *     by request (paired, same run); the limiter rotates over 1000 tenants so no bucket refuses;
 *  2. invalidation delay: one replica's bus publishes, another's subscriber receives (its cache
 *     drop runs synchronously on receipt); p50/p99 over `events` messages sent 5 ms apart.
 *   bun scripts/bench/redis-hot-state.ts [--n 5000] [--events 500]
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TestRedis } from "../../test/helpers/redis";
import { createApp, closeApp, type App } from "../../src/app";
import { loadConfig } from "../../src/config";
import { Logger } from "../../src/core/log";
import { Metrics } from "../../src/core/metrics";
import { RedisHotState } from "../../src/core/redis";
import { TOPICS } from "../../src/core/hotstate";
import type { Principal } from "../../src/core/auth";

const { values } = parseArgs({ options: { n: { type: "string", default: "5000" }, events: { type: "string", default: "500" } } });
const n = Number(values.n);
const events = Number(values.events);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const us = (ms: number) => Math.round(ms * 1000 * 10) / 10;

const redis = await TestRedis.start();
const dirs: string[] = [];
const log = new Logger("error");

async function build(redisUrl: string): Promise<{ app: App; key: Principal }> {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-hot-"));
  dirs.push(dir);
  const config = loadConfig({}, { storage: { path: join(dir, "svc.db") }, auth: { jwt_secret: "bench-hot-state-secret-bench-hot-state" }, cache: { enabled: false }, redis: { url: redisUrl }, server: { request_log: false } });
  const app = createApp(config, { logger: log });
  if (app.hotState) for (let i = 0; i < 500 && !app.hotState.ready(); i++) await Bun.sleep(10);
  const parent = await app.identity.teams.create("bench", { name: "org", maxBudgetCents: 1_000_000_000 });
  const team = await app.identity.teams.create("bench", { name: "team", parentTeamId: parent.id, maxBudgetCents: 1_000_000_000 });
  const k = await app.identity.keys.create("bench", { name: "budget", teamId: team.id });
  return { app, key: { tenantId: "bench", sub: `key:${k.id}`, permissions: new Set(), via: "api_key", keyId: k.id } };
}

const local = await build("");
const shared = await build(redis.url);
const tenants = Array.from({ length: 1000 }, (_, i): Principal => ({ tenantId: `t${i}`, sub: `t${i}`, permissions: new Set(), via: "jwt" }));

/** [limiter ms, budget ms] of one request */
async function once(x: { app: App; key: Principal }, i: number): Promise<[number, number]> {
  const t0 = performance.now();
  await x.app.limiter.enforce(tenants[i % tenants.length]!, "proxy", {});
  const t1 = performance.now();
  const ticket = await x.app.identity.guard.admit({ tenantId: "bench", sub: x.key.sub, keyId: x.key.keyId }, "gpt-4o-mini");
  ticket.settle(0.000_01);
  return [t1 - t0, performance.now() - t1];
}

// warm-up (scripts loaded, budgets seeded, JIT)
for (let i = 0; i < 500; i++) {
  await once(local, i);
  await once(shared, i);
}
const a: number[] = [];
const b: number[] = [];
const diff: number[] = [];
const limDiff: number[] = [];
const budDiff: number[] = [];
for (let i = 0; i < n; i++) {
  const first = i % 2 === 0;
  const x = first ? await once(local, i) : await once(shared, i);
  const y = first ? await once(shared, i) : await once(local, i);
  const [l, r] = first ? [x, y] : [y, x];
  a.push(l[0] + l[1]);
  b.push(r[0] + r[1]);
  diff.push(r[0] + r[1] - l[0] - l[1]);
  limDiff.push(r[0] - l[0]);
  budDiff.push(r[1] - l[1]);
}

// invalidation delay between two replicas' buses
const m = new Metrics();
const cfg = { url: redis.url, fail_mode: "closed" as const, prefix: "svc:", command_timeout_ms: 1_000 };
const pub = new RedisHotState(cfg, log, m.counter("a", "a", ["kind", "mode"]));
const sub = new RedisHotState(cfg, log, m.counter("b", "b", ["kind", "mode"]));
for (let i = 0; i < 500 && !(pub.ready() && sub.ready()); i++) await Bun.sleep(10);
const delays: number[] = [];
sub.subscribe(TOPICS.keyRevoked, (p) => {
  if (p) delays.push(performance.now() - (JSON.parse(p) as { at: number }).at);
});
for (let i = 0; i < events; i++) {
  pub.publish(TOPICS.keyRevoked, JSON.stringify({ t: "bench", id: String(i), at: performance.now() }));
  await Bun.sleep(5);
}
for (let i = 0; i < 200 && delays.length < events; i++) await Bun.sleep(10);

const report = {
  limiterAndBudget: {
    n,
    inProcessUs: { p50: us(pct(a, 50)), p99: us(pct(a, 99)) },
    redisUs: { p50: us(pct(b, 50)), p99: us(pct(b, 99)) },
    addedUs: { p50: us(pct(diff, 50)), p99: us(pct(diff, 99)) },
    addedLimiterUs: { p50: us(pct(limDiff, 50)), p99: us(pct(limDiff, 99)) },
    addedBudgetUs: { p50: us(pct(budDiff, 50)), p99: us(pct(budDiff, 99)) },
  },
  invalidation: { events, received: delays.length, p50Ms: Math.round(pct(delays, 50) * 1000) / 1000, p99Ms: Math.round(pct(delays, 99) * 1000) / 1000, maxMs: Math.round(Math.max(...delays) * 1000) / 1000 },
};
console.log(JSON.stringify(report, null, 2));

pub.close();
sub.close();
await closeApp(local.app);
await closeApp(shared.app);
for (const d of dirs) rmSync(d, { recursive: true, force: true });
await redis.stop();
