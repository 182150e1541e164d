import { Type as T, type Static } from "@sinclair/typebox";
import { Section } from "../core/config";

export const EMBEDDING_SECTIONS = {
  embedding: Section({
    provider: T.Union([T.Literal("local"), T.Literal("openai")], { default: "local" }),
    base_url: T.Optional(T.String({ format: "uri" })),
    model: T.Optional(T.String()),
    api_key: T.Optional(T.String()),
    timeout_ms: T.Integer({ default: 10_000, minimum: 1 }),
    /** on embedder failure: false (default) = 503 embedding_error, true = serve uncached (X-Cache-Status MISS, nothing written, a warning logged) */
    fail_open: T.Boolean({ default: false }),
    lru_size: T.Integer({ default: 10_000, minimum: 0 }),
    /** local model implementation: "fast" (TS + a native or WASM SIMD kernel) or "tfjs" (the original TF.js graph; same vectors, slower) */
    engine: T.Union([T.Literal("fast"), T.Literal("tfjs")], { default: "fast" }),
    /** matmul kernel of the "fast" engine: auto (fastest available), native-i16 (built by npm install), wasm-i16, wasm (f32), js */
    kernel: T.Union([T.Literal("auto"), T.Literal("native-i16"), T.Literal("wasm-i16"), T.Literal("wasm"), T.Literal("js")], { default: "auto" }),
    /** threads sharing each dense product of the "fast" engine's 16-bit kernel (unset: 1; 2 uses a second core for long texts and batches) */
    threads: T.Optional(T.Integer({ minimum: 1, maximum: 16 })),
    /** model workers running batches side by side (unset: 2 on 2+ cores, else 1; the second starts when a batch had to wait) */
    workers: T.Optional(T.Integer({ minimum: 1, maximum: 8 })),
    /** while one model worker computes a batch of at least this many texts, a free one waits for this many queued texts (or for the busy one to finish) before it starts a call (unset: 8; 1 = start at once) */
    busy_batch: T.Optional(T.Integer({ minimum: 1, maximum: 64 })),
    /** run the local model in a worker thread (keeps the event loop free during inference) */
    worker: T.Boolean({ default: true }),
  }),
};

export type EmbeddingConfig = Static<(typeof EMBEDDING_SECTIONS)["embedding"]>;

/** Rules across fields of the section (the config loader runs them). */
export function checkEmbeddingConfig(cfg: { embedding: EmbeddingConfig }, fail: (message: string) => never) {
  if (cfg.embedding.provider === "openai" && !cfg.embedding.base_url) fail("SVC_EMBEDDING__BASE_URL: required when SVC_EMBEDDING__PROVIDER=openai");
  if (cfg.embedding.provider === "openai" && !cfg.embedding.model) fail("SVC_EMBEDDING__MODEL: required when SVC_EMBEDDING__PROVIDER=openai");
}
