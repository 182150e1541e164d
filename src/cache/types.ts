/**
 * What the cache engine takes and answers. Its caller (the gateway's pipeline) declares the same
 * shapes as its port (src/gateway/ports.ts); the composition root type-checks that they match.
 * A request is described in provider-neutral terms; the engine decides exact-tier keys, partitions,
 * embeddings, semantic / context matching, TTL and eviction.
 */
import { Type, type Static } from "@sinclair/typebox";
import type { TokenUsage } from "../core/usage";

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
  /** X-Svc-Cache-Namespace: entries are found only by requests of the same namespace (part of both keys) */
  namespace?: string;
  /** X-Svc-Cache-Min-Similarity: this request's operating point (it can only raise the tenant's) */
  minSimilarity?: number;
  /** the request's X-Request-ID and API key: a hit is remembered under them for POST /api/v1/cache/feedback */
  requestId?: string;
  /** who made the request (API key id, else "sub:" + JWT subject): they may report on it */
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
      /** the operating point (cosine floor) that decided, and what set it (config, feedback, request; exact: none) */
      decisionPoint?: number;
      pointSource?: "config" | "feedback" | "request" | "exact";
      /** the question and its vector (semantic tiers), remembered for feedback */
      query?: string;
      queryVec?: Float32Array;
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

/** A tenant's cache statistics (GET /api/v1/cache/stats): entries, and counters since the tenant was loaded. */
export const CacheStatsSchema = Type.Object({
  entries: Type.Integer(),
  lookups: Type.Integer(),
  hits: Type.Object({ exact: Type.Integer(), semantic: Type.Integer(), l2_context: Type.Integer() }),
  misses: Type.Integer(),
  stores: Type.Integer(),
  evictions: Type.Integer(),
  /** wrong-hit feedback (POST /api/v1/cache/feedback): verdicts and the operating point lookups use now */
  feedback: Type.Object({
    wrong: Type.Integer(),
    right: Type.Integer(),
    point: Type.Number(),
    raisedBy: Type.Number(),
    maxWrongHitRate: Type.Number(),
  }),
});
export type CacheStats = Static<typeof CacheStatsSchema>;
