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

/** Endpoint groups with their own per-tenant bucket; "admin" has none (tier limits only). */
export type Group = "memory_read" | "memory_write" | "proxy" | "token_exchange" | "admin";

export const GROUP_LIMITS: Record<Exclude<Group, "admin">, { limit: number; periodMs: number }> = {
  memory_read: { limit: 100, periodMs: 1_000 },
  memory_write: { limit: 50, periodMs: 1_000 },
  proxy: { limit: 60, periodMs: 1_000 },
  token_exchange: { limit: 10, periodMs: 60_000 },
};

/** The group of a request, from its path and method. */
export function groupOf(method: string, pathname: string): Group {
  if (pathname === "/v1" || pathname.startsWith("/v1/") || pathname === "/v1beta" || pathname.startsWith("/v1beta/")) return "proxy";
  if (pathname === "/api/v1/memory" || pathname.startsWith("/api/v1/memory/"))
    return method === "GET" || method === "HEAD" ? "memory_read" : "memory_write";
  if (pathname === "/api/v1/auth/token") return "token_exchange";
  return "admin";
}
