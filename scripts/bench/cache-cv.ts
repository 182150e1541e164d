/**
 * Chooses the cache's hit decision by k-fold cross-validation on ../shared/data/cache-train, split by
 * duplicate cluster (scripts/cache-train-embed.ts clusterFolds), with hard negatives made from each
 * fold's own questions (cache-hard-negatives.ts). Never reads cache-eval-dev.
 *
 *   nice ./node_modules/.bin/bun run scripts/bench/cache-cv.ts [--folds 5] [--per-kind 400] [--json OUT]
 *
 * What is chosen (the hand verifier over raw USE-lite cosines, src/cache/verify): the operating point
 * (minScore, which is also the similarity floor), the unmatched-word penalty, the rewording rule, the
 * small-edit rule and its cosine, the order rule's minimum word weight, whether direction words count
 * as content, and each hard rule on or off. For each held-out fold the configuration is chosen on the
 * other folds (the highest recall whose precision >= 0.97, false-hit rate <= 1 % and every hard-negative
 * kind's hit rate <= 1 %); the held-out figures are pooled over the folds. The shipped choice is the
 * same selection on all folds.
 *
 * Precision is reported two ways: "natural" (cache-train's own 31/69 mix, Quora negatives only) and
 * "50/50" (half positives, half negatives; the negatives half Quora non-duplicates and half the hard
 * kinds, equally weighted — the shape of cache-eval-dev).
 */
import { resolve } from "node:path";
import { DEFAULT_EMB_FILE, clusterFolds, embedCached, loadOrEmbed } from "../cache-train-embed";
import { cliArg as arg, dataDir } from "./data";
import { HARD_KINDS, makeHardNegatives, type HardKind } from "./cache-hard-negatives";
import type { PositiveKind } from "./cache-surface-positives";
import { DEFAULT_VERIFY_OPTIONS, analyzePair, decide, surfaceForm, type VerifyOptions } from "../../src/cache/verify/index";
import { dot } from "../../src/core/vectors";

export type Kind = "qqp" | HardKind;
export interface Choice {
  minScore: number;
  unmatchedPenalty: number;
  rephraseMinWords: number;
  editMaxWords: number;
  editMinScore: number;
  orderMinWeight: number;
  polarContent: boolean;
  /** the hard rule switched off (ablation), or "" for all on */
  off: "" | "rejectNumbers" | "rejectEntities" | "rejectNegation" | "rejectAsk" | "rejectOrder";
}
export interface Figures {
  pos: number;
  tp: number;
  /** Quora negatives */
  neg: number;
  fp: number;
  kinds: Record<HardKind, { n: number; hits: number }>;
  /** generated positives per kind (surface changes: same question, only case/punctuation/whitespace/one letter changed; frame rewordings): the pair model's CV only */
  surf?: Record<PositiveKind, { n: number; hits: number }>;
}
export interface CvResult {
  folds: number;
  perFold: Array<{ fold: number; choice: Choice; heldOut: Figures }>;
  pooled: Figures;
  /** chosen on all folds (what ships) and its figures on all of cache-train (not held out: for reference) */
  final: Choice;
  finalInSample: Figures;
  /** the shipped settings at every floor (all of cache-train, in sample): the precision / recall trade-off of the operating point */
  curve: Array<{ floor: number; figures: Figures }>;
  /** today's defaults before this change, cross-validated the same way (no choice: fixed) */
  baseline: Figures;
  rows: { qqp: number; hard: Record<HardKind, number> };
}

const FLOORS = Array.from({ length: 19 }, (_, i) => Math.round((0.8 + i * 0.01) * 100) / 100);
const PENALTIES = [0.05, 0.11, 0.2];
const REPHRASE = [0, 3];
const EDITS: Array<[number, number]> = [[0, 0], ...[2, 3].flatMap((n) => [0.95, 0.97, 0.99, 1.01].map((c) => [n, c] as [number, number]))];
const ORDER_W = [0.1, 0.2, 0.3];
const POLAR = [false, true];
const OFFS: Choice["off"][] = ["", "rejectNumbers", "rejectEntities", "rejectNegation", "rejectAsk", "rejectOrder"];

/**
 * The targets of issue 25. `quoraFhr` bounds the Quora non-duplicates' false-hit rate on its own; the issue
 * itself bounds only the overall rate on cache-eval-dev's mix (`fhr`, half Quora, half hard kinds), the
 * precision and each kind (set quoraFhr to 1 for the issue's literal constraints).
 */
export const TARGET = { precision: 0.97, fhr: 0.01, kind: 0.01, quoraFhr: 0.01 };
/** recall a configuration with a hard rule switched off must gain over the best with every rule on */
const RULE_OFF_GAIN = 0.005;

export function optionsOf(c: Choice): VerifyOptions {
  const o: VerifyOptions = {
    ...DEFAULT_VERIFY_OPTIONS,
    minScore: c.minScore,
    unmatchedPenalty: c.unmatchedPenalty,
    rephraseMinWords: c.rephraseMinWords,
    editMaxWords: c.editMaxWords,
    editMinScore: c.editMinScore,
    orderMinWeight: c.orderMinWeight,
    polarContent: c.polarContent,
  };
  if (c.off) o[c.off] = false;
  return o;
}

export const emptyFigures = (): Figures => ({ pos: 0, tp: 0, neg: 0, fp: 0, kinds: Object.fromEntries(HARD_KINDS.map((k) => [k, { n: 0, hits: 0 }])) as Figures["kinds"] });
export const recallOf = (f: Figures) => f.tp / Math.max(1, f.pos);
export const fhrOf = (f: Figures) => f.fp / Math.max(1, f.neg);
export const kindRate = (f: Figures, k: HardKind) => f.kinds[k].hits / Math.max(1, f.kinds[k].n);
/** negatives as in cache-eval-dev: half Quora non-duplicates, half the hard kinds (equal weight) */
export const mixedFhr = (f: Figures) => 0.5 * fhrOf(f) + (0.5 / HARD_KINDS.length) * HARD_KINDS.reduce((s, k) => s + kindRate(f, k), 0);
export const precision5050 = (f: Figures) => recallOf(f) / Math.max(1e-12, recallOf(f) + mixedFhr(f));
export const precisionNatural = (f: Figures) => f.tp / Math.max(1, f.tp + f.fp);
export const meets = (f: Figures, quoraFhr = TARGET.quoraFhr) => precision5050(f) >= TARGET.precision && fhrOf(f) <= quoraFhr && mixedFhr(f) <= TARGET.fhr && HARD_KINDS.every((k) => kindRate(f, k) <= TARGET.kind);

export async function crossValidate(opts: { folds?: number; perKind?: number; log?: (s: string) => void } = {}): Promise<CvResult> {
  const K = opts.folds ?? 5;
  const perKind = opts.perKind ?? 400;
  const log = (s: string) => ((opts.log ?? ((x: string) => process.stderr.write(x + "\n")))(s), true);
  const set = await loadOrEmbed(dataDir("cache-train", arg("data")), arg("emb") ?? DEFAULT_EMB_FILE, log);
  const { pairs, texts, index, dims, vecs } = set;
  const vec = (i: number) => vecs.subarray(i * dims, (i + 1) * dims);
  const foldOf = clusterFolds(set, K);

  // hard negatives per fold, from that fold's questions only
  const hard: Array<{ fold: number; kind: HardKind; source: string; edited: string }> = [];
  for (let f = 0; f < K; f++) {
    const qs = texts.filter((_, i) => foldOf(i) === f);
    for (const h of makeHardNegatives(qs, perKind, 2500 + f)) hard.push({ fold: f, ...h });
  }
  const editedTexts = hard.map((h) => h.edited);
  const he = await embedCached(editedTexts, resolve(import.meta.dir, "../../data/cache-train-hardneg-emb.bin"), log);

  // one row per (new question, cached question): Quora pairs send q2 after q1, hard negatives the edit after its source
  interface Row { fold: number; kind: Kind; label: 0 | 1; a: string; b: string; cos: number }
  const all: Row[] = [];
  for (const p of pairs) {
    const ia = index.get(p.q2)!, ib = index.get(p.q1)!;
    all.push({ fold: foldOf(ib), kind: "qqp", label: p.label as 0 | 1, a: p.q2, b: p.q1, cos: dot(vec(ia), vec(ib)) });
  }
  hard.forEach((h, i) => all.push({ fold: h.fold, kind: h.kind, label: 0, a: h.edited, b: h.source, cos: dot(he.vecs.subarray(i * he.dims, (i + 1) * he.dims), vec(index.get(h.source)!)) }));

  // denominators: every row; candidates for a hit: surface-identical or cosine >= the lowest floor
  const base = Array.from({ length: K }, emptyFigures);
  for (const r of all) {
    const f = base[r.fold]!;
    if (r.kind === "qqp") r.label ? f.pos++ : f.neg++;
    else f.kinds[r.kind].n++;
  }
  const cand = all.filter((r) => r.cos >= FLOORS[0]! - 1e-9 || surfaceForm(r.a) === surfaceForm(r.b));
  log(`${all.length} rows (${hard.length} hard negatives), ${cand.length} at cosine >= ${FLOORS[0]}`);

  // every configuration's accept decision through the real decide(): for each row and every setting
  // except the floor, the largest floor it still passes (score if accepted at minScore 0, else -1)
  interface Cfg { key: Omit<Choice, "minScore">; pass: Float32Array }
  const cfgs: Cfg[] = [];
  const t0 = performance.now();
  for (const ow of ORDER_W) for (const polar of POLAR) {
    const ans = cand.map((r) => ({ an: analyzePair(r.a, r.b, { ...DEFAULT_VERIFY_OPTIONS, orderMinWeight: ow, polarContent: polar }), surface: surfaceForm(r.a) === surfaceForm(r.b) }));
    for (const pen of PENALTIES) for (const rp of REPHRASE) for (const [em, ec] of EDITS) for (const off of OFFS) {
      const key = { unmatchedPenalty: pen, rephraseMinWords: rp, editMaxWords: em, editMinScore: ec, orderMinWeight: ow, polarContent: polar, off };
      const o = optionsOf({ ...key, minScore: 0 });
      const pass = new Float32Array(cand.length);
      for (let i = 0; i < cand.length; i++) {
        const { an, surface } = ans[i]!;
        if (surface) {
          pass[i] = 2;
          continue;
        }
        const d = decide(an, cand[i]!.cos, o);
        pass[i] = d.accept ? d.score : -1;
      }
      cfgs.push({ key, pass });
    }
  }
  log(`${cfgs.length * FLOORS.length} configurations (${cfgs.length} x ${FLOORS.length} floors) decided in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

  // figures[cfg][floor][fold]: a row accepted at floor j is accepted at every lower floor, so count the
  // highest floor each row passes, then sum from the top
  const NC = 2 + HARD_KINDS.length; // tp, fp, then one count per hard kind
  const cls = cand.map((r) => (r.kind === "qqp" ? (r.label ? 0 : 1) : 2 + HARD_KINDS.indexOf(r.kind)));
  const figs = cfgs.map((c) => {
    const counts = new Int32Array(FLOORS.length * K * NC);
    for (let i = 0; i < cand.length; i++) {
      const p = c.pass[i]!;
      if (p < FLOORS[0]!) continue;
      let j = 0;
      while (j + 1 < FLOORS.length && p >= FLOORS[j + 1]!) j++;
      counts[(j * K + cand[i]!.fold) * NC + cls[i]!]!++;
    }
    for (let j = FLOORS.length - 2; j >= 0; j--) for (let x = 0; x < K * NC; x++) counts[j * K * NC + x]! += counts[(j + 1) * K * NC + x]!;
    return FLOORS.map((_, j) =>
      base.map((b, k) => {
        const o = (j * K + k) * NC;
        return { pos: b.pos, tp: counts[o]!, neg: b.neg, fp: counts[o + 1]!, kinds: Object.fromEntries(HARD_KINDS.map((h, q) => [h, { n: b.kinds[h].n, hits: counts[o + 2 + q]! }])) as Figures["kinds"] };
      }),
    );
  });
  for (const c of cfgs) (c as { pass?: Float32Array }).pass = undefined;
  const sum = (fs: Figures[]): Figures => {
    const s = emptyFigures();
    for (const f of fs) {
      s.pos += f.pos; s.tp += f.tp; s.neg += f.neg; s.fp += f.fp;
      for (const k of HARD_KINDS) { s.kinds[k].n += f.kinds[k].n; s.kinds[k].hits += f.kinds[k].hits; }
    }
    return s;
  };
  const choose = (use: (fold: number) => boolean): { c: number; fl: number } | null => {
    const withAllRules = pick(use, (c) => cfgs[c]!.key.off === "");
    const any = pick(use, () => true);
    // a hard rule is switched off only when that buys more than RULE_OFF_GAIN recall on the training
    // folds: the ablations differ by a few pairs, and a rule off is a class of wrong hits let through
    return withAllRules && any && any.recall - withAllRules.recall <= RULE_OFF_GAIN ? withAllRules : (any ?? withAllRules);
  };
  const pick = (use: (fold: number) => boolean, allow: (c: number) => boolean): { c: number; fl: number; recall: number } | null => {
    let best: { c: number; fl: number; recall: number } | null = null;
    for (let c = 0; c < cfgs.length; c++) for (let j = 0; j < FLOORS.length; j++) {
      if (!allow(c)) continue;
      const f = sum(figs[c]![j]!.filter((_, k) => use(k)));
      if (!meets(f)) continue;
      const rec = recallOf(f);
      // ties: the higher floor (fewer hits on text unlike the training data)
      if (!best || rec > best.recall + 1e-12 || (Math.abs(rec - best.recall) <= 1e-12 && FLOORS[j]! > FLOORS[best.fl]!)) best = { c, fl: j, recall: rec };
    }
    return best;
  };
  const choiceOf = (x: { c: number; fl: number }): Choice => ({ ...cfgs[x.c]!.key, minScore: FLOORS[x.fl]! });
  const perFold: CvResult["perFold"] = [];
  for (let k = 0; k < K; k++) {
    const x = choose((f) => f !== k);
    if (!x) throw new Error(`fold ${k}: no configuration meets the targets on the other folds`);
    perFold.push({ fold: k, choice: choiceOf(x), heldOut: figs[x.c]![x.fl]![k]! });
  }
  const fx = choose(() => true)!;
  const final = choiceOf(fx);
  const curve = FLOORS.map((floor, j) => ({ floor, figures: sum(figs[fx.c]![j]!) }));

  // the defaults before this change (fixed, for comparison)
  const ans0 = cand.map((r) => analyzePair(r.a, r.b, { ...DEFAULT_VERIFY_OPTIONS, orderMinWeight: 0.3, polarContent: false }));
  const b0 = base.map((b) => ({ ...emptyFigures(), pos: b.pos, neg: b.neg, kinds: Object.fromEntries(HARD_KINDS.map((k) => [k, { n: b.kinds[k].n, hits: 0 }])) as Figures["kinds"] }));
  cand.forEach((r, i) => {
    const ok = surfaceForm(r.a) === surfaceForm(r.b) || decide(ans0[i]!, r.cos, { ...DEFAULT_VERIFY_OPTIONS, orderMinWeight: 0.3, editMaxWords: 0, polarContent: false, minScore: 0.85 }).accept;
    if (!ok) return;
    const f = b0[r.fold]!;
    if (r.kind === "qqp") r.label ? f.tp++ : f.fp++;
    else f.kinds[r.kind].hits++;
  });
  const hardCount = Object.fromEntries(HARD_KINDS.map((k) => [k, hard.filter((h) => h.kind === k).length])) as Record<HardKind, number>;
  return { folds: K, perFold, pooled: sum(perFold.map((p) => p.heldOut)), final, curve, finalInSample: sum(figs[fx.c]![fx.fl]!), baseline: sum(b0), rows: { qqp: pairs.length, hard: hardCount } };
}

/** Wilson score interval (95 %) of k successes in n. */
export function wilson(k: number, n: number, z = 1.96): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const d = 1 + (z * z) / n;
  const c = (p + (z * z) / (2 * n)) / d;
  const h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  return [Math.max(0, c - h), Math.min(1, c + h)];
}

const f3 = (x: number) => x.toFixed(3);
const ci = (k: number, n: number) => {
  const [lo, hi] = wilson(k, n);
  return `${f3(k / Math.max(1, n))} [${f3(lo)}, ${f3(hi)}]`;
};

export function cvTable(r: CvResult): string {
  const lines: string[] = [];
  const row = (name: string, f: Figures) =>
    `| ${name} | ${f3(precision5050(f))} | ${f3(precisionNatural(f))} | ${ci(f.tp, f.pos)} | ${ci(f.fp, f.neg)} | ${HARD_KINDS.map((k) => `${f.kinds[k].hits}/${f.kinds[k].n}`).join(" | ")} |`;
  lines.push(`| ${r.folds}-fold CV on cache-train (held-out folds pooled) | precision 50/50 | precision natural | recall [95 % CI] | false-hit rate, Quora negatives [95 % CI] | ${HARD_KINDS.join(" | ")} |`);
  lines.push(`|---|---|---|---|---|${HARD_KINDS.map(() => "---").join("|")}|`);
  lines.push(row("previous defaults (floor 0.85, order weight 0.3, no direction words), fixed", r.baseline));
  lines.push(row("**chosen per fold on the other folds**", r.pooled));
  lines.push("");
  lines.push(`hard negatives per kind, hit rate on held-out folds: ${HARD_KINDS.map((k) => `${k} ${ci(r.pooled.kinds[k].hits, r.pooled.kinds[k].n)}`).join("; ")}`);
  lines.push("");
  lines.push("per-fold choices: " + r.perFold.map((p) => `fold ${p.fold}: ${JSON.stringify(p.choice)}`).join("; "));
  lines.push("");
  lines.push(`shipped (chosen on all folds): ${JSON.stringify(r.final)}`);
  lines.push("");
  lines.push("the shipped settings at other operating points (all of cache-train, in sample):");
  lines.push("");
  lines.push(`| floor | precision 50/50 | recall | false-hit rate | ${HARD_KINDS.join(" | ")} |`);
  lines.push(`|---|---|---|---|${HARD_KINDS.map(() => "---").join("|")}|`);
  for (const c of r.curve.filter((c) => c.floor >= 0.85))
    lines.push(`| ${c.floor.toFixed(2)} | ${f3(precision5050(c.figures))} | ${f3(recallOf(c.figures))} | ${f3(fhrOf(c.figures))} | ${HARD_KINDS.map((k) => f3(kindRate(c.figures, k))).join(" | ")} |`);
  return lines.join("\n");
}

if (import.meta.main) {
  const r = await crossValidate({ folds: Number(arg("folds") ?? 5), perKind: Number(arg("per-kind") ?? 400) });
  console.log(cvTable(r));
  if (arg("json")) await Bun.write(arg("json")!, JSON.stringify(r, null, 1));
}
