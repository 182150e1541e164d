/**
 * Token usage, the one vocabulary every layer uses (proxies, cache entries, prompt runs, chains,
 * usage records): input = prompt tokens, output = completion tokens. Spec responses that spell it
 * otherwise (prompt execute's `promptTokens`/`completionTokens`) are mapped at the route.
 */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

export const NO_USAGE: TokenUsage = Object.freeze({ inputTokens: 0, outputTokens: 0 });
