/**
 * Measures whether embeddings of the words the two questions do NOT share add signal to the shipped
 * learned decision (docs/notes/embedding-quality.md §12; the answer was no, so nothing ships from it).
 * On cache-train's held-out parts (validation / test, split by question as in training), pairs with
 * raw cosine >= 0.8: the unmatched content words of each side are embedded as a text (diffA, diffB);
 * features covA = cos(diffA, B), covB = cos(diffB, A), dd = cos(diffA, diffB), emptyA/B; each alone (AUC)
 * and stacked with the shipped model's logit in a logistic regression fitted on one part and measured
 * on the other (AUC, recall at the hand verifier's class-balanced precision).
 *
 *   nice ./node_modules/.bin/bun run scripts/analysis/cache-diff-features.ts      # ~1 min once data/cache-train-emb.bin exists
 */
import { resolve } from "node:path";
import { dataDir } from "../bench/data";
import { DEFAULT_EMB_FILE, aucOf, loadOrEmbed, questionSplit } from "../cache-train-embed";
import { analyzePair, verifyPair } from "../../src/cache/verify/index";
import { LEARNED_ANALYZE_OPTIONS, LearnedModel } from "../../src/cache/verify/learned";
import { surfaceForm } from "../../src/cache/verify/text";
import { createEmbedder, dot } from "../../src/embedding/index";
const log = (s: string) => process.stderr.write(s + "\n");
const set = await loadOrEmbed(dataDir("cache-train"), DEFAULT_EMB_FILE, log);
const { pairs, texts, index, dims, vecs } = set;
const vec = (i: number) => vecs.subarray(i * dims, (i + 1) * dims);
const partOf = questionSplit(set);
const lm = new LearnedModel(await Bun.file(resolve(import.meta.dir, "../../src/cache/verify/learned-weights.json")).json());
interface R { y: number; part: string; cos: number; p: number; hand: boolean; dA: string; dB: string; a: number; b: number; nA: number; nB: number; f?: number[] }
const rows: R[] = [];
for (const p of pairs) {
  const a = index.get(p.q2)!, b = index.get(p.q1)!;
  const u = vec(a), v = vec(b);
  const cos = dot(u, v);
  if (cos < 0.8 || surfaceForm(p.q1) === surfaceForm(p.q2)) continue;
  const part = partOf(a);
  if (part === "train") continue; // the model was trained there
  const an = analyzePair(p.q2, p.q1, LEARNED_ANALYZE_OPTIONS);
  const pr = lm.probability(u, v, an, cos);
  rows.push({ y: p.label, part, cos, p: pr, hand: verifyPair(p.q2, p.q1, cos).accept, dA: an.onlyA.map((t) => t.lower).join(" "), dB: an.onlyB.map((t) => t.lower).join(" "), a, b, nA: an.onlyA.length, nB: an.onlyB.length });
}
log(`${rows.length} rows`);
const need = [...new Set(rows.flatMap((r) => [r.dA, r.dB]).filter((s) => s))];
const emb = createEmbedder({ provider: "local", lruSize: 0 });
await emb.load();
const dv = new Map<string, Float32Array>();
const t0 = performance.now();
for (let i = 0; i < need.length; i += 64) (await emb.embed(need.slice(i, i + 64))).forEach((v, j) => dv.set(need[i + j]!, v));
await emb.close();
log(`${need.length} diff texts embedded in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
const logit = (p: number) => Math.log(Math.max(1e-6, p) / Math.max(1e-6, 1 - p));
for (const r of rows) {
  const eA = r.dA ? dv.get(r.dA)! : null, eB = r.dB ? dv.get(r.dB)! : null;
  const covA = eA ? dot(eA, vec(r.b)) : 1, covB = eB ? dot(eB, vec(r.a)) : 1;
  const dd = eA && eB ? dot(eA, eB) : eA || eB ? 0 : 1;
  r.f = [logit(r.p), covA, covB, Math.min(covA, covB), dd, eA ? 0 : 1, eB ? 0 : 1, r.cos];
}
const names = ["logit", "covA", "covB", "covMin", "dd", "emptyA", "emptyB", "cos"];
const auc = (rs: R[], s: (r: R) => number) => aucOf(rs, s, (r) => r.y);
const val = rows.filter((r) => r.part === "val"), test = rows.filter((r) => r.part === "test");
log(`validation ${val.length} pairs (${val.filter((r) => r.y).length} same), test ${test.length} (${test.filter((r) => r.y).length} same)`);
for (let k = 0; k < names.length; k++) log(`AUC ${names[k]}: val ${auc(val, (r) => r.f![k]!).toFixed(4)} test ${auc(test, (r) => r.f![k]!).toFixed(4)}`);
// logistic stacker fitted on val, measured on test (and vice versa)
function fit(rs: R[], use: number[]) {
  const w = new Float64Array(use.length + 1);
  for (let it = 0; it < 3000; it++) {
    const g = new Float64Array(w.length);
    for (const r of rs) {
      let z = w[use.length]!;
      use.forEach((k, j) => (z += w[j]! * r.f![k]!));
      const e = 1 / (1 + Math.exp(-z)) - r.y;
      use.forEach((k, j) => (g[j]! += e * r.f![k]!));
      g[use.length]! += e;
    }
    for (let j = 0; j < w.length; j++) w[j]! -= (0.5 * g[j]!) / rs.length;
  }
  return (r: R) => { let z = w[use.length]!; use.forEach((k, j) => (z += w[j]! * r.f![k]!)); return z; };
}
// recall at balanced precision of the hand verifier
function recallAt(rs: R[], s: (r: R) => number, targetPw: number) {
  const P = rs.filter((r) => r.y).length, N = rs.length - P;
  const z = rs.map((r) => ({ s: s(r), y: r.y })).sort((a, b) => b.s - a.s);
  let tp = 0, fp = 0, best = 0;
  for (const x of z) { if (x.y) tp++; else fp++; const R = tp / P, F = fp / N; if (R / (R + F) >= targetPw) best = R; }
  return best;
}
const handPw = (rs: R[]) => { const P = rs.filter((r) => r.y).length, N = rs.length - P; const R = rs.filter((r) => r.y && r.hand).length / P, F = rs.filter((r) => !r.y && r.hand).length / N; return { pw: R / (R + F), R }; };
for (const [nm, rs] of [["val", val], ["test", test]] as const) { const h = handPw(rs); log(`${nm}: hand verifier pw ${h.pw.toFixed(3)} R ${h.R.toFixed(3)}; base model recall at that pw ${recallAt(rs, (r) => r.f![0]!, h.pw).toFixed(3)}`); }
for (const use of [[0], [0, 1, 2], [0, 3], [0, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6, 7]]) {
  const sv = fit(val, use), st = fit(test, use);
  const hv = handPw(test).pw, hvv = handPw(val).pw;
  log(`[${use.map((k) => names[k]).join(",")}] fit val -> test AUC ${auc(test, sv).toFixed(4)} R@hand ${recallAt(test, sv, hv).toFixed(3)} | fit test -> val AUC ${auc(val, st).toFixed(4)} R@hand ${recallAt(val, st, hvv).toFixed(3)}`);
}
