/**
 * Surface matches of two questions (issue 25): the same words up to case, punctuation and whitespace
 * (`surfaceForm`), or that plus ONE word misspelt — one letter substituted, dropped or added, or two
 * adjacent letters exchanged — in a word of at least 4 letters, where at least one of the two spellings
 * is not a known word. A real word replaced by another real word ("card"/"cart", "beer"/"bear",
 * "Iran"/"Iraq") is a different question, never a typo; digits never differ in a typo.
 *
 * Known words: an English word list (an-array-of-english-words, 275k lower-case words with their
 * inflections; read once, on the first word that needs it; binary search, no per-word allocation) and the
 * words of USE-lite's own vocabulary
 * (which holds common names: "iran", "thomas").
 */
import { numberValue, surfaceForm } from "./text";
import { wordLogProb } from "./weights";

let words: string[] | null = null;

/**
 * The English word list (sorted; a static require, so bundled into the compiled binary): ~60 ms and ~10 MB
 * on first use — the first misspelt word a decision meets, or the cache's warm-up if it calls this.
 */
export function loadWordList(): string[] {
  words ??= require("an-array-of-english-words") as string[];
  return words;
}

function listed(lower: string): boolean {
  const w = loadWordList();
  let lo = 0, hi = w.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const x = w[mid]!;
    if (x === lower) return true;
    if (x < lower) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** A word of the English word list or of the embedder's vocabulary (lower case). */
export function knownWord(lower: string): boolean {
  return wordLogProb(lower) !== undefined || listed(lower);
}

/** `a` and `b` differ by exactly one substitution, insertion/deletion or adjacent transposition (no allocation). */
export function oneEditApart(a: string, b: string): boolean {
  const la = a.length, lb = b.length;
  if (a === b || Math.abs(la - lb) > 1) return false;
  let i = 0;
  while (i < la && i < lb && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  const restEq = (x: string, xi: number, y: string, yi: number) => {
    if (x.length - xi !== y.length - yi) return false;
    for (; xi < x.length; xi++, yi++) if (x.charCodeAt(xi) !== y.charCodeAt(yi)) return false;
    return true;
  };
  if (la === lb) {
    if (restEq(a, i + 1, b, i + 1)) return true; // substitution
    return i + 1 < la && a.charCodeAt(i) === b.charCodeAt(i + 1) && a.charCodeAt(i + 1) === b.charCodeAt(i) && restEq(a, i + 2, b, i + 2); // transposition
  }
  return la > lb ? restEq(a, i + 1, b, i) : restEq(a, i, b, i + 1); // one letter dropped / added
}

/** Is `b` a misspelling of `a` (or the reverse)? Two letter-only words, lower case, already different. */
export function isTypo(a: string, b: string): boolean {
  if (Math.max(a.length, b.length) < 4 || !oneEditApart(a, b)) return false;
  if (numberValue(a) !== null && numberValue(b) !== null) return false; // "sixth"/"sixty"
  return !(knownWord(a) && knownWord(b));
}

const LETTERS = /^\p{L}+$/u;
const PARTS = /(\p{L}+)/u;

/**
 * Is the token `b` the token `a` with one misspelt word? Letter-only tokens directly; tokens with
 * hyphens or digits ("subject-wise", "phase-1") when everything but one run of letters is identical and
 * that run is misspelt ("subjcet-wise"); digits never differ ("ps4"/"ps5" is no typo).
 */
export function isTypoToken(a: string, b: string): boolean {
  if (LETTERS.test(a) && LETTERS.test(b)) return isTypo(a, b);
  // rare (a differing token with hyphens or digits): splitting allocates only here
  const pa = a.split(PARTS), pb = b.split(PARTS);
  if (pa.length !== pb.length) return false;
  let diff = -1;
  for (let i = 0; i < pa.length; i++) {
    if (pa[i] === pb[i]) continue;
    if (diff !== -1 || i % 2 === 0) return false; // odd indexes are the letter runs
    diff = i;
  }
  return diff !== -1 && isTypo(pa[diff]!, pb[diff]!);
}

/**
 * The surface match of two texts given their surface forms split into words (surfaceWordsOf, memoised per
 * text): "surface-identical", "surface-typo" (one misspelt word), or null.
 */
export function surfaceMatch(a: readonly string[], b: readonly string[]): "surface-identical" | "surface-typo" | null {
  if (a.length !== b.length) return null;
  let diff = -1;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    if (diff !== -1) return null;
    diff = i;
  }
  if (diff === -1) return "surface-identical";
  return isTypoToken(a[diff]!, b[diff]!) ? "surface-typo" : null;
}

/** surface forms' words by text, bounded like analyze.ts's side memo (a cached question's are computed once) */
const WORDS = new Map<string, string[]>();
const WORDS_MAX = 4096;

/** The words of a text's surface form (text.ts surfaceForm), memoised by text. */
export function surfaceWordsOf(text: string): string[] {
  const hit = WORDS.get(text);
  if (hit) return hit;
  const sf = surfaceForm(text);
  const words = sf ? sf.split(" ") : [];
  if (WORDS.size >= WORDS_MAX) WORDS.delete(WORDS.keys().next().value!);
  WORDS.set(text, words);
  return words;
}

/** The surface match of two texts (no token analysis: what the decision checks first, and what the engine can afford for a candidate below its point). */
export function surfaceMatchTexts(a: string, b: string): "surface-identical" | "surface-typo" | null {
  return surfaceMatch(surfaceWordsOf(a), surfaceWordsOf(b));
}
