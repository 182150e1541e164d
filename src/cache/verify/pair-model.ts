/**
 * The pair model: small gradient-boosted trees over general features of a question pair (the
 * embedding cosine and the verifier's token analysis), retrained per fold by
 * scripts/bench/cache-pair-cv.ts so that it is cross-validated like every other choice of the hit
 * decision (issue 25). The shipped weights (pair-model-weights.json) are the same procedure trained
 * on all of cache-train (scripts/train-cache-pair-model.ts).
 *
 * The same `pairFeatureVector` runs at training and at serving time, so the two cannot drift.
 * Inference writes into a buffer owned by the model: no allocation per candidate.
 */
import { analyzePair, type AnalyzeOptions, type ContentToken, type PairAnalysis } from "./analyze";
import { DEFAULT_VERIFY_OPTIONS, LOW_SCORE, decide as handDecide } from "./index";
import { POLAR } from "./text";
import { surfaceMatchTexts } from "./typo";
import { gram3Cosine, gram4Jaccard, wordEditNorm, wordLcsRatio } from "./surface";
import { ALIGN_FEATURES, alignFeatures } from "./align";

export const PAIR_FEATURES = [
  "cos", // embedding cosine
  "cosOver90", // max(0, cos - 0.90): the cosine's effect is not linear near the top
  "cosOver95", // max(0, cos - 0.95)
  "unmatched", // weight of content words present on one side only (both sides)
  "unmatchedMax", // larger side's unmatched weight
  "unmatchedMin", // smaller side's (both sides add something: a substitution)
  "maxWord", // heaviest unmatched word
  "unmatchedFrac", // unmatched / total content weight
  "matched", // weight of the matched content words (per side)
  "coverage", // matched content words / content words
  "lenRatio", // shorter / longer token count
  "logLen", // log of the longer token count
  "nOnlyMin", // unmatched content words on the side with fewer of them
  "nOnlyMax", // ... with more
  "oneWordEdit", // exactly one content word replaced (1 on each side) or added/removed
  "polarDiff", // a direction word (more/before/above...) is unmatched
  "unmatchedEntity", // weight of unmatched name-like words
  "askSoft", // one side asks for a specific attribute, the other is generic
  "tokenJaccard", // Jaccard of all lower-cased tokens (function words included)
  "bigramJaccard", // Jaccard of adjacent token pairs (word order)
  "cosXunmatched", // cos * unmatched
  "cosXoneEdit", // max(0, cos - 0.9) * oneWordEdit
  "char3Cos", // cosine of character 3-gram counts (surface.ts)
  "char4Jaccard", // Jaccard of distinct character 4-grams
  "wordEdit", // word-level edit distance / longer length (word order)
  "wordLcs", // longest common word subsequence / longer length
  "contentLcs", // longest common subsequence of content-word stems / shorter content length
  ...ALIGN_FEATURES, // word- and piece-level alignment by the static token embeddings (align.ts)
] as const;
export const PAIR_FEATURE_COUNT = PAIR_FEATURES.length;

function sumW(ts: ContentToken[]): number {
  let s = 0;
  for (let i = 0; i < ts.length; i++) s += ts[i]!.weight;
  return s;
}

function maxW(ts: ContentToken[], m: number): number {
  for (let i = 0; i < ts.length; i++) if (ts[i]!.weight > m) m = ts[i]!.weight;
  return m;
}

function polarIn(ts: ContentToken[]): boolean {
  for (let i = 0; i < ts.length; i++) if (POLAR.has(ts[i]!.lower)) return true;
  return false;
}

function entityW(ts: ContentToken[]): number {
  let s = 0;
  for (let i = 0; i < ts.length; i++) if (ts[i]!.entity) s += ts[i]!.weight;
  return s;
}

/** |A ∩ B| / |A ∪ B| of two token lists' lower forms (unigrams, or adjacent pairs with `bigrams`); small lists: quadratic is cheaper than sets. */
function jaccard(a: PairAnalysis["a"]["tokens"], b: PairAnalysis["b"]["tokens"], bigrams: boolean): number {
  const k = bigrams ? 1 : 0;
  const na = Math.max(0, a.length - k);
  const nb = Math.max(0, b.length - k);
  if (na + nb === 0) return 1;
  let inter = 0;
  for (let i = 0; i < na; i++) {
    const x0 = a[i]!.lower;
    const x1 = bigrams ? a[i + 1]!.lower : "";
    let dup = false;
    for (let p = 0; p < i && !dup; p++) dup = a[p]!.lower === x0 && (!bigrams || a[p + 1]!.lower === x1);
    if (dup) continue;
    for (let j = 0; j < nb; j++) {
      if (b[j]!.lower === x0 && (!bigrams || b[j + 1]!.lower === x1)) {
        inter++;
        break;
      }
    }
  }
  const ua = distinct(a, na, bigrams);
  const ub = distinct(b, nb, bigrams);
  return inter / Math.max(1, ua + ub - inter);
}

function distinct(a: PairAnalysis["a"]["tokens"], n: number, bigrams: boolean): number {
  let c = 0;
  for (let i = 0; i < n; i++) {
    let dup = false;
    for (let p = 0; p < i && !dup; p++) dup = a[p]!.lower === a[i]!.lower && (!bigrams || a[p + 1]!.lower === a[i + 1]!.lower);
    if (!dup) c++;
  }
  return c;
}

/** Writes the features of a pair into `out` (length PAIR_FEATURE_COUNT) and returns it. */
export function pairFeatureVector(an: PairAnalysis, cosine: number, out: Float64Array): Float64Array {
  const ua = sumW(an.onlyA);
  const ub = sumW(an.onlyB);
  const nA = an.a.content.length;
  const nB = an.b.content.length;
  const oA = an.onlyA.length;
  const oB = an.onlyB.length;
  const la = an.a.tokens.length;
  const lb = an.b.tokens.length;
  const oneEdit = (oA === 1 && oB === 1) || oA + oB === 1 ? 1 : 0;
  let k = 0;
  out[k++] = cosine;
  out[k++] = Math.max(0, cosine - 0.9);
  out[k++] = Math.max(0, cosine - 0.95);
  out[k++] = an.unmatched;
  out[k++] = Math.max(ua, ub);
  out[k++] = Math.min(ua, ub);
  out[k++] = maxW(an.onlyB, maxW(an.onlyA, 0));
  out[k++] = an.total > 0 ? an.unmatched / an.total : 0;
  out[k++] = (an.total - an.unmatched) / 2;
  out[k++] = nA + nB > 0 ? (nA - oA + nB - oB) / (nA + nB) : 1;
  out[k++] = Math.max(la, lb) > 0 ? Math.min(la, lb) / Math.max(la, lb) : 1;
  out[k++] = Math.log(1 + Math.max(la, lb));
  out[k++] = Math.min(oA, oB);
  out[k++] = Math.max(oA, oB);
  out[k++] = oneEdit;
  out[k++] = polarIn(an.onlyA) || polarIn(an.onlyB) ? 1 : 0;
  out[k++] = entityW(an.onlyA) + entityW(an.onlyB);
  out[k++] = an.askMismatch === "soft" ? 1 : 0;
  out[k++] = jaccard(an.a.tokens, an.b.tokens, false);
  out[k++] = jaccard(an.a.tokens, an.b.tokens, true);
  out[k++] = cosine * an.unmatched;
  out[k++] = Math.max(0, cosine - 0.9) * oneEdit;
  out[k++] = gram3Cosine(an.a.surface, an.b.surface);
  out[k++] = gram4Jaccard(an.a.surface, an.b.surface);
  out[k++] = wordEditNorm(an.a.tokens, an.b.tokens);
  out[k++] = wordLcsRatio(an.a.tokens, an.b.tokens);
  out[k++] = wordLcsRatio(an.a.content, an.b.content, true, true);
  alignFeatures(an.a, an.b, out, k);
  return out;
}

/** pair-model-weights.json as written by scripts/train-cache-pair-model.ts: gradient-boosted trees. */
export interface PairModelFile {
  format: 1;
  /** embedder whose raw cosines the model was trained on */
  embedderId: string;
  dims: number;
  features: string[];
  /** log-odds before the trees */
  base: number;
  /** every tree's nodes, flattened: split feature (-1 = leaf), threshold (go left when x <= t), children, leaf value */
  trees: Array<{ f: number[]; t: number[]; l: number[]; r: number[]; v: number[] }>;
  /** the operating point (probability), chosen on all folds' out-of-fold predictions */
  threshold: number;
  /** the lowest cosine the model judges (chosen with the threshold): the cache's default similarity floor */
  minCosine: number;
  /** the lowest cosine at which a surface match (typo.ts) is judged below the floor (chosen by the same CV); absent: at the floor only */
  surfaceMinCosine?: number;
  /** how it was trained and its cross-validated figures (informational) */
  report?: unknown;
}

/** What the engine needs of a learned hit decision (the pair model, or a test's stand-in). */
export interface DecisionModel {
  readonly embedderId: string;
  readonly dims: number;
  readonly threshold: number;
  readonly minCosine: number;
  decide(query: string, candidate: string, cosine: number, qv: Float32Array, cv: Float32Array, threshold?: number, withRules?: boolean, modelCosine?: number, handMinScore?: number): PairResult;
  /** the same question up to case, punctuation, whitespace and one misspelt word (decide accepts it whatever the cosine) */
  surfaceMatch?(query: string, candidate: string): string | null;
  /** the lowest cosine at which the engine may judge a surface match below its point */
  readonly surfaceMinCosine?: number;
}

export interface PairResult {
  accept: boolean;
  /** the model's probability of same meaning (1 for surface-identical texts; absent when a hard rule decided) */
  learned?: number;
  score: number;
  reason: string;
}

/** The analysis options of the pair model's features (the hand verifier's cross-validated ones). */
export const PAIR_ANALYZE_OPTIONS: AnalyzeOptions = {
  weights: DEFAULT_VERIFY_OPTIONS.weights,
  orderMinWeight: DEFAULT_VERIFY_OPTIONS.orderMinWeight,
  orderMaxUnmatched: DEFAULT_VERIFY_OPTIONS.orderMaxUnmatched,
  synonymMinSimilarity: DEFAULT_VERIFY_OPTIONS.synonymMinSimilarity,
  ignoreRequestVerbs: DEFAULT_VERIFY_OPTIONS.ignoreRequestVerbs,
  acronyms: DEFAULT_VERIFY_OPTIONS.acronyms,
  polarContent: DEFAULT_VERIFY_OPTIONS.polarContent,
};

/** The verifier's hard rule a pair breaks (they veto before the model), or null. */
export function hardRule(an: PairAnalysis): string | null {
  if (an.numberMismatch) return `number-mismatch:${an.a.numbers.join(",")}|${an.b.numbers.join(",")}`;
  if (an.entityMismatch.length > 0) return `entity-mismatch:${an.entityMismatch.map((t) => t.raw).join(",")}`;
  if (an.negationMismatch) return "negation-mismatch";
  if (an.askMismatch === "hard") return `asks-differ:${an.a.asks}|${an.b.asks}`;
  if (an.orderSwap) return `order-swap:${an.orderSwap.join(",")}`;
  return null;
}

/**
 * The pair model: the verifier's hard rules veto, then gradient-boosted trees over the pair features
 * give the probability of same meaning; a hit when it reaches the threshold and the cosine reaches the
 * lookup's floor (the tenant's point, at least the model's minCosine).
 */
export class PairModel {
  readonly embedderId: string;
  readonly dims: number;
  readonly threshold: number;
  readonly minCosine: number;
  readonly surfaceMinCosine?: number;
  private readonly base: number;
  private readonly f: Int32Array;
  private readonly t: Float64Array;
  private readonly l: Int32Array;
  private readonly r: Int32Array;
  private readonly v: Float64Array;
  private readonly roots: Int32Array;
  private readonly x = new Float64Array(PAIR_FEATURE_COUNT);

  constructor(w: PairModelFile) {
    if (w.format !== 1) throw new Error(`pair model: unknown weights format ${String(w.format)}`);
    if (w.features.join(",") !== PAIR_FEATURES.join(",")) throw new Error("pair model: the weights were trained on other pair features; retrain (scripts/train-cache-pair-model.ts)");
    this.embedderId = w.embedderId;
    this.dims = w.dims;
    this.threshold = w.threshold;
    this.minCosine = w.minCosine;
    if (w.surfaceMinCosine !== undefined) this.surfaceMinCosine = w.surfaceMinCosine;
    this.base = w.base;
    const total = w.trees.reduce((s, tr) => s + tr.f.length, 0);
    this.f = new Int32Array(total);
    this.t = new Float64Array(total);
    this.l = new Int32Array(total);
    this.r = new Int32Array(total);
    this.v = new Float64Array(total);
    this.roots = new Int32Array(w.trees.length);
    let o = 0;
    w.trees.forEach((tr, k) => {
      const n = tr.f.length;
      if (tr.t.length !== n || tr.l.length !== n || tr.r.length !== n || tr.v.length !== n) throw new Error("pair model: tree shapes do not match");
      this.roots[k] = o;
      for (let i = 0; i < n; i++) {
        const feat = tr.f[i]!;
        if (feat >= PAIR_FEATURE_COUNT || (feat >= 0 && (tr.l[i]! <= i || tr.r[i]! <= i || tr.l[i]! >= n || tr.r[i]! >= n))) throw new Error("pair model: malformed tree");
        this.f[o + i] = feat;
        this.t[o + i] = tr.t[i]!;
        this.l[o + i] = o + tr.l[i]!;
        this.r[o + i] = o + tr.r[i]!;
        this.v[o + i] = tr.v[i]!;
      }
      o += n;
    });
  }

  /**
   * The surface match of two texts (typo.ts: the same words up to case, punctuation, whitespace and one
   * misspelt word), from their memoised surface forms (no token analysis): accepted by `decide` whatever the cosine.
   */
  surfaceMatch(query: string, candidate: string): "surface-identical" | "surface-typo" | null {
    return surfaceMatchTexts(query, candidate);
  }

  /** Log-odds that the pair means the same (no allocation: the features go into the model's buffer). */
  logit(an: PairAnalysis, cosine: number): number {
    const x = pairFeatureVector(an, cosine, this.x);
    let z = this.base;
    const { f, t, l, r, v, roots } = this;
    for (let k = 0; k < roots.length; k++) {
      let i = roots[k]!;
      while (f[i]! >= 0) i = x[f[i]!]! <= t[i]! ? l[i]! : r[i]!;
      z += v[i]!;
    }
    return z;
  }

  probability(an: PairAnalysis, cosine: number): number {
    return 1 / (1 + Math.exp(-this.logit(an, cosine)));
  }

  /**
   * The hit decision for `query` against a cached `candidate` at embedding cosine `cosine` (the model
   * judges `modelCosine`: the raw cosine when the cache compares adapted vectors; the vectors themselves
   * are not inputs, the parameters keep the engine's call shape). `threshold` overrides the model's
   * probability threshold (a tenant's setting; higher = stricter).
   * A rejection names the hard rule the pair breaks, if any (the multi-turn turn check reads it).
   */
  decide(query: string, candidate: string, cosine: number, _qv?: Float32Array, _cv?: Float32Array, threshold = this.threshold, withRules = false, modelCosine = cosine, handMinScore = DEFAULT_VERIFY_OPTIONS.minScore): PairResult {
    // the same words up to case, punctuation, whitespace and one misspelt word (typo.ts): no rule or model can object
    const surface = surfaceMatchTexts(query, candidate);
    if (surface) return { accept: true, learned: 1, score: 1, reason: surface };
    const an = analyzePair(query, candidate, PAIR_ANALYZE_OPTIONS);
    const broken = hardRule(an);
    if (broken) return { accept: false, score: cosine, reason: broken };
    // the probability is reported below the floor too (the engine rarely asks: it skips candidates below the point)
    const p = this.probability(an, modelCosine);
    if (p >= threshold && modelCosine >= this.minCosine) return { accept: true, learned: p, score: cosine, reason: "ok" };
    // withRules (not the default, and not cross-validated): the hand verifier's accept (at the lookup's point) also stands
    if (withRules && handDecide(an, cosine, handMinScore === DEFAULT_VERIFY_OPTIONS.minScore ? DEFAULT_VERIFY_OPTIONS : { ...DEFAULT_VERIFY_OPTIONS, minScore: handMinScore }).accept) return { accept: true, learned: p, score: cosine, reason: "rules" };
    return { accept: false, learned: p, score: cosine, reason: LOW_SCORE };
  }
}
