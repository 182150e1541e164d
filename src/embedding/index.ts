/**
 * Embedding domain: the text embedder shared by the semantic cache, memory search and the MCP
 * tool cache — the built-in local model (one per process) or an OpenAI-compatible server.
 * No routes, no tables.
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
import type { Domain } from "../core/domain";
import type { Logger } from "../core/log";
import type { Histogram, Metrics } from "../core/metrics";
import type { EmbeddingConfig } from "./config";

export { EmbeddingError, dot, l2normalize, type Embedder } from "./types";
export { LocalEmbedder, type LocalEmbedderOptions } from "./local";
export { RemoteEmbedder, type RemoteEmbedderOptions } from "./remote";
export { CachedEmbedder } from "./cached";
export { acquireLocalEmbedder, sharedLocalModels, SharedLocalHandle } from "./shared-local";
export { prepareText, USE_LITE_ID, USE_LITE_DIMS } from "./use-lite-text";
export { useLitePieceTokenizer } from "./pieces";
export { EMBEDDING_SECTIONS, checkEmbeddingConfig, type EmbeddingConfig } from "./config";

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
  /** local: implementation, matmul kernel, threads per product, model workers, texts a free worker waits for while another computes, worker thread (defaults: "fast", "auto", 1, defaultWorkers(), defaultBusyBatch(), true). */
  engine?: LocalEmbedderOptions["engine"];
  kernel?: LocalEmbedderOptions["kernel"];
  threads?: number;
  workers?: number;
  busyBatch?: number;
  worker?: boolean;
}

export function createEmbedder(opts: CreateEmbedderOptions): Embedder {
  let inner: Embedder;
  if (opts.provider === "local") {
    // one model per process, reference-counted (shared-local.ts): the weights are immutable
    inner = acquireLocalEmbedder({ callTimeoutMs: opts.timeoutMs, engine: opts.engine, kernel: opts.kernel, threads: opts.threads, workers: opts.workers, busyBatch: opts.busyBatch, worker: opts.worker });
  } else if (opts.provider === "openai") {
    if (!opts.baseUrl || !opts.model) throw new EmbeddingError("openai embedding provider needs baseUrl and model");
    inner = new RemoteEmbedder({ baseUrl: opts.baseUrl, model: opts.model, apiKey: opts.apiKey, timeoutMs: opts.timeoutMs });
  } else {
    throw new EmbeddingError(`unknown embedding provider: ${String((opts as { provider?: unknown }).provider)}`);
  }
  const size = opts.lruSize ?? 10_000;
  return size > 0 ? new CachedEmbedder(inner, size) : inner;
}

export function embedderFromConfig(e: EmbeddingConfig): Embedder {
  return createEmbedder({ provider: e.provider, baseUrl: e.base_url, model: e.model, apiKey: e.api_key, timeoutMs: e.timeout_ms, lruSize: e.lru_size, engine: e.engine, kernel: e.kernel, threads: e.threads, workers: e.workers, busyBatch: e.busy_batch, worker: e.worker });
}

/** Times every embed call (svc_embedding_duration_seconds, by embedder id). */
export class TimedEmbedder implements Embedder {
  constructor(readonly inner: Embedder, private readonly duration: Histogram) {}
  get id() {
    return this.inner.id;
  }
  get dimensions() {
    return this.inner.dimensions;
  }
  load() {
    return this.inner.load();
  }
  isReady() {
    return this.inner.isReady();
  }
  async embed(texts: string[]) {
    const t0 = performance.now();
    const out = await this.inner.embed(texts);
    this.duration.observe({ provider: this.inner.id }, (performance.now() - t0) / 1000);
    return out;
  }
  close() {
    return this.inner.close();
  }
}

export interface EmbeddingDeps {
  config: EmbeddingConfig;
  metrics: Metrics;
  log: Logger;
  /** an embedder to use instead of the configured one (tests) */
  embedder?: Embedder;
}

/**
 * The domain: `start` begins loading the model on the next event-loop turn, i.e. once the server
 * listens (the worker parses ~100 MB of weights on another thread, which on 2 cores slowed the cold
 * start); a lookup before then starts (and awaits) the load itself. /ready reports `isReady()`.
 */
export function create(deps: EmbeddingDeps): Domain<Embedder> {
  const duration = deps.metrics.histogram("svc_embedding_duration_seconds", "Embedding latency per batch", ["provider"]);
  const embedder = new TimedEmbedder(deps.embedder ?? embedderFromConfig(deps.config), duration);
  let loadSoon: ReturnType<typeof setImmediate> | undefined;
  return {
    name: "embedding",
    migrations: [],
    service: embedder,
    start() {
      loadSoon = setImmediate(() => {
        embedder.load().catch((e) => deps.log.error("embedding model failed to load", { error: String((e as Error)?.message ?? e) }));
      });
    },
    close() {
      if (loadSoon) clearImmediate(loadSoon);
      return embedder.close();
    },
  };
}
