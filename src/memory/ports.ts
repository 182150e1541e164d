/**
 * What the Memory API needs from other domains, declared here by the caller:
 *  - Embedder: texts to L2-normalised vectors (the embedding domain's service);
 *  - Completer: one completion through the gateway's own pipeline (model routing, semantic cache,
 *    usage) — the intelligence answer is written through it.
 * The composition root (src/app.ts) hands both in; tests hand in doubles or the real ones.
 */
export interface Embedder {
  readonly id: string;
  readonly dimensions: number;
  embed(texts: string[]): Promise<Float32Array[]>;
}

export interface CompletionMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface Completer {
  complete(req: { tenantId: string; model: string; messages: CompletionMessage[]; temperature?: number; maxTokens?: number; requestId?: string }): Promise<{
    text: string;
    cacheHit: boolean;
    model: string;
  }>;
}
