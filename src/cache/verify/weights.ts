/**
 * How much a word tells about what is asked, from general English word
 * frequencies: the unigram log-probabilities of the SentencePiece vocabulary
 * shipped with the USE-lite model (8k pieces learnt on a large general
 * corpus). Frequent words ("people", "best", "way") weigh little, rare words
 * and words missing from the vocabulary (names, technical terms) weigh 1.
 * This is an IDF-like weight that does not depend on the evaluation data.
 */
import { readUseLiteVocabularySync } from "../../core/use-lite-files";

let logp: Map<string, number> | null = null;
let proper: Set<string> = new Set();

function table(): Map<string, number> {
  if (logp) return logp;
  const m = new Map<string, number>();
  const lowerP = new Map<string, number>();
  const capP = new Map<string, number>();
  // The model package's own file (embedded in the binary); a missing or malformed one throws.
  for (const [piece, score] of readUseLiteVocabularySync()) {
    if (score === null || !piece.startsWith("\u2581") || piece.length < 2 || score >= 0) continue;
    const cased = piece.slice(1);
    const w = cased.toLowerCase();
    const prev = m.get(w);
    // Sum the probability of case variants ("Apple" + "apple").
    m.set(w, prev === undefined ? score : Math.log(Math.exp(prev) + Math.exp(score)));
    if (cased === w) lowerP.set(w, score);
    else if (cased.length >= 2 && cased.slice(1) === cased.slice(1).toLowerCase()) capP.set(w, score);
  }
  const s = new Set<string>();
  for (const [w, c] of capP) {
    const l = lowerP.get(w);
    if (w.length >= 2 && (l === undefined || c > l + Math.log(3))) s.add(w);
  }
  proper = s;
  logp = m;
  return m;
}

/** True if general English text writes this word capitalised far more often than not (a name: "france", "samsung"). */
export function isProperNoun(lower: string): boolean {
  table();
  return proper.has(lower);
}

/** Natural-log unigram probability of a lower-case word (or its stem), or undefined if the vocabulary lacks it. */
export function wordLogProb(lower: string, stem?: string): number | undefined {
  const t = table();
  return t.get(lower) ?? (stem !== undefined ? t.get(stem) ?? t.get(`${stem}e`) : undefined);
}

export interface WeightParams {
  /** -log p at or below which a word weighs `floor` (very common words). */
  common: number;
  /** -log p at or above which a word weighs 1 (rare words). */
  rare: number;
  /** Minimum weight of a content word. */
  floor: number;
}

export const DEFAULT_WEIGHT_PARAMS: WeightParams = { common: 6.5, rare: 11, floor: 0.1 };

/** Weight in [floor, 1] of a content word. */
export function wordWeight(lower: string, stem: string, p: WeightParams = DEFAULT_WEIGHT_PARAMS): number {
  const lp = wordLogProb(lower, stem);
  if (lp === undefined) return 1;
  const x = (-lp - p.common) / (p.rare - p.common);
  return Math.min(1, Math.max(p.floor, p.floor + (1 - p.floor) * x));
}

/** Number of words in the frequency table (builds it; throws if the model package's vocabulary is missing or malformed). */
export function vocabularySize(): number {
  return table().size;
}
