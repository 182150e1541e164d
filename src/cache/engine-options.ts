/**
 * What the semantic cache engine is built from (engine.ts): its settings, the dependencies it is
 * handed, the hit decision's shape, and the operating point a lookup reports.
 */
import type { AsyncStorage } from "../storage/async";
import type { Logger } from "../core/log";
import type { Quantization } from "../core/vector-index";
import type { Embedder } from "./ports";
import type { DecisionModel } from "./verify/pair-model";
import type { EmbeddingAdapter } from "./adapter";
import type { CacheMetrics } from "./metrics";
import type { CacheSharing } from "./replicas";

export interface EngineSettings {
  enabled: boolean;
  /** single-turn operating point (cosine floor); default: the learned model's floor when it decides, else the hand verifier's minScore */
  similarityThreshold?: number;
  ttlSecs: number;
  maxEntriesPerTenant: number;
  failOpen: boolean;
  context: {
    enabled: boolean;
    stage1Threshold: number;
    contextHitThreshold: number;
    queryWeight: number;
    contextWeight: number;
    maxTurns: number;
  };
  /**
   * The learned stage (the pair model, src/cache/verify/pair-model.ts) decides instead of the hand verifier's score
   * check, when the embedder is the one it was trained on (default true).
   */
  learnedDecision?: boolean;
  /** operating point of the learned stage for every tenant without its own (default: the model's) */
  decisionThreshold?: number;
  /** "alone" (default): the model decides (behind the hard rules); "with_rules": the hand verifier's accept also stands (not cross-validated) */
  learnedMode?: "with_rules" | "alone";
  /**
   * Compare adapted embeddings (src/cache/adapter.ts) in the index, the similarity threshold, doc1 §4.7's
   * stages and the decision, when the adapter was trained on this embedder (default true).
   */
  adaptEmbeddings?: boolean;
  /** also run the verifier on the last query of a context hit (default true) */
  verifyContextQuery: boolean;
  /**
   * also check every earlier user turn against its counterpart (aligned by position; a different
   * number of user turns misses). Default true: without it near-duplicate openers with different
   * meaning ("...in Canada?" / "...in Germany?") gave 12.5 % false hits. Each pair must pass the
   * verifier's hard rules (numbers, entities, negation, asked-for attribute, order); when a pair
   * fails only its score check (a reworded turn), the stage-2 score must also reach
   * `contextReworded` (see below).
   */
  verifyContextTurns: boolean;
  /**
   * Stage-2 score (queryWeight·q + contextWeight·c) needed when an earlier user turn passes the
   * verifier's hard rules but not its score check (default 0.96; the spec's contextHitThreshold
   * still applies to every hit). Chosen on the even ids of cache-eval-dev/multiturn.jsonl
   * (docs/notes/embedding-quality.md §9).
   */
  contextReworded?: number;
  quantization: Quantization;
  /** HNSW efSearch */
  efSearch: number;
  /** HNSW M and efConstruction (default DEFAULT_INDEX_PARAMS) */
  connectivity?: number;
  efConstruction?: number;
  singleFlightWaitMs: number;
  /** replicas: the cross-replica single flight's lease, renewed while its holder runs (default 3000 ms) */
  singleFlightLeaseMs?: number;
  /** neighbours examined per lookup */
  candidates: number;
  /** a tenant's in-memory state (indexes, counters) is dropped after this long without use (default 600 s) */
  tenantIdleSecs?: number;
  /** at most this many tenants kept in memory; the least recently used is dropped beyond it (default 10 000) */
  maxLoadedTenants?: number;
  /** wrong-hit budget a tenant's operating point tightens toward on "wrong" feedback (default 0.01) */
  maxWrongHitRate?: number;
}

/**
 * The hit decision for one (query, cached question) pair. `vectors` are the two embeddings and
 * `threshold` the tenant's operating point (used by the learned stage; a hand verifier may ignore them).
 * `learned` is the learned stage's probability, when it ran.
 */
export type Verifier = (
  query: string,
  candidate: string,
  cosine: number,
  vectors?: { query: Float32Array; candidate: Float32Array },
  threshold?: number,
  /** the operating point (cosine floor) of this lookup: the hand verifier's minScore */
  minScore?: number,
) => { accept: boolean; score: number; reason: string; learned?: number };

export interface EngineOptions {
  storage: AsyncStorage;
  embedder: Embedder;
  settings: EngineSettings;
  /** directory for saved index files; null = never save (in-memory databases, tests) */
  indexDir: string | null;
  now?: () => number;
  verify?: Verifier;
  /** the learned stage; default: the shipped model (used only when its embedder id matches); null = hand verifier only */
  learned?: DecisionModel | null;
  /** the embedding adapter; default: the shipped one (used only when trained on this embedder); null = raw embeddings */
  adapter?: EmbeddingAdapter | null;
  log?: Logger;
  metrics?: CacheMetrics;
  /** background timers (touch flush, TTL sweep); default true */
  timers?: boolean;
  /** how often the TTL sweep and idle-tenant unloading run (default 60 s) */
  sweepIntervalMs?: number;
  /** several replicas (Redis): follow and announce entry changes, single flight across replicas (replicas.ts) */
  shared?: CacheSharing;
}

/** The operating point (cosine floor) a lookup used, and what set it. */
export interface DecisionPoint {
  value: number;
  source: "config" | "feedback" | "request" | "exact";
}

/** Default EngineSettings.contextReworded. */
export const CONTEXT_REWORDED_THRESHOLD = 0.96;

