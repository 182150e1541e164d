#!/usr/bin/env bun
/**
 * CPU per request at 64 connections, by thread: the gateway's request thread (the JS thread: what caps
 * its req/s) and the other threads of the process, from /proc/<pid>/task/<tid>/schedstat over the load.
 * CPU time per request moves far less with other load on the machine than req/s does, so two
 * checkouts can be compared on a busy machine; rounds alternate which checkout goes first. Also
 * prints each load's req/s and latency p50 / p99 (the load tool's, ms).
 *
 *   bun scripts/bench/cpu-per-request.ts [--base DIR] [--rounds 3] [--secs 5] [-c 64] [--distinct]
 *
 * Default: the proxied miss, cache off, one fixed request (wrk / autocannon); "other threads" are the
 * writer thread ("Worker"), JIT/GC and the rest (Bun's I/O), split by name as below.
 * --distinct: the cache-enabled miss — cache on, the local embedder, every request a new question
 * (distinct-loop.ts, in this process, its completed count read at the same instants as the CPU). The
 * other threads are split by name: "Worker" (the embedding workers and the SQLite writer thread),
 * JIT/GC (JITWorker, JSCWarmUp, HeapHelper, the collector) and the rest (Bun's pools, I/O).
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { ROOT, benchToken, load, median, startBenchUpstream, startTarget, threadCpuMs } from "./harness";
import { distinctLoop } from "./distinct-loop";

const { values } = parseArgs({
  options: { base: { type: "string" }, rounds: { type: "string", default: "3" }, secs: { type: "string", default: "5" }, c: { type: "string", default: "64" }, distinct: { type: "boolean", default: false } },
});
const distinct = values.distinct;
const roots: [string, string][] = [["this", ROOT]];
if (values.base) roots.push(["base", resolve(values.base)]);
const upstream = await startBenchUpstream();
const token = await benchToken();
const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: distinct ? "{unique}" : "Say hello to the benchmark." }], max_tokens: 16 });
const env = {
  SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url,
  SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench",
  SVC_CACHE__ENABLED: distinct ? "true" : "false",
  SVC_RATE_LIMITS__ENABLED: "false",
  ...(distinct ? { SVC_EMBEDDING__PROVIDER: "local" } : {}),
};
const JIT_GC = ["JITWorker", "JSCWarmUp", "HeapHelper", "ollector Thread"];
/** CPU ms by group: main, Worker, JIT/GC, rest */
const groups = (byName: Record<string, number>) => {
  const g = { main: 0, worker: 0, jitgc: 0, rest: 0 };
  for (const [name, ms] of Object.entries(byName)) {
    if (name === "main") g.main += ms;
    else if (name === "Worker") g.worker += ms;
    else if (JIT_GC.some((j) => name.includes(j))) g.jitgc += ms;
    else g.rest += ms;
  }
  return g;
};
type Figures = { main: number[]; worker: number[]; jitgc: number[]; rest: number[]; other: number[]; rps: number[]; p99: number[] };
const results: Record<string, Figures> = {};
for (let round = 0; round < Number(values.rounds); round++) {
  const order = round % 2 === 0 ? roots : [...roots].reverse();
  for (const [name, root] of order) {
    const gw = await startTarget({ root, env, readyMs: 60_000 });
    const url = `${gw.url}/v1/chat/completions`;
    const pid = gw.proc.pid;
    const s = (results[name] ??= { main: [], worker: [], jitgc: [], rest: [], other: [], rps: [], p99: [] });
    let line: string;
    if (!distinct) {
      const target = { url, method: "POST", headers, body, connections: Number(values.c) };
      await load({ ...target, durationSecs: 2 });
      const before = threadCpuMs(pid);
      const r = await load({ ...target, durationSecs: Number(values.secs) });
      const after = threadCpuMs(pid);
      // µs: ms × 1000 (the gateway's threads live as long as it does: none ends during the load)
      const main = ((after.main - before.main) * 1000) / r.total;
      const other = ((after.all - after.main - (before.all - before.main)) * 1000) / r.total;
      const a = groups(after.byName), b = groups(before.byName);
      const per = (k: keyof typeof a) => ((a[k] - b[k]) * 1000) / r.total;
      s.main.push(main);
      s.other.push(other);
      s.worker.push(per("worker"));
      s.jitgc.push(per("jitgc"));
      s.rest.push(per("rest"));
      s.rps.push(r.requestsPerSec);
      s.p99.push(r.p99Ms);
      line = `${Math.round(r.requestsPerSec)} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, request thread ${main.toFixed(1)} µs/request, other threads ${other.toFixed(1)} µs/request (Worker ${per("worker").toFixed(1)}, JIT/GC ${per("jitgc").toFixed(1)}, rest ${per("rest").toFixed(1)})`;
    } else {
      const loop = distinctLoop(url, headers, body, Number(values.c));
      await Bun.sleep(3000); // warm-up: JIT, the embedding workers' first batches, pools
      const before = threadCpuMs(pid), n0 = loop.done(), t0 = performance.now();
      await Bun.sleep(Number(values.secs) * 1000);
      const after = threadCpuMs(pid), n = loop.done() - n0, elapsed = (performance.now() - t0) / 1000;
      const statuses = loop.cacheStatus();
      await loop.stop();
      if (loop.bad() > 0) throw new Error(`${name}: ${loop.bad()} cache-enabled misses were not 200`);
      const a = groups(after.byName), b = groups(before.byName);
      const per = (k: keyof typeof a) => ((a[k] - b[k]) * 1000) / n;
      s.main.push(per("main"));
      s.worker.push(per("worker"));
      s.jitgc.push(per("jitgc"));
      s.rest.push(per("rest"));
      s.other.push(per("worker") + per("jitgc") + per("rest"));
      s.rps.push(n / elapsed);
      line = `${Math.round(n / elapsed)} req/s (${JSON.stringify(statuses)}), µs/request: main ${per("main").toFixed(1)}, Worker ${per("worker").toFixed(1)}, JIT/GC ${per("jitgc").toFixed(1)}, rest ${per("rest").toFixed(1)}`;
    }
    await gw.stop();
    console.log(`round ${round + 1} ${name}: ${line}`);
  }
}
upstream.proc.kill();
for (const [name, s] of Object.entries(results)) {
  const split = ` (Worker ${median(s.worker).toFixed(1)}, JIT/GC ${median(s.jitgc).toFixed(1)}, rest ${median(s.rest).toFixed(1)})`;
  console.log(`${name}: median request thread ${median(s.main).toFixed(1)} µs/request, other threads ${median(s.other).toFixed(1)}${split}, req/s ${Math.round(median(s.rps))}${distinct ? "" : `, p99 ${median(s.p99)} ms`}`);
}
if (results.base) console.log(`this / base: request thread ${(median(results.this!.main) / median(results.base.main)).toFixed(2)}, all threads ${((median(results.this!.main) + median(results.this!.other)) / (median(results.base.main) + median(results.base.other))).toFixed(2)}`);
