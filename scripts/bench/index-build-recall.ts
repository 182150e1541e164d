/**
 * Near-duplicate recall of bulk-built indexes over many builds (BENCHMARKS.md "Index builds").
 * For each quantization and insertion mode, builds an index of N deterministic random 512-d unit
 * vectors B times and looks up a noisy copy (cosine ~0.96) of every 7th entry: a build "misses"
 * when any lookup's first answer is not its entry. Sequential = VectorIndex.addMany (one thread);
 * threaded = usearch's batch insert on all cores (what addMany did before).
 *
 *   bun scripts/bench/index-build-recall.ts [--n 500] [--builds 150]
 */
import { parseArgs } from "node:util";
import { DEFAULT_INDEX_PARAMS, VectorIndex, type Quantization } from "../../src/core/vector-index";

const { values } = parseArgs({ options: { n: { type: "string", default: "500" }, builds: { type: "string", default: "150" } } });
const N = Number(values.n);
const BUILDS = Number(values.builds);

function unit(seed: number, d = 512): Float32Array {
  let a = seed >>> 0;
  const v = new Float32Array(d);
  let s = 0;
  for (let i = 0; i < d; i++) {
    a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    v[i] = a / 4294967296 - 0.5;
    s += v[i]! * v[i]!;
  }
  for (let i = 0; i < d; i++) v[i]! /= Math.sqrt(s);
  return v;
}

const items = Array.from({ length: N }, (_, i) => ({ vecKey: i + 1, vec: unit(i + 1) }));
const queries = items.filter((_, i) => i % 7 === 0).map((it) => ({ key: it.vecKey, near: it.vec.map((x, i) => x + 0.3 * unit(10_000_000 + it.vecKey)[i]!) }));

/** the threaded batch insert addMany used before (all cores) */
function threaded(idx: VectorIndex) {
  const keys = new BigUint64Array(items.map((it) => BigInt(it.vecKey)));
  const flat = new Float32Array(N * 512);
  items.forEach((it, i) => flat.set(it.vec, i * 512));
  (idx as unknown as { index: { add(k: BigUint64Array, v: Float32Array, t: number): void } }).index.add(keys, flat, 0);
}

console.log(`N=${N}, ${BUILDS} builds per row, ${queries.length} near-duplicate lookups per build`);
console.log("quantization | insertion | builds with a miss | lookups missed | median build ms");
for (const q of ["f16", "f32", "i8"] as Quantization[])
  for (const mode of ["sequential", "threaded"] as const) {
    let bad = 0;
    let missed = 0;
    const times: number[] = [];
    for (let b = 0; b < BUILDS; b++) {
      const idx = new VectorIndex({ dimensions: 512, quantization: q, ...DEFAULT_INDEX_PARAMS });
      const t0 = performance.now();
      if (mode === "sequential") idx.addMany(items);
      else threaded(idx);
      times.push(performance.now() - t0);
      const m = queries.filter((x) => idx.search(x.near, 1)[0]?.key !== x.key).length;
      if (m) bad++;
      missed += m;
    }
    times.sort((a, b) => a - b);
    console.log(`${q} | ${mode} | ${bad}/${BUILDS} | ${missed}/${BUILDS * queries.length} | ${times[times.length >> 1]!.toFixed(1)}`);
  }
