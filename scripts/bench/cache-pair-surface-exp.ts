/**
 * Surface positives in the pair model's CV (issue 25): the training weight of the surface positives the
 * model sees (those the surface match does not take: a typo that made a real word), compared with the same
 * CV protocol as cache-pair-cv.ts (folds by duplicate cluster, point on out-of-fold scores, hard negatives
 * and surface positives generated from each fold's own questions). Never reads cache-eval-dev.
 *
 *   nice ./node_modules/.bin/bun run scripts/bench/cache-pair-surface-exp.ts [--folds 3] [--weights 0,1,3] [--surface-min-cos 0.5|choose] [--table 1]
 */
import { cliArg as arg } from "./data";
import { crossValidatePairModel, devMixRecall, foldFigures, loadData, pairCvTable, surfaceMinCosArg } from "./cache-pair-cv";
import { fhrOf, precision5050, recallOf } from "./cache-cv";
import { SURFACE_KINDS } from "./cache-surface-positives";
import { HARD_KINDS } from "./cache-hard-negatives";

const K = Number(arg("folds") ?? 3);
const d = await loadData(K, Number(arg("per-kind") ?? 400), (s) => process.stderr.write(s + "\n"));
const smc = surfaceMinCosArg();
for (const w of (arg("weights") ?? "0,1,3").split(",").map(Number)) {
  const t0 = performance.now();
  const r = await crossValidatePairModel({ data: d, folds: K, cvOnly: true, hardWeight: 3, surfaceWeight: w, surfaceMinCos: smc, log: () => {} });
  const p = r.pooled;
  console.log(`[surface weight ${w}, surface floor ${r.perFold.map((p) => p.surfaceMinCos ?? "point").join("/")}] K ${K}: recall ${recallOf(p).toFixed(4)} precision50 ${precision5050(p).toFixed(4)} quora-fhr ${fhrOf(p).toFixed(4)} kinds ${HARD_KINDS.map((k) => p.kinds[k].hits).join("/")} surface ${SURFACE_KINDS.map((k) => `${p.surf![k].hits}/${p.surf![k].n}`).join(" ")} dev-mix ${devMixRecall(p).toFixed(4)} | folds ${foldFigures(r)} | ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  if (arg("table")) console.log(pairCvTable(r));
}
