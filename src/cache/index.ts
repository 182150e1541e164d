/**
 * Cache domain wiring: builds the embedder and the engine from the Config.
 */
import { dirname, join } from "node:path";
import type { Config } from "../core/config";
import type { Db } from "../storage/db";
import type { Logger } from "../core/log";
import type { Metrics } from "../ops/metrics";
import type { AppContext } from "../context";
import { createEmbedder } from "./embedding";
import type { Embedder } from "./embedding/types";
import { SemanticCacheEngine, type EngineSettings, type EngineOptions } from "./engine";

export { SemanticCacheEngine } from "./engine";

export function engineSettings(config: Config): EngineSettings {
  const c = config.cache;
  const cc = config.context_cache;
  return {
    enabled: c.enabled,
    similarityThreshold: c.similarity_threshold,
    ttlSecs: c.ttl_secs,
    maxEntriesPerTenant: c.max_entries_per_tenant,
    failOpen: config.embedding.fail_open,
    context: {
      enabled: cc.enabled,
      stage1Threshold: cc.stage1_threshold,
      contextHitThreshold: cc.context_hit_threshold,
      queryWeight: cc.query_weight,
      contextWeight: cc.context_weight,
      maxTurns: cc.max_turns,
    },
    verifyContextQuery: true,
    verifyContextTurns: true,
    quantization: c.index_quantization,
    efSearch: c.index_ef_search,
    connectivity: c.index_m,
    efConstruction: c.index_ef_construction,
    singleFlightWaitMs: c.single_flight_wait_ms,
    candidates: 8,
  };
}

export function embedderFromConfig(config: Config): Embedder {
  const e = config.embedding;
  return createEmbedder({ provider: e.provider, baseUrl: e.base_url, model: e.model, apiKey: e.api_key, timeoutMs: e.timeout_ms, lruSize: e.lru_size, engine: e.engine, kernel: e.kernel, worker: e.worker });
}

/** Saved index files: cache.index_dir, else `<database dir>/cache-index`; none for an in-memory database. */
export function indexDirOf(config: Config): string | null {
  if (config.cache.index_dir) return config.cache.index_dir;
  if (config.storage.path === ":memory:") return null;
  return join(dirname(config.storage.path), "cache-index");
}

export function createCacheEngine(
  config: Config,
  deps: { db: Db; embedder: Embedder; log?: Logger; metrics?: Metrics } & Partial<Pick<EngineOptions, "now" | "verify" | "timers">>,
): SemanticCacheEngine {
  return new SemanticCacheEngine({ ...deps, settings: engineSettings(config), indexDir: indexDirOf(config) });
}

/**
 * Wire the cache into a gateway: ctx.embedder (loading starts in the background; /ready waits for
 * it), ctx.cache, and their shutdown (engine first — it saves its indexes — then the embedder).
 */
export function installCache(ctx: AppContext): SemanticCacheEngine {
  const embedder = embedderFromConfig(ctx.config);
  ctx.embedder = embedder;
  ctx.readiness.embedder = () => embedder.isReady();
  // Loading starts on the next event-loop turn, i.e. once startServer's Bun.serve listens: the
  // worker parses ~100 MB of weights on another thread, which on 2 cores slowed the cold start
  // (BENCHMARKS.md). A lookup before then starts (and awaits) the load itself.
  const loadSoon = setImmediate(() => {
    embedder.load().catch((e) => ctx.log.error("embedding model failed to load", { error: String((e as Error)?.message ?? e) }));
  });
  const engine = createCacheEngine(ctx.config, { db: ctx.db, embedder, log: ctx.log, metrics: ctx.metrics });
  ctx.cache = engine;
  ctx.closers.push(() => {
    clearImmediate(loadSoon);
    return embedder.close();
  });
  ctx.closers.push(() => engine.close());
  return engine;
}
