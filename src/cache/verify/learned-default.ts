/**
 * The shipped learned decision: learned-weights.json (written by scripts/train-cache-decision.ts),
 * bundled by the JSON import into the compiled binary and parsed once, on first use.
 */
import weights from "./learned-weights.json";
import { LearnedModel, type LearnedWeightsFile } from "./learned";

let model: LearnedModel | undefined;

export function defaultLearnedModel(): LearnedModel {
  model ??= new LearnedModel(weights as unknown as LearnedWeightsFile);
  return model;
}
