/**
 * Trains the shipped pair model (src/cache/verify/pair-model-weights.json) with exactly the procedure
 * cache-pair-cv.ts cross-validates: per-fold out-of-fold scores on all of cache-train choose the
 * operating point (cosine floor, probability threshold: the highest recall with precision 50/50 >= 0.97,
 * false-hit rate on the 50/50 mix <= 1 %, every hard-negative kind <= 1 %; `--quora-fhr 0.01` also bounds
 * the Quora negatives alone), then the trees are trained on all folds.
 * Also writes the cross-validated (held-out) figures into the file's report.
 *
 *   nice ./node_modules/.bin/bun run scripts/train-cache-pair-model.ts [--out src/cache/verify/pair-model-weights.json]
 */
import { resolve } from "node:path";
import { cliArg as arg } from "./bench/data";
import { HARD_KINDS } from "./bench/cache-hard-negatives";
import { fhrOf, mixedFhr, precision5050, recallOf, type Figures } from "./bench/cache-cv";
import { PAIR_QUORA_FHR, PAIR_SURFACE_WEIGHT, crossValidatePairModel, devMixRecall, pairCvTable } from "./bench/cache-pair-cv";
import { SURFACE_KINDS } from "./bench/cache-surface-positives";
import { GBM_DEFAULTS } from "./bench/cache-pair-gbm";
import { PAIR_FEATURES, type PairModelFile } from "../src/cache/verify/pair-model";
import { createEmbedder } from "../src/embedding";

const sw = Number(arg("surface-weight") ?? PAIR_SURFACE_WEIGHT);
const r = await crossValidatePairModel({ model: "gbm", hardWeight: Number(arg("hard-weight") ?? 3), surfaceWeight: sw, surfaceMinCos: "choose", quoraFhr: arg("quora-fhr") ? Number(arg("quora-fhr")) : undefined });
console.log(pairCvTable(r));
const fin = r.final!;
const emb = createEmbedder({ provider: "local", lruSize: 0 });
const summary = (f: Figures) => ({
  precision5050: +precision5050(f).toFixed(4),
  recall: +recallOf(f).toFixed(4),
  quoraFalseHitRate: +fhrOf(f).toFixed(4),
  mixedFalseHitRate: +mixedFhr(f).toFixed(4),
  kinds: Object.fromEntries(HARD_KINDS.map((k) => [k, `${f.kinds[k].hits}/${f.kinds[k].n}`])),
  surfaceKinds: Object.fromEntries(SURFACE_KINDS.map((k) => [k, `${f.surf?.[k].hits ?? 0}/${f.surf?.[k].n ?? 0}`])),
  devMixRecall: +devMixRecall(f).toFixed(4),
});
const file: PairModelFile = {
  format: 1,
  embedderId: emb.id,
  dims: emb.dimensions,
  features: [...PAIR_FEATURES],
  base: fin.gbm!.base,
  trees: fin.gbm!.trees.map((t) => ({ ...t, t: t.t.map((x) => +x.toPrecision(9)), v: t.v.map((x) => +x.toPrecision(9)) })),
  threshold: +(1 / (1 + Math.exp(-fin.point.threshold))).toFixed(6),
  minCosine: fin.point.minCos,
  surfaceMinCosine: fin.surfaceMinCos,
  report: {
    trainedOn: `all of cache-train (5 folds by duplicate cluster) + 400 hard negatives per kind per fold (weighted 3) + 400 surface positives per kind per fold (weighted ${sw}: those the surface match does not take)`,
    operatingPoint: `highest out-of-fold recall with precision 50/50 >= 0.97, 50/50 false-hit rate <= 1 %, each hard kind <= 1 %${(arg("quora-fhr") ? Number(arg("quora-fhr")) : PAIR_QUORA_FHR) < 1 ? `, Quora false-hit rate <= ${arg("quora-fhr") ?? PAIR_QUORA_FHR}` : ""}`,
    gbm: GBM_DEFAULTS,
    crossValidated: { pooledHeldOut: summary(r.pooled), perFold: r.perFold.map((p) => ({ fold: p.fold, minCosine: p.point.minCos, logit: +p.point.threshold.toFixed(4), surfaceMinCosine: p.surfaceMinCos, ...summary(p.heldOut) })) },
    inSampleAtShippedPoint: summary(fin.inSample),
  },
};
await emb.close();
const out = arg("out") ?? resolve(import.meta.dir, "../src/cache/verify/pair-model-weights.json");
await Bun.write(out, JSON.stringify(file) + "\n");
console.log(`wrote ${out}: ${file.trees.length} trees, floor ${file.minCosine}, probability threshold ${file.threshold}`);
