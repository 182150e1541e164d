/**
 * Index scale: one USearch HNSW index (the cache's VectorIndex settings) grown to 1M entries, measured
 * at checkpoints on the way.
 *
 *   nice -n 10 ./node_modules/.bin/bun run scripts/bench/index-scale.ts \
 *     [--quant f16|i8|f32] [--checkpoints 10000,100000,250000,500000,1000000] [--m 16] [--efc 128] \
 *     [--ef 64,128,256] [--queries 200] [--budget-s 1200]
 *
 * Vectors: RANDOM unit vectors of 512 dims (the model's dimension), generated from a per-key seed so
 * nothing but the index is held in memory (RSS growth = the index). Index-only numbers: real
 * embeddings cluster, which makes HNSW search easier, so recalls here are a lower bound.
 *
 * At every checkpoint n: build time so far, anonymous RSS growth (the index; the `view`ed copies are
 * file-backed and not counted), the saved file's size, and for each efSearch (the index is saved and
 * re-opened with `view` for efSearch ≠ the build value, so the sweep adds no memory):
 * search p50/p99 (k=8, one query at a time, 1 thread) and near-duplicate recall@1 — a stored vector
 * (uniform over the n stored) moved to cosine ≈ 0.9 (what a paraphrase looks like), against the exact
 * brute-force nearest neighbour over all n stored vectors (usearch exactSearch, streamed chunk by
 * chunk during the build, so the truth is exact, not assumed to be the source vector).
 * Stops adding when the build exceeds --budget-s and reports the last checkpoint reached.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Index, MetricKind, ScalarKind, exactSearch } from "usearch";

const argv = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1]! : def;
};
const quant = opt("quant", "f16");
const checkpoints = opt("checkpoints", "10000,100000,250000,500000,1000000").split(",").map(Number);
const M = Number(opt("m", "16"));
const efC = Number(opt("efc", "128"));
const efList = opt("ef", "64,128,256").split(",").map(Number);
const nq = Number(opt("queries", "200"));
const budgetS = Number(opt("budget-s", "1200"));
const D = 512;
const CHUNK = 10_000;
const scalar = { f32: ScalarKind.F32, f16: ScalarKind.F16, i8: ScalarKind.I8, bf16: ScalarKind.BF16 }[quant];
if (!scalar) throw new Error(`unknown --quant ${quant}`);

/** Deterministic random unit vector for a key (mulberry32 + Box-Muller). */
function vectorOf(seed: number, out: Float32Array, off = 0): void {
  let a = (seed * 0x9e3779b1) >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let s = 0;
  for (let i = 0; i < D; i += 2) {
    const r = Math.sqrt(-2 * Math.log(1 - rnd())), th = 2 * Math.PI * rnd();
    const g0 = r * Math.cos(th), g1 = r * Math.sin(th);
    out[off + i] = g0;
    out[off + i + 1] = g1;
    s += g0 * g0 + g1 * g1;
  }
  const inv = 1 / Math.sqrt(s);
  for (let i = 0; i < D; i++) out[off + i] = out[off + i]! * inv;
}

// Query sets, one per checkpoint: near-duplicates (cos ≈ 0.9) of stored keys uniform in [0, n).
const allQ = new Float32Array(checkpoints.length * nq * D);
const qSource: number[] = [];
{
  const src = new Float32Array(D), noise = new Float32Array(D);
  let qs = 0;
  checkpoints.forEach((n) => {
    for (let i = 0; i < nq; i++, qs++) {
      const key = Math.floor(Math.random() * n);
      qSource.push(key);
      vectorOf(key, src);
      vectorOf(2_000_000_000 + qs, noise);
      let s2 = 0;
      for (let j = 0; j < D; j++) {
        const v = src[j]! + 0.48 * noise[j]!;
        allQ[qs * D + j] = v;
        s2 += v * v;
      }
      const inv = 1 / Math.sqrt(s2);
      for (let j = 0; j < D; j++) allQ[qs * D + j] = allQ[qs * D + j]! * inv;
    }
  });
}
const totalQ = checkpoints.length * nq;
const bestKey = new Float64Array(totalQ).fill(-1);
const bestDist = new Float64Array(totalQ).fill(Infinity);

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const mb = (b: number) => (b / 2 ** 20).toFixed(0);
const load = () => {
  try {
    return require("node:fs").readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "?";
  }
};

/** Anonymous RSS (the index's heap; excludes the file-backed pages of the `view`ed copies used for the efSearch sweep). */
const rssAnon = () => {
  try {
    const m = /RssAnon:\s+(\d+) kB/.exec(require("node:fs").readFileSync("/proc/self/status", "utf8"));
    return m ? Number(m[1]) * 1024 : process.memoryUsage().rss;
  } catch {
    return process.memoryUsage().rss;
  }
};

const make = (ef: number) =>
  new Index({ dimensions: D, metric: MetricKind.Cos, quantization: scalar, connectivity: M, expansion_add: efC, expansion_search: ef, multi: false });

Bun.gc(true);
const rss0 = rssAnon();
const buildEf = 128;
const index = make(buildEf);
const dir = mkdtempSync(join(tmpdir(), "svc-index-scale-"));
console.log(`# quant=${quant} M=${M} efConstruction=${efC} dims=${D} queries/checkpoint=${nq} budget=${budgetS}s load=${load()} baseline rss=${mb(rss0)} MiB`);
console.log(`| entries | efSearch | build s (cumulative, wall) | process CPU s | search p50 ms | search p99 ms | near-dup recall@1 vs brute force | truth = source | anon RSS growth MiB | saved file MiB | load avg |`);
console.log(`|---|---|---|---|---|---|---|---|---|---|---|`);

const flat = new Float32Array(CHUNK * D);
const keys = new BigUint64Array(CHUNK);
let built = 0;
let buildMs = 0;
let exactMs = 0;
for (let ci = 0; ci < checkpoints.length; ci++) {
  const n = checkpoints[ci]!;
  while (built < n) {
    const m = Math.min(CHUNK, n - built);
    for (let i = 0; i < m; i++) {
      vectorOf(built + i, flat, i * D);
      keys[i] = BigInt(built + i);
    }
    const part = m === CHUNK ? flat : flat.slice(0, m * D); // the native side ignores subarray offsets (exactSearch)
    const t0 = performance.now();
    index.add(keys.subarray(0, m), part, 0);
    buildMs += performance.now() - t0;
    // exact truth, streamed: queries of checkpoints not yet measured
    const t1 = performance.now();
    const qFrom = ci * nq;
    const res = exactSearch(part, allQ.slice(qFrom * D), D, 1, MetricKind.Cos, 0) as { keys: BigUint64Array; distances: Float32Array };
    for (let q = qFrom; q < totalQ; q++) {
      const d = res.distances[q - qFrom]!;
      if (d < bestDist[q]!) {
        bestDist[q] = d;
        bestKey[q] = built + Number(res.keys[q - qFrom]!);
      }
    }
    exactMs += performance.now() - t1;
    built += m;
    if (built % 50_000 === 0) {
      const cpu = process.cpuUsage();
      console.error(`progress: ${built} entries, build ${(buildMs / 1000).toFixed(0)} s wall, process cpu ${((cpu.user + cpu.system) / 1e6).toFixed(0)} s, anon rss ${mb(rssAnon() - rss0)} MiB growth, load ${load()}`);
    }
    if (buildMs / 1000 > budgetS && built < n) break;
  }
  if (built < n) {
    console.log(`\nbudget of ${budgetS}s exceeded at ${built} entries (build ${(buildMs / 1000).toFixed(0)}s); stopping before the ${n} checkpoint`);
    break;
  }
  Bun.gc(true);
  const rss = rssAnon() - rss0;
  const cpuS = ((process.cpuUsage().user + process.cpuUsage().system) / 1e6).toFixed(0);
  let file = "";
  let fileMiB = "-";
  for (const ef of efList) {
    let idx = index;
    if (ef !== buildEf) {
      if (!file) {
        file = join(dir, `i${n}.usearch`);
        index.save(file);
        fileMiB = mb(Bun.file(file).size);
      }
      idx = make(ef);
      idx.view(file);
    }
    const times: number[] = [];
    let hit = 0, truthIsSource = 0;
    for (let i = 0; i < nq; i++) {
      const q = ci * nq + i;
      const v = allQ.subarray(q * D, (q + 1) * D);
      const t = performance.now();
      const r = idx.search(v, 8, 1) as { keys: BigUint64Array };
      times.push(performance.now() - t);
      if (r.keys.length > 0 && Number(r.keys[0]) === bestKey[q]) hit++;
      if (bestKey[q] === qSource[q]) truthIsSource++;
    }
    console.log(
      `| ${n.toLocaleString("en")} | ${ef} | ${(buildMs / 1000).toFixed(1)} | ${cpuS} | ${pct(times, 50).toFixed(3)} | ${pct(times, 99).toFixed(3)} | ${(hit / nq).toFixed(3)} | ${truthIsSource}/${nq} | ${mb(rss)} | ${fileMiB} | ${load()} |`,
    );
  }
  if (file) rmSync(file, { force: true });
}
console.log(`\nbrute-force truth time ${(exactMs / 1000).toFixed(1)} s (not in build time); final rss ${mb(process.memoryUsage().rss)} MiB`);
rmSync(dir, { recursive: true, force: true });
process.exit(0);
