/**
 * Bench helper process: requests to several targets interleaved request by request (one
 * keep-alive connection each; the order is shuffled every round so no target always goes first or
 * always follows the same one), so
 * every target is measured under the same momentary machine load. Per target: latency in
 * microseconds (performance.now) and X-Cache-Status counts; per round, each target's time minus the
 * reference target's in the same round (the paired "added" time).
 * Args: JSON {targets: [{name, url, headers, unique?, body?}], body, n, warmup, ttfb?, gapMs?, reference}.
 *   unique: the body's "{unique}" is replaced by a different question every request (cache misses).
 *   ttfb: time to the first body chunk of a streamed response instead of the whole body.
 *   gapMs: idle time before each request (a request to a gateway that has been idle, not one right after another).
 */
import { mulberry32 } from "./data";
interface T {
  name: string;
  url: string;
  headers: Record<string, string>;
  unique?: boolean;
  /** this target's own body (default: the shared one) */
  body?: string;
}
import { question } from "./questions";

const o = JSON.parse(process.argv[2]!) as { targets: T[]; body: string; n: number; warmup: number; ttfb?: boolean; gapMs?: number; reference: string };

const samples: Record<string, number[]> = Object.fromEntries(o.targets.map((t) => [t.name, []]));
const cache: Record<string, Record<string, number>> = Object.fromEntries(o.targets.map((t) => [t.name, {}]));
const bad: Record<string, number> = Object.fromEntries(o.targets.map((t) => [t.name, 0]));

async function once(t: T, i: number): Promise<number> {
  const base = t.body ?? o.body;
  const body = t.unique ? base.replace("{unique}", question(i)) : base;
  const t0 = performance.now();
  const r = await fetch(t.url, { method: "POST", headers: t.headers, body });
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
  if (r.status !== 200) bad[t.name]!++;
  const status = r.headers.get("x-cache-status") ?? "-";
  cache[t.name]![status] = (cache[t.name]![status] ?? 0) + 1;
  return (t1 - t0) * 1000;
}

// The order is a fresh (seeded) shuffle every round. A rotation kept each target's neighbours fixed:
// the target two places after the cache-enabled miss target was always timed while that gateway
// was still embedding and storing the previous miss in the background, and a copy of the same
// gateway measured 21-25 µs slower in that place than in the next one.
const orderRnd = mulberry32(7);
function shuffled<X>(xs: X[]): X[] {
  const a = [...xs];
  for (let j = a.length - 1; j > 0; j--) {
    const r = Math.floor(orderRnd() * (j + 1));
    [a[j], a[r]] = [a[r]!, a[j]!];
  }
  return a;
}

for (let i = 0; i < o.warmup + o.n; i++) {
  for (const t of shuffled(o.targets)) {
    if (o.gapMs) await Bun.sleep(o.gapMs);
    const us = await once(t, i);
    if (i >= o.warmup) samples[t.name]!.push(us);
  }
}

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};
const ref = samples[o.reference]!;
const out: Record<string, unknown> = {};
for (const t of o.targets) {
  const xs = samples[t.name]!;
  const added = xs.map((x, i) => x - ref[i]!);
  out[t.name] = { n: xs.length, p50us: q(xs, 0.5), p99us: q(xs, 0.99), addedP50us: q(added, 0.5), addedP99us: q(added, 0.99), bad: bad[t.name], cacheStatus: cache[t.name] };
}
console.log(JSON.stringify(out));
