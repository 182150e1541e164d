import { Type as T, type Static } from "@sinclair/typebox";
import { Section } from "../core/config";

export const CACHE_SECTIONS = {
  cache: Section({
    enabled: T.Boolean({ default: true }),
    /**
     * single-turn semantic tier: the operating point, the lowest cosine that can hit. Unset (default): the pair model's floor
     * when it decides (chosen with its threshold by cross-validation on cache-train, BENCHMARKS.md "Cache quality";
     * scripts/bench/cache-pair-cv.ts), else 0.94, the hand verifier's cross-validated minScore (scripts/bench/cache-cv.ts)
     */
    similarity_threshold: T.Optional(T.Number({ minimum: 0, maximum: 1 })),
    /**
     * the pair model decides hits (src/cache/verify/pair-model.ts; when the embedder is the local model it was trained on);
     * false = the hand verifier alone. Both are cross-validated; the pair model has the higher held-out recall at precision 0.97
     */
    learned_decision: T.Boolean({ default: true }),
    /** operating point of the pair model for tenants without their own (probability 0..1); unset (default): the model's own, cross-validated */
    decision_threshold: T.Optional(T.Number({ minimum: 0, maximum: 1 })),
    /** alone (default): the pair model decides (behind the hard rules); with_rules: the hand verifier's accept also stands (not cross-validated) */
    learned_mode: T.Union([T.Literal("with_rules"), T.Literal("alone")], { default: "alone" }),
    /**
     * compare adapted embeddings (a learned correction of the local embedder's vectors, src/cache/adapter.ts) in the index,
     * similarity_threshold, the §4.7 stages and the decision. Off by default: measured on unseen questions it cost 2 points of
     * precision and doubled multi-turn false hits (issue 25), and the thresholds are cross-validated on raw vectors
     */
    adapt_embeddings: T.Boolean({ default: false }),
    /** default time-to-live of a cache entry, seconds (0 = never expires) */
    ttl_secs: T.Integer({ default: 86_400, minimum: 0 }),
    /** per-tenant entry bound; coldest entries are evicted beyond it */
    max_entries_per_tenant: T.Integer({ default: 100_000, minimum: 1 }),
    /** directory for saved vector index files (defaults next to the database) */
    index_dir: T.Optional(T.String()),
    /** vector index scalar type: f16 halves index memory, i8 quarters it (for ~1M-entry tenants; BENCHMARKS.md); the hit decision uses exact f32 cosines either way */
    index_quantization: T.Union([T.Literal("f32"), T.Literal("f16"), T.Literal("i8")], { default: "f16" }),
    /** HNSW graph degree (M): 32 keeps recall at 100k–1M entries (BENCHMARKS.md "Index at scale"); changing it rebuilds saved indexes */
    index_m: T.Integer({ default: 16, minimum: 4, maximum: 64 }),
    /** HNSW build breadth (efConstruction) */
    index_ef_construction: T.Integer({ default: 128, minimum: 8, maximum: 4096 }),
    /** HNSW search breadth (efSearch): higher = better recall on large tenants, slower search (BENCHMARKS.md) */
    index_ef_search: T.Integer({ default: 128, minimum: 8, maximum: 4096 }),
    /** wrong-hit budget: "wrong" feedback tightens a tenant's operating point until its reported wrong-hit rate is under this */
    max_wrong_hit_rate: T.Number({ default: 0.01, minimum: 0.0001, maximum: 1 }),
    /** how long concurrent identical misses wait for the first one's upstream answer */
    single_flight_wait_ms: T.Integer({ default: 30_000, minimum: 0 }),
  }),
  context_cache: Section({
    enabled: T.Boolean({ default: true }),
    stage1_threshold: T.Number({ default: 0.85, minimum: 0, maximum: 1 }),
    context_hit_threshold: T.Number({ default: 0.92, minimum: 0, maximum: 1 }),
    query_weight: T.Number({ default: 0.3, minimum: 0, maximum: 1 }),
    context_weight: T.Number({ default: 0.7, minimum: 0, maximum: 1 }),
    max_turns: T.Integer({ default: 20, minimum: 1 }),
  }),
};

export type CacheConfig = Static<(typeof CACHE_SECTIONS)["cache"]>;
export type ContextCacheConfig = Static<(typeof CACHE_SECTIONS)["context_cache"]>;

export function checkCacheConfig(cfg: { context_cache: ContextCacheConfig }, fail: (message: string) => never) {
  if (Math.abs(cfg.context_cache.query_weight + cfg.context_cache.context_weight - 1) > 1e-6)
    fail("SVC_CONTEXT_CACHE__QUERY_WEIGHT + SVC_CONTEXT_CACHE__CONTEXT_WEIGHT must add up to 1");
}
