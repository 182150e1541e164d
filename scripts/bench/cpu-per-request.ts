#!/usr/bin/env bun
/**
 * CPU per proxied request (cache off, 64 connections of one request), by thread: the gateway's
 * request thread (the JS thread: what caps its req/s) and every other thread of the process
 * (writer thread, JIT/GC, Bun's I/O), from /proc/<pid>/task/<tid>/schedstat over the load. CPU time per
 * request moves far less with other load on the machine than req/s does, so two checkouts can be
 * compared on a busy machine; rounds alternate which checkout goes first. Also prints each load's
 * req/s and latency p50 / p99 (the load tool's, ms).
 *
 *   bun scripts/bench/cpu-per-request.ts [--base DIR] [--rounds 3] [--secs 5] [-c 64]
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { ROOT, benchToken, load, median, startBenchUpstream, startTarget, threadCpuMs } from "./harness";

const { values } = parseArgs({ options: { base: { type: "string" }, rounds: { type: "string", default: "3" }, secs: { type: "string", default: "5" }, c: { type: "string", default: "64" } } });
const roots: [string, string][] = [["this", ROOT]];
if (values.base) roots.push(["base", resolve(values.base)]);
const upstream = await startBenchUpstream();
const token = await benchToken();
const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });
const results: Record<string, { main: number[]; other: number[]; rps: number[]; p99: number[] }> = {};
for (let round = 0; round < Number(values.rounds); round++) {
  const order = round % 2 === 0 ? roots : [...roots].reverse();
  for (const [name, root] of order) {
    const gw = await startTarget({ root, env: { SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url, SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench", SVC_CACHE__ENABLED: "false", SVC_RATE_LIMITS__ENABLED: "false" } });
    const target = { url: `${gw.url}/v1/chat/completions`, method: "POST", headers, body, connections: Number(values.c) };
    await load({ ...target, durationSecs: 2 });
    const pid = gw.proc.pid;
    const before = threadCpuMs(pid);
    const r = await load({ ...target, durationSecs: Number(values.secs) });
    const after = threadCpuMs(pid);
    await gw.stop();
    // µs: ms × 1000 (the gateway's threads live as long as it does: none ends during the load)
    const main = (after.main - before.main) * 1000;
    const other = (after.all - after.main - (before.all - before.main)) * 1000;
    const s = (results[name] ??= { main: [], other: [], rps: [], p99: [] });
    s.p99.push(r.p99Ms);
    s.main.push(main / r.total);
    s.other.push(other / r.total);
    s.rps.push(r.requestsPerSec);
    console.log(`round ${round + 1} ${name}: ${Math.round(r.requestsPerSec)} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, request thread ${(main / r.total).toFixed(1)} µs/request, other threads ${(other / r.total).toFixed(1)} µs/request`);
  }
}
upstream.proc.kill();
for (const [name, s] of Object.entries(results)) console.log(`${name}: median request thread ${median(s.main).toFixed(1)} µs/request, other threads ${median(s.other).toFixed(1)}, req/s ${Math.round(median(s.rps))}, p99 ${median(s.p99)} ms`);
if (results.base) console.log(`this / base: request thread ${(median(results.this!.main) / median(results.base.main)).toFixed(2)}, all threads ${((median(results.this!.main) + median(results.this!.other)) / (median(results.base.main) + median(results.base.other))).toFixed(2)}`);
