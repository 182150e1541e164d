/**
 * Pairwise analysis of two questions: which content words line up, which do
 * not, and the meaning-changing differences (numbers, named entities,
 * negation, the asked-for attribute, swapped argument order).
 */
import { NEGATIONS, POLAR, REQUEST_VERBS, STOPWORDS, WEAK_ONE, WH_CLASS, editDistance, numberValue, tokenize, type Token } from "./text";
import { DEFAULT_WEIGHT_PARAMS, isProperNoun, wordLogProb, wordWeight, type WeightParams } from "./weights";
import { surfaceSide, type SurfaceSide } from "./surface";

export interface ContentToken extends Token {
  weight: number;
  /** Named-entity-like: capitalised inside a sentence, all caps, or a word that English writes capitalised. */
  entity: boolean;
}

export interface Side {
  tokens: Token[];
  content: ContentToken[];
  numbers: string[];
  /** the number tokens (values as in `numbers`, same order) with their positions, for the order check */
  numberTokens: Array<{ value: string; pos: number }>;
  /** The text contains "one" (a number only if the other side has 1). */
  hasOne: boolean;
  negations: number;
  /** Asked-for attribute: person/time/place/reason/quantity/duration, or "" when generic (what/which/how/none). */
  asks: string;
  /** character n-grams for the pair model's surface features (computed once per text: sides are memoised) */
  surface: SurfaceSide;
}

export interface PairAnalysis {
  a: Side;
  b: Side;
  /** Unmatched content tokens of each side. */
  onlyA: ContentToken[];
  onlyB: ContentToken[];
  /** Number of word pairs aligned as synonyms (by wordSimilarity). */
  synonyms: number;
  /** Sum of the weights of unmatched content tokens (both sides). */
  unmatched: number;
  /** Total content weight (both sides). */
  total: number;
  numberMismatch: boolean;
  entityMismatch: ContentToken[];
  negationMismatch: boolean;
  /** Asked-for attributes differ: "hard" (both specific), "soft" (one generic), "" (same). */
  askMismatch: "" | "soft" | "hard";
  /** A pair of matched weighty tokens whose order is reversed (not across and/or/vs). */
  orderSwap: [string, string] | null;
}

/** -log p below which a lower-case word is "common" (capitalising it does not make it a name). */
const COMMON_LOGP = 9.5;

/**
 * Words that join two terms symmetrically: a pair of terms with one of these between them is not
 * an order swap ("A and B" = "B and A"). "with" is not one ("replace butter with oil").
 */
const SYMMETRIC = new Set(["and", "or", "vs", "versus", "&", "/", "nor", "between", "compared", "comparison", "difference", "differences", "similarities", "similarity", "same"]);
/**
 * Words that, just before the first term, make the pair symmetric ("between A and B", "compare A to B",
 * "difference of A and B"). A plain "and"/"or" before the first term does not ("media from Android to
 * iPhone" after "messages and").
 */
const SYMMETRIC_INTRO = new Set(["between", "compare", "compared", "comparing", "comparison", "difference", "differences", "similarities", "similarity", "vs", "versus"]);

export function analyzeSide(text: string, wp: WeightParams = DEFAULT_WEIGHT_PARAMS, ignoreRequestVerbs = false, polarContent = false): Side {
  const tokens = tokenize(text);
  const content: ContentToken[] = [];
  const numbers: string[] = [];
  const numberTokens: Array<{ value: string; pos: number }> = [];
  let negations = 0;
  let hasOne = false;
  let asks: string | null = null;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const l = t.lower;
    if (NEGATIONS.has(l) || l.endsWith("n't")) {
      negations++;
      continue;
    }
    const wh = WH_CLASS[l];
    if (wh !== undefined) {
      if (asks === null) {
        const next = tokens[i + 1]?.lower;
        if (l === "how" && (next === "many" || next === "much")) asks = "quantity";
        else if (l === "how" && (next === "long" || next === "often" || next === "soon")) asks = "duration";
        else if (l === "how" && (next === "old")) asks = "age";
        else if ((l === "what" || l === "which") && (next === "year" || next === "time" || next === "date" || next === "day")) asks = "time";
        else if ((l === "what" || l === "which") && (next === "country" || next === "city" || next === "place")) asks = "place";
        else asks = wh === "thing" || wh === "manner" ? "" : wh;
      }
      continue;
    }
    if (l === WEAK_ONE) {
      hasOne = true;
      continue;
    }
    const num = numberValue(l);
    if (num !== null) {
      numbers.push(num);
      numberTokens.push({ value: num, pos: t.pos });
      continue;
    }
    if (STOPWORDS.has(l) && !(polarContent && POLAR.has(l))) continue;
    if (ignoreRequestVerbs && REQUEST_VERBS.has(l) && !t.quoted) continue;
    const raw = t.raw;
    const hasUpperInside = /\p{Lu}/u.test(raw.slice(1));
    const caps = /^\p{Lu}/u.test(raw);
    // A capital letter mid-sentence marks a name unless the word is a common
    // lower-case English word (Title Case writing: "the Best laptop").
    const lp = wordLogProb(l, t.stem);
    const commonLower = lp !== undefined && lp > -COMMON_LOGP && !isProperNoun(l);
    // Literals: words in another script (the model cannot tell them apart) and quoted terms.
    const literal = /[^\p{Script=Latin}\p{N}'’.\-&+#]/u.test(raw) || t.quoted;
    const entity =
      literal ||
      (caps && !t.sentenceStart && l !== "i" && !commonLower) ||
      (hasUpperInside && raw.length >= 2) ||
      isProperNoun(l) ||
      (lp === undefined && caps && !t.sentenceStart);
    content.push({ ...t, weight: wordWeight(l, t.stem, wp), entity });
  }
  return { tokens, content, numbers, numberTokens, hasOne, negations, asks: asks ?? "", surface: surfaceSide(tokens) };
}

function fuzzyMatch(x: ContentToken, y: ContentToken): boolean {
  const a = x.lower.replace(/[-.'’]/g, "");
  const b = y.lower.replace(/[-.'’]/g, "");
  if (a === b) return true;
  const sa = x.stem.replace(/[-.'’]/g, "");
  const sb = y.stem.replace(/[-.'’]/g, "");
  if (sa === sb) return true;
  const minLen = Math.min(sa.length, sb.length);
  // Typos: one edit in words of 5+ letters, two in words of 9+ (never for names: "Tree.com"/"Free.com").
  if (minLen >= 5 && !(x.entity && y.entity && x.raw[0] !== y.raw[0])) {
    const d = editDistance(sa, sb, 2);
    if (d <= 1 || (d <= 2 && minLen >= 9)) return true;
  }
  return false;
}

function sameMultiset(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  const x = [...a].sort();
  const y = [...b].sort();
  return x.every((v, i) => v === y[i]);
}

/**
 * An unmatched all-caps token of 2-5 letters on one side ("HK", "RAM") matches the run of
 * consecutive unmatched words on the other side whose initials spell it ("Hong Kong",
 * "Random Access Memory"); stopwords inside the run are allowed ("Bank of America" / "BOA" no:
 * only the content words' initials count, so "BoA" needs "Bank America").
 */
function acronymMatch(side: Side, match: number[], other: Side, otherMatch: number[]) {
  for (let i = 0; i < side.content.length; i++) {
    const t = side.content[i]!;
    if (match[i] !== -1 || !/^\p{Lu}{2,5}$/u.test(t.raw)) continue;
    const letters = t.lower;
    for (let j = 0; j + letters.length <= other.content.length; j++) {
      let ok = true;
      for (let k = 0; k < letters.length && ok; k++) {
        const o = other.content[j + k]!;
        ok = otherMatch[j + k] === -1 && o.lower[0] === letters[k] && (k === 0 || o.pos === other.content[j + k - 1]!.pos + 1);
      }
      if (!ok) continue;
      match[i] = j;
      for (let k = 0; k < letters.length; k++) otherMatch[j + k] = i;
      break;
    }
  }
}

export interface AnalyzeOptions {
  weights?: WeightParams;
  /** Minimum weight of both tokens for a reversed pair to count as an order swap. */
  orderMinWeight?: number;
  /**
   * Similarity of two lower-case words in [-1, 1] (e.g. cosine of their
   * embeddings), or undefined when unknown. Used to align synonyms
   * ("quickest" / "fastest"); names and numbers are never aligned this way.
   */
  wordSimilarity?: (a: string, b: string) => number | undefined;
  /** Minimum wordSimilarity for two unmatched words to count as synonyms (default 0.6). */
  synonymMinSimilarity?: number;
  /** Order swaps count only when the unmatched weight is at most this (the texts are near-anagrams; default 1). */
  orderMaxUnmatched?: number;
  /** Request verbs ("explain", "describe"...) are function words (default false). */
  ignoreRequestVerbs?: boolean;
  /** Align an all-caps acronym with the run of words it abbreviates ("HK" / "Hong Kong"; default false). */
  acronyms?: boolean;
  /** Direction words (text.ts POLAR: more, before, above...) are content words (default false). */
  polarContent?: boolean;
}

/**
 * Side analyses by text (default word weights only), bounded: a cached question is compared with every
 * new question near it, and a query with every candidate of its lookup, so each text is tokenised and
 * weighed once rather than once per pair (issue 27). A Side is a pure function of its text and options
 * and is never mutated after analyzeSide returns.
 */
const SIDES = new Map<string, Side>();
const SIDES_MAX = 4096;

function sideOf(text: string, wp: WeightParams, ignoreRequestVerbs = false, polarContent = false): Side {
  if (wp !== DEFAULT_WEIGHT_PARAMS) return analyzeSide(text, wp, ignoreRequestVerbs, polarContent);
  const key = `${ignoreRequestVerbs ? 1 : 0}${polarContent ? 1 : 0}${text}`;
  const hit = SIDES.get(key);
  if (hit) return hit;
  const side = analyzeSide(text, wp, ignoreRequestVerbs, polarContent);
  if (SIDES.size >= SIDES_MAX) SIDES.delete(SIDES.keys().next().value!);
  SIDES.set(key, side);
  return side;
}

export function analyzePair(textA: string, textB: string, opts: AnalyzeOptions = {}): PairAnalysis {
  const wp = opts.weights ?? DEFAULT_WEIGHT_PARAMS;
  const a = sideOf(textA, wp, opts.ignoreRequestVerbs, opts.polarContent);
  const b = sideOf(textB, wp, opts.ignoreRequestVerbs, opts.polarContent);
  const matchA = new Array<number>(a.content.length).fill(-1);
  const matchB = new Array<number>(b.content.length).fill(-1);
  // Pass 0: identical words (case-insensitive); pass 1: same stem; nearest position first.
  for (const key of ["lower", "stem"] as const) {
    for (let i = 0; i < a.content.length; i++) {
      if (matchA[i] !== -1) continue;
      let best = -1;
      for (let j = 0; j < b.content.length; j++) {
        if (matchB[j] !== -1 || a.content[i]![key] !== b.content[j]![key]) continue;
        if (best === -1 || Math.abs(j - i) < Math.abs(best - i)) best = j;
      }
      if (best !== -1) {
        matchA[i] = best;
        matchB[best] = i;
      }
    }
  }
  // Pass 2: spelling variants and typos.
  for (let i = 0; i < a.content.length; i++) {
    if (matchA[i] !== -1) continue;
    for (let j = 0; j < b.content.length; j++) {
      if (matchB[j] !== -1) continue;
      if (fuzzyMatch(a.content[i]!, b.content[j]!)) {
        matchA[i] = j;
        matchB[j] = i;
        break;
      }
    }
  }
  // Pass 3: compounds written apart ("on line" / "online", "data base" / "database").
  const joinMatch = (side: ContentToken[], match: number[], other: ContentToken[], otherMatch: number[]) => {
    for (let j = 0; j < other.length; j++) {
      if (otherMatch[j] !== -1) continue;
      for (let i = 0; i + 1 < side.length; i++) {
        if (side[i + 1]!.pos !== side[i]!.pos + 1) continue;
        const joined = side[i]!.lower + side[i + 1]!.lower;
        if (joined === other[j]!.lower || joined === other[j]!.stem) {
          if (match[i] === -1 && match[i + 1] === -1) {
            match[i] = j;
            match[i + 1] = j;
            otherMatch[j] = i;
          }
        }
      }
    }
  };
  joinMatch(a.content, matchA, b.content, matchB);
  joinMatch(b.content, matchB, a.content, matchA);
  if (opts.acronyms) {
    acronymMatch(a, matchA, b, matchB);
    acronymMatch(b, matchB, a, matchA);
  }

  // Pass 4: synonyms by word similarity, best pairs first.
  const sim = opts.wordSimilarity;
  let synonyms = 0;
  if (sim) {
    const minSim = opts.synonymMinSimilarity ?? 0.6;
    const cands: [number, number, number][] = [];
    for (let i = 0; i < a.content.length; i++) {
      if (matchA[i] !== -1 || a.content[i]!.entity) continue;
      for (let j = 0; j < b.content.length; j++) {
        if (matchB[j] !== -1 || b.content[j]!.entity) continue;
        const v = sim(a.content[i]!.lower, b.content[j]!.lower);
        if (v !== undefined && v >= minSim) cands.push([v, i, j]);
      }
    }
    cands.sort((x, y) => y[0] - x[0]);
    for (const [, i, j] of cands) {
      if (matchA[i] !== -1 || matchB[j] !== -1) continue;
      matchA[i] = j;
      matchB[j] = i;
      synonyms++;
    }
  }

  const onlyA = a.content.filter((_, i) => matchA[i] === -1);
  const onlyB = b.content.filter((_, j) => matchB[j] === -1);
  let unmatched = 0;
  for (const t of onlyA) unmatched += t.weight;
  for (const t of onlyB) unmatched += t.weight;
  let total = 0;
  for (const t of a.content) total += t.weight;
  for (const t of b.content) total += t.weight;

  const na = new Set(a.numbers);
  const nb = new Set(b.numbers);
  if (a.hasOne && nb.has("1") && !na.has("1")) na.add("1");
  if (b.hasOne && na.has("1") && !nb.has("1")) nb.add("1");
  const numberMismatch = !sameMultiset([...na], [...nb]);
  const entityMismatch = [...onlyA, ...onlyB].filter((t) => t.entity);
  const negationMismatch = a.negations > 0 !== b.negations > 0;
  let askMismatch: PairAnalysis["askMismatch"] = "";
  if (a.asks !== b.asks) askMismatch = a.asks && b.asks ? "hard" : "soft";

  // Order: among matched weighty tokens, a pair in reversed order that is not
  // joined by a symmetric connector (and/or/vs/between...) in either text.
  const minW = opts.orderMinWeight ?? 0.3;
  let orderSwap: [string, string] | null = null;
  const pairs: [ContentToken, ContentToken][] = [];
  for (let i = 0; i < a.content.length; i++) {
    const j = matchA[i]!;
    if (j !== -1 && matchB[j] === i) pairs.push([a.content[i]!, b.content[j]!]);
  }
  // Numbers and model numbers take part too ("from h1 to h6", "copy files from a USB to the PS4"): the
  // k-th occurrence of a value on one side pairs with its k-th occurrence on the other.
  const numTok = (side: Side, pos: number, value: string): ContentToken => ({ ...side.tokens[pos]!, weight: 1, entity: false, stem: `#${value}` });
  const seenB = new Map<string, number>();
  const usedB = new Set<number>();
  for (const na of a.numberTokens) {
    const k = seenB.get(na.value) ?? 0;
    seenB.set(na.value, k + 1);
    const nb = b.numberTokens.filter((x) => x.value === na.value)[k];
    if (!nb || usedB.has(nb.pos)) continue;
    usedB.add(nb.pos);
    pairs.push([numTok(a, na.pos, na.value), numTok(b, nb.pos, nb.value)]);
  }
  // A swap needs a shared pivot: some word that lies between the two terms in
  // both texts ("convert A to B" / "convert B to A", "A better than B" /
  // "B better than A"). Reordered noun compounds ("Gmail account password" /
  // "password for my Gmail account") have no shared pivot and are not swaps.
  const between = (toks: Token[], p: number, q: number): Set<string> | null => {
    const lo = Math.min(p, q);
    const hi = Math.max(p, q);
    const out = new Set<string>();
    for (let k = lo + 1; k < hi; k++) {
      if (toks[k]!.sentenceStart) return null; // the terms are in different sentences
      out.add(toks[k]!.stem);
    }
    for (let k = Math.max(0, lo - 3); k < lo; k++) if (SYMMETRIC_INTRO.has(toks[k]!.lower)) return null; // "between A and B"
    for (const w of out) if (SYMMETRIC.has(w)) return null;
    return out;
  };
  const nearAnagram = unmatched <= (opts.orderMaxUnmatched ?? 1.5);
  outer: for (let x = 0; nearAnagram && x < pairs.length; x++) {
    for (let y = x + 1; y < pairs.length; y++) {
      const [ax, bx] = pairs[x]!;
      const [ay, by] = pairs[y]!;
      if (ax.weight < minW || ay.weight < minW) continue;
      if ((ax.pos < ay.pos) === (bx.pos < by.pos)) continue;
      if (ax.stem === ay.stem) continue;
      const inA = between(a.tokens, ax.pos, ay.pos);
      const inB = between(b.tokens, bx.pos, by.pos);
      if (!inA || !inB) continue;
      let pivot = false;
      for (const w of inA) if (inB.has(w)) pivot = true;
      if (!pivot) continue;
      orderSwap = [ax.lower, ay.lower];
      break outer;
    }
  }

  return { a, b, onlyA, onlyB, synonyms, unmatched, total, numberMismatch, entityMismatch, negationMismatch, askMismatch, orderSwap };
}
