/**
 * Trains the learned stage of the cache's hit decision (src/cache/verify/learned.ts) on the labelled
 * question pairs of ../shared/data/cache-train (never on cache-eval-dev), and writes
 * src/cache/verify/learned-weights.json. Deterministic: seeded split, initialisation and shuffling.
 *
 *   nice ./node_modules/.bin/bun run scripts/train-cache-decision.ts [--data DIR] [--emb FILE] [--dry] [--out FILE] [--adapted]
 *
 * 1. Embeds every distinct question with the gateway's own local embedder once (scripts/cache-train-embed.ts;
 *    the vectors are kept in data/cache-train-emb.bin, gitignored; ~4 min on 2 cores, later runs read the file).
 * 2. Splits BY QUESTION: the connected components of the "pair" graph (a question can be in several
 *    pairs) go, by a hash of their first text, to train (80 %), validation (10 %) or test (10 %);
 *    no question is in two parts.
 * 3. Trains candidates on train, picks epochs / operating point / vetoes on validation, reports on test:
 *    the hand verifier (today's rules), logistic regression and an MLP over |u−v|, u⊙v, the scalar pair
 *    features and the hard-rule signals; each hard rule as a veto in front of the model.
 * 4. Writes the chosen model (--dry: report only).
 */
import { resolve } from "node:path";
import { cliArg as arg, dataDir } from "./bench/data";
import { DEFAULT_EMB_FILE, aucOf, loadOrEmbed, mulberry32, questionSplit, type Part } from "./cache-train-embed";
import { analyzePair, verifyPair } from "../src/cache/verify/index";
import { dot, encodeF32 } from "../src/core/vectors";
import { Adapter, HARD_SIGNALS, LEARNED_ANALYZE_OPTIONS, LearnedModel, SCALAR_NAMES, hardSignals, pairInput, type HardSignal, type LearnedWeightsFile } from "../src/cache/verify/learned";
import { STOPWORDS, surfaceForm } from "../src/cache/verify/text";
import { createEmbedder } from "../src/embedding/index";
import { EmbeddingAdapter } from "../src/cache/adapter";

const DRY = process.argv.includes("--dry");
const OUT = arg("out") ?? resolve(import.meta.dir, "../src/cache/verify/learned-weights.json");
const SEED = 14;
/** Candidates below this cosine never reach the decision (the cache's similarity_threshold default is >= it). */
const MIN_COS = Number(arg("min-cos") ?? 0.8);
/** Operating point: the lowest threshold whose validation precision (classes weighed 50/50, like the dev set) is at least this. */
const TARGET_P_ARG = arg("target-p");
let TARGET_P = TARGET_P_ARG ? Number(TARGET_P_ARG) : 0.97;
const HIDDEN = Number(arg("hidden") ?? 16);
const EPOCHS = Number(arg("epochs") ?? 4);
const L2 = Number(arg("l2") ?? 1e-3);
const LR = Number(arg("lr") ?? 1e-3);
const GATE = Number(arg("gate") ?? 0.2);
const ENSEMBLE = Number(arg("ensemble") ?? 5);
/** extra training negatives: train questions with one content word replaced by another question's (0 = none) */
const AUGMENT = Number(arg("augment") ?? 0);
/** the learned projection: rank and epochs */
const RANK = Number(arg("rank") ?? 64);
const ADAPTER_EPOCHS = Number(arg("adapter-epochs") ?? 5);
const log = (s: string) => process.stderr.write(s + "\n");


// ------------------------------------------------------------------ data and split
const set = await loadOrEmbed(dataDir("cache-train", arg("data")), arg("emb") ?? DEFAULT_EMB_FILE, log);
const { pairs, texts, index, dims, vecs } = set;
// The model judges the raw embeddings (the cache recovers them from the adapted vectors it stores, see
// src/cache/adapter.ts). --adapted: train it on the adapted vectors instead (measured: validation AUC 0.740
// vs 0.781, dropped — docs/notes/embedding-quality.md §11).
const ADAPTER_FILE = resolve(import.meta.dir, "../src/cache/adapter-weights.json");
const embAdapter = process.argv.includes("--adapted") ? EmbeddingAdapter.fromFile(await Bun.file(ADAPTER_FILE).json()) : null;
if (embAdapter && embAdapter.baseEmbedderId !== set.embedderId) throw new Error(`the adapter was trained on ${embAdapter.baseEmbedderId}, not ${set.embedderId}`);
const adapt = (v: Float32Array) => (embAdapter ? embAdapter.apply(v) : v);
if (embAdapter) for (let i = 0; i < texts.length; i++) vecs.set(embAdapter.apply(vecs.subarray(i * dims, (i + 1) * dims)), i * dims);
const embedderId = embAdapter ? embAdapter.id : set.embedderId;
log(`vectors: ${embedderId}`);
const vec = (i: number) => vecs.subarray(i * dims, (i + 1) * dims);

const partOf = questionSplit(set);

// ------------------------------------------------------------------ the projection (adapter)
// P (RANK × dims) trained on the training pairs with a logistic loss on alpha·cos(Pu, Pv) + beta;
// starts as the first RANK coordinates (plus a little noise). Its cosine is one more MLP input.
function trainAdapter(): { adapter: Adapter; report: Record<string, number> } {
  const rnd = mulberry32(SEED + 7);
  const P = new Float32Array(RANK * dims);
  for (let j = 0; j < RANK; j++) for (let k = 0; k < dims; k++) P[j * dims + k] = (j === k ? 1 : 0) + (rnd() * 2 - 1) * 0.02;
  const ad = new Adapter(RANK, dims, P);
  const tr = pairs.map((p) => ({ a: index.get(p.q2)!, b: index.get(p.q1)!, y: p.label })).filter((r) => partOf(r.a) === "train");
  const va = pairs.map((p) => ({ a: index.get(p.q2)!, b: index.get(p.q1)!, y: p.label })).filter((r) => partOf(r.a) === "val");
  let alpha = 10, beta = -8;
  const x = new Float64Array(RANK), y = new Float64Array(RANK), gx = new Float64Array(RANK), gy = new Float64Array(RANK);
  const G = new Float32Array(P.length);
  const order = tr.map((_, i) => i);
  const B = 64, step = 0.1;
  const isSame = (r: (typeof va)[number]) => r.y;
  const rawCos = (r: (typeof va)[number]) => dot(vec(r.a), vec(r.b));
  const t1 = performance.now();
  for (let e = 0; e < ADAPTER_EPOCHS; e++) {
    for (let i = order.length - 1; i > 0; i--) { const j = Math.floor(rnd() * (i + 1)); [order[i], order[j]] = [order[j]!, order[i]!]; }
    for (let s0 = 0; s0 < order.length; s0 += B) {
      G.fill(0);
      let ga = 0, gb = 0;
      const n = Math.min(B, order.length - s0);
      for (let q = 0; q < n; q++) {
        const r = tr[order[s0 + q]!]!;
        const u = vec(r.a), v = vec(r.b);
        let xy = 0, xx = 0, yy = 0;
        for (let j = 0; j < RANK; j++) {
          let a = 0, b = 0;
          const o = j * dims;
          for (let k = 0; k < dims; k++) { a += P[o + k]! * u[k]!; b += P[o + k]! * v[k]!; }
          x[j] = a; y[j] = b; xy += a * b; xx += a * a; yy += b * b;
        }
        const nx = Math.sqrt(xx), ny = Math.sqrt(yy), c = xy / (nx * ny);
        const g = (1 / (1 + Math.exp(-(alpha * c + beta))) - r.y) / n;
        ga += g * c;
        gb += g;
        const gc = g * alpha;
        for (let j = 0; j < RANK; j++) {
          gx[j] = gc * (y[j]! / (nx * ny) - (c * x[j]!) / (nx * nx));
          gy[j] = gc * (x[j]! / (nx * ny) - (c * y[j]!) / (ny * ny));
        }
        for (let j = 0; j < RANK; j++) {
          const o = j * dims, a1 = gx[j]!, b1 = gy[j]!;
          for (let k = 0; k < dims; k++) G[o + k]! += a1 * u[k]! + b1 * v[k]!;
        }
      }
      for (let k = 0; k < P.length; k++) P[k]! -= step * G[k]!;
      alpha -= step * ga;
      beta -= step * gb;
    }
    log(`  adapter epoch ${e + 1}: val AUC of cos(Pu, Pv) ${aucOf(va, (r) => ad.cosine(vec(r.a), vec(r.b)), isSame).toFixed(4)} (${((performance.now() - t1) / 1000).toFixed(0)} s)`);
  }
  const hi = va.filter((r) => rawCos(r) >= MIN_COS);
  const report = {
    valAucRaw: aucOf(va, rawCos, isSame),
    valAucAdapted: aucOf(va, (r) => ad.cosine(vec(r.a), vec(r.b)), isSame),
    valAucRawHighCos: aucOf(hi, rawCos, isSame),
    valAucAdaptedHighCos: aucOf(hi, (r) => ad.cosine(vec(r.a), vec(r.b)), isSame),
  };
  log(`adapter (rank ${RANK}): val AUC raw cosine ${report.valAucRaw.toFixed(4)} -> adapted ${report.valAucAdapted.toFixed(4)}; among cos >= ${MIN_COS}: ${report.valAucRawHighCos.toFixed(4)} -> ${report.valAucAdaptedHighCos.toFixed(4)}`);
  return { adapter: ad, report };
}
const { adapter, report: adapterReport } = trainAdapter();

interface Row { i: number; label: number; part: Part; cos: number; x: Float32Array; hard: Record<HardSignal, boolean>; surface: boolean; hand: boolean }
const rows: Row[] = [];
const t0 = performance.now();
for (let i = 0; i < pairs.length; i++) {
  const p = pairs[i]!;
  // q2 is the new request, q1 the cached one (as the benchmarks send them)
  const a = index.get(p.q2)!, b = index.get(p.q1)!;
  const u = vec(a), v = vec(b);
  const cos = dot(u, v);
  const an = analyzePair(p.q2, p.q1, LEARNED_ANALYZE_OPTIONS);
  rows.push({
    i,
    label: p.label,
    part: partOf(a),
    cos,
    x: pairInput(u, v, an, cos, adapter.cosine(u, v)),
    hard: hardSignals(an),
    surface: surfaceForm(p.q1) === surfaceForm(p.q2),
    hand: verifyPair(p.q2, p.q1, cos).accept,
  });
}
log(`features of ${rows.length} pairs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const by = (part: Part) => rows.filter((r) => r.part === part);
const train = by("train"), val = by("val"), test = by("test");
for (const [n, rs] of [["train", train], ["val", val], ["test", test]] as const)
  log(`${n}: ${rs.length} pairs (${rs.filter((r) => r.label).length} same), cos >= ${MIN_COS}: ${rs.filter((r) => r.cos >= MIN_COS).length} (${rs.filter((r) => r.cos >= MIN_COS && r.label).length} same)`);

// ------------------------------------------------------------------ one-word substitutions
// "Do introverts make good lawyers?" / "... nurses?": one content word replaced barely moves a USE
// embedding. Made here from training (and, to measure, validation) questions; label 0 by construction.
const edEmb = createEmbedder({ provider: "local", lruSize: 0 });
async function substitutions(qs: string[], n: number, seed: number): Promise<Row[]> {
  const rnd = mulberry32(seed);
  const words = (t: string) => [...t.matchAll(/\b[a-z]{4,}\b/g)].map((m) => m[0]).filter((w) => !STOPWORDS.has(w));
  const pool = [...new Set(qs.flatMap(words))].sort();
  const made: Array<{ a: string; b: string }> = [];
  for (let k = 0; made.length < n && k < n * 4; k++) {
    const a = qs[Math.floor(rnd() * qs.length)]!;
    const ws = words(a);
    if (!ws.length) continue;
    const w = ws[Math.floor(rnd() * ws.length)]!;
    const r = pool[Math.floor(rnd() * pool.length)]!;
    if (r.slice(0, 4) === w.slice(0, 4)) continue;
    made.push({ a, b: a.replace(new RegExp(`\\b${w}\\b`), r) });
  }
  await edEmb.load();
  const out: Row[] = [];
  for (let i = 0; i < made.length; i += 64) {
    const batch = made.slice(i, i + 64);
    const vs = (await edEmb.embed(batch.map((e) => e.b))).map(adapt);
    batch.forEach((e, j) => {
      const u = vs[j]!, v = vec(index.get(e.a)!);
      const cos = dot(u, v);
      const an = analyzePair(e.b, e.a, LEARNED_ANALYZE_OPTIONS);
      out.push({ i: -1, label: 0, part: "train", cos, x: pairInput(u, v, an, cos, adapter.cosine(u, v)), hard: hardSignals(an), surface: false, hand: verifyPair(e.b, e.a, cos).accept });
    });
  }
  return out;
}
const questionsOf = (rs: Row[]) => [...new Set(rs.flatMap((r) => [pairs[r.i]!.q1, pairs[r.i]!.q2]))];
const augRows = AUGMENT > 0 ? await substitutions(questionsOf(train), AUGMENT, SEED + 100) : [];
const valSubs = await substitutions(questionsOf(val), 2000, SEED + 200);
await edEmb.close();
log(`one-word substitutions: ${augRows.length} for training, ${valSubs.length} of validation questions to measure`);

// ------------------------------------------------------------------ standardisation (train rows)
const D = rows[0]!.x.length;
const mean = new Float32Array(D), std = new Float32Array(D);
for (const r of train) for (let k = 0; k < D; k++) mean[k]! += r.x[k]! / train.length;
for (const r of train) for (let k = 0; k < D; k++) std[k]! += (r.x[k]! - mean[k]!) ** 2 / train.length;
for (let k = 0; k < D; k++) std[k] = Math.sqrt(std[k]!) || 1;
for (const r of [...rows, ...augRows, ...valSubs]) for (let k = 0; k < D; k++) r.x[k] = (r.x[k]! - mean[k]!) / std[k]!; // standardised in place

// ------------------------------------------------------------------ models
interface Mlp { H: number; w1: Float32Array; b1: Float32Array; w2: Float32Array; b2: number }
function forward(m: Mlp, z: Float32Array, h?: Float32Array): number {
  let o = m.b2;
  for (let j = 0; j < m.H; j++) {
    let s = m.b1[j]!;
    const row = j * D;
    for (let k = 0; k < D; k++) s += m.w1[row + k]! * z[k]!;
    const a = s > 0 ? s : 0;
    if (h) h[j] = a;
    o += a * m.w2[j]!;
  }
  return o;
}
/** H = 0: logistic regression (w2 unused, w1 is the weight row, computed as a 1-unit identity layer). */
function trainMlp(rs: Row[], H: number, epochs: number, lr: number, l2: number, seed: number, onEpoch?: (m: Mlp, e: number) => void): Mlp {
  const rnd = mulberry32(seed);
  const linear = H === 0;
  const HH = linear ? 1 : H;
  const m: Mlp = { H: HH, w1: new Float32Array(HH * D), b1: new Float32Array(HH), w2: new Float32Array(HH), b2: 0 };
  const sc = Math.sqrt(2 / D);
  for (let k = 0; k < m.w1.length; k++) m.w1[k] = linear ? 0 : (rnd() * 2 - 1) * sc * 1.7;
  for (let j = 0; j < HH; j++) m.w2[j] = linear ? 1 : (rnd() * 2 - 1) * Math.sqrt(6 / HH);
  if (linear) m.b1[0] = 10; // keep the unit in its linear range: output = w1·z + b1 - 10 + b2
  if (linear) m.b2 = -10;
  // Adam state
  const mw1 = new Float32Array(m.w1.length), vw1 = new Float32Array(m.w1.length);
  const mb1 = new Float32Array(HH), vb1 = new Float32Array(HH), mw2 = new Float32Array(HH), vw2 = new Float32Array(HH);
  let mb2 = 0, vb2 = 0, t = 0;
  const B = 128, b1c = 0.9, b2c = 0.999, eps = 1e-8;
  const gw1 = new Float32Array(m.w1.length), gb1 = new Float32Array(HH), gw2 = new Float32Array(HH);
  const h = new Float32Array(HH);
  const order = rs.map((_, i) => i);
  for (let e = 0; e < epochs; e++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (let s0 = 0; s0 < order.length; s0 += B) {
      gw1.fill(0); gb1.fill(0); gw2.fill(0);
      let gb2 = 0;
      const n = Math.min(B, order.length - s0);
      for (let q = 0; q < n; q++) {
        const r = rs[order[s0 + q]!]!;
        const z = r.x;
        const o = forward(m, z, h);
        const g = (1 / (1 + Math.exp(-o)) - r.label) / n;
        gb2 += g;
        for (let j = 0; j < HH; j++) {
          if (h[j]! <= 0) continue;
          if (!linear) gw2[j]! += g * h[j]!;
          const gj = g * m.w2[j]!;
          gb1[j]! += gj;
          const row = j * D;
          for (let k = 0; k < D; k++) gw1[row + k]! += gj * z[k]!;
        }
      }
      t++;
      const c1 = 1 - b1c ** t, c2 = 1 - b2c ** t;
      const step = (w: Float32Array, g: Float32Array, mm: Float32Array, vv: Float32Array, decay: number) => {
        for (let k = 0; k < w.length; k++) {
          const gk = g[k]! + decay * w[k]!;
          mm[k] = b1c * mm[k]! + (1 - b1c) * gk;
          vv[k] = b2c * vv[k]! + (1 - b2c) * gk * gk;
          w[k]! -= (lr * (mm[k]! / c1)) / (Math.sqrt(vv[k]! / c2) + eps);
        }
      };
      step(m.w1, gw1, mw1, vw1, l2);
      if (!linear) {
        step(m.b1, gb1, mb1, vb1, 0);
        step(m.w2, gw2, mw2, vw2, l2);
      }
      mb2 = b1c * mb2 + (1 - b1c) * gb2;
      vb2 = b2c * vb2 + (1 - b2c) * gb2 * gb2;
      m.b2 -= (lr * (mb2 / c1)) / (Math.sqrt(vb2 / c2) + eps);
    }
    onEpoch?.(m, e + 1);
  }
  return m;
}
const auc = (m: Mlp) => aucOf(val.filter((r) => r.cos >= MIN_COS && !r.surface), (r) => prob(m, r), (r) => r.label);
/** Averaging K models' logits = one MLP with their hidden units side by side, output weights / K. */
function mergeMlps(ms: Mlp[]): Mlp {
  const H = ms.reduce((n, m) => n + m.H, 0);
  const out: Mlp = { H, w1: new Float32Array(H * D), b1: new Float32Array(H), w2: new Float32Array(H), b2: 0 };
  let o = 0;
  for (const m of ms) {
    out.w1.set(m.w1, o * D);
    out.b1.set(m.b1, o);
    for (let j = 0; j < m.H; j++) out.w2[o + j] = m.w2[j]! / ms.length;
    out.b2 += m.b2 / ms.length;
    o += m.H;
  }
  return out;
}
const prob = (m: Mlp, r: Row) => 1 / (1 + Math.exp(-forward(m, r.x)));

// ------------------------------------------------------------------ measures
/**
 * Precision / recall of a decision over rows. Precision is also given with the classes weighed
 * 50/50 (pw), the shape of the dev set, since training negatives outnumber positives 69/31.
 */
function measure(rs: Row[], accept: (r: Row) => boolean) {
  let tp = 0, fp = 0, P = 0, N = 0;
  for (const r of rs) {
    const a = r.surface || (r.cos >= MIN_COS && accept(r));
    if (r.label) { P++; if (a) tp++; } else { N++; if (a) fp++; }
  }
  const R = tp / P, F = fp / N;
  return { p: tp / Math.max(1, tp + fp), pw: R / Math.max(1e-9, R + F), r: R, fhr: F, tp, fp };
}
const fmt = (m: ReturnType<typeof measure>) => `P ${m.p.toFixed(3)} P50/50 ${m.pw.toFixed(3)} R ${m.r.toFixed(3)} FHR ${m.fhr.toFixed(3)} (${m.tp} TP / ${m.fp} FP)`;
/** The lowest threshold whose balanced precision on rs reaches TARGET_P (scores: the rows' probabilities). */
function operatingPoint(rs: Row[], score: (r: Row) => number, ok: (r: Row) => boolean = () => true): number {
  const cand = rs.filter((r) => r.cos >= MIN_COS && !r.surface && ok(r)).map((r) => score(r)).sort((a, b) => a - b);
  const steps = [...new Set(cand.map((s) => Math.round(s * 1000) / 1000))];
  for (const t of steps) if (measure(rs, (r) => ok(r) && score(r) >= t).pw >= TARGET_P) return t;
  return 1;
}

const report: Record<string, unknown> = {};
log(`\nhand verifier (cos >= ${MIN_COS} gate, hand rules incl. their own 0.85 floor):`);
log(`  val  ${fmt(measure(val, (r) => r.hand))}\n  test ${fmt(measure(test, (r) => r.hand))}`);
report.hand = { val: measure(val, (r) => r.hand), test: measure(test, (r) => r.hand) };
// Default operating point: the hand verifier's own validation precision (Quora's labels are too noisy for
// 0.97 on Quora itself; the dev set's precision is measured end to end), i.e. more recall at no loss of precision.
if (!TARGET_P_ARG) TARGET_P = measure(val, (r) => r.hand).pw;
log(`target balanced precision on validation: ${TARGET_P.toFixed(3)}`);

const gate = [...train, ...augRows].filter((r) => r.cos >= MIN_COS - GATE); // the region the model judges, with some margin below it
log(`\ntraining on ${gate.length} train pairs with cos >= ${(MIN_COS - GATE).toFixed(2)} (${gate.filter((r) => r.label).length} same), ${D} inputs`);

const candidates: Array<{ name: string; m: Mlp }> = [];
{
  const t1 = performance.now();
  const lr = trainMlp(gate, 0, 8, 2e-3, 1e-4, SEED);
  log(`logistic val AUC ${auc(lr).toFixed(4)}`);
  log(`logistic regression trained in ${((performance.now() - t1) / 1000).toFixed(0)} s`);
  candidates.push({ name: "logistic", m: lr });
}
{
  const t1 = performance.now();
  const members: Mlp[] = [];
  for (let k = 0; k < ENSEMBLE; k++) {
    members.push(trainMlp(gate, HIDDEN, EPOCHS, LR, L2, SEED + k, (m, e) => log(`  mlp ${k + 1}/${ENSEMBLE} epoch ${e}: val AUC ${auc(m).toFixed(4)} (${((performance.now() - t1) / 1000).toFixed(0)} s)`)));
  }
  const mlp = members.length === 1 ? members[0]! : mergeMlps(members);
  log(`mlp (${HIDDEN} hidden${ENSEMBLE > 1 ? ` x ${ENSEMBLE} seeds, logits averaged` : ""}): val AUC ${auc(mlp).toFixed(4)}`);
  candidates.push({ name: ENSEMBLE > 1 ? `mlp${HIDDEN}x${ENSEMBLE}` : `mlp${HIDDEN}`, m: mlp });
}

// ------------------------------------------------------------------ meaning-changing edits (for the vetoes)
// Quora's negatives are mostly related questions; a number, a name or the direction of a relation
// changed in an otherwise identical question is rare there. So each hard rule is also measured on
// such edits made here from the validation questions (label 0 by construction, none from the dev set).
function perturb(text: string, others: string[], k: number): Array<{ kind: HardSignal; text: string }> {
  const out: Array<{ kind: HardSignal; text: string }> = [];
  const num = text.match(/\b\d+\b/);
  if (num) out.push({ kind: "numberMismatch", text: text.replace(/\b\d+\b/, String(Number(num[0]) + 1 + (k % 3))) });
  const ent = [...text.matchAll(/(?<=\s)[A-Z][a-z]{2,}\b/g)].map((m) => m[0]);
  if (ent.length) {
    const pool = others.flatMap((o) => [...o.matchAll(/(?<=\s)[A-Z][a-z]{3,}\b/g)].map((m) => m[0])).filter((w) => !ent.includes(w));
    if (pool.length) out.push({ kind: "entityMismatch", text: text.replace(ent[0]!, pool[k % pool.length]!) });
  }
  const ord = text.match(/\b([a-z]{4,}) (to|into|from|than|over|against) ([a-z]{4,})\b/);
  if (ord) out.push({ kind: "orderSwap", text: text.replace(ord[0], `${ord[3]} ${ord[2]} ${ord[1]}`) });
  const neg = text.match(/^(.*?\b)(is|are|can|does|do|should|will|was) ([a-z])/i);
  if (neg && !/\bnot\b|n't/.test(text)) out.push({ kind: "negationMismatch", text: text.replace(neg[0], `${neg[1]}${neg[2]} not ${neg[3]}`) });
  return out;
}
interface Edit { kind: HardSignal; a: string; b: string; cos: number; x: Float32Array; hard: Record<HardSignal, boolean> }
const edits: Edit[] = [];
{
  const qs = [...new Set(val.flatMap((r) => [pairs[r.i]!.q1, pairs[r.i]!.q2]))];
  const raw: Array<{ kind: HardSignal; a: string; b: string }> = [];
  qs.forEach((q, k) => {
    for (const e of perturb(q, [qs[(k * 7919 + 13) % qs.length]!, qs[(k * 104729 + 7) % qs.length]!], k)) if (e.text !== q) raw.push({ kind: e.kind, a: q, b: e.text });
  });
  const emb = createEmbedder({ provider: "local", lruSize: 0 });
  await emb.load();
  const bs = new Map<string, Float32Array>();
  const need = [...new Set(raw.map((e) => e.b))];
  for (let i = 0; i < need.length; i += 64) (await emb.embed(need.slice(i, i + 64))).forEach((v, j) => bs.set(need[i + j]!, adapt(v)));
  await emb.close();
  for (const e of raw) {
    const u = bs.get(e.b)!, v = vec(index.get(e.a)!);
    const cos = dot(u, v);
    const an = analyzePair(e.b, e.a, LEARNED_ANALYZE_OPTIONS);
    const x = pairInput(u, v, an, cos, adapter.cosine(u, v));
    for (let k = 0; k < D; k++) x[k] = (x[k]! - mean[k]!) / std[k]!;
    edits.push({ ...e, cos, x, hard: hardSignals(an) });
  }
  log(`\nmeaning-changing edits of validation questions: ${HARD_SIGNALS.map((s) => `${s} ${edits.filter((e) => e.kind === s).length}`).join(", ")}`);
}

// each hard rule as a veto: kept when, at the validation operating point, it raises recall at the target precision,
// or when it removes more false hits on the edits of its kind than it costs recall on the validation pairs
const results: Array<{ name: string; vetoes: HardSignal[]; t: number; val: ReturnType<typeof measure>; test: ReturnType<typeof measure> }> = [];
for (const c of candidates) {
  const memo = new Map<Row, number>();
  for (const r of [...val, ...test]) if (r.cos >= MIN_COS) memo.set(r, prob(c.m, r));
  const score = (r: Row) => memo.get(r) ?? 0;
  let vetoes: HardSignal[] = [];
  const ok = (vs: HardSignal[]) => (r: Row) => !vs.some((s) => r.hard[s]);
  let t = operatingPoint(val, score, ok(vetoes));
  let cur = measure(val, (r) => ok(vetoes)(r) && score(r) >= t);
  log(`\n${c.name}, no vetoes: threshold ${t}: val ${fmt(cur)}`);
  const editP = new Map<Edit, number>();
  for (const e of edits) editP.set(e, 1 / (1 + Math.exp(-forward(c.m, e.x))));
  for (const s of HARD_SIGNALS) {
    const vs = [...vetoes, s];
    const t2 = operatingPoint(val, score, ok(vs));
    const m2 = measure(val, (r) => ok(vs)(r) && score(r) >= t2);
    const mine = edits.filter((e) => e.kind === s);
    const fhOff = mine.filter((e) => e.cos >= MIN_COS && editP.get(e)! >= t).length / Math.max(1, mine.length);
    const fhOn = mine.filter((e) => e.cos >= MIN_COS && !vs.some((v) => e.hard[v]) && editP.get(e)! >= t2).length / Math.max(1, mine.length);
    log(`  + veto ${s}: threshold ${t2}: val ${fmt(m2)}; false hits on ${mine.length} ${s} edits ${fhOff.toFixed(3)} -> ${fhOn.toFixed(3)}`);
    (report.vetoMeasures ??= {} as Record<string, unknown>);
    (report.vetoMeasures as Record<string, unknown>)[`${c.name}:${s}`] = { valRecallWithout: cur.r, valRecallWith: m2.r, editFalseHitsWithout: fhOff, editFalseHitsWith: fhOn, edits: mine.length };
    if (m2.r > cur.r + 0.002 || fhOff - fhOn > cur.r - m2.r) { vetoes = vs; t = t2; cur = m2; }
  }
  const te = measure(test, (r) => ok(vetoes)(r) && score(r) >= t);
  const subsServed = valSubs.filter((r) => r.cos >= MIN_COS && ok(vetoes)(r) && prob(c.m, r) >= t).length / Math.max(1, valSubs.length);
  const subsServed9 = valSubs.filter((r) => r.cos >= MIN_COS && (r.hand || (ok(vetoes)(r) && prob(c.m, r) >= 0.9))).length / Math.max(1, valSubs.length);
  log(`  one-word substitutions of validation questions served: ${subsServed.toFixed(3)} at ${t}; rules OR model >= 0.9: ${subsServed9.toFixed(3)} (rules alone ${(valSubs.filter((r) => r.cos >= MIN_COS && r.hand).length / Math.max(1, valSubs.length)).toFixed(3)})`);
  log(`${c.name} chosen: vetoes [${vetoes.join(", ")}], threshold ${t}\n  val  ${fmt(cur)}\n  test ${fmt(te)}`);
  results.push({ name: c.name, vetoes, t, val: cur, test: te });
  // the precision / recall trade-off of the operating point, on test (for the per-tenant setting)
  const curve: Array<{ t: number; test: ReturnType<typeof measure> }> = [];
  for (const tt of [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98]) curve.push({ t: tt, test: measure(test, (r) => ok(vetoes)(r) && score(r) >= tt) });
  log(curve.map((x) => `  t ${x.t}: test ${fmt(x.test)}`).join("\n"));
  // the hand verifier OR the model (the model adds hits the rules reject on their score alone)
  const orCurve: Array<{ t: number; val: ReturnType<typeof measure>; test: ReturnType<typeof measure> }> = [];
  for (const tt of [0.7, 0.75, 0.8, 0.85, 0.9, 0.95]) {
    const acc = (r: Row) => r.hand || (ok(vetoes)(r) && score(r) >= tt);
    orCurve.push({ t: tt, val: measure(val, acc), test: measure(test, acc) });
  }
  log(orCurve.map((x) => `  hand OR p >= ${x.t}: val ${fmt(x.val)} | test ${fmt(x.test)}`).join("\n"));
  report[c.name] = { vetoes, threshold: t, val: cur, test: te, curve, orCurve };
}

const chosen = results.reduce((a, b) => (b.val.r > a.val.r ? b : a));
const m = candidates.find((c) => c.name === chosen.name)!.m;
log(`\nchosen: ${chosen.name} (highest validation recall at balanced precision >= ${TARGET_P})`);

const weights: LearnedWeightsFile = {
  format: 1,
  embedderId,
  dims,
  inputs: D,
  hidden: m.H,
  scalars: [...SCALAR_NAMES],
  mean: encodeF32(mean),
  std: encodeF32(std),
  w1: encodeF32(m.w1),
  b1: encodeF32(m.b1),
  w2: encodeF32(m.w2),
  b2: m.b2,
  threshold: chosen.t,
  vetoes: chosen.vetoes,
  adapter: { rank: RANK, p: encodeF32(adapter.p) },
  minCosine: MIN_COS,
  report: {
    script: "scripts/train-cache-decision.ts",
    data: `cache-train/pairs.jsonl (${pairs.length} pairs), split by question: ${train.length} train / ${val.length} validation / ${test.length} test`,
    seed: SEED,
    chosen: chosen.name,
    adapter: adapterReport,
    operatingPoint: `lowest threshold with validation precision (classes 50/50) >= ${TARGET_P}`,
    ...report,
  },
};
// the runtime class must reproduce the training-time probabilities
const lm = new LearnedModel(weights);
let maxDiff = 0;
for (const r of test.slice(0, 300)) {
  const p = pairs[r.i]!;
  const an = analyzePair(p.q2, p.q1, LEARNED_ANALYZE_OPTIONS);
  maxDiff = Math.max(maxDiff, Math.abs(lm.probability(vec(index.get(p.q2)!), vec(index.get(p.q1)!), an, r.cos) - prob(m, r)));
}
log(`runtime vs training probability: max |diff| ${maxDiff.toExponential(2)} over 300 test pairs`);
if (maxDiff > 1e-4) throw new Error("the runtime model does not reproduce the trained one");
if (!DRY) {
  await Bun.write(OUT, JSON.stringify(weights, null, 1) + "\n");
  log(`wrote ${OUT}`);
}
