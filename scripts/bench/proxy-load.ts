#!/usr/bin/env bun
/**
 * Closed-loop load of distinct questions (cache misses), run as its own process by proxy.ts and
 * regress.ts: `connections` concurrent keep-alive loops, each sending the body with "{unique}"
 * replaced by a new question (questions.ts) every request, for `secs` seconds after `warmupSecs`.
 * wrk/autocannon send one fixed body, which a cache-enabled gateway answers from its cache after
 * the first request; this measures what most production requests are, the miss.
 *
 * Args: JSON {url, headers, body, connections, secs, warmupSecs?, seed? (default: a new one per run)}. Prints JSON
 * {rps, p50Ms, p99Ms, total, non200, cacheStatus}.
 */
import { distinctLoop } from "./distinct-loop";

const o = JSON.parse(process.argv[2]!) as { url: string; headers: Record<string, string>; body: string; connections: number; secs: number; warmupSecs?: number; seed?: number };
const lat: number[] = [];
const cacheStatus: Record<string, number> = {};
let non200 = 0;
let measuring = false;
// a fresh stream per run unless seeded: a gateway asked the same questions twice would answer hits
const loop = distinctLoop(o.url, o.headers, o.body, o.connections, o.seed ?? Date.now() ^ (process.pid << 8), (ms, ok, st) => {
  if (!measuring) return;
  if (ms === null) return void non200++;
  lat.push(ms);
  if (!ok) non200++;
  cacheStatus[st] = (cacheStatus[st] ?? 0) + 1;
});
await Bun.sleep((o.warmupSecs ?? 1) * 1000);
measuring = true;
const t0 = performance.now();
await Bun.sleep(o.secs * 1000);
measuring = false;
const elapsed = (performance.now() - t0) / 1000;
const total = lat.length;
await loop.stop();
lat.sort((a, b) => a - b);
const pct = (p: number) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * p))]! : NaN);
console.log(JSON.stringify({ rps: total / elapsed, p50Ms: pct(0.5), p99Ms: pct(0.99), total, non200, cacheStatus }));
