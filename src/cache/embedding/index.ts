/**
 * Embedding providers for the semantic cache.
 *
 *   const emb = createEmbedder({ provider: "local" });
 *   await emb.load();
 *   const [v] = await emb.embed(["What is the capital of France?"]); // L2-normalised
 */
import { CachedEmbedder } from "./cached";
import { RemoteEmbedder } from "./remote";
import { acquireLocalEmbedder } from "./shared-local";
import { EmbeddingError, type Embedder } from "./types";
import type { LocalEmbedderOptions } from "./local";

export { EmbeddingError, dot, l2normalize, type Embedder } from "./types";
export { LocalEmbedder, type LocalEmbedderOptions } from "./local";
export { RemoteEmbedder, type RemoteEmbedderOptions } from "./remote";
export { CachedEmbedder } from "./cached";
export { acquireLocalEmbedder, sharedLocalModels, SharedLocalHandle } from "./shared-local";
export { prepareText, USE_LITE_ID, USE_LITE_DIMS } from "./use-lite-text";

export interface CreateEmbedderOptions {
  provider: "local" | "openai";
  /** openai: API root incl. version, e.g. "https://api.openai.com/v1". */
  baseUrl?: string;
  /** openai: model name, e.g. "text-embedding-3-small". */
  model?: string;
  apiKey?: string;
  /** openai: per-request timeout (default 10000 ms); local: per model call (default 30000 ms). */
  timeoutMs?: number;
  /** Entries in the exact-text LRU (default 10000; 0 disables it). */
  lruSize?: number;
  /** local: implementation, matmul kernel and worker thread (defaults: "fast", "auto", true). */
  engine?: LocalEmbedderOptions["engine"];
  kernel?: LocalEmbedderOptions["kernel"];
  worker?: boolean;
}

export function createEmbedder(opts: CreateEmbedderOptions): Embedder {
  let inner: Embedder;
  if (opts.provider === "local") {
    // one model per process, reference-counted (shared-local.ts): the weights are immutable
    inner = acquireLocalEmbedder({ callTimeoutMs: opts.timeoutMs, engine: opts.engine, kernel: opts.kernel, worker: opts.worker });
  } else if (opts.provider === "openai") {
    if (!opts.baseUrl || !opts.model) throw new EmbeddingError("openai embedding provider needs baseUrl and model");
    inner = new RemoteEmbedder({ baseUrl: opts.baseUrl, model: opts.model, apiKey: opts.apiKey, timeoutMs: opts.timeoutMs });
  } else {
    throw new EmbeddingError(`unknown embedding provider: ${String((opts as { provider?: unknown }).provider)}`);
  }
  const size = opts.lruSize ?? 10_000;
  return size > 0 ? new CachedEmbedder(inner, size) : inner;
}
