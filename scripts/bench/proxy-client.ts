/**
 * Bench helper process: sequential requests over one keep-alive connection, per-request
 * latency in microseconds (performance.now). Args: JSON {url, headers, body, n, warmup, ttfb}.
 * ttfb: measure time to the first body chunk of a streamed response instead of the whole body.
 */
export {};
const o = JSON.parse(process.argv[2]!) as { url: string; headers: Record<string, string>; body: string; n: number; warmup: number; ttfb?: boolean };
const samples: number[] = [];
let bad = 0;
for (let i = 0; i < o.warmup + o.n; i++) {
  const t0 = performance.now();
  const r = await fetch(o.url, { method: "POST", headers: o.headers, body: o.body });
  let t1: number;
  if (o.ttfb) {
    const reader = r.body!.getReader();
    await reader.read();
    t1 = performance.now();
    while (!(await reader.read()).done);
  } else {
    await r.arrayBuffer();
    t1 = performance.now();
  }
  if (r.status !== 200) bad++;
  if (i >= o.warmup) samples.push((t1 - t0) * 1000);
}
samples.sort((a, b) => a - b);
const q = (p: number) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))]!;
console.log(JSON.stringify({ n: samples.length, p50us: q(0.5), p99us: q(0.99), bad }));
