/**
 * SSE time to first byte through svc, paired against another checkout's gateway (--base DIR) and
 * the direct call, interleaved request by request in one client process.
 *
 *   bun scripts/bench/sse-ttfb.ts [--n 2000] [--base DIR]
 *
 * Same processes as proxy.ts (fake upstream, gateway with the cache disabled); only the streamed
 * chat-completions request, so a difference in the stream path shows without the rest of that bench.
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { benchToken, startTarget, startBenchUpstream, machine } from "./harness";

const { values } = parseArgs({ options: { n: { type: "string", default: "2000" }, base: { type: "string" } } });
const { url: upUrl, proc: upstream } = await startBenchUpstream();
const env = { SVC_PROVIDERS__OPENAI__BASE_URL: upUrl, SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench", SVC_CACHE__ENABLED: "false", SVC_RATE_LIMITS__ENABLED: "false" };
const gws = { svc: await startTarget({ env }), ...(values.base ? { base: await startTarget({ env, root: resolve(values.base) }) } : {}) };
const token = await benchToken();
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], stream: true });
const targets: Record<string, { url: string; headers: Record<string, string> }> = {
  direct: { url: `${upUrl}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: "Bearer sk-bench" } },
  ...Object.fromEntries(Object.entries(gws).map(([k, g]) => [k, { url: `${g.url}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: `Bearer ${token}` } }])),
};
async function ttfb(t: { url: string; headers: Record<string, string> }): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(t.url, { method: "POST", headers: t.headers, body });
  const reader = r.body!.getReader();
  await reader.read();
  const t1 = performance.now();
  while (!(await reader.read()).done);
  if (r.status !== 200) throw new Error(`${t.url} answered ${r.status}`);
  return (t1 - t0) * 1000;
}
const names = Object.keys(targets);
const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
const n = Number(values.n);
for (let i = 0; i < n + 200; i++) {
  // rotated, never reversed: reversing every other round served the last target twice in a row
  // (…, base | base, …), so --base was measured warm in half its rounds (−140 µs p50 there) while
  // svc, always in the middle, never was; rotated, every target waits the same gaps between its requests
  const order = names.map((_, j) => names[(i + j) % names.length]!);
  const round: Record<string, number> = {};
  for (const k of order) round[k] = await ttfb(targets[k]!);
  if (i >= 200) for (const k of names) samples[k]!.push(round[k]! - (k === "direct" ? 0 : round.direct!));
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))]!;
console.log(JSON.stringify({ machine: machine(), n, addedUs: Object.fromEntries(names.filter((k) => k !== "direct").map((k) => [k, { p50: Math.round(pct(samples[k]!, 0.5)), p99: Math.round(pct(samples[k]!, 0.99)) }])), directP50Us: Math.round(pct(samples.direct!, 0.5)) }));
for (const g of Object.values(gws)) await g.stop();
upstream.kill();
