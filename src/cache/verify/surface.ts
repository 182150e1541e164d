/**
 * Surface features of a question for the pair model (issue 25): character n-grams (spelling-level
 * overlap the word analysis misses: "e-mail"/"email", "Bitcoins"/"bitcoin") and word order, which the
 * embedding cannot see. Per text, computed once with the side analysis (memoised by text, so a cached
 * question's are computed when it is first compared); per pair, the comparisons below allocate nothing.
 */
import type { Token } from "./text";

export interface SurfaceSide {
  /** hashes of the character 3-grams of " w1 w2 ... " (lower-cased tokens), sorted, repeats kept (counts) */
  grams3: Uint32Array;
  /** sum of squared 3-gram counts */
  norm3: number;
  /** hashes of the distinct character 4-grams, sorted */
  grams4: Uint32Array;
}

function gramHashes(s: string, n: number): Uint32Array {
  const out = new Uint32Array(Math.max(0, s.length - n + 1));
  for (let i = 0; i + n <= s.length; i++) {
    let h = 0x811c9dc5;
    for (let k = 0; k < n; k++) h = Math.imul(h ^ s.charCodeAt(i + k), 0x01000193);
    out[i] = h >>> 0;
  }
  return out.sort();
}

export function surfaceSide(tokens: Token[]): SurfaceSide {
  let s = " ";
  for (const t of tokens) s += `${t.lower} `;
  const grams3 = gramHashes(s, 3);
  let norm3 = 0;
  for (let i = 0; i < grams3.length; ) {
    let j = i;
    while (j < grams3.length && grams3[j] === grams3[i]) j++;
    norm3 += (j - i) * (j - i);
    i = j;
  }
  const all4 = gramHashes(s, 4);
  let u = 0;
  for (let i = 0; i < all4.length; i++) if (i === 0 || all4[i] !== all4[i - 1]) all4[u++] = all4[i]!;
  return { grams3, norm3, grams4: all4.slice(0, u) };
}

/** Cosine of the two texts' character 3-gram count vectors. */
export function gram3Cosine(a: SurfaceSide, b: SurfaceSide): number {
  const x = a.grams3, y = b.grams3;
  let i = 0, j = 0, dot = 0;
  while (i < x.length && j < y.length) {
    if (x[i]! < y[j]!) i++;
    else if (x[i]! > y[j]!) j++;
    else {
      const v = x[i]!;
      let ci = 0, cj = 0;
      while (i < x.length && x[i] === v) (i++, ci++);
      while (j < y.length && y[j] === v) (j++, cj++);
      dot += ci * cj;
    }
  }
  return a.norm3 > 0 && b.norm3 > 0 ? dot / Math.sqrt(a.norm3 * b.norm3) : 0;
}

/** Jaccard of the two texts' distinct character 4-grams. */
export function gram4Jaccard(a: SurfaceSide, b: SurfaceSide): number {
  const x = a.grams4, y = b.grams4;
  let i = 0, j = 0, inter = 0;
  while (i < x.length && j < y.length) {
    if (x[i]! < y[j]!) i++;
    else if (x[i]! > y[j]!) j++;
    else (inter++, i++, j++);
  }
  const union = x.length + y.length - inter;
  return union > 0 ? inter / union : 0;
}

let rowA = new Int32Array(64);
let rowB = new Int32Array(64);
function rows(n: number): void {
  if (rowA.length > n) return;
  rowA = new Int32Array(2 * n + 2);
  rowB = new Int32Array(2 * n + 2);
}

/** Word-level edit distance of the lower-cased tokens over the longer length (0 = same words in the same order). */
export function wordEditNorm(a: Token[], b: Token[]): number {
  const m = a.length, n = b.length;
  if (Math.max(m, n) === 0) return 0;
  rows(n);
  let prev = rowA, cur = rowB;
  for (let j = 0; j <= n; j++) prev[j] = j;
  for (let i = 1; i <= m; i++) {
    cur[0] = i;
    const ai = a[i - 1]!.lower;
    for (let j = 1; j <= n; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ai === b[j - 1]!.lower ? 0 : 1));
    const t = prev;
    prev = cur;
    cur = t;
  }
  return prev[n]! / Math.max(m, n);
}

/**
 * Longest common subsequence of the tokens (lower-cased; `stems`: their stems) over the longer length
 * (`overShorter`: the shorter one) — word order kept.
 */
export function wordLcsRatio(a: Token[], b: Token[], stems = false, overShorter = false): number {
  const m = a.length, n = b.length;
  if (Math.max(m, n) === 0) return 1;
  if (Math.min(m, n) === 0) return 0;
  rows(n);
  let prev = rowA, cur = rowB;
  prev.fill(0, 0, n + 1);
  for (let i = 1; i <= m; i++) {
    cur[0] = 0;
    const ai = stems ? a[i - 1]!.stem : a[i - 1]!.lower;
    for (let j = 1; j <= n; j++) cur[j] = ai === (stems ? b[j - 1]!.stem : b[j - 1]!.lower) ? prev[j - 1]! + 1 : Math.max(prev[j]!, cur[j - 1]!);
    const t = prev;
    prev = cur;
    cur = t;
  }
  return prev[n]! / (overShorter ? Math.min(m, n) : Math.max(m, n));
}
