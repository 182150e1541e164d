import { ApiError } from "../core/errors";

/**
 * Embedding provider contract (the semantic cache, memory search, the MCP tool cache).
 *
 * Every vector returned by `embed` is L2-normalised, so a dot product is the
 * cosine similarity. `embed` returns one vector per input text, in input order.
 */
export interface Embedder {
  /** Stable identifier of the model, e.g. "local:use-lite-v1". Part of cache keys: vectors of different ids are not comparable. */
  readonly id: string;
  /** Vector length. */
  readonly dimensions: number;
  /** Load weights / check connectivity. Idempotent; `embed` calls it lazily if needed. */
  load(): Promise<void>;
  /** True once `load()` has completed successfully. */
  isReady(): boolean;
  /** Embed texts; resolves to L2-normalised vectors in the same order as `texts`. Throws EmbeddingError on failure. */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Release resources (worker threads, sockets). Further `embed` calls reject. */
  close(): Promise<void>;
}

/** Thrown by every embedder on failure: answered as 503 `embedding_error` (doc1 §7) wherever it surfaces. */
export class EmbeddingError extends ApiError {
  override readonly name = "EmbeddingError";
  /** the embedder's own words, without the "embedding service unavailable" prefix */
  readonly reason: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super("embedding_error", `embedding service unavailable: ${message}`);
    this.reason = message;
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

export { l2normalize, dot } from "../core/vectors";
