/**
 * Experiment: does the pair model gain from the embeddings themselves (u ⊙ v and |u − v|, like the old
 * MLP) when retrained per fold? Same protocol as cache-pair-cv.ts; logistic regression by full-batch Adam.
 *
 *   nice ./node_modules/.bin/bun run scripts/bench/cache-pair-emb-exp.ts [--hard-weight 3] [--l2 1e-3] [--epochs 300]
 */
import { cliArg as arg } from "./data";
import { HARD_KINDS } from "./cache-hard-negatives";
import { emptyFigures, fhrOf, precision5050, recallOf } from "./cache-cv";
import { choosePoint, figuresAt, loadData, type Row } from "./cache-pair-cv";
import { PAIR_FEATURE_COUNT } from "../../src/cache/verify/pair-model";

const K = 5;
const hw = Number(arg("hard-weight") ?? 3);
const l2 = Number(arg("l2") ?? 1e-3);
const epochs = Number(arg("epochs") ?? 300);
const d = await loadData(K, 400, (s) => process.stderr.write(s + "\n"));
const dims = d.model[0]!.u!.length;
const D = PAIR_FEATURE_COUNT + 2 * dims;
const X = new Float32Array(d.model.length * D);
const idx = new Map<Row, number>();
d.model.forEach((r, i) => {
  idx.set(r, i);
  const o = i * D;
  for (let k = 0; k < PAIR_FEATURE_COUNT; k++) X[o + k] = r.x![k]!;
  for (let k = 0; k < dims; k++) {
    X[o + PAIR_FEATURE_COUNT + k] = r.u![k]! * r.v![k]!;
    X[o + PAIR_FEATURE_COUNT + dims + k] = Math.abs(r.u![k]! - r.v![k]!);
  }
});

function train(rows: Row[]) {
  const n = rows.length;
  const mean = new Float64Array(D), std = new Float64Array(D);
  for (const r of rows) { const o = idx.get(r)! * D; for (let k = 0; k < D; k++) mean[k]! += X[o + k]!; }
  for (let k = 0; k < D; k++) mean[k]! /= n;
  for (const r of rows) { const o = idx.get(r)! * D; for (let k = 0; k < D; k++) std[k]! += (X[o + k]! - mean[k]!) ** 2; }
  for (let k = 0; k < D; k++) std[k] = Math.sqrt(std[k]! / n) || 1;
  const w = new Float64Array(D + 1), m = new Float64Array(D + 1), v = new Float64Array(D + 1), g = new Float64Array(D + 1);
  const z = new Float64Array(D);
  let wsum = 0;
  for (const r of rows) wsum += r.kind === "qqp" ? 1 : hw;
  const lr = 0.02, b1 = 0.9, b2 = 0.999;
  for (let ep = 1; ep <= epochs; ep++) {
    g.fill(0);
    for (const r of rows) {
      const o = idx.get(r)! * D;
      let s = w[D]!;
      for (let k = 0; k < D; k++) { z[k] = (X[o + k]! - mean[k]!) / std[k]!; s += w[k]! * z[k]!; }
      const e = ((r.kind === "qqp" ? 1 : hw) * (1 / (1 + Math.exp(-s)) - r.label)) / wsum;
      for (let k = 0; k < D; k++) g[k]! += e * z[k]!;
      g[D]! += e;
    }
    for (let k = 0; k < D; k++) g[k]! += l2 * w[k]!;
    for (let k = 0; k <= D; k++) {
      m[k] = b1 * m[k]! + (1 - b1) * g[k]!;
      v[k] = b2 * v[k]! + (1 - b2) * g[k]! * g[k]!;
      w[k]! -= (lr * (m[k]! / (1 - b1 ** ep))) / (Math.sqrt(v[k]! / (1 - b2 ** ep)) + 1e-8);
    }
  }
  return (r: Row) => {
    const o = idx.get(r)! * D;
    let s = w[D]!;
    for (let k = 0; k < D; k++) s += (w[k]! * (X[o + k]! - mean[k]!)) / std[k]!;
    return s;
  };
}

const pooled = emptyFigures();
for (let k = 0; k < K; k++) {
  const oof = new Map<Row, number>();
  for (let j = 0; j < K; j++) {
    if (j === k) continue;
    const f = train(d.model.filter((r) => r.fold !== k && r.fold !== j));
    for (const r of d.model) if (r.fold === j) oof.set(r, f(r));
  }
  const p = choosePoint(d, (f) => f !== k, oof)!;
  const f = train(d.model.filter((r) => r.fold !== k));
  const held = new Map<Row, number>();
  for (const r of d.model) if (r.fold === k) held.set(r, f(r));
  const h = figuresAt(d, (x) => x === k, held, p.minCos, p.threshold);
  console.log(`fold ${k}: ${JSON.stringify(p)} held-out recall ${recallOf(h).toFixed(3)} precision ${precision5050(h).toFixed(3)} fhr ${fhrOf(h).toFixed(4)} kinds ${HARD_KINDS.map((q) => h.kinds[q].hits).join("/")}`);
  pooled.pos += h.pos; pooled.tp += h.tp; pooled.neg += h.neg; pooled.fp += h.fp;
  for (const q of HARD_KINDS) { pooled.kinds[q].n += h.kinds[q].n; pooled.kinds[q].hits += h.kinds[q].hits; }
}
console.log(`pooled: recall ${recallOf(pooled).toFixed(3)} precision ${precision5050(pooled).toFixed(3)} fhr ${fhrOf(pooled).toFixed(4)} kinds ${HARD_KINDS.map((q) => `${q} ${pooled.kinds[q].hits}/${pooled.kinds[q].n}`).join(", ")}`);
