/**
 * List prices (USD per 1M tokens, input / output) used for the cost of what went upstream and
 * the cost a cache hit saved. Longest matching model-name prefix wins. A model with no known price
 * (a local model such as `llama3.1`, a new one) has none: it is charged nothing and reported as
 * unpriced (`/api/v1/usage` unpricedRequests, costStatus), never given an invented price. Public list prices of the providers' standard (non-batch, non-cached-input) tier,
 * checked November 2026; estimates for analytics and budgets, not billing. Operators override or
 * extend the table with `prices.overrides` (SVC_PRICES__OVERRIDES, YAML/JSON:
 * `{"my-model": {"input": 1, "output": 2}}`) without a release.
 */
export interface Price {
  input: number;
  output: number;
}

export const PRICES: Record<string, Price> = {
  // OpenAI
  "gpt-5-nano": { input: 0.05, output: 0.4 },
  "gpt-5-mini": { input: 0.25, output: 2 },
  "gpt-5-pro": { input: 15, output: 120 },
  "gpt-5": { input: 1.25, output: 10 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6 },
  "gpt-4.1": { input: 2, output: 8 },
  "gpt-4o-mini": { input: 0.15, output: 0.6 },
  "gpt-4o": { input: 2.5, output: 10 },
  "gpt-4-turbo": { input: 10, output: 30 },
  "gpt-4": { input: 30, output: 60 },
  "gpt-3.5-turbo": { input: 0.5, output: 1.5 },
  o1: { input: 15, output: 60 },
  "o1-mini": { input: 1.1, output: 4.4 },
  "o1-pro": { input: 150, output: 600 },
  o3: { input: 2, output: 8 },
  "o3-mini": { input: 1.1, output: 4.4 },
  "o3-pro": { input: 20, output: 80 },
  "o4-mini": { input: 1.1, output: 4.4 },
  "text-embedding-3-small": { input: 0.02, output: 0 },
  "text-embedding-3-large": { input: 0.13, output: 0 },
  "text-embedding-ada-002": { input: 0.1, output: 0 },
  // Anthropic
  "claude-3-haiku": { input: 0.25, output: 1.25 },
  "claude-3-5-haiku": { input: 0.8, output: 4 },
  "claude-haiku-4": { input: 1, output: 5 },
  "claude-3-5-sonnet": { input: 3, output: 15 },
  "claude-3-7-sonnet": { input: 3, output: 15 },
  "claude-sonnet-4": { input: 3, output: 15 },
  "claude-3-opus": { input: 15, output: 75 },
  "claude-opus-4": { input: 15, output: 75 },
  "claude-opus-4-5": { input: 5, output: 25 },
  // Google
  "gemini-1.5-flash": { input: 0.075, output: 0.3 },
  "gemini-1.5-pro": { input: 1.25, output: 5 },
  "gemini-2.0-flash-lite": { input: 0.075, output: 0.3 },
  "gemini-2.0-flash": { input: 0.1, output: 0.4 },
  "gemini-2.5-flash-lite": { input: 0.1, output: 0.4 },
  "gemini-2.5-flash": { input: 0.3, output: 2.5 },
  "gemini-2.5-pro": { input: 1.25, output: 10 },
  "text-embedding-004": { input: 0, output: 0 },
  "gemini-embedding": { input: 0.15, output: 0 },
  // Cohere
  "command-r7b": { input: 0.0375, output: 0.15 },
  "command-r-plus": { input: 2.5, output: 10 },
  "command-r": { input: 0.15, output: 0.6 },
  "command-a": { input: 2.5, output: 10 },
  "command-light": { input: 0.3, output: 0.6 },
  command: { input: 1, output: 2 },
  "embed-english": { input: 0.1, output: 0 },
  "embed-multilingual": { input: 0.1, output: 0 },
  "embed-v4": { input: 0.12, output: 0 },
};

/** The built-in table with the operator's overrides on top. */
export class PriceTable {
  private readonly table: Record<string, Price>;
  private readonly keys: string[];
  /** model name → its price (null: none known), for the names seen recently: every proxied request looks its model up 2-3 times */
  private readonly memo = new Map<string, Price | null>();
  constructor(overrides: Record<string, Price> = {}) {
    this.table = { ...PRICES };
    for (const [k, v] of Object.entries(overrides)) this.table[k.toLowerCase()] = v;
    this.keys = Object.keys(this.table).sort((a, b) => b.length - a.length);
  }

  /** The model's list price; undefined when none is known. */
  priceOf(model: string): Price | undefined {
    const known = this.memo.get(model);
    if (known !== undefined) return known ?? undefined;
    const m = model.toLowerCase().replace(/^models\//, "");
    let price: Price | null = null;
    for (const k of this.keys)
      if (m.startsWith(k)) {
        price = this.table[k]!;
        break;
      }
    // model names come from clients: the memo is bounded (starts over when full)
    if (this.memo.size >= 1024) this.memo.clear();
    this.memo.set(model, price);
    return price ?? undefined;
  }

  /** Whether a request of this model and size has a known cost (no tokens cost nothing whatever the model). */
  isPriced(model: string, inputTokens: number, outputTokens: number): boolean {
    return pricedAt(this.priceOf(model), inputTokens, outputTokens);
  }

  /** Estimated USD cost of a request of this size; 0 for a model with no known price (never a made-up one). */
  costOf(model: string, inputTokens: number, outputTokens: number): number {
    return costAt(this.priceOf(model), inputTokens, outputTokens);
  }
}

/** Whether a request of this size has a known cost at a price (no tokens cost nothing, priced or not). */
export function pricedAt(p: Price | undefined, inputTokens: number, outputTokens: number): boolean {
  return inputTokens + outputTokens === 0 || p !== undefined;
}

/** USD cost of a request of this size at a price (0 without one). */
export function costAt(p: Price | undefined, inputTokens: number, outputTokens: number): number {
  if (!p) return 0;
  return (inputTokens * p.input + outputTokens * p.output) / 1_000_000;
}

const BUILT_IN = new PriceTable();

export const priceOf = (model: string): Price | undefined => BUILT_IN.priceOf(model);

/** Estimated USD cost at the built-in list prices. */
export const costOf = (model: string, inputTokens: number, outputTokens: number): number => BUILT_IN.costOf(model, inputTokens, outputTokens);
