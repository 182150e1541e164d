/**
 * Which stage rejects the generated surface positives (scripts/bench/cache-surface-positives.ts) with the
 * shipped pair model: the cosine floor, a hard rule (which), or the model — per kind, with examples.
 * In sample for the shipped model (it was trained on all of cache-train): a diagnosis, not a figure.
 *
 *   nice ./node_modules/.bin/bun run scripts/analysis/surface-misses.ts [--folds 5] [--per-kind 400] [--examples 8]
 */
import { cliArg as arg } from "../bench/data";
import { loadData } from "../bench/cache-pair-cv";
import { SURFACE_KINDS } from "../bench/cache-surface-positives";
import { defaultLearnedModel } from "../../src/cache/verify/learned-default";

const d = await loadData(Number(arg("folds") ?? 5), Number(arg("per-kind") ?? 400), (s) => process.stderr.write(s + "\n"));
const m = defaultLearnedModel();
const nEx = Number(arg("examples") ?? 8);
for (const k of SURFACE_KINDS) {
  const rows = d.rows.filter((r) => r.kind === k);
  const total = d.base.reduce((s, b) => s + b.surf![k].n, 0);
  const why = new Map<string, number>();
  const ex = new Map<string, string[]>();
  let hits = 0;
  const add = (reason: string, a: string, b: string, extra: string) => {
    why.set(reason, (why.get(reason) ?? 0) + 1);
    const l = ex.get(reason) ?? [];
    if (l.length < nEx) l.push(`${JSON.stringify(b)} -> ${JSON.stringify(a)} ${extra}`);
    ex.set(reason, l);
  };
  for (const r of rows) {
    const res = m.decide(r.a!, r.b!, r.cos);
    if (r.cos < m.minCosine) add("below floor", r.a!, r.b!, `cos ${r.cos.toFixed(3)} ${res.reason}`);
    else if (res.accept) hits++;
    else add(res.reason === "low-score" ? "model" : res.reason.split(":")[0]!, r.a!, r.b!, `cos ${r.cos.toFixed(3)} p ${res.learned?.toFixed(3) ?? "-"} ${res.reason}`);
  }
  add; // rows below the lowest grid floor (0.80) are not in d.rows
  const below = total - rows.length;
  console.log(`\n## ${k}: ${hits}/${total} hit (${((100 * hits) / total).toFixed(1)} %); below cosine 0.80 (not candidates): ${below}`);
  for (const [w, n] of [...why].sort((a, b) => b[1] - a[1])) {
    console.log(`- ${w}: ${n}`);
    for (const e of ex.get(w)!) console.log(`    ${e}`);
  }
}

// per variant: the share the surface match takes, and the hits at the shipped point as served (cosine >=
// the floor) and with the surface floor the engine applies (surface matches of the nearest candidate down to the model's surfaceMinCosine)
console.log(`\n## per variant (generated rows; rows below cosine 0.80 that are no surface match are not candidates)\n`);
console.log(`| kind | variant | n | surface match | hit as served | hit with the surface floor (${m.surfaceMinCosine ?? "-"}) |`);
console.log(`|---|---|---|---|---|---|`);
for (const k of SURFACE_KINDS) {
  const total = new Map<string, number>();
  const gen = d.rows.filter((r) => r.kind === k);
  for (const r of gen) total.set(r.how ?? "?", (total.get(r.how ?? "?") ?? 0) + 1);
  for (const [how] of [...total].sort()) {
    const rs = gen.filter((r) => (r.how ?? "?") === how);
    const sm = rs.filter((r) => r.surface).length;
    const served = rs.filter((r) => r.cos >= m.minCosine && m.decide(r.a!, r.b!, r.cos).accept).length;
    const floor = rs.filter((r) => (r.surface ? r.cos >= Math.min(m.minCosine, m.surfaceMinCosine ?? m.minCosine) : r.cos >= m.minCosine && m.decide(r.a!, r.b!, r.cos).accept)).length;
    console.log(`| ${k} | ${how} | ${rs.length} | ${sm} | ${served} | ${floor} |`);
  }
}

// negatives the surface match accepts (they hit whatever the model says): Quora non-duplicates and hard kinds
const neg = d.rows.filter((r) => r.label === 0 && r.surface);
console.log(`\n## negatives accepted by the surface match: ${neg.length}`);
for (const r of neg.slice(0, 40)) console.log(`- ${r.kind}: ${JSON.stringify(r.b)} -> ${JSON.stringify(r.a)} cos ${r.cos.toFixed(3)}`);
