/**
 * General features of a question pair for the learned accept decision
 * (model.ts). Every feature is computed from the embedding cosine and the
 * token analysis (analyze.ts) only — no data-set specific lists.
 */
import type { ContentToken, PairAnalysis } from "./analyze";

export const FEATURE_NAMES = [
  "cos", // embedding cosine of the two questions
  "unmatched", // weight of the content words present on one side only (both sides)
  "unmatchedMax", // the larger of the two sides' unmatched weights
  "unmatchedMin", // the smaller one (both sides add something different: a substitution)
  "maxWord", // weight of the heaviest unmatched word
  "unmatchedFrac", // unmatched weight / total content weight
  "matched", // weight of the matched content words (one side)
  "coverage", // matched content words / content words (Dice over content tokens)
  "lenRatio", // shorter / longer token count
  "askSoft", // one side asks for a specific attribute, the other is generic
  "nOnlyMin", // unmatched content words on the side with fewer of them
  "nOnlyMax", // unmatched content words on the side with more of them
] as const;

export type FeatureVector = Float64Array;

function sum(ts: ContentToken[]): number {
  let s = 0;
  for (const t of ts) s += t.weight;
  return s;
}

export function pairFeatures(an: PairAnalysis, cosine: number): FeatureVector {
  const ua = sum(an.onlyA);
  const ub = sum(an.onlyB);
  let maxWord = 0;
  for (const t of an.onlyA) maxWord = Math.max(maxWord, t.weight);
  for (const t of an.onlyB) maxWord = Math.max(maxWord, t.weight);
  const nA = an.a.content.length;
  const nB = an.b.content.length;
  const matchedN = nA - an.onlyA.length + (nB - an.onlyB.length);
  const matched = (an.total - an.unmatched) / 2;
  const la = an.a.tokens.length;
  const lb = an.b.tokens.length;
  return Float64Array.of(
    cosine,
    an.unmatched,
    Math.max(ua, ub),
    Math.min(ua, ub),
    maxWord,
    an.total > 0 ? an.unmatched / an.total : 0,
    matched,
    nA + nB > 0 ? matchedN / (nA + nB) : 1,
    Math.max(la, lb) > 0 ? Math.min(la, lb) / Math.max(la, lb) : 1,
    an.askMismatch === "soft" ? 1 : 0,
    Math.min(an.onlyA.length, an.onlyB.length),
    Math.max(an.onlyA.length, an.onlyB.length),
  );
}
