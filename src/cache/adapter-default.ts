/**
 * The shipped embedding adapter: adapter-weights.json (written by scripts/train-cache-adapter.ts),
 * bundled by the JSON import into the compiled binary and parsed once, on first use.
 */
import weights from "./adapter-weights.json";
import { EmbeddingAdapter, type AdapterWeightsFile } from "./adapter";

let adapter: EmbeddingAdapter | undefined;

export function defaultAdapter(): EmbeddingAdapter {
  adapter ??= EmbeddingAdapter.fromFile(weights as unknown as AdapterWeightsFile);
  return adapter;
}
