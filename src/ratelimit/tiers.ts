/** Rate-limit presets of doc1 §8: tier presets and the per-group default limits. */

export const TIER_NAMES = ["starter", "pro", "enterprise"] as const;
export type TierName = (typeof TIER_NAMES)[number];
export const DEFAULT_TIER: TierName = "starter";

export interface Tier {
  name: TierName;
  requestsPerSecond: number;
  requestsPerMinute: number;
  tokensPerMinute: number;
  requestsPerDay: number;
}

export const TIERS: Record<TierName, Tier> = {
  starter: { name: "starter", requestsPerSecond: 10, requestsPerMinute: 600, tokensPerMinute: 100_000, requestsPerDay: 10_000 },
  pro: { name: "pro", requestsPerSecond: 100, requestsPerMinute: 6_000, tokensPerMinute: 1_000_000, requestsPerDay: 100_000 },
  enterprise: { name: "enterprise", requestsPerSecond: 500, requestsPerMinute: 30_000, tokensPerMinute: 10_000_000, requestsPerDay: 1_000_000 },
};

/**
 * doc1 §8's per-group limits. A domain names its group where it mounts its routes
 * (kernel.mount({rateGroup})); routes of no group get the tier limits only. A group that spends
 * LLM tokens (`tokenDebtBlocks`) is refused while the tenant's tokens/minute budget is in debt.
 */
export const GROUP_LIMITS = {
  memory_read: { limit: 100, periodMs: 1_000, tokenDebtBlocks: false },
  memory_write: { limit: 50, periodMs: 1_000, tokenDebtBlocks: false },
  proxy: { limit: 60, periodMs: 1_000, tokenDebtBlocks: true },
  token_exchange: { limit: 10, periodMs: 60_000, tokenDebtBlocks: false },
} as const;

export type Group = keyof typeof GROUP_LIMITS;
export const isGroup = (g: string): g is Group => Object.hasOwn(GROUP_LIMITS, g);
