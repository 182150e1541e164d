/**
 * Experiment (issue 25, recall at precision >= 0.97): which cheap extra pair features raise the pair
 * model's cross-validated recall. Same protocol as cache-pair-cv.ts (folds by duplicate cluster,
 * operating point on out-of-fold scores of the training folds, hard negatives in train and validation),
 * the GBM retrained per fold with the 22 shipped features plus a named set of candidates.
 *
 *   nice ./node_modules/.bin/bun run scripts/bench/cache-pair-feat-exp.ts --sets "base;char;order;wh" [--trees 150 --depth 3]
 *
 * Each set is a comma list of groups (below), optionally "@policy" (which rule-breaking pairs are vetoed
 * before the model; default "all", as shipped). "base" alone is the 22 features of the model before this
 * experiment (the first 22 of PAIR_FEATURES); the groups "char" and "order" are what was then added to
 * PAIR_FEATURES (recomputed here by plain reference code, so the comparison is independent of it).
 * Run of 2026-11-27 (pooled held-out recall at precision 50/50 >= 0.97): base 0.165, char 0.170,
 * order 0.177, char+order 0.176 (shipped), char+order+wh 0.174, all groups 0.172 (depth 4: 0.179),
 * rules-as-features instead of vetoes 0.150-0.163; with the shipped 27 (--base 27): floors down to 0.70
 * (--min-cos 0.7,0.75) 0.173, hard negatives weighted 1 0.169 / 6 0.172 (shipped: 3).
 */
import { cliArg as arg } from "./data";
import { HARD_KINDS } from "./cache-hard-negatives";
import { fhrOf, precision5050, recallOf } from "./cache-cv";
import { MIN_COS, crossValidatePairModel, foldFigures, loadData, withExtraColumns, type Row } from "./cache-pair-cv";
import { GBM_DEFAULTS } from "./cache-pair-gbm";
import { PAIR_ANALYZE_OPTIONS } from "../../src/cache/verify/pair-model";
import { analyzePair } from "../../src/cache/verify/index";
import { STOPWORDS, WH_CLASS, tokenize } from "../../src/cache/verify/text";

const K = 5;
// --min-cos 0.7,0.75: lower cosine floors to choose from (and so more candidates judged by the model)
for (const c of (arg("min-cos") ?? "").split(",").filter(Boolean).map(Number).sort((a, b) => b - a)) if (c < MIN_COS[0]!) MIN_COS.unshift(c);
const log = (s: string) => process.stderr.write(s + "\n");
const d = await loadData(K, 400, log);

function grams(s: string, n: number): Map<string, number> {
  const t = ` ${s} `;
  const m = new Map<string, number>();
  for (let i = 0; i + n <= t.length; i++) {
    const g = t.slice(i, i + n);
    m.set(g, (m.get(g) ?? 0) + 1);
  }
  return m;
}
function cosMap(a: Map<string, number>, b: Map<string, number>): number {
  let dot = 0, na = 0, nb = 0;
  for (const [k, v] of a) { na += v * v; const w = b.get(k); if (w) dot += v * w; }
  for (const v of b.values()) nb += v * v;
  return dot / Math.sqrt(Math.max(1e-12, na * nb));
}
function jacMap(a: Map<string, number>, b: Map<string, number>): number {
  let inter = 0;
  for (const k of a.keys()) if (b.has(k)) inter++;
  return inter / Math.max(1, a.size + b.size - inter);
}
function lev(a: string[], b: string[]): number {
  const m = a.length, n = b.length;
  let prev = Array.from({ length: n + 1 }, (_, j) => j);
  for (let i = 1; i <= m; i++) {
    const cur = [i];
    for (let j = 1; j <= n; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[n]!;
}
function lcs(a: string[], b: string[]): number {
  const n = b.length;
  let prev = new Array(n + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    const cur = [0];
    for (let j = 1; j <= n; j++) cur[j] = a[i - 1] === b[j - 1] ? prev[j - 1] + 1 : Math.max(prev[j], cur[j - 1]!);
    prev = cur;
  }
  return prev[n];
}
const AUXQ = new Set(["is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will", "has", "have", "am", "shall", "may", "might"]);
const QT = ["what", "how", "why", "which", "who", "where", "when", "whom", "whose"];
function qtype(toks: string[]): number {
  for (let i = 0; i < Math.min(toks.length, 4); i++) {
    const t = toks[i]!;
    const k = QT.indexOf(t);
    if (k >= 0) return k + 1;
    if (WH_CLASS[t] !== undefined) return 10;
    if (i === 0 && AUXQ.has(t)) return 11;
  }
  return 0;
}
const PRON: Record<string, number> = { i: 1, me: 1, my: 1, mine: 1, myself: 1, we: 2, us: 2, our: 2, you: 3, your: 3, yours: 3, yourself: 3, he: 4, him: 4, his: 4, she: 5, her: 5, they: 6, them: 6, their: 6 };
function pronMask(toks: string[]): number {
  let m = 0;
  for (const t of toks) if (PRON[t]) m |= 1 << PRON[t]!;
  return m;
}
function cls(w: string): number {
  if (/(ing|ed)$/.test(w)) return 0; // verb-ish
  if (/ly$/.test(w)) return 1;
  if (/(ous|ive|able|ible|al|ful|less|est|er|ic)$/.test(w)) return 2; // adjective-ish
  return 3;
}

export const GROUPS: Record<string, string[]> = {
  char: ["c3cos", "c4jac"],
  order: ["wordEditNorm", "lcsRatio", "contentLcs"],
  wh: ["qtypeSame", "qtypeA", "qtypeB", "firstSame"],
  fn: ["fnDiff", "pronDiff"],
  pos: ["unVerb", "unAdv", "unAdj", "unNoun"],
  emb: ["l1", "linf"],
  rules: ["numAdd", "numSubst", "entAdd", "entSubst", "negMis", "askHard", "swap"],
};
/** which rule-breaking pairs are vetoed before the model (the others get the rule flags as features) */
const POLICIES: Record<string, (f: Record<string, number>) => boolean> = {
  all: (f) => f.numAdd! + f.numSubst! + f.entAdd! + f.entSubst! + f.negMis! + f.askHard! + f.swap! > 0,
  subst: (f) => f.numSubst! + f.entSubst! + f.negMis! + f.askHard! + f.swap! > 0,
  substNum: (f) => f.entAdd! + f.numSubst! + f.entSubst! + f.negMis! + f.askHard! + f.swap! > 0,
  substEnt: (f) => f.numAdd! + f.numSubst! + f.entSubst! + f.negMis! + f.askHard! + f.swap! > 0,
  subst2: (f) => f.numSubst! + f.entSubst! + f.swap! > 0,
  none: () => false,
};
const flagsOf = new Map<Row, Record<string, number>>();
const ALL = Object.values(GROUPS).flat();
const extra = new Map<Row, Float64Array>();
const t0 = performance.now();
const cands = d.rows.filter((r) => !r.surface);
for (const r of cands) {
  const a = r.a!, b = r.b!;
  const ta = tokenize(a).map((t) => t.lower), tb = tokenize(b).map((t) => t.lower);
  const sa = ta.join(" "), sb = tb.join(" ");
  const an = analyzePair(a, b, PAIR_ANALYZE_OPTIONS);
  const ca = an.a.content.map((t) => t.stem), cb = an.b.content.map((t) => t.stem);
  const fa = new Set(ta.filter((t) => STOPWORDS.has(t))), fb = new Set(tb.filter((t) => STOPWORDS.has(t)));
  let fnDiff = 0;
  for (const t of fa) if (!fb.has(t)) fnDiff++;
  for (const t of fb) if (!fa.has(t)) fnDiff++;
  const un = [0, 0, 0, 0];
  for (const t of [...an.onlyA, ...an.onlyB]) un[cls(t.lower)]! += t.weight;
  let l1 = 0, linf = 0;
  for (let i = 0; i < r.u!.length; i++) { const x = Math.abs(r.u![i]! - r.v![i]!); l1 += x; if (x > linf) linf = x; }
  const qa = qtype(ta), qb = qtype(tb);
  const numNone = an.a.numbers.length === 0 || an.b.numbers.length === 0;
  const pure = an.onlyA.length === 0 || an.onlyB.length === 0;
  const ent = an.entityMismatch.length > 0;
  const fl = {
    numAdd: an.numberMismatch && numNone ? 1 : 0,
    numSubst: an.numberMismatch && !numNone ? 1 : 0,
    entAdd: ent && pure ? 1 : 0,
    entSubst: ent && !pure ? 1 : 0,
    negMis: an.negationMismatch ? 1 : 0,
    askHard: an.askMismatch === "hard" ? 1 : 0,
    swap: an.orderSwap ? 1 : 0,
  };
  flagsOf.set(r, fl);
  const v: Record<string, number> = {
    c3cos: cosMap(grams(sa, 3), grams(sb, 3)),
    c4jac: jacMap(grams(sa, 4), grams(sb, 4)),
    wordEditNorm: lev(ta, tb) / Math.max(1, ta.length, tb.length),
    lcsRatio: lcs(ta, tb) / Math.max(1, ta.length, tb.length),
    contentLcs: lcs(ca, cb) / Math.max(1, Math.min(ca.length, cb.length)),
    qtypeSame: qa === qb ? 1 : 0,
    qtypeA: qa,
    qtypeB: qb,
    firstSame: ta[0] === tb[0] ? 1 : 0,
    fnDiff,
    pronDiff: pronMask(ta) !== pronMask(tb) ? 1 : 0,
    unVerb: un[0]!, unAdv: un[1]!, unAdj: un[2]!, unNoun: un[3]!,
    l1, linf,
    ...fl,
  };
  extra.set(r, Float64Array.from(ALL.map((n) => v[n]!)));
}
log(`extra features for ${cands.length} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const BASE = Number(arg("base") ?? 22); // --base 27: the features before word alignment; 41: the shipped ones
const baseX = new Map<Row, Float64Array>(cands.map((r) => [r, r.x!.subarray(0, BASE)]));

const trees = Number(arg("trees") ?? GBM_DEFAULTS.trees);
const depth = Number(arg("depth") ?? GBM_DEFAULTS.depth);
const lr = Number(arg("lr") ?? GBM_DEFAULTS.learningRate);
const hw = Number(arg("hard-weight") ?? 3);
for (const spec of (arg("sets") ?? "base").split(";")) {
  const [set, policy = "all"] = spec.split("@") as [string, string?];
  const groups = set.split(",").filter((g) => g && g !== "base");
  const idx = groups.flatMap((g) => GROUPS[g]!.map((n) => ALL.indexOf(n)));
  for (const r of cands) r.veto = POLICIES[policy]!(flagsOf.get(r)!);
  d.model = cands.filter((r) => !r.veto);
  withExtraColumns(d.model, baseX, extra, idx);
  const t1 = performance.now();
  const res = await crossValidatePairModel({ data: d, cvOnly: true, hardWeight: hw, gbm: { ...GBM_DEFAULTS, trees, depth, learningRate: lr }, log: () => {} });
  const p = res.pooled;
  const folds = foldFigures(res);
  console.log(`[${spec}] model rows ${d.model.length} trees ${trees} depth ${depth} lr ${lr} hw ${hw}: recall ${recallOf(p).toFixed(4)} precision50 ${precision5050(p).toFixed(4)} fhr ${fhrOf(p).toFixed(4)} kinds ${HARD_KINDS.map((k) => p.kinds[k].hits).join("/")} | folds ${folds} | ${((performance.now() - t1) / 1000).toFixed(0)} s`);
}
