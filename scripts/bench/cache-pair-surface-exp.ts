/**
 * Surface positives in the pair model's CV (issue 25): the training weight of the surface positives the
 * model sees (those the surface match does not take: a typo that made a real word), compared with the same
 * CV protocol as cache-pair-cv.ts (folds by duplicate cluster, point on out-of-fold scores, hard negatives
 * and surface positives generated from each fold's own questions). Never reads cache-eval-dev.
 *
 *   nice ./node_modules/.bin/bun run scripts/bench/cache-pair-surface-exp.ts [--folds 3] [--weights 0,1,3] [--surface-min-cos 0.5|choose] [--table 1]
 *   nice ./node_modules/.bin/bun run scripts/bench/cache-pair-surface-exp.ts --frames 150 --frame-weights 0,1,3 [--folds 5]
 *
 * --frames N: also N question-frame rewordings per frame family per fold (cache-frame-rewordings.ts) as a
 * positive kind "frame" in validation, trained with each of --frame-weights (0: validation only) — whether
 * paraphrase-like rewordings are a sound positive kind, or the point is only too strict for them.
 */
import { cliArg as arg } from "./data";
import { PAIR_SURFACE_WEIGHT, crossValidatePairModel, devMixRecall, foldFigures, loadData, pairCvTable, surfaceMinCosArg, type Row } from "./cache-pair-cv";
import { fhrOf, precision5050, recallOf } from "./cache-cv";
import { SURFACE_KINDS } from "./cache-surface-positives";
import { HARD_KINDS } from "./cache-hard-negatives";

const K = Number(arg("folds") ?? 3);
const frames = Number(arg("frames") ?? 0);
const d = await loadData(K, Number(arg("per-kind") ?? 400), (s) => process.stderr.write(s + "\n"), frames);
const smc = surfaceMinCosArg();
const runs = frames > 0 ? (arg("frame-weights") ?? "0,1,3").split(",").map((fw) => ({ w: PAIR_SURFACE_WEIGHT, fw: Number(fw) })) : (arg("weights") ?? "0,1,3").split(",").map((w) => ({ w: Number(w), fw: 0 }));
for (const { w, fw } of runs) {
  const t0 = performance.now();
  const weight = (r: Row) => (r.kind === "qqp" ? 1 : r.kind === "frame" ? fw : (SURFACE_KINDS as readonly string[]).includes(r.kind) ? w : 3);
  const r = await crossValidatePairModel({ data: d, folds: K, cvOnly: true, hardWeight: 3, surfaceWeight: w, surfaceMinCos: smc, weight, log: () => {} });
  const p = r.pooled;
  console.log(`[surface weight ${w}${frames ? `, frame weight ${fw}: frame ${p.surf!.frame.hits}/${p.surf!.frame.n}` : ""}, surface floor ${r.perFold.map((p) => p.surfaceMinCos ?? "point").join("/")}] K ${K}: recall ${recallOf(p).toFixed(4)} precision50 ${precision5050(p).toFixed(4)} quora-fhr ${fhrOf(p).toFixed(4)} kinds ${HARD_KINDS.map((k) => p.kinds[k].hits).join("/")} surface ${SURFACE_KINDS.map((k) => `${p.surf![k].hits}/${p.surf![k].n}`).join(" ")} dev-mix ${devMixRecall(p).toFixed(4)} | folds ${foldFigures(r)} | ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  if (arg("table")) console.log(pairCvTable(r));
}
