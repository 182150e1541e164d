#!/usr/bin/env bun
/**
 * Proxies benchmark (BENCHMARKS.md "Proxies"): the latency svc adds on the proxy path, measured
 * against calling the fake upstream directly, SSE time-to-first-byte added, the same workload
 * through @portkey-ai/gateway (peer) started locally under Bun, and 64-connection throughput.
 * Every server and every load generator is its own process on 127.0.0.1.
 *
 *   bun scripts/bench/proxy.ts [--secs 8] [--n 3000] [--base DIR]
 *
 * Latency targets are measured interleaved, request by request (proxy-client.ts), and "added" is
 * the median (p99) of the per-round differences to the direct call — paired samples, so a noisy
 * machine moves both sides of each difference alike.
 *  - svc: cache disabled (SVC_CACHE__ENABLED=false): the pipeline (front door, auth, parse/validate,
 *    upstream call, usage record, metrics) with no lookup — the miss path without embedding;
 *  - svc-miss: cache enabled, every request a different question: embedding + lookup + upstream +
 *    store, what most requests in production are;
 *  - base (with --base DIR): the gateway of another checkout (e.g. an older commit) beside this one,
 *    cache disabled, to compare builds in the same run (and base-miss: its cache-enabled miss).
 * 64 connections: wrk/autocannon with the fixed body (svc, base, peer, direct), then distinct
 * questions from proxy-load.ts for the cache-off gateway beside the cache-enabled one
 * (`connections64Distinct`: the cache-enabled miss throughput next to the cache-off one).
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { benchToken, startTarget, load, loadDistinct, freePort, interleaved, ROOT, type InterleavedSpec, type LoadResult } from "./harness";

const { values } = parseArgs({ options: { secs: { type: "string", default: "8" }, n: { type: "string", default: "3000" }, base: { type: "string" } } });
const secs = Number(values.secs);
const n = Number(values.n);
const bun = process.execPath;

async function spawnReady(cmd: string[], url: string, env: Record<string, string> = {}) {
  const proc = Bun.spawn(cmd, { cwd: ROOT, env: { ...process.env, ...env }, stdout: "ignore", stderr: "inherit" });
  for (let i = 0; i < 600; i++) {
    try {
      await fetch(url, { method: "POST", body: "{}" });
      return proc;
    } catch {
      await Bun.sleep(25);
    }
  }
  throw new Error(`${cmd.join(" ")} did not start`);
}

const client = (o: Omit<InterleavedSpec, "n" | "warmup"> & { n?: number }) => interleaved({ n, warmup: 300, ...o });

const upPort = await freePort();
const upstream = await spawnReady([bun, resolve(ROOT, "scripts/bench/proxy-upstream.ts"), String(upPort)], `http://127.0.0.1:${upPort}/`);
const upUrl = `http://127.0.0.1:${upPort}`;

const gwEnv = {
  SVC_PROVIDERS__OPENAI__BASE_URL: upUrl,
  SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench",
  SVC_CACHE__ENABLED: "false",
  SVC_RATE_LIMITS__ENABLED: "false",
  SVC_EMBEDDING__PROVIDER: "local",
};
const gw = await startTarget({ env: gwEnv });
const cached = await startTarget({ env: { ...gwEnv, SVC_CACHE__ENABLED: "true" } });
const base = values.base ? await startTarget({ env: gwEnv, root: resolve(values.base) }) : undefined;
const baseCached = values.base ? await startTarget({ env: { ...gwEnv, SVC_CACHE__ENABLED: "true" }, root: resolve(values.base) }) : undefined;
// the cache-enabled gateways answer misses only once their embedding model is loaded
for (const t of [cached, baseCached]) for (let i = 0; t && i < 600 && (await fetch(`${t.url}/ready`)).status !== 200; i++) await Bun.sleep(100);
const token = await benchToken();

const peerPort = await freePort();
const peer = await spawnReady(
  [bun, "--preload", resolve(ROOT, "scripts/bench/proxy-peer-preload.ts"), resolve(ROOT, "node_modules/@portkey-ai/gateway/build/start-server.js"), `--port=${peerPort}`, "--headless"],
  `http://127.0.0.1:${peerPort}/`,
);

const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });
const uniqueBody = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "{unique}" }], max_tokens: 16 });
const streamBody = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], stream: true });
const targets: Record<string, { url: string; headers: Record<string, string> }> = {
  direct: { url: `${upUrl}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: "Bearer sk-bench" } },
  svc: { url: `${gw.url}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: `Bearer ${token}` } },
  ...(base ? { base: { url: `${base.url}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: `Bearer ${token}` } } } : {}),
  peer: {
    url: `http://127.0.0.1:${peerPort}/v1/chat/completions`,
    headers: { "content-type": "application/json", authorization: "Bearer sk-bench", "x-portkey-provider": "openai", "x-portkey-custom-host": `${upUrl}/v1` },
  },
};

// sanity: every target answers 200 with the upstream's JSON
for (const [name, t] of Object.entries(targets)) {
  const r = await fetch(t.url, { method: "POST", headers: t.headers, body });
  const j: any = await r.json();
  if (r.status !== 200 || !j.choices) throw new Error(`${name} answered ${r.status}: ${JSON.stringify(j).slice(0, 200)}`);
}

const names = Object.keys(targets);
console.error(`1 connection, interleaved: ${[...names, "svc-miss"].join(", ")}`);
const one = await client({
  targets: [...names.map((name) => ({ name, ...targets[name]! })), { name: "svc-miss", url: `${cached.url}/v1/chat/completions`, headers: targets.svc!.headers, unique: true, body: uniqueBody }],
  body,
  reference: "direct",
});
// svc-miss sends a different body: its added time is against a direct call of the same moment with the usual body
console.error("SSE time to first byte, interleaved");
const ttfb = await client({ targets: names.map((name) => ({ name, ...targets[name]! })), body: streamBody, ttfb: true, reference: "direct", n: Math.min(n, 1500) });
const many: Record<string, LoadResult> = {};
for (const name of names) many[name] = await load({ url: targets[name]!.url, method: "POST", headers: targets[name]!.headers, body, connections: 64, durationSecs: secs });
console.error("64 connections of distinct questions: cache off beside cache enabled");
const distinctTargets: Record<string, string> = { svc: gw.url, "svc-miss": cached.url, ...(base ? { base: base.url } : {}), ...(baseCached ? { "base-miss": baseCached.url } : {}) };
const distinct: Record<string, { rps: number; p50Ms: number; p99Ms: number; non200: number; cacheStatus: Record<string, number> }> = {};
for (const [name, url] of Object.entries(distinctTargets)) distinct[name] = await loadDistinct(`${url}/v1/chat/completions`, targets.svc!.headers, uniqueBody, 64, secs);

await gw.stop();
await cached.stop();
await base?.stop();
await baseCached?.stop();
peer.kill();
upstream.kill();

const f = (us: number) => (us / 1000).toFixed(3);
const out = {
  machine: `${navigator.hardwareConcurrency} cores, Bun ${Bun.version}`,
  oneConnection: Object.fromEntries(Object.entries(one).map(([k, v]) => [k, { p50Ms: f(v.p50us), p99Ms: f(v.p99us), addedP50Ms: f(v.addedP50us), addedP99Ms: f(v.addedP99us), non200: v.bad, cacheStatus: v.cacheStatus }])),
  sseTtfb: Object.fromEntries(Object.entries(ttfb).map(([k, v]) => [k, { p50Ms: f(v.p50us), p99Ms: f(v.p99us), addedP50Ms: f(v.addedP50us), non200: v.bad }])),
  connections64: Object.fromEntries(Object.entries(many).map(([k, v]) => [k, { tool: v.tool, rps: Math.round(v.requestsPerSec), p50Ms: v.p50Ms, p99Ms: v.p99Ms, non2xx: v.non2xx, errors: v.errors }])),
  rpsRatioSvcOverPeer: (many.svc!.requestsPerSec / many.peer!.requestsPerSec).toFixed(2),
  connections64Distinct: Object.fromEntries(Object.entries(distinct).map(([k, v]) => [k, { rps: Math.round(v.rps), p50Ms: v.p50Ms.toFixed(2), p99Ms: v.p99Ms.toFixed(2), non200: v.non200, cacheStatus: v.cacheStatus }])),
};
console.log(JSON.stringify(out, null, 2));
