/**
 * Training of the pair model's gradient-boosted trees (src/cache/verify/pair-model.ts): logistic loss,
 * second-order leaf values, depth-3 trees split on 32 quantile bins of each feature, shrinkage 0.1.
 * Hand-written (about 90 lines) rather than a package: the npm GBM packages are either native/WASM
 * builds of large libraries or unmaintained, and the model is a few hundred comparisons at serving time.
 * Deterministic (no sampling).
 */
import { PAIR_FEATURE_COUNT, type PairModelFile } from "../../src/cache/verify/pair-model";

export interface GbmOptions { trees: number; depth: number; learningRate: number; bins: number; minHessian: number; lambda: number }
export const GBM_DEFAULTS: GbmOptions = { trees: 150, depth: 3, learningRate: 0.1, bins: 32, minHessian: 5, lambda: 1 };

type Tree = PairModelFile["trees"][number];
export interface Gbm { base: number; trees: Tree[] }

export function evalGbm(m: Gbm, x: Float64Array): number {
  let z = m.base;
  for (const tr of m.trees) {
    let i = 0;
    while (tr.f[i]! >= 0) i = x[tr.f[i]!]! <= tr.t[i]! ? tr.l[i]! : tr.r[i]!;
    z += tr.v[i]!;
  }
  return z;
}

/** rows: feature vectors, labels 0/1, weights */
export function trainGbm(xs: Float64Array[], ys: ArrayLike<number>, ws: ArrayLike<number>, o: GbmOptions = GBM_DEFAULTS): Gbm {
  const F = xs[0]?.length ?? PAIR_FEATURE_COUNT;
  const n = xs.length;
  const edges: number[][] = [];
  for (let f = 0; f < F; f++) {
    const vals = xs.map((x) => x[f]!).sort((a, b) => a - b);
    const e: number[] = [];
    for (let b = 1; b < o.bins; b++) {
      const q = vals[Math.floor((b / o.bins) * n)]!;
      if (e.length === 0 || q > e[e.length - 1]!) e.push(q);
    }
    edges.push(e);
  }
  const bin = new Uint8Array(n * F);
  for (let i = 0; i < n; i++) for (let f = 0; f < F; f++) {
    const e = edges[f]!;
    let b = 0;
    while (b < e.length && xs[i]![f]! > e[b]!) b++;
    bin[i * F + f] = b;
  }
  let pos = 0, tot = 0;
  for (let i = 0; i < n; i++) { pos += ws[i]! * ys[i]!; tot += ws[i]!; }
  const base = Math.log(pos / (tot - pos));
  const s = new Float64Array(n).fill(base);
  const g = new Float64Array(n), h = new Float64Array(n);
  const hg = new Float64Array(o.bins), hh = new Float64Array(o.bins);
  const trees: Tree[] = [];
  for (let t = 0; t < o.trees; t++) {
    for (let i = 0; i < n; i++) {
      const p = 1 / (1 + Math.exp(-s[i]!));
      g[i] = ws[i]! * (p - ys[i]!);
      h[i] = ws[i]! * p * (1 - p);
    }
    const tr: Tree = { f: [], t: [], l: [], r: [], v: [] };
    const build = (idx: Int32Array, depth: number): number => {
      let G = 0, H = 0;
      for (const i of idx) { G += g[i]!; H += h[i]!; }
      const id = tr.f.length;
      tr.f.push(-1); tr.t.push(0); tr.l.push(-1); tr.r.push(-1); tr.v.push((-G / (H + o.lambda)) * o.learningRate);
      if (depth === o.depth || idx.length < 2) return id;
      let best = { gain: 0, f: -1, b: -1 };
      const parent = (G * G) / (H + o.lambda);
      for (let f = 0; f < F; f++) {
        hg.fill(0); hh.fill(0);
        for (const i of idx) { const b = bin[i * F + f]!; hg[b]! += g[i]!; hh[b]! += h[i]!; }
        let gl = 0, hl = 0;
        for (let b = 0; b < edges[f]!.length; b++) {
          gl += hg[b]!; hl += hh[b]!;
          const gr = G - gl, hr = H - hl;
          if (hl < o.minHessian || hr < o.minHessian) continue;
          const gain = (gl * gl) / (hl + o.lambda) + (gr * gr) / (hr + o.lambda) - parent;
          if (gain > best.gain) best = { gain, f, b };
        }
      }
      if (best.f < 0) return id;
      const L: number[] = [], R: number[] = [];
      for (const i of idx) (bin[i * F + best.f]! <= best.b ? L : R).push(i);
      tr.f[id] = best.f;
      tr.t[id] = edges[best.f]![best.b]!;
      tr.l[id] = build(Int32Array.from(L), depth + 1);
      tr.r[id] = build(Int32Array.from(R), depth + 1);
      return id;
    };
    build(Int32Array.from({ length: n }, (_, i) => i), 0);
    trees.push(tr);
    const m = { base: 0, trees: [tr] };
    for (let i = 0; i < n; i++) s[i]! += evalGbm(m, xs[i]!);
  }
  return { base, trees };
}
