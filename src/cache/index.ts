/**
 * Cache domain: the semantic response cache engine (exact, semantic and multi-turn context tiers)
 * and its administration API under /api/v1/cache. Tables: cache_entries, cache_context_users.
 * The proxies reach the engine through the port they declare (src/gateway/ports.ts).
 */
import { dirname, join } from "node:path";
import type { AsyncStorage } from "../storage/async";
import type { Logger } from "../core/log";
import type { Metrics } from "../core/metrics";
import type { Kernel } from "../core/kernel";
import type { Domain } from "../core/domain";
import type { Embedder } from "./ports";
import { SemanticCacheEngine, type EngineSettings, type EngineOptions } from "./engine";
import { CACHE_MIGRATIONS } from "./migrations";
import { cacheMetrics } from "./metrics";
import { cacheRoutes } from "./routes";
import type { CacheConfig, ContextCacheConfig } from "./config";
import type { CacheSharing } from "./replicas";

export { SemanticCacheEngine, type EngineSettings } from "./engine";
export { PairModel, type DecisionModel } from "./verify/pair-model";
export { defaultLearnedModel } from "./verify/learned-default";
export { CACHE_SECTIONS, checkCacheConfig, type CacheConfig, type ContextCacheConfig } from "./config";
export { CACHE_MIGRATIONS } from "./migrations";
export type { CacheSharing } from "./replicas";

/** The configuration sections the cache reads. */
export interface CacheSettingsInput {
  cache: CacheConfig;
  context_cache: ContextCacheConfig;
  embedding: { fail_open: boolean };
}

export function engineSettings(c: CacheSettingsInput): EngineSettings {
  const cc = c.context_cache;
  const k = c.cache;
  return {
    enabled: k.enabled,
    similarityThreshold: k.similarity_threshold,
    ttlSecs: k.ttl_secs,
    maxEntriesPerTenant: k.max_entries_per_tenant,
    failOpen: c.embedding.fail_open,
    context: {
      enabled: cc.enabled,
      stage1Threshold: cc.stage1_threshold,
      contextHitThreshold: cc.context_hit_threshold,
      queryWeight: cc.query_weight,
      contextWeight: cc.context_weight,
      maxTurns: cc.max_turns,
    },
    learnedDecision: k.learned_decision,
    learnedMode: k.learned_mode,
    adaptEmbeddings: k.adapt_embeddings,
    decisionThreshold: k.decision_threshold,
    verifyContextQuery: true,
    verifyContextTurns: true,
    quantization: k.index_quantization,
    efSearch: k.index_ef_search,
    connectivity: k.index_m,
    efConstruction: k.index_ef_construction,
    singleFlightWaitMs: k.single_flight_wait_ms,
    maxWrongHitRate: k.max_wrong_hit_rate,
    candidates: 8,
  };
}

/** Saved index files: cache.index_dir, else `<database dir>/cache-index`; none for an in-memory database. */
export function indexDirOf(cache: CacheConfig, databasePath: string): string | null {
  if (cache.index_dir) return cache.index_dir;
  if (databasePath === ":memory:") return null;
  return join(dirname(databasePath), "cache-index");
}

export interface CacheDeps {
  config: CacheSettingsInput;
  databasePath: string;
  storage: AsyncStorage;
  embedder: Embedder;
  metrics: Metrics;
  log: Logger;
  kernel: Kernel;
  /** several replicas (Redis): one cache across them (replicas.ts); absent on a single node */
  shared?: CacheSharing;
}

/** What the engine reads of the whole configuration. */
export interface EngineConfig extends CacheSettingsInput {
  storage: { path: string };
}

/** The engine alone from a loaded configuration (tests and benchmarks that drive it without HTTP). */
export function createCacheEngine(
  config: EngineConfig,
  deps: { storage: AsyncStorage; embedder: Embedder; log?: Logger; metrics?: Metrics } & Partial<Pick<EngineOptions, "now" | "verify" | "learned" | "timers" | "sweepIntervalMs">>,
): SemanticCacheEngine {
  const { metrics, ...rest } = deps;
  return new SemanticCacheEngine({
    ...rest,
    metrics: metrics ? cacheMetrics(metrics) : undefined,
    settings: engineSettings(config),
    indexDir: indexDirOf(config.cache, config.storage.path),
  });
}

export function create(deps: CacheDeps): Domain<SemanticCacheEngine> & { metrics: ReturnType<typeof cacheMetrics> } {
  const metrics = cacheMetrics(deps.metrics);
  const engine = new SemanticCacheEngine({
    storage: deps.storage,
    embedder: deps.embedder,
    log: deps.log,
    metrics,
    settings: engineSettings(deps.config),
    indexDir: indexDirOf(deps.config.cache, deps.databasePath),
    shared: deps.shared,
  });
  return {
    name: "cache",
    migrations: CACHE_MIGRATIONS,
    routes: cacheRoutes(deps.kernel, engine, deps.config.cache.enabled),
    service: engine,
    metrics,
    close: () => engine.close(),
  };
}
