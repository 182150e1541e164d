/**
 * The shipped learned decision: the pair model (pair-model-weights.json, written by
 * scripts/train-cache-pair-model.ts and cross-validated by scripts/bench/cache-pair-cv.ts), bundled by
 * the JSON import into the compiled binary and parsed once, on first use. It replaced issue 14's MLP
 * (issue 25), which was fit on 80 % of cache-train and so could not be cross-validated on it.
 */
import weights from "./pair-model-weights.json";
import { PairModel, type PairModelFile } from "./pair-model";

let model: PairModel | undefined;

export function defaultLearnedModel(): PairModel {
  model ??= new PairModel(weights as unknown as PairModelFile);
  return model;
}
