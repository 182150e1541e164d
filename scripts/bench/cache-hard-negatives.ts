/**
 * Hard negatives made from cache-train's own questions (issue 25): each one is a question with a
 * small edit that changes its meaning, paired with the original and labelled different.
 *
 *   swap      arguments or comparison order swapped ("is A bigger than B" -> "is B bigger than A",
 *             "convert A to B" -> "convert B to A", "from A to B" -> "from B to A")
 *   entity    a name replaced by another name seen in the questions (capitalised mid-sentence words)
 *   number    a number replaced by another number
 *   negation  a negation added to or removed from the first auxiliary verb
 *   antonym   one word replaced by its opposite (a small generation list, used only here: the verifier
 *             has no antonym list, so this measures a general rule, not a lookup of the same list)
 *   unit      a unit, time or place word replaced by another of the same kind
 *
 * Deterministic: the edit made to a question depends only on the question text and the seed.
 */
import { mulberry32, seededOrder } from "./data";
import { NEGATIONS, STOPWORDS, WH_CLASS } from "../../src/cache/verify/text";
import { isProperNoun } from "../../src/cache/verify/weights";

/** an argument worth swapping: a content word (not a function word, wh-word or comparison word) */
const isArg = (w: string) => {
  const l = w.toLowerCase();
  return l.length >= 2 && !STOPWORDS.has(l) && !WH_CLASS[l] && !NEGATIONS.has(l) && !/^(more|less|most|least|much|many|same)$/.test(l);
};

export const HARD_KINDS = ["swap", "entity", "number", "negation", "antonym", "unit"] as const;
export type HardKind = (typeof HARD_KINDS)[number];
export interface HardNegative { kind: HardKind; source: string; edited: string }

const ANTONYMS: Array<[string, string]> = [
  ["good", "bad"], ["best", "worst"], ["better", "worse"], ["increase", "decrease"], ["rich", "poor"], ["cheap", "expensive"],
  ["easy", "hard"], ["easiest", "hardest"], ["fast", "slow"], ["fastest", "slowest"], ["big", "small"], ["biggest", "smallest"],
  ["high", "low"], ["highest", "lowest"], ["long", "short"], ["advantages", "disadvantages"], ["pros", "cons"], ["love", "hate"],
  ["buy", "sell"], ["win", "lose"], ["start", "stop"], ["gain", "lose"], ["strong", "weak"], ["happy", "sad"], ["young", "old"],
  ["positive", "negative"], ["true", "false"], ["safe", "dangerous"], ["healthy", "unhealthy"], ["legal", "illegal"],
  ["success", "failure"], ["successful", "unsuccessful"], ["open", "close"], ["hot", "cold"], ["early", "late"], ["before", "after"],
  ["import", "export"], ["upload", "download"], ["male", "female"], ["men", "women"], ["boys", "girls"], ["most", "least"],
  ["more", "less"], ["maximum", "minimum"], ["heavy", "light"], ["rise", "fall"], ["add", "remove"], ["accept", "reject"],
  ["right", "wrong"], ["first", "last"], ["private", "public"], ["ancient", "modern"], ["introvert", "extrovert"], ["friends", "enemies"],
];
const UNITS: string[][] = [
  ["kg", "pounds", "grams", "ounces"], ["km", "miles", "meters", "feet"], ["dollars", "euros", "rupees", "pounds"],
  ["celsius", "fahrenheit"], ["hours", "minutes", "days", "weeks", "months", "years"], ["today", "tomorrow", "yesterday"],
  ["morning", "evening", "night"], ["monday", "friday", "sunday", "saturday"], ["summer", "winter", "spring", "autumn"],
  ["january", "june", "october", "december"], ["india", "china", "usa", "uk", "canada", "germany", "australia", "japan", "france", "pakistan"],
  ["delhi", "mumbai", "bangalore", "london", "paris", "tokyo", "chicago", "boston"], ["daily", "weekly", "monthly", "yearly"],
];

const AUX = /\b(is|are|was|were|do|does|did|can|could|should|would|will|has|have)\b/i;
const NEG = /\b(is|are|was|were|do|does|did|can|could|should|would|will|has|have)(n't| not)\b|\bcan't\b|\bcannot\b|\bwon't\b/i;
const ARTICLE = "(?:(?:a|an|the|my|your) )?";
const WORD = "([A-Za-z][\\w+#-]*(?:\\.\\w+)*)";
const SWAP_PATTERNS: RegExp[] = [
  // comparison: "<aux> [the] A <adj>er/more <adj> than [the] B"
  new RegExp(`\\b(is|are|was|were|does|do) ${ARTICLE}${WORD} ((?:more |less )?[a-z]+) than ${ARTICLE}${WORD}`, "i"),
  // "from A to B"
  new RegExp(`\\bfrom ${ARTICLE}${WORD} to ${ARTICLE}${WORD}`, "i"),
  // "convert / translate / switch / move / migrate / transfer / change A to|into B"
  new RegExp(`\\b(convert|converting|translate|translating|switch|switching|move|moving|migrate|migrating|transfer|transferring|change|changing|turn|turning) ${ARTICLE}${WORD} (to|into) ${ARTICLE}${WORD}`, "i"),
  // "A over B", "A instead of B", "A before B" / "A after B"
  new RegExp(`\\b(prefer|choose|pick|use) ${ARTICLE}${WORD} (over|instead of|rather than) ${ARTICLE}${WORD}`, "i"),
];

function swapEdit(q: string): string | null {
  for (const re of SWAP_PATTERNS) {
    const m = re.exec(q);
    if (!m) continue;
    const groups = m.slice(1);
    // the two arguments are the capture groups that matched WORD: the 2nd and 4th of the first/third/fourth pattern, 1st and 2nd of "from"
    const [ia, ib] = groups.length === 2 ? [0, 1] : groups.length === 3 ? [1, 2] : [1, 3];
    const a = groups[ia]!, b = groups[ib]!;
    if (a.toLowerCase() === b.toLowerCase() || !isArg(a) || !isArg(b)) continue;
    if (groups.length === 4 && ia === 1 && !isArg(groups[2]!.replace(/^(more|less) /, ""))) continue;
    // rebuild the matched span with the two arguments exchanged (first occurrence of each, left to right)
    const span = m[0];
    const pa = span.indexOf(a, span.indexOf(" ") + 1);
    const pb = span.lastIndexOf(b);
    if (pa < 0 || pb < 0 || pb <= pa) continue;
    const edited = span.slice(0, pa) + b + span.slice(pa + a.length, pb) + a + span.slice(pb + b.length);
    return q.slice(0, m.index) + edited + q.slice(m.index + span.length);
  }
  return null;
}

function numberEdit(q: string, rnd: () => number): string | null {
  const m = /\b(\d{1,4})\b/.exec(q);
  if (!m) return null;
  const n = Number(m[1]);
  const delta = 1 + Math.floor(rnd() * Math.max(2, Math.round(n * 0.2)));
  const other = n >= 1900 && n <= 2100 ? n + (rnd() < 0.5 ? -delta : delta) : n + delta;
  return q.slice(0, m.index) + String(other) + q.slice(m.index + m[1]!.length);
}

function negationEdit(q: string): string | null {
  const neg = NEG.exec(q);
  if (neg) {
    const w = neg[0].toLowerCase();
    const plain = w === "can't" || w === "cannot" ? "can" : w === "won't" ? "will" : neg[1]!;
    return q.slice(0, neg.index) + (neg[0][0] === neg[0][0]!.toUpperCase() ? plain[0]!.toUpperCase() + plain.slice(1) : plain) + q.slice(neg.index + neg[0].length);
  }
  if (q.split(/[^A-Za-z']+/).some((w) => NEGATIONS.has(w.toLowerCase()))) return null;
  const m = AUX.exec(q);
  if (!m) return null;
  // "Is X ..." (question word order) -> "Isn't X ..."; "X is ..." -> "X is not ..."
  const atStart = m.index === 0 || /^(why|how|what|when|where|who|which)\s+$/i.test(q.slice(0, m.index));
  const contracted = ({ can: "can't", will: "won't" } as Record<string, string>)[m[0].toLowerCase()];
  if (atStart) {
    const neg = contracted ? (m[0][0] === "C" || m[0][0] === "W" ? contracted[0]!.toUpperCase() + contracted.slice(1) : contracted) : m[0] + "n't";
    return q.slice(0, m.index) + neg + q.slice(m.index + m[0].length);
  }
  return q.slice(0, m.index + m[0].length) + " not" + q.slice(m.index + m[0].length);
}

function wordListEdit(q: string, lists: string[][], rnd: () => number): string | null {
  const words = [...q.matchAll(/[A-Za-z]+/g)];
  for (const w of words) {
    const lower = w[0].toLowerCase();
    const list = lists.find((l) => l.includes(lower));
    if (!list) continue;
    const others = list.filter((x) => x !== lower);
    let r = others[Math.floor(rnd() * others.length)]!;
    if (/^[A-Z]/.test(w[0])) r = r[0]!.toUpperCase() + r.slice(1);
    if (/^[A-Z]+$/.test(w[0]) && w[0].length > 1) r = r.toUpperCase();
    return q.slice(0, w.index) + r + q.slice(w.index! + w[0].length);
  }
  return null;
}

const ANTONYM_LISTS = ANTONYMS.map(([a, b]) => [a, b]);

/** Capitalised words inside a sentence (not after . ? !), the pool of names an entity edit draws from. */
export function entityCandidates(q: string): Array<{ word: string; index: number }> {
  const out: Array<{ word: string; index: number }> = [];
  for (const m of q.matchAll(/(?<=[a-z,] )([A-Z][a-z]{2,})\b(?! [A-Z])/g)) if (isProperNoun(m[1]!.toLowerCase())) out.push({ word: m[1]!, index: m.index! });
  return out;
}

function entityEdit(q: string, pool: string[], rnd: () => number): string | null {
  const c = entityCandidates(q);
  if (!c.length || pool.length < 2) return null;
  const pick = c[Math.floor(rnd() * c.length)]!;
  for (let k = 0; k < 5; k++) {
    const r = pool[Math.floor(rnd() * pool.length)]!;
    if (r.toLowerCase() !== pick.word.toLowerCase() && !q.includes(r)) return q.slice(0, pick.index) + r + q.slice(pick.index + pick.word.length);
  }
  return null;
}

/**
 * Hard negatives of `questions`, at most `perKind` of each kind. `names`: the pool of names an entity
 * edit draws from (give the same fold's questions' names, so no text crosses folds).
 */
export function makeHardNegatives(questions: string[], perKind: number, seed: number): HardNegative[] {
  const rnd = mulberry32(seed);
  const names = [...new Set(questions.flatMap((q) => entityCandidates(q).map((c) => c.word)))].sort();
  const order = seededOrder(questions, rnd);
  const out: HardNegative[] = [];
  const count: Record<HardKind, number> = { swap: 0, entity: 0, number: 0, negation: 0, antonym: 0, unit: 0 };
  for (const q of order) {
    const edits: Array<[HardKind, () => string | null]> = [
      ["swap", () => swapEdit(q)],
      ["number", () => numberEdit(q, rnd)],
      ["negation", () => negationEdit(q)],
      ["antonym", () => wordListEdit(q, ANTONYM_LISTS, rnd)],
      ["unit", () => wordListEdit(q, UNITS, rnd)],
      ["entity", () => entityEdit(q, names, rnd)],
    ];
    for (const [kind, f] of edits) {
      if (count[kind] >= perKind) continue;
      const e = f();
      if (!e || e === q) continue;
      out.push({ kind, source: q, edited: e });
      count[kind]++;
      break; // one edit per question: kinds do not share sources
    }
    if (HARD_KINDS.every((k) => count[k] >= perKind)) break;
  }
  return out;
}
