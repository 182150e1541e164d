/**
 * Estimated list prices (USD per 1M tokens, input / output) used to estimate the cost a cache
 * hit saved. Longest matching model-name prefix wins; unknown models use DEFAULT_PRICE.
 * These are public list prices at the time of writing, rounded; they are estimates for
 * analytics, not billing. Update here when providers change prices.
 */
export interface Price {
  input: number;
  output: number;
}

export const PRICES: Record<string, Price> = {
  "gpt-4o-mini": { input: 0.15, output: 0.6 },
  "gpt-4o": { input: 2.5, output: 10 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6 },
  "gpt-4.1": { input: 2, output: 8 },
  "gpt-4-turbo": { input: 10, output: 30 },
  "gpt-4": { input: 30, output: 60 },
  "gpt-3.5-turbo": { input: 0.5, output: 1.5 },
  "gpt-5-mini": { input: 0.25, output: 2 },
  "gpt-5": { input: 1.25, output: 10 },
  o1: { input: 15, output: 60 },
  "o1-mini": { input: 1.1, output: 4.4 },
  o3: { input: 2, output: 8 },
  "o3-mini": { input: 1.1, output: 4.4 },
  "o4-mini": { input: 1.1, output: 4.4 },
  "claude-3-haiku": { input: 0.25, output: 1.25 },
  "claude-3-5-haiku": { input: 0.8, output: 4 },
  "claude-haiku-4": { input: 1, output: 5 },
  "claude-3-5-sonnet": { input: 3, output: 15 },
  "claude-3-7-sonnet": { input: 3, output: 15 },
  "claude-sonnet-4": { input: 3, output: 15 },
  "claude-3-opus": { input: 15, output: 75 },
  "claude-opus-4": { input: 15, output: 75 },
  "gemini-1.5-flash": { input: 0.075, output: 0.3 },
  "gemini-1.5-pro": { input: 1.25, output: 5 },
  "gemini-2.0-flash": { input: 0.1, output: 0.4 },
  "gemini-2.5-flash": { input: 0.3, output: 2.5 },
  "gemini-2.5-pro": { input: 1.25, output: 10 },
  "command-r-plus": { input: 2.5, output: 10 },
  "command-r": { input: 0.15, output: 0.6 },
  "command-a": { input: 2.5, output: 10 },
  command: { input: 1, output: 2 },
};

export const DEFAULT_PRICE: Price = { input: 1, output: 3 };

const KEYS = Object.keys(PRICES).sort((a, b) => b.length - a.length);

export function priceOf(model: string): Price {
  const m = model.toLowerCase().replace(/^models\//, "");
  for (const k of KEYS) if (m.startsWith(k)) return PRICES[k]!;
  return DEFAULT_PRICE;
}

/** Estimated USD cost of a request of this size. */
export function costOf(model: string, inputTokens: number, outputTokens: number): number {
  const p = priceOf(model);
  return (inputTokens * p.input + outputTokens * p.output) / 1_000_000;
}
