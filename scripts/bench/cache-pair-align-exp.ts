/**
 * Experiment (issue 25, recall at precision >= 0.97): word-level semantic alignment features
 * (BERTScore-like) from USE-lite's static token-embedding table (`module/Embeddings_en`, 8,002 pieces x
 * 256): a lookup per word, no model run. Same CV protocol as cache-pair-cv.ts (folds by duplicate
 * cluster, operating point on out-of-fold scores of the training folds, hard negatives in train and
 * validation), the trees retrained per fold with the first 27 pair features (before alignment; --base)
 * plus a named set of groups, recomputed here by plain reference code ("wal" and "pal" are what
 * src/cache/verify/align.ts then shipped).
 *
 *   nice ./node_modules/.bin/bun run scripts/bench/cache-pair-align-exp.ts --folds 5 --sets "base;wal;ual;pal;wal,pal" [--targets shipped,literal] [--ctx 1]
 *
 * Word weights are the verifier's own (general English unigram frequencies of the model's vocabulary,
 * weights.ts): nothing is learned from cache-train, so no fold leaks into another. A word's vector is
 * the normalised sum of its pieces' rows. Targets: "shipped" = the pair model's point rule (with the
 * Quora false-hit bound), "literal" = the issue's constraints only (precision 50/50, the 50/50 false-hit
 * rate, each kind). `--ctx`: also the contextual token vectors ("cal"), read from the model's buffers.
 * Run of 2026-11-27, 5 folds, pooled held-out recall shipped / literal: base 0.176 / 0.183, pal 0.178 /
 * 0.188, wal+pal 0.179 / 0.195, wal+ual+pal 0.179 / 0.191, cal 0.177 / 0.196 (3-fold screening had shown
 * +0.014 for wal+ual+pal: noise).
 */
import { cliArg as arg } from "./data";
import { HARD_KINDS } from "./cache-hard-negatives";
import { TARGET, fhrOf, mixedFhr, precision5050, recallOf } from "./cache-cv";
import { crossValidatePairModel, foldFigures, loadData, withExtraColumns, type Row } from "./cache-pair-cv";
import { GBM_DEFAULTS } from "./cache-pair-gbm";
import { PAIR_ANALYZE_OPTIONS } from "../../src/cache/verify/pair-model";
import { analyzePair } from "../../src/cache/verify/index";
import type { ContentToken } from "../../src/cache/verify/analyze";
import { readUseLiteFiles } from "../../src/embedding/use-lite-weights";
import { SentencePieceTokenizer } from "../../src/embedding/sentencepiece";
import { prepareText } from "../../src/embedding/use-lite-text";
import { UseLiteFast } from "../../src/embedding/use-lite-fast";

const K = Number(arg("folds") ?? 3);
const log = (s: string) => process.stderr.write(s + "\n");
const d = await loadData(K, 400, log);

const files = await readUseLiteFiles();
const embT = files.tensors.get("module/Embeddings_en")!;
const D = embT.shape[1]!;
const V = embT.shape[0]!;
const E = new Float32Array(V * D);
for (let i = 0; i < V; i++) {
  let n = 0;
  for (let c = 0; c < D; c++) n += embT.data[i * D + c]! ** 2;
  n = Math.sqrt(n) || 1;
  for (let c = 0; c < D; c++) E[i * D + c] = embT.data[i * D + c]! / n;
}
const tok = new SentencePieceTokenizer(files.vocabulary);
const pieceScore = (id: number) => Number(files.vocabulary[id]?.[1] ?? 0);

const wordVecs = new Map<string, Float32Array>();
function wordVec(w: string): Float32Array {
  let v = wordVecs.get(w);
  if (v) return v;
  v = new Float32Array(D);
  for (const id of tok.encode(w)) for (let c = 0; c < D; c++) v[c]! += embT.data[id * D + c]!;
  let n = 0;
  for (let c = 0; c < D; c++) n += v[c]! ** 2;
  n = Math.sqrt(n) || 1;
  for (let c = 0; c < D; c++) v[c]! /= n;
  wordVecs.set(w, v);
  return v;
}
const dotv = (a: Float32Array, ao: number, b: Float32Array, bo: number) => {
  let s = 0;
  for (let c = 0; c < D; c++) s += a[ao + c]! * b[bo + c]!;
  return s;
};

/** best cosine of each word of `xs` against `ys` (1 for an identical word) */
function bestOf(xs: ContentToken[], ys: ContentToken[]): number[] {
  return xs.map((x) => {
    let b = ys.length ? -1 : 0;
    for (const y of ys) b = Math.max(b, x.lower === y.lower || x.stem === y.stem ? 1 : dotv(wordVec(x.lower), 0, wordVec(y.lower), 0));
    return b;
  });
}
function wmean(ws: number[], xs: number[]): number {
  let s = 0, t = 0;
  for (let i = 0; i < xs.length; i++) (s += ws[i]! * xs[i]!, t += ws[i]!);
  return t > 0 ? s / t : 1;
}

const pieceCache = new Map<string, { ids: number[]; w: number[] }>();
function pieces(text: string) {
  let p = pieceCache.get(text);
  if (!p) {
    const ids = tok.encode(prepareText(text));
    p = { ids, w: ids.map((id) => Math.max(0.5, -pieceScore(id))) };
    pieceCache.set(text, p);
  }
  return p;
}
function pieceBest(x: number[], y: number[]): number[] {
  return x.map((i) => {
    let b = -1;
    for (const j of y) b = Math.max(b, i === j ? 1 : dotv(E, i * D, E, j * D));
    return b;
  });
}

export const GROUPS: Record<string, string[]> = {
  wal: ["wP", "wR", "wF", "worstLo", "worstHi", "maxDeficit", "cnt3", "cnt5", "cnt7"],
  ual: ["uuMin", "uuMean", "unBestMin", "unBestMean"],
  pal: ["pP", "pR", "pF", "pWorst", "pDeficit"],
  cal: ["cP", "cR", "cF", "cWorst", "cDeficit", "cWorstHi"],
};

/**
 * --ctx: contextual token vectors — the model's residual stream after the last layer's attention (the
 * rows it mean-pools), read from the model's own buffers after embedding one text (an experiment
 * only: serving would need the embedder to hand them out). Rows L2-normalised.
 */
const ctxModel = arg("ctx") ? new UseLiteFast("auto", 1) : null;
if (ctxModel) await ctxModel.load();
const ctxCache = new Map<string, { ids: number[]; rows: Float32Array }>();
function ctxRows(text: string): { ids: number[]; rows: Float32Array } {
  const hit = ctxCache.get(text);
  if (hit) return hit;
  const m = ctxModel as unknown as { arena: { f32(off: number, n: number): Float32Array }; bufX: number };
  const prepared = prepareText(text);
  const ids = ctxModel!.tokenize(prepared);
  ctxModel!.embedFlat([prepared]);
  const X = m.arena.f32(m.bufX, ids.length * 512);
  const rows = new Float32Array(ids.length * 512);
  for (let t = 0; t < ids.length; t++) {
    let n = 0;
    for (let c = 0; c < 512; c++) n += X[t * 512 + c]! ** 2;
    n = Math.sqrt(n) || 1;
    for (let c = 0; c < 512; c++) rows[t * 512 + c] = X[t * 512 + c]! / n;
  }
  const v = { ids, rows };
  if (ctxCache.size >= 4000) ctxCache.delete(ctxCache.keys().next().value!);
  ctxCache.set(text, v);
  return v;
}
function ctxBest(x: { rows: Float32Array; ids: number[] }, y: { rows: Float32Array; ids: number[] }): number[] {
  const out: number[] = [];
  for (let i = 0; i < x.ids.length; i++) {
    let b = -1;
    for (let j = 0; j < y.ids.length; j++) {
      let s = 0;
      for (let c = 0; c < 512; c++) s += x.rows[i * 512 + c]! * y.rows[j * 512 + c]!;
      if (s > b) b = s;
    }
    out.push(b);
  }
  return out;
}
const ALL = Object.values(GROUPS).flat();
const extra = new Map<Row, Float64Array>();
const t0 = performance.now();
for (const r of d.model) {
  const an = analyzePair(r.a!, r.b!, PAIR_ANALYZE_OPTIONS);
  const A = an.a.content, B = an.b.content;
  const ba = bestOf(A, B), bb = bestOf(B, A);
  const wa = A.map((t) => t.weight), wb = B.map((t) => t.weight);
  const P = wmean(wa, ba), R = wmean(wb, bb);
  const all = [...ba, ...bb];
  const minA = ba.length ? Math.min(...ba) : 1, minB = bb.length ? Math.min(...bb) : 1;
  let maxDef = 0;
  ba.forEach((b, i) => (maxDef = Math.max(maxDef, wa[i]! * (1 - b))));
  bb.forEach((b, i) => (maxDef = Math.max(maxDef, wb[i]! * (1 - b))));
  // unmatched words: their best against the other side's unmatched words (a substitution by a synonym?) and against all its content words
  const uab = bestOf(an.onlyA, an.onlyB), ubb = bestOf(an.onlyB, an.onlyA);
  const uu = [...uab, ...ubb], uw = [...an.onlyA, ...an.onlyB].map((t) => t.weight);
  const ua2 = bestOf(an.onlyA, B), ub2 = bestOf(an.onlyB, A);
  const un = [...ua2, ...ub2];
  const pa = pieces(r.a!), pb = pieces(r.b!);
  const pba = pieceBest(pa.ids, pb.ids), pbb = pieceBest(pb.ids, pa.ids);
  const pP = wmean(pa.w, pba), pR = wmean(pb.w, pbb);
  let pDef = 0;
  pba.forEach((b, i) => (pDef = Math.max(pDef, pa.w[i]! * (1 - b))));
  pbb.forEach((b, i) => (pDef = Math.max(pDef, pb.w[i]! * (1 - b))));
  const c: Record<string, number> = {};
  if (ctxModel) {
    const ca = ctxRows(r.a!), cb = ctxRows(r.b!);
    const wa2 = ca.ids.map((id) => Math.max(0.5, -pieceScore(id))), wb2 = cb.ids.map((id) => Math.max(0.5, -pieceScore(id)));
    const xa = ctxBest(ca, cb), xb = ctxBest(cb, ca);
    const cP = wmean(wa2, xa), cR = wmean(wb2, xb);
    let cDef = 0;
    xa.forEach((b, i) => (cDef = Math.max(cDef, wa2[i]! * (1 - b))));
    xb.forEach((b, i) => (cDef = Math.max(cDef, wb2[i]! * (1 - b))));
    Object.assign(c, { cP, cR, cF: cP + cR > 0 ? (2 * cP * cR) / (cP + cR) : 0, cWorst: Math.min(...xa, ...xb), cDeficit: cDef, cWorstHi: Math.max(Math.min(...xa), Math.min(...xb)) });
  }
  const v: Record<string, number> = {
    ...c,
    wP: P, wR: R, wF: P + R > 0 ? (2 * P * R) / (P + R) : 0,
    worstLo: Math.min(minA, minB), worstHi: Math.max(minA, minB), maxDeficit: maxDef,
    cnt3: all.filter((x) => x < 0.3).length, cnt5: all.filter((x) => x < 0.5).length, cnt7: all.filter((x) => x < 0.7).length,
    uuMin: uu.length ? Math.min(...uu) : 1, uuMean: uu.length ? wmean(uw, uu) : 1,
    unBestMin: un.length ? Math.min(...un) : 1, unBestMean: un.length ? wmean(uw, un) : 1,
    pP, pR, pF: pP + pR > 0 ? (2 * pP * pR) / (pP + pR) : 0,
    pWorst: Math.min(...pba, ...pbb), pDeficit: pDef,
  };
  extra.set(r, Float64Array.from(ALL.map((n) => v[n] ?? 0)));
}
log(`alignment features for ${d.model.length} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

if (arg("dump")) {
  // per-feature separation on the rows the model judges: mean for duplicates vs Quora non-duplicates
  for (const [k, n] of ALL.entries()) {
    const m = (f: (r: Row) => boolean) => { const rs = d.model.filter(f); return rs.reduce((s, r) => s + extra.get(r)![k]!, 0) / rs.length; };
    log(`${n}: dup ${m((r) => r.label === 1).toFixed(3)} quora-neg ${m((r) => r.kind === "qqp" && r.label === 0).toFixed(3)} hard ${m((r) => r.kind !== "qqp").toFixed(3)}`);
  }
}

const BASE = Number(arg("base") ?? 27); // the shipped 27 (loadData computes whatever PAIR_FEATURES holds now)
const baseX = new Map<Row, Float64Array>(d.model.map((r) => [r, r.x!.subarray(0, BASE)]));
const gbm = { ...GBM_DEFAULTS, trees: Number(arg("trees") ?? GBM_DEFAULTS.trees), depth: Number(arg("depth") ?? GBM_DEFAULTS.depth) };
const targets = (arg("targets") ?? (arg("literal") ? "literal" : "shipped")).split(",");
for (const spec of (arg("sets") ?? "base").split(";")) {
  const groups = spec.split(",").filter((g) => g && g !== "base");
  const idx = groups.flatMap((g) => GROUPS[g]!.map((n) => ALL.indexOf(n)));
  withExtraColumns(d.model, baseX, extra, idx);
  for (const t of targets) {
    const t1 = performance.now();
    // "literal@0.973": the literal rule with a stricter precision target when choosing (an explicit margin)
    const [rule, prec] = t.split("@") as [string, string?];
    TARGET.precision = prec ? Number(prec) : 0.97;
    const res = await crossValidatePairModel({ data: d, folds: K, quoraFhr: rule === "literal" ? 1 : 0.01, cvOnly: true, hardWeight: 3, gbm, log: () => {} });
    TARGET.precision = 0.97;
    const p = res.pooled;
    const folds = foldFigures(res);
    console.log(`[${spec}|${t}] K ${K}: recall ${recallOf(p).toFixed(4)} precision50 ${precision5050(p).toFixed(4)} quora-fhr ${fhrOf(p).toFixed(4)} mixed-fhr ${mixedFhr(p).toFixed(4)} kinds ${HARD_KINDS.map((k) => p.kinds[k].hits).join("/")} | folds ${folds} | ${((performance.now() - t1) / 1000).toFixed(0)} s`);
  }
}
