/**
 * The contract between the proxy pipeline (src/gateway) and the cache engine (src/cache).
 * Adapters describe a request in provider-neutral terms; the engine decides exact-tier keys,
 * partitions, embeddings, semantic / context matching, TTL and eviction.
 */

export interface Turn {
  role: "system" | "user" | "assistant" | "tool";
  /** plain text of the message (text parts joined; tool calls / results serialised compactly) */
  text: string;
}

export interface CacheKeyInput {
  tenantId: string;
  /** response wire family ("openai", "anthropic", "gemini", "cohere-chat", "cohere-generate"); entries never cross styles */
  style: string;
  model: string;
  /**
   * Everything besides the conversation that changes the answer: system prompt, tools,
   * tool_choice, sampling parameters (temperature, top_p, top_k, max tokens, stop, penalties...),
   * documents, connectors. The engine hashes it into the partition (bucketing temperature).
   */
  scope: Record<string, unknown>;
  /** the conversation, oldest first, system prompt excluded (it is in scope); the last user turn is the query */
  turns: Turn[];
  /** X-Svc-Workspace-Context: part of the partition */
  workspaceContext?: string;
  /** X-Svc-Code-Context (parsed JSON) */
  codeContext?: unknown;
  /** session_id (chat-completions) / conversation_id: lets the engine reuse turn embeddings */
  sessionId?: string;
}

/** What is stored: the provider's complete non-streamed JSON response, plus accounting. */
export interface CachedPayload {
  body: unknown;
  usage: { inputTokens: number; outputTokens: number };
}

export type CacheTier = "exact" | "semantic" | "l2_context";

export type LookupResult =
  | {
      hit: true;
      tier: CacheTier;
      entryId: string;
      /** query similarity (1 for exact) */
      similarity: number;
      /** stage-2 context similarity, when the context tier decided */
      contextSimilarity?: number;
      payload: CachedPayload;
      lookupMs: number;
    }
  | {
      hit: false;
      lookupMs: number;
      /** opaque state from the lookup (e.g. embeddings) that store() reuses */
      state?: unknown;
    };

export interface CacheEngine {
  /** Throws EmbeddingError (-> 503 embedding_error) when the embedder fails and fail-open is off. */
  lookup(input: CacheKeyInput): Promise<LookupResult>;
  /** Write after a complete, successful upstream response. Never call for errors or cut streams. */
  store(input: CacheKeyInput, payload: CachedPayload, miss?: LookupResult): Promise<void>;
  /** Coalesce concurrent identical misses: one fn() runs, the others await its result (bounded wait). `miss`, as for store, saves re-deriving the keys. */
  singleFlight<T>(input: CacheKeyInput, fn: () => Promise<T>, miss?: LookupResult): Promise<T>;
  /** Remove every entry of a tenant; returns how many were removed. */
  purge(tenantId: string): Promise<number>;
  /** Optional: the tenant's entry count and counters since start (used by GET /api/v1/cache/stats). */
  stats?(tenantId: string): {
    entries: number;
    lookups: number;
    hits: Record<CacheTier, number>;
    misses: number;
    stores: number;
    evictions: number;
  };
  close(): Promise<void>;
}
