export { RateLimiter, type Decision, type TenantLimits, type RateLimiterOptions } from "./limiter";
export { TokenBucket, FakeClock, systemClock, type Clock } from "./bucket";
export { TIERS, TIER_NAMES, DEFAULT_TIER, GROUP_LIMITS, groupOf, type TierName, type Group, type Tier } from "./tiers";
export { SqliteTierStore, RATELIMIT_MIGRATIONS, type TierStore, type TierAssignment } from "./store";
export { rateLimitRoutes } from "./routes";
