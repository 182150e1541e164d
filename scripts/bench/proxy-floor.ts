#!/usr/bin/env bun
/**
 * What share of the direct upstream's req/s a Bun proxy can reach on this machine at all: the fake
 * upstream called directly, through the smallest Bun proxy (proxy-minimal.ts: Bun.serve + fetch,
 * nothing else) and through svc (cache off), 64 connections of one body (the load tool of proxy.ts),
 * interleaved round by round. On a machine where the load generator, the upstream and the proxy share
 * the cores, "svc / direct" is bounded by "minimal / direct"; svc can pass it only where it does less
 * upstream work than a plain proxy (its single flight lets identical concurrent requests share one
 * upstream call, cache on or off).
 *
 *   bun scripts/bench/proxy-floor.ts [--rounds 3] [--secs 5] [-c 64]
 */
import { parseArgs } from "node:util";
import { join } from "node:path";
import { ROOT, benchToken, freePort, load, median, startBenchUpstream, startTarget } from "./harness";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "3" }, secs: { type: "string", default: "5" }, c: { type: "string", default: "64" } } });
const upstream = await startBenchUpstream();
const svc = await startTarget({ env: { SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url, SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench", SVC_CACHE__ENABLED: "false", SVC_RATE_LIMITS__ENABLED: "false" } });
const port = await freePort();
const minimal = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/proxy-minimal.ts"), String(port), upstream.url], { stdout: "pipe", stderr: "inherit" });
await minimal.stdout.getReader().read(); // "listening"
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "What is the capital of France?" }], max_tokens: 16 });
const headers = { "content-type": "application/json", authorization: `Bearer ${await benchToken()}` };
const targets: Record<string, string> = { direct: upstream.url, minimal: `http://127.0.0.1:${port}`, svc: svc.url };
const rps: Record<string, number[]> = { direct: [], minimal: [], svc: [] };
const run = (name: string, secs: number) => load({ url: `${targets[name]}/v1/chat/completions`, method: "POST", headers, body, connections: Number(values.c), durationSecs: secs });
for (const name of Object.keys(targets)) await run(name, 2); // warm-up
for (let r = 0; r < Number(values.rounds); r++) {
  const order = r % 2 === 0 ? ["direct", "minimal", "svc"] : ["svc", "minimal", "direct"];
  const line: string[] = [];
  for (const name of order) {
    const res = await run(name, Number(values.secs));
    rps[name]!.push(res.requestsPerSec);
    line.push(`${name} ${Math.round(res.requestsPerSec)}`);
  }
  const [d, m, s] = [rps.direct!.at(-1)!, rps.minimal!.at(-1)!, rps.svc!.at(-1)!];
  console.log(`round ${r + 1}: ${line.join(", ")} req/s; minimal / direct ${(m / d).toFixed(3)}, svc / direct ${(s / d).toFixed(3)}, svc / minimal ${(s / m).toFixed(2)}`);
}
const ratio = (a: string, b: string) => median(rps[a]!.map((x, i) => x / rps[b]![i]!)).toFixed(3);
console.log(`median of the rounds: minimal / direct ${ratio("minimal", "direct")}, svc / direct ${ratio("svc", "direct")}, svc / minimal ${ratio("svc", "minimal")}`);
minimal.kill();
await svc.stop();
upstream.proc.kill();
