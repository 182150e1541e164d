#!/usr/bin/env bun
/**
 * A CPU profile of the gateway process under load: where a proxied miss (cache off), an exact
 * hit (--exact) or a cache-enabled miss (--distinct) spends its time. The gateway runs as `bun --cpu-prof --cpu-prof-md src/main.ts`
 * (Bun's sampling profiler), 64 connections send one fixed request for --secs seconds, then the
 * gateway is stopped (SIGTERM) and Bun writes the profile; the script prints the files and the
 * top of the markdown summary (self time by function).
 *
 *   bun scripts/bench/gateway-profile.ts [--root DIR] [--secs 8] [-c 64] [--exact | --distinct] [--out DIR] [--interval 200] [--gap MS]
 *
 * --distinct: the cache on, the local embedder, every request a new question (distinct-loop.ts): the
 * cache-enabled miss (exact tier, embedding, index search, upstream, store). The profile is the main
 * thread's; the embedding workers are other threads and not in it (cpu-per-request.ts --distinct
 * gives their CPU).
 * --gap MS: instead of the 64-connection load, one keep-alive client sends a request every MS of
 * idle time (the woken requests of the 1-connection figures: what a request costs after a pause,
 * when the code it runs is cold).
 * --root: another checkout (e.g. an older commit) profiled the same way. --interval: sampling
 * interval in microseconds. Open the .cpuprofile in Chrome DevTools or speedscope for the tree.
 */
import { parseArgs } from "node:util";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, benchToken, load, startBenchUpstream, startTarget, threadCpuMs } from "./harness";
import { distinctLoop } from "./distinct-loop";

const { values } = parseArgs({
  options: {
    root: { type: "string" },
    secs: { type: "string", default: "8" },
    c: { type: "string", default: "64" },
    exact: { type: "boolean", default: false },
    distinct: { type: "boolean", default: false },
    out: { type: "string" },
    interval: { type: "string", default: "200" },
    gap: { type: "string" },
  },
});
const root = values.root ? resolve(values.root) : ROOT;
const out = resolve(values.out ?? mkdtempSync(join(tmpdir(), "svc-profile-")));
mkdirSync(out, { recursive: true });
const upstream = await startBenchUpstream();
const gw = await startTarget({
  root,
  bunArgs: ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${out}`, `--cpu-prof-interval=${values.interval}`],
  env: {
    SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url,
    SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench",
    SVC_CACHE__ENABLED: values.exact || values.distinct ? "true" : "false",
    SVC_RATE_LIMITS__ENABLED: "false",
    ...(values.distinct ? { SVC_EMBEDDING__PROVIDER: "local" } : {}),
  },
  stderr: "inherit",
  readyMs: 60_000,
});
const url = gw.url;
const token = await benchToken();
const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: values.distinct ? "{unique}" : "Say hello to the benchmark." }], max_tokens: 16 });
const target = { url: `${url}/v1/chat/completions`, method: "POST", headers, body, connections: Number(values.c) };
const run = (durationSecs: number) => (values.gap === undefined ? load({ ...target, durationSecs }) : paced(durationSecs, Number(values.gap)));
let from: number, to: number, cpu0 = 0, cpu1 = 0, r: { total: number; non2xx: number; requestsPerSec: number };
if (values.distinct) {
  // one set of loops throughout (no ramp-up inside the window); its count read at the window's ends
  const loop = distinctLoop(target.url, headers, body, target.connections);
  await Bun.sleep(3000); // warm-up (JIT, the embedding workers' first batches, pools)
  const n0 = loop.done();
  from = Date.now() * 1000;
  cpu0 = threadCpuMs(gw.proc.pid).main;
  await Bun.sleep(Number(values.secs) * 1000);
  cpu1 = threadCpuMs(gw.proc.pid).main;
  to = Date.now() * 1000;
  const total = loop.done() - n0;
  await loop.stop();
  r = { total, non2xx: loop.bad(), requestsPerSec: total / Number(values.secs) };
} else {
  await run(2); // warm-up (JIT, pools)
  from = Date.now() * 1000;
  cpu0 = threadCpuMs(gw.proc.pid).main;
  r = await run(Number(values.secs));
  cpu1 = threadCpuMs(gw.proc.pid).main;
  to = Date.now() * 1000;
}
if (values.distinct && r.non2xx > 0) throw new Error(`${r.non2xx} cache-enabled misses were not 200`);
await gw.stop(); // SIGTERM: Bun writes the profile as it exits
upstream.proc.kill();
const file = readdirSync(out).find((f) => f.endsWith(".cpuprofile"));
if (!file) throw new Error(`no .cpuprofile in ${out}`);
const mainUs = ((cpu1 - cpu0) * 1000) / r.total;
const owners = perRequest(JSON.parse(readFileSync(join(out, file), "utf8")), from, to, r.total, root);
console.log(JSON.stringify({ root, path: values.exact ? "exact hit" : values.distinct ? "miss, cache on, distinct questions" : "miss, cache off", requestsPerSec: Math.round(r.requestsPerSec), requests: r.total, non2xx: r.non2xx, profile: join(out, file), window: { from, to } }, null, 2));
console.log(`\nCPU per request on the gateway's JS thread during the load, by the nearest frame of svc's own src/ (µs; "-" = no svc frame on the stack: the event loop, Bun's HTTP, GC)`);
console.log(`total ${owners.total.toFixed(1)} µs/request (each sample counted as ${owners.period} µs, the median gap between samples); the main thread's CPU over the window (schedstat): ${mainUs.toFixed(1)} µs/request\n`);
console.log("by file:");
for (const [k, v] of owners.byFile.slice(0, 25)) console.log(`  ${v.toFixed(1).padStart(7)}  ${k}`);
console.log("by function:");
for (const [k, v] of owners.byFunction.slice(0, 40)) console.log(`  ${v.toFixed(1).padStart(7)}  ${k}`);

/** One client, one request at a time, each after `gapMs` of idle time. */
async function paced(durationSecs: number, gapMs: number) {
  const t0 = performance.now();
  let total = 0;
  let non2xx = 0;
  while (performance.now() - t0 < durationSecs * 1000) {
    await Bun.sleep(gapMs);
    const res = await fetch(target.url, { method: "POST", headers, body });
    await res.arrayBuffer();
    total++;
    if (res.status < 200 || res.status > 299) non2xx++;
  }
  return { total, non2xx, requestsPerSec: total / ((performance.now() - t0) / 1000) };
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * The samples taken between `from` and `to` (µs since the epoch), each charged to the nearest frame
 * on its stack that is svc's own code (`<root>/src/…`), in µs per request.
 */
function perRequest(p: CpuProfile, from: number, to: number, requests: number, root: string) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const src = `file://${root}/src/`;
  const ownerOf = new Map<number, { file: string; fn: string }>();
  const owner = (id: number) => {
    let o = ownerOf.get(id);
    if (o) return o;
    o = { file: "-", fn: "-" };
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      if (f.url.startsWith(src)) {
        const file = f.url.slice(`file://${root}/`.length);
        o = { file, fn: `${file}:${f.lineNumber + 1} ${f.functionName || "(anonymous)"}` };
        break;
      }
    }
    ownerOf.set(id, o);
    return o;
  };
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  // Samples are taken only while the thread runs JavaScript: the gap after the last one before the
  // thread idles (waiting on sockets, the embedding workers, the database writer) is idle time, not
  // that frame's. Every sample stands for the sampler's period while it runs — the median gap between
  // samples in the window (the sampler runs late of --interval on a busy machine).
  const inWindow: number[] = [];
  for (let i = 0, t = p.startTime; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    if (t >= from && t <= to && i + 1 < p.timeDeltas.length) inWindow.push(p.timeDeltas[i + 1]!);
  }
  inWindow.sort((a, b) => a - b);
  const us = inWindow[inWindow.length >> 1] ?? 0;
  let t = p.startTime;
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i]!;
    t += dt;
    if (t < from || t > to) continue;
    const node = byId.get(p.samples[i]!)!;
    // a sample with no frame at all under the root: the thread outside JavaScript (idle, or Bun's own work)
    const o = node.callFrame.functionName === "" && node.callFrame.url === "" && parent.get(node.id) === p.nodes[0]!.id ? { file: "(no JS frame)", fn: "(no JS frame)" } : owner(node.id);
    byFile.set(o.file, (byFile.get(o.file) ?? 0) + us);
    byFunction.set(o.fn, (byFunction.get(o.fn) ?? 0) + us);
    total += us;
  }
  const sorted = (m: Map<string, number>) => [...m].map(([k, v]) => [k, v / requests] as [string, number]).sort((a, b) => b[1] - a[1]);
  return { total: total / requests, period: us, byFile: sorted(byFile), byFunction: sorted(byFunction) };
}
