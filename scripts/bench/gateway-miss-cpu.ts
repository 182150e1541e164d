#!/usr/bin/env bun
/**
 * Server CPU per proxied miss (cache disabled): how much processor time the gateway process itself
 * spends on one `POST /v1/chat/completions` forwarded to a fake upstream — read from the kernel's
 * per-process counters (/proc/<pid>/stat utime+stime), so the load generator, the upstream and the
 * rest of a noisy machine do not enter the number the way they enter latency.
 *
 *   bun scripts/bench/gateway-miss-cpu.ts [--n 10000] [--rounds 5] [--base DIR] [--exact]
 *
 * --exact: the cache enabled and the same request every time, so every counted request is an exact
 * hit (front door, key derivation, in-memory exact tier, response) and never reaches the upstream.
 *
 * With --base, another checkout's gateway (e.g. an older commit) runs beside this one and the
 * rounds alternate between them: each round sends n sequential keep-alive requests to one gateway.
 * Linux only (/proc).
 */
import { parseArgs } from "node:util";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { benchToken, startTarget, startBenchUpstream, median, machine, type Target } from "./harness";

const { values } = parseArgs({ options: { n: { type: "string", default: "10000" }, rounds: { type: "string", default: "5" }, base: { type: "string" }, exact: { type: "boolean", default: false } } });
const n = Number(values.n);
const rounds = Number(values.rounds);
const TICK_US = 1e6 / 100; // USER_HZ: 100 on Linux

const cpuUs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) * TICK_US; // utime + stime (fields 14, 15)
};

const { url: upUrl, proc: upstream } = await startBenchUpstream();

const env = {
  SVC_PROVIDERS__OPENAI__BASE_URL: upUrl,
  SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench",
  SVC_CACHE__ENABLED: values.exact ? "true" : "false",
  SVC_RATE_LIMITS__ENABLED: "false",
};
const targets: Record<string, Target> = { svc: await startTarget({ env }) };
if (values.base) targets.base = await startTarget({ env, root: resolve(values.base) });
const token = await benchToken();
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });
const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };

async function round(t: Target, count: number): Promise<number> {
  const before = cpuUs(t.proc.pid);
  for (let i = 0; i < count; i++) {
    const r = await fetch(`${t.url}/v1/chat/completions`, { method: "POST", headers, body });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`${t.url} answered ${r.status}`);
  }
  return (cpuUs(t.proc.pid) - before) / count;
}

for (const t of Object.values(targets)) await round(t, 2000); // warm-up (JIT, connection pools)
const perRequest: Record<string, number[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
for (let r = 0; r < rounds; r++) {
  const names = Object.keys(targets);
  for (const name of r % 2 ? names.reverse() : names) perRequest[name]!.push(await round(targets[name]!, n));
}
const out: Record<string, unknown> = { machine: machine(), path: values.exact ? "exact hit" : "miss, cache disabled", n, rounds };
for (const [name, xs] of Object.entries(perRequest)) out[name] = { medianUsPerRequest: Number(median(xs).toFixed(1)), rounds: xs.map((x) => Number(x.toFixed(1))) };
if (targets.base) out.ratioSvcOverBase = Number((median(perRequest.svc!) / median(perRequest.base!)).toFixed(3));
console.log(JSON.stringify(out, null, 2));
for (const t of Object.values(targets)) await t.stop();
upstream.kill();
