#!/usr/bin/env bun
/**
 * Proxies benchmark (BENCHMARKS.md "Proxies"): added latency of the gateway on a cache miss
 * versus calling the fake upstream directly, SSE time-to-first-byte added, and the same
 * workload through @portkey-ai/gateway (peer) started locally under Bun.
 * Every server and every load generator is its own process on 127.0.0.1.
 *   bun scripts/bench/proxy.ts [--secs 8] [--n 3000]
 * Miss path = cache disabled (SVC_CACHE__ENABLED=false): the pipeline runs (auth, rate limit,
 * parse/validate, upstream call, usage record, metrics) with no lookup, as on a miss without the
 * embedding step. A cache-enabled miss adds the embedding + lookup (see the cache section).
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { SignJWT } from "jose";
import { startTarget, load, freePort, ROOT, BENCH_JWT_SECRET, type LoadResult } from "./harness";

const { values } = parseArgs({ options: { secs: { type: "string", default: "8" }, n: { type: "string", default: "3000" } } });
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

async function client(o: { url: string; headers: Record<string, string>; body: string; ttfb?: boolean }) {
  const p = Bun.spawn([bun, resolve(ROOT, "scripts/bench/proxy-client.ts"), JSON.stringify({ ...o, n, warmup: 500 })], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  return JSON.parse(out) as { p50us: number; p99us: number; bad: number };
}

const upPort = await freePort();
const upstream = await spawnReady([bun, resolve(ROOT, "scripts/bench/proxy-upstream.ts"), String(upPort)], `http://127.0.0.1:${upPort}/`);
const upUrl = `http://127.0.0.1:${upPort}`;

const gw = await startTarget({
  env: {
    SVC_PROVIDERS__OPENAI__BASE_URL: upUrl,
    SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench",
    SVC_CACHE__ENABLED: "false",
    SVC_RATE_LIMITS__ENABLED: "false",
    SVC_EMBEDDING__PROVIDER: "local",
  },
});
const token = await new SignJWT({ tenant_id: "bench", permissions: [] })
  .setProtectedHeader({ alg: "HS256" })
  .setExpirationTime("2h")
  .sign(new TextEncoder().encode(BENCH_JWT_SECRET));

const peerPort = await freePort();
const peer = await spawnReady(
  [bun, "--preload", resolve(ROOT, "scripts/bench/proxy-peer-preload.ts"), resolve(ROOT, "node_modules/@portkey-ai/gateway/build/start-server.js"), `--port=${peerPort}`, "--headless"],
  `http://127.0.0.1:${peerPort}/`,
);

const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });
const streamBody = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], stream: true });
const targets = {
  direct: { url: `${upUrl}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: "Bearer sk-bench" } },
  svc: { url: `${gw.url}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: `Bearer ${token}` } },
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

const one: Record<string, { p50us: number; p99us: number; bad: number }> = {};
const ttfb: Record<string, { p50us: number; p99us: number; bad: number }> = {};
const many: Record<string, LoadResult> = {};
for (const [name, t] of Object.entries(targets)) {
  console.error(`1 connection: ${name}`);
  one[name] = await client({ ...t, body });
}
for (const name of ["direct", "svc", "peer"] as const) ttfb[name] = await client({ ...targets[name], body: streamBody, ttfb: true });
for (const [name, t] of Object.entries(targets)) many[name] = await load({ url: t.url, method: "POST", headers: t.headers, body, connections: 64, durationSecs: secs });

await gw.stop();
peer.kill();
upstream.kill();

const f = (us: number) => (us / 1000).toFixed(3);
const out = {
  machine: `${navigator.hardwareConcurrency} cores, Bun ${Bun.version}`,
  oneConnection: Object.fromEntries(Object.entries(one).map(([k, v]) => [k, { p50Ms: f(v.p50us), p99Ms: f(v.p99us), non200: v.bad }])),
  addedP50Ms: { svc: f(one.svc!.p50us - one.direct!.p50us), peer: f(one.peer!.p50us - one.direct!.p50us) },
  addedP99Ms: { svc: f(one.svc!.p99us - one.direct!.p99us), peer: f(one.peer!.p99us - one.direct!.p99us) },
  sseTtfb: Object.fromEntries(Object.entries(ttfb).map(([k, v]) => [k, { p50Ms: f(v.p50us), p99Ms: f(v.p99us), non200: v.bad }])),
  sseTtfbAddedP50Ms: { svc: f(ttfb.svc!.p50us - ttfb.direct!.p50us), peer: f(ttfb.peer!.p50us - ttfb.direct!.p50us) },
  connections64: Object.fromEntries(Object.entries(many).map(([k, v]) => [k, { tool: v.tool, rps: Math.round(v.requestsPerSec), p50Ms: v.p50Ms, p99Ms: v.p99Ms, non2xx: v.non2xx, errors: v.errors }])),
  rpsRatioSvcOverPeer: (many.svc!.requestsPerSec / many.peer!.requestsPerSec).toFixed(2),
};
console.log(JSON.stringify(out, null, 2));
