/**
 * Surface positives made from cache-train's own questions (issue 25): the same question with only its
 * case, punctuation, whitespace or one letter changed, paired with the original and labelled SAME —
 * the counterpart of the hard negatives (cache-hard-negatives.ts), mirroring cache-eval-dev's
 * `dup_surface` category as its README describes it (never read from it).
 *
 *   case   all lower, all upper, the first letter's case flipped, or Title Case
 *   punct  the trailing ? . ! removed (or one added), commas dropped, or apostrophes dropped
 *   space  a space doubled, leading/trailing whitespace, or a space replaced by a tab or a newline
 *   typo   one letter of a word of >= 4 letters: two adjacent letters transposed, one substituted,
 *          one dropped or one doubled
 *
 * Deterministic: the edit made to a question depends only on the question text order and the seed.
 */
import { mulberry32, seededOrder } from "./data";

export const SURFACE_KINDS = ["case", "punct", "space", "typo"] as const;
export type SurfaceKind = (typeof SURFACE_KINDS)[number];
/** the generated positive kinds the CV reports: the surface kinds, and question-frame rewordings (cache-frame-rewordings.ts; experiment only) */
export const POSITIVE_KINDS = [...SURFACE_KINDS, "frame"] as const;
export type PositiveKind = (typeof POSITIVE_KINDS)[number];
export interface SurfacePositive { kind: SurfaceKind; source: string; edited: string; /** which variant of the kind ("upper", "transpose"...) */ how: string }
type Edit = { e: string; how: string } | null;

const pick = <T>(xs: T[], rnd: () => number): T => xs[Math.floor(rnd() * xs.length)]!;

function caseEdit(q: string, rnd: () => number): Edit {
  const i = q.search(/\p{L}/u);
  if (i < 0) return null;
  const first = q[i]!;
  const flipped = first === first.toUpperCase() ? first.toLowerCase() : first.toUpperCase();
  const variants: Array<{ e: string; how: string }> = [
    { e: q.toLowerCase(), how: "lower" },
    { e: q.toUpperCase(), how: "upper" },
    { e: q.slice(0, i) + flipped + q.slice(i + 1), how: "first" },
    { e: q.replace(/\p{L}[\p{L}']*/gu, (w) => w[0]!.toUpperCase() + w.slice(1).toLowerCase()), how: "title" },
  ].filter((v) => v.e !== q);
  return variants.length ? pick(variants, rnd) : null;
}

function punctEdit(q: string, rnd: () => number): Edit {
  const variants: Array<{ e: string; how: string }> = [];
  const t = q.trimEnd();
  if (/[?.!]$/.test(t)) variants.push({ e: t.replace(/[?.!]+$/, ""), how: "end-removed" });
  else variants.push({ e: t + pick(["?", ".", "!"], rnd), how: "end-added" });
  if (q.includes(",")) variants.push({ e: q.replace(/,/g, ""), how: "commas" });
  if (/\p{L}['’]\p{L}/u.test(q)) variants.push({ e: q.replace(/(\p{L})['’](?=\p{L})/gu, "$1"), how: "apostrophes" });
  const v = variants.filter((x) => x.e !== q && x.e.trim().length > 0);
  return v.length ? pick(v, rnd) : null;
}

function spaceEdit(q: string, rnd: () => number): Edit {
  const gaps = [...q.matchAll(/ /g)].map((m) => m.index!);
  const variants: Array<() => { e: string; how: string }> = [() => ({ e: pick(["  ", " ", "\t", "\n"], rnd) + q + pick([" ", "  ", "\n", "\t"], rnd), how: "ends" })];
  if (gaps.length) {
    variants.push(() => {
      const g = pick(gaps, rnd);
      return { e: q.slice(0, g) + "  " + q.slice(g + 1), how: "doubled" };
    });
    variants.push(() => {
      const g = pick(gaps, rnd);
      return { e: q.slice(0, g) + pick(["\t", "\n", " \n "], rnd) + q.slice(g + 1), how: "tab-newline" };
    });
  }
  const v = pick(variants, rnd)();
  return v.e !== q ? v : null;
}

const LETTERS = "abcdefghijklmnopqrstuvwxyz";

const OPS = ["transpose", "substitute", "drop", "double"];

function typoEdit(q: string, rnd: () => number): Edit {
  const words = [...q.matchAll(/\p{L}{4,}/gu)].filter((m) => /^[A-Za-z]+$/.test(m[0]));
  if (!words.length) return null;
  const m = pick(words, rnd);
  const w = m[0];
  let e: string;
  const op = Math.floor(rnd() * 4);
  if (op === 0) {
    // two adjacent different letters exchanged
    const idx = [...Array(w.length - 1).keys()].filter((k) => w[k]!.toLowerCase() !== w[k + 1]!.toLowerCase());
    if (!idx.length) return null;
    const k = pick(idx, rnd);
    e = w.slice(0, k) + w[k + 1] + w[k] + w.slice(k + 2);
  } else if (op === 1) {
    const k = Math.floor(rnd() * w.length);
    let c = pick([...LETTERS], rnd);
    while (c === w[k]!.toLowerCase()) c = pick([...LETTERS], rnd);
    e = w.slice(0, k) + (w[k] === w[k]!.toUpperCase() ? c.toUpperCase() : c) + w.slice(k + 1);
  } else if (op === 2) {
    const k = Math.floor(rnd() * w.length);
    e = w.slice(0, k) + w.slice(k + 1);
  } else {
    const k = Math.floor(rnd() * w.length);
    e = w.slice(0, k + 1) + w[k]!.toLowerCase() + w.slice(k + 1);
  }
  if (e === w) return null;
  return { e: q.slice(0, m.index) + e + q.slice(m.index! + w.length), how: OPS[op]! };
}

/** Surface positives of `questions`, at most `perKind` of each kind, one edit per question (kinds do not share sources). */
export function makeSurfacePositives(questions: string[], perKind: number, seed: number): SurfacePositive[] {
  const rnd = mulberry32(seed);
  const order = seededOrder(questions, rnd);
  const out: SurfacePositive[] = [];
  const count: Record<SurfaceKind, number> = { case: 0, punct: 0, space: 0, typo: 0 };
  let turn = 0;
  for (const q of order) {
    // kinds in turn, so each draws from the whole (shuffled) fold
    for (let t = 0; t < SURFACE_KINDS.length; t++) {
      const kind = SURFACE_KINDS[(turn + t) % SURFACE_KINDS.length]!;
      if (count[kind] >= perKind) continue;
      const e = kind === "case" ? caseEdit(q, rnd) : kind === "punct" ? punctEdit(q, rnd) : kind === "space" ? spaceEdit(q, rnd) : typoEdit(q, rnd);
      if (!e || e.e === q) continue;
      out.push({ kind, source: q, edited: e.e, how: e.how });
      count[kind]++;
      break;
    }
    turn++;
    if (SURFACE_KINDS.every((k) => count[k] >= perKind)) break;
  }
  return out;
}
