/**
 * Multi-turn context (doc1 §4.7).
 *
 * Fusion: the context embedding of a conversation is the recency-weighted mean of the turn
 * embeddings of the messages BEFORE the last user message (at most MAX_TURNS - 1 of them, the
 * most recent), weight CONTEXT_DECAY^age (age 0 = the message right before the query), then
 * L2-normalised. The last query is left out of the context on purpose: stage 1 already compares
 * it, and including it would make "Why is that?" after two different conversations look alike.
 *
 * Turn embeddings are reused within a session_id (a bounded LRU per tenant + session), so a
 * growing conversation only embeds its new messages.
 */
import { LRUCache } from "lru-cache";
import { l2normalize } from "../core/vectors";
import type { Turn } from "./types";

export const CONTEXT_DECAY = 0.8;

export function fuseContext(vectors: Float32Array[], dims: number, decay = CONTEXT_DECAY): Float32Array {
  const out = new Float32Array(dims);
  const n = vectors.length;
  for (let i = 0; i < n; i++) {
    const w = Math.pow(decay, n - 1 - i);
    const v = vectors[i]!;
    for (let j = 0; j < dims; j++) out[j]! += w * v[j]!;
  }
  return l2normalize(out);
}

/** The context turns used for fusion: the most recent maxTurns - 1 messages before the query. */
export function contextWindow(history: Turn[], maxTurns: number): Turn[] {
  const keep = Math.max(1, maxTurns - 1);
  return history.length > keep ? history.slice(history.length - keep) : history;
}

/** Per-session turn-embedding memory. */
export class SessionTurns {
  private readonly lru: LRUCache<string, Map<string, Float32Array>>;
  constructor(maxSessions = 10_000, private readonly maxTurnsPerSession = 64) {
    this.lru = new LRUCache({ max: maxSessions });
  }

  private key(tenantId: string, sessionId: string) {
    return `${tenantId}\u0000${sessionId}`;
  }

  get(tenantId: string, sessionId: string | undefined, text: string): Float32Array | undefined {
    if (!sessionId) return undefined;
    return this.lru.get(this.key(tenantId, sessionId))?.get(text);
  }

  set(tenantId: string, sessionId: string | undefined, text: string, v: Float32Array) {
    if (!sessionId) return;
    const k = this.key(tenantId, sessionId);
    let m = this.lru.get(k);
    if (!m) {
      m = new Map();
      this.lru.set(k, m);
    }
    if (m.size >= this.maxTurnsPerSession) m.delete(m.keys().next().value!);
    m.set(text, v);
  }

  forgetTenant(tenantId: string) {
    for (const k of this.lru.keys()) if (k.startsWith(`${tenantId}\u0000`)) this.lru.delete(k);
  }
}
