/**
 * The learned stage of the hit decision: a small MLP over a question pair, trained on labelled
 * Quora pairs by scripts/train-cache-decision.ts (weights in learned-weights.json, bundled into the
 * compiled binary as a JSON import and parsed once at start).
 *
 * Input (same code at training and at serving time, so the two cannot drift):
 *   |u − v| and u ⊙ v of the two embeddings (2 × dims), then the scalar pair features of
 *   features.ts (cosine, unmatched / matched content-word weights, coverage, length ratio...) and
 *   the verifier's hard-rule signals as 0/1 (number, entity, negation, asked-for attribute, order).
 * Every input is standardised with the training set's mean and deviation; one ReLU hidden layer;
 * a logistic output = the model's probability that the pair means the same.
 *
 * The decision (decideLearned): texts equal up to case/punctuation are accepted outright; the hard
 * rules listed in the weights' `vetoes` reject (kept only where they helped on held-out training
 * pairs, see the training report); otherwise accept when the probability reaches the threshold
 * (the weights' default operating point, or a tenant's own) — or, with `withRules` (the engine's default,
 * cache.learned_mode "with_rules"), when the hand verifier accepts it. A rejected pair that breaks a hard rule
 * carries that rule as its reason (the engine's multi-turn turn check reads it: "differ", not "reworded").
 */
import { decodeF32 } from "../../core/vectors";
import { analyzePair, type AnalyzeOptions, type PairAnalysis } from "./analyze";
import { pairFeatures, FEATURE_NAMES } from "./features";
import { surfaceForm } from "./text";
import { DEFAULT_VERIFY_OPTIONS, decide as handDecide, type VerifyOptions } from "./index";

export const HARD_SIGNALS = ["numberMismatch", "entityMismatch", "negationMismatch", "askHard", "orderSwap"] as const;
export type HardSignal = (typeof HARD_SIGNALS)[number];
/** pair features, hard-rule signals, and the cosine of the two embeddings after the learned projection */
export const SCALAR_NAMES = [...FEATURE_NAMES, ...HARD_SIGNALS, "adaptedCos"] as const;

/**
 * A learned linear projection P (rank × dims) of the embeddings, trained so that cos(Pu, Pv)
 * separates same-meaning pairs from different-meaning ones; its cosine is one input of the MLP.
 */
export class Adapter {
  private readonly x: Float64Array;
  private readonly y: Float64Array;
  constructor(
    readonly rank: number,
    readonly dims: number,
    readonly p: Float32Array,
  ) {
    if (p.length !== rank * dims) throw new Error("learned decision: adapter shape does not match");
    this.x = new Float64Array(rank);
    this.y = new Float64Array(rank);
  }
  cosine(u: Float32Array, v: Float32Array): number {
    const { rank: r, dims: d, p, x, y } = this;
    let xy = 0, xx = 0, yy = 0;
    for (let j = 0; j < r; j++) {
      let a = 0, b = 0;
      const o = j * d;
      for (let k = 0; k < d; k++) {
        a += p[o + k]! * u[k]!;
        b += p[o + k]! * v[k]!;
      }
      x[j] = a;
      y[j] = b;
      xy += a * b;
      xx += a * a;
      yy += b * b;
    }
    return xx > 0 && yy > 0 ? xy / Math.sqrt(xx * yy) : 0;
  }
}

/**
 * The analysis options the learned stage was trained with (scripts/train-cache-decision.ts): the hand
 * verifier's defaults of that time, pinned so that the model's inputs do not drift when the verifier's
 * cross-validated defaults move (issue 25 lowered orderMinWeight to 0.1 and made direction words content).
 */
export const LEARNED_ANALYZE_OPTIONS: AnalyzeOptions = {
  weights: DEFAULT_VERIFY_OPTIONS.weights,
  orderMinWeight: 0.3,
  orderMaxUnmatched: DEFAULT_VERIFY_OPTIONS.orderMaxUnmatched,
  synonymMinSimilarity: DEFAULT_VERIFY_OPTIONS.synonymMinSimilarity,
  ignoreRequestVerbs: DEFAULT_VERIFY_OPTIONS.ignoreRequestVerbs,
  acronyms: DEFAULT_VERIFY_OPTIONS.acronyms,
  polarContent: false,
};

/** The hand verifier's options the learned stage was measured with in "with_rules" mode (pinned like the analysis). */
export const LEARNED_HAND_OPTIONS: VerifyOptions = { ...DEFAULT_VERIFY_OPTIONS, minScore: 0.85, orderMinWeight: 0.3, polarContent: false };

export function hardSignals(an: PairAnalysis): Record<HardSignal, boolean> {
  return {
    numberMismatch: an.numberMismatch,
    entityMismatch: an.entityMismatch.length > 0,
    negationMismatch: an.negationMismatch,
    askHard: an.askMismatch === "hard",
    orderSwap: an.orderSwap !== null,
  };
}

/** The model input of a pair (not yet standardised). */
export function pairInput(u: Float32Array, v: Float32Array, an: PairAnalysis, cosine: number, adaptedCos: number, out?: Float32Array): Float32Array {
  const d = u.length;
  const x = out ?? new Float32Array(2 * d + SCALAR_NAMES.length);
  for (let i = 0; i < d; i++) {
    x[i] = Math.abs(u[i]! - v[i]!);
    x[d + i] = u[i]! * v[i]!;
  }
  const f = pairFeatures(an, cosine);
  let k = 2 * d;
  for (let i = 0; i < f.length; i++) x[k++] = f[i]!;
  const h = hardSignals(an);
  for (const s of HARD_SIGNALS) x[k++] = h[s] ? 1 : 0;
  x[k++] = adaptedCos;
  return x;
}

/** learned-weights.json as written by the training script. */
export interface LearnedWeightsFile {
  format: 1;
  /** embedder the model was trained on; vectors of another embedder are not comparable */
  embedderId: string;
  dims: number;
  inputs: number;
  hidden: number;
  scalars: string[];
  /** base64 of little-endian float32 arrays */
  mean: string;
  std: string;
  w1: string;
  b1: string;
  w2: string;
  b2: number;
  /** default operating point (probability), chosen on held-out training pairs */
  threshold: number;
  /** hard rules that reject before the model */
  vetoes: HardSignal[];
  /** the learned projection (rank × dims, base64 f32) */
  adapter: { rank: number; p: string };
  /** lowest cosine the model was trained to judge (candidates below it never reach it) */
  minCosine: number;
  /** what it was trained on and how it did on the held-out part (informational) */
  report?: unknown;
}

export interface LearnedResult {
  accept: boolean;
  /** the model's probability of same meaning (1 for surface-identical texts; absent when a veto decided first) */
  learned?: number;
  score: number;
  reason: string;
}

export class LearnedModel {
  readonly embedderId: string;
  readonly dims: number;
  readonly threshold: number;
  readonly minCosine: number;
  readonly vetoes: ReadonlySet<HardSignal>;
  private readonly inputs: number;
  private readonly hidden: number;
  private readonly w1: Float32Array; // hidden × inputs, row-major, with the standardisation folded in
  private readonly b1: Float32Array;
  private readonly w2: Float32Array;
  private readonly b2: number;
  private readonly x: Float32Array;
  readonly adapter: Adapter;

  constructor(w: LearnedWeightsFile) {
    if (w.format !== 1) throw new Error(`learned decision: unknown weights format ${String(w.format)}`);
    if (w.scalars.join(",") !== SCALAR_NAMES.join(",")) throw new Error("learned decision: the weights were trained on other pair features; retrain (scripts/train-cache-decision.ts)");
    this.embedderId = w.embedderId;
    this.dims = w.dims;
    this.inputs = w.inputs;
    this.hidden = w.hidden;
    this.threshold = w.threshold;
    this.minCosine = w.minCosine;
    this.vetoes = new Set(w.vetoes);
    const mean = decodeF32(w.mean);
    const invStd = decodeF32(w.std).map((s) => (s > 0 ? 1 / s : 0));
    this.w1 = decodeF32(w.w1);
    this.b1 = decodeF32(w.b1);
    this.w2 = decodeF32(w.w2);
    this.b2 = w.b2;
    if (this.inputs !== 2 * this.dims + SCALAR_NAMES.length || mean.length !== this.inputs || this.w1.length !== this.inputs * this.hidden || this.b1.length !== this.hidden || this.w2.length !== this.hidden)
      throw new Error("learned decision: weight shapes do not match");
    // fold (x - mean) / std into the first layer once: w' = w / std, b' = b - Σ w · mean / std
    for (let j = 0; j < this.hidden; j++) {
      let shift = 0;
      for (let i = 0; i < this.inputs; i++) {
        const k = j * this.inputs + i;
        this.w1[k] = this.w1[k]! * invStd[i]!;
        shift += this.w1[k]! * mean[i]!;
      }
      this.b1[j] = this.b1[j]! - shift;
    }
    this.x = new Float32Array(this.inputs);
    this.adapter = new Adapter(w.adapter.rank, w.dims, decodeF32(w.adapter.p));
  }

  /** Probability that the pair means the same (vectors of this.dims; an analysis of the two texts). */
  probability(u: Float32Array, v: Float32Array, an: PairAnalysis, cosine: number): number {
    const x = pairInput(u, v, an, cosine, this.adapter.cosine(u, v), this.x);
    const n = this.inputs;
    let z = this.b2;
    for (let j = 0; j < this.hidden; j++) {
      let s = this.b1[j]!;
      const row = j * n;
      for (let i = 0; i < n; i++) s += this.w1[row + i]! * x[i]!;
      if (s > 0) z += s * this.w2[j]!;
    }
    return 1 / (1 + Math.exp(-z));
  }

  /**
   * The learned hit decision for `query` against a cached `candidate`. `threshold` overrides the
   * default operating point (a tenant's setting). `score` is the cosine (comparable across candidates).
   * `cosine` is what the hand rules judge; qv, cv and `modelCosine` are the model's inputs — the cache's
   * adapted cosine and the raw vectors and their cosine when the model was trained on raw vectors.
   */
  decide(query: string, candidate: string, cosine: number, qv: Float32Array, cv: Float32Array, threshold = this.threshold, withRules = false, modelCosine = cosine): LearnedResult {
    if (surfaceForm(query) === surfaceForm(candidate)) return { accept: true, learned: 1, score: 1, reason: "surface-identical" };
    const an = analyzePair(query, candidate, LEARNED_ANALYZE_OPTIONS);
    const h = hardSignals(an);
    for (const s of this.vetoes) if (h[s]) return { accept: false, score: cosine, reason: vetoReason(s, an) };
    if (qv.length !== this.dims || cv.length !== this.dims) return { accept: false, score: cosine, reason: "learned-dims-mismatch" };
    const p = this.probability(qv, cv, an, modelCosine);
    if (p >= threshold) return { accept: true, learned: p, score: cosine, reason: "ok" };
    // withRules: the hand verifier's accept also stands (the model adds hits on top of the rules)
    if (withRules && handDecide(an, cosine, LEARNED_HAND_OPTIONS).accept) return { accept: true, learned: p, score: cosine, reason: "rules" };
    // a rejection names the hard rule the pair breaks, if any: the multi-turn turn check treats a
    // turn rejected by a hard rule as a different turn, one rejected on its score alone as a rewording
    const broken = HARD_SIGNALS.find((s) => h[s]);
    return { accept: false, learned: p, score: cosine, reason: broken ? vetoReason(broken, an) : "low-score" };
  }
}

function vetoReason(s: HardSignal, an: PairAnalysis): string {
  switch (s) {
    case "numberMismatch":
      return `number-mismatch:${an.a.numbers.join(",")}|${an.b.numbers.join(",")}`;
    case "entityMismatch":
      return `entity-mismatch:${an.entityMismatch.map((t) => t.raw).join(",")}`;
    case "negationMismatch":
      return "negation-mismatch";
    case "askHard":
      return `asks-differ:${an.a.asks}|${an.b.asks}`;
    case "orderSwap":
      return `order-swap:${an.orderSwap!.join(",")}`;
  }
}
