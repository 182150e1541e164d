/**
 * The pair model's surface features (src/cache/verify/surface.ts, issue 25): the allocation-free
 * serving versions equal their plain definitions (character n-gram cosine / Jaccard, word edit
 * distance, longest common word subsequence), and word order — which the embedding cannot see — moves them.
 */
import { describe, expect, test } from "bun:test";
import { gram3Cosine, gram4Jaccard, surfaceSide, wordEditNorm, wordLcsRatio } from "../../src/cache/verify/surface";
import { analyzePair } from "../../src/cache/verify/analyze";
import { tokenize } from "../../src/cache/verify/text";

const grams = (s: string, n: number) => {
  const m = new Map<string, number>();
  for (let i = 0; i + n <= s.length; i++) m.set(s.slice(i, i + n), (m.get(s.slice(i, i + n)) ?? 0) + 1);
  return m;
};
const joined = (t: string) => ` ${tokenize(t).map((x) => x.lower).join(" ")} `;
function refCos(a: string, b: string): number {
  const x = grams(joined(a), 3), y = grams(joined(b), 3);
  let dot = 0, nx = 0, ny = 0;
  for (const [k, v] of x) (nx += v * v), (dot += v * (y.get(k) ?? 0));
  for (const v of y.values()) ny += v * v;
  return dot / Math.sqrt(nx * ny);
}
function refJac(a: string, b: string): number {
  const x = new Set(grams(joined(a), 4).keys()), y = new Set(grams(joined(b), 4).keys());
  let i = 0;
  for (const k of x) if (y.has(k)) i++;
  return x.size + y.size - i > 0 ? i / (x.size + y.size - i) : 0;
}
function refEdit(a: string[], b: string[]): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length]![b.length]!;
}
function refLcs(a: string[], b: string[]): number {
  const d = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b.length; j++) d[i]![j] = a[i - 1] === b[j - 1] ? d[i - 1]![j - 1]! + 1 : Math.max(d[i - 1]![j]!, d[i]![j - 1]!);
  return d[a.length]![b.length]!;
}

const PAIRS: Array<[string, string]> = [
  ["How do I learn French fast?", "What is the quickest way to learn French?"],
  ["Is Python faster than Java?", "Is Java faster than Python?"],
  ["How can I send an e-mail from Gmail?", "How do I send emails with gmail"],
  ["What's the best way to lose weight?", "what is the best way to lose weight quickly and safely without dieting or going to the gym every single day of the week"],
  ["a", "b"],
];

describe("pair model surface features", () => {
  test("equal their plain definitions", () => {
    for (const [a, b] of PAIRS) {
      const ta = tokenize(a), tb = tokenize(b);
      const la = ta.map((t) => t.lower), lb = tb.map((t) => t.lower);
      expect(gram3Cosine(surfaceSide(ta), surfaceSide(tb))).toBeCloseTo(refCos(a, b), 9);
      expect(gram4Jaccard(surfaceSide(ta), surfaceSide(tb))).toBeCloseTo(refJac(a, b), 9);
      expect(wordEditNorm(ta, tb)).toBeCloseTo(refEdit(la, lb) / Math.max(la.length, lb.length), 9);
      expect(wordLcsRatio(ta, tb)).toBeCloseTo(refLcs(la, lb) / Math.max(la.length, lb.length), 9);
      // reversed arguments give the same values
      expect(wordEditNorm(tb, ta)).toBeCloseTo(wordEditNorm(ta, tb), 9);
      expect(wordLcsRatio(tb, ta)).toBeCloseTo(wordLcsRatio(ta, tb), 9);
    }
  });

  test("content-word order: a swap lowers the content LCS, a rewording that keeps the order does not", () => {
    const swap = analyzePair("Is Python faster than Java?", "Is Java faster than Python?");
    expect(wordLcsRatio(swap.a.content, swap.b.content, true, true)).toBeLessThan(1);
    const same = analyzePair("Is Python faster than Java?", "Is Python really faster than Java?");
    expect(wordLcsRatio(same.a.content, same.b.content, true, true)).toBe(1);
    expect(gram3Cosine(same.a.surface, same.a.surface)).toBeCloseTo(1, 12);
  });

  test("empty texts are defined", () => {
    const e = surfaceSide([]), t = tokenize("hello world");
    expect(wordEditNorm([], [])).toBe(0);
    expect(wordLcsRatio([], t)).toBe(0);
    expect(Number.isFinite(gram3Cosine(e, surfaceSide(t)))).toBe(true);
    expect(Number.isFinite(gram4Jaccard(e, e))).toBe(true);
  });
});
