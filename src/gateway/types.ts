/**
 * What other domains (prompts, chains, memory) use to call a model through the gateway's own
 * pipeline — the same cache, the same upstream adapters, the provider chosen by model routing.
 */
export interface CompletionRequest {
  tenantId: string;
  model: string;
  /** chat messages; roles system | user | assistant */
  messages: Array<{ role: "system" | "user" | "assistant"; content: string }>;
  temperature?: number;
  maxTokens?: number;
  skipCache?: boolean;
  workspaceContext?: string;
  requestId?: string;
}

export interface CompletionResult {
  text: string;
  usage: { promptTokens: number; completionTokens: number };
  cacheHit: boolean;
  provider: string;
  model: string;
  durationMs: number;
}

export interface GatewayService {
  /** Throws ApiError (proxy_error, timeout_error, embedding_error, or the provider's 4xx as invalid_request_error). */
  complete(req: CompletionRequest): Promise<CompletionResult>;
}
