/**
 * What prompts and chains need from the gateway, declared here by the caller: one completion
 * through the gateway's pipeline (same cache, upstream chosen by model routing). The gateway's
 * GatewayService fits it; tests hand in a double.
 */
import type { TokenUsage } from "../core/usage";

export interface CompletionMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface Completion {
  tenantId: string;
  model: string;
  messages: CompletionMessage[];
  temperature?: number;
  maxTokens?: number;
  requestId?: string;
}

export interface Completed {
  text: string;
  usage: TokenUsage;
  cacheHit: boolean;
  model: string;
  durationMs: number;
}

export interface Completer {
  /** Throws ApiError (proxy_error, timeout_error, embedding_error, invalid_request_error for a provider's 4xx). */
  complete(req: Completion): Promise<Completed>;
}
