/**
 * What the gateway needs from other domains, declared here by the caller (the composition root
 * hands in the implementations and the compiler checks they fit):
 *  - ResponseCache: the semantic response cache (src/cache implements it);
 *  - TokenMeter: charges the LLM tokens an upstream reported to the tenant's tokens/minute budget
 *    (src/ratelimit implements it);
 *  - SpendGuard: admits a request before it spends money upstream and learns what it cost
 *    (team budgets, src/identity); without one every request is admitted.
 */
import type { TokenUsage } from "../core/usage";

export interface Turn {
  role: "system" | "user" | "assistant" | "tool";
  /** plain text of the message (text parts joined; tool calls / results serialised compactly) */
  text: string;
}

/** A cacheable request in provider-neutral terms. */
export interface CacheKeyInput {
  tenantId: string;
  /** response wire family ("openai", "anthropic", "gemini", "cohere-chat", "cohere-generate"); entries never cross styles */
  style: string;
  model: string;
  /** everything besides the conversation that changes the answer (system prompt, tools, sampling parameters, ...) */
  scope: Record<string, unknown>;
  /** the conversation, oldest first, system prompt excluded (it is in scope); the last user turn is the query */
  turns: Turn[];
  /** X-Svc-Workspace-Context */
  workspaceContext?: string;
  /** X-Svc-Code-Context (parsed JSON) */
  codeContext?: unknown;
  /** session_id (chat-completions) / conversation_id: lets the cache reuse turn embeddings */
  sessionId?: string;
  /** X-Svc-Cache-Namespace / X-Svc-Cache-Min-Similarity (pipeline.ts cacheRequestHeaders) */
  namespace?: string;
  minSimilarity?: number;
  /** X-Request-ID and the caller (key id or "sub:" + subject), for POST /api/v1/cache/feedback */
  requestId?: string;
  caller?: string;
}

/** What is stored: the provider's complete non-streamed JSON response, plus accounting. */
export interface CachedPayload {
  body: unknown;
  usage: TokenUsage;
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
      /** the learned stage's probability of same meaning, when it decided the hit */
      learnedScore?: number;
      /** the operating point that decided and what set it (config, feedback, request, exact) */
      decisionPoint?: number;
      pointSource?: "config" | "feedback" | "request" | "exact";
      payload: CachedPayload;
      lookupMs: number;
    }
  | {
      hit: false;
      lookupMs: number;
      /** similarity of the nearest cached question looked at (absent when nothing was compared) */
      nearestSimilarity?: number;
      decisionPoint?: number;
      pointSource?: "config" | "feedback" | "request" | "exact";
      /** opaque state from the lookup (e.g. embeddings) that store() reuses */
      state?: unknown;
    };

export interface ResponseCache {
  /** Throws an ApiError embedding_error (503) when the embedder fails and fail-open is off. */
  lookup(input: CacheKeyInput): Promise<LookupResult>;
  /** Write after a complete, successful upstream response. Never call for errors or cut streams. */
  store(input: CacheKeyInput, payload: CachedPayload, miss?: LookupResult): Promise<void>;
  /**
   * Coalesce concurrent identical misses: one fn() runs, the others await its result (bounded wait).
   * With several replicas, a waiter on another replica answers `replay(entry)` from the stored entry.
   */
  singleFlight<T>(input: CacheKeyInput, fn: () => Promise<T>, miss?: LookupResult, replay?: (p: CachedPayload) => T): Promise<T>;
  /** Count a request that skipped the cache (X-Svc-Skip-Cache) in the cache's metrics. */
  bypassed(style: string): void;
}

export interface TokenMeter {
  chargeTokens(tenantId: string, tokens: number): void;
}

/** Who a request spends for. */
export interface Spender {
  tenantId: string;
  sub: string;
  /** the API key the request authenticated with (a virtual key may belong to a team) */
  keyId?: string;
}

export interface SpendTicket {
  /** the request is over: what it cost at list price (0 when it failed or was not sent) */
  settle(costUsd: number): void;
}

export interface SpendGuard {
  /**
   * Before a request goes upstream (a cache miss, a bypass, a forwarded call): throw an ApiError
   * to refuse it, or return a ticket the pipeline settles once with the request's cost.
   */
  admit(spender: Spender, model: string): SpendTicket | Promise<SpendTicket>;
}

/** Every request admitted, nothing tracked. */
export const NO_GUARD: SpendGuard = { admit: () => ({ settle() {} }) };
