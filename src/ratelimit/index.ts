/**
 * Rate-limit domain (doc1 §4.8, §8): per-tenant token buckets (tier presets and the per-group
 * limits), the request limiter the kernel calls for every authenticated request, the token meter
 * the proxies charge, and the administration API under /api/v1/rate-limits. Tables: rate_limit_tiers.
 */
import type { AsyncStorage } from "../storage/async";
import type { Kernel } from "../core/kernel";
import type { Metrics } from "../core/metrics";
import type { Domain } from "../core/domain";
import type { RateLimitConfig } from "./config";
import { RateLimiter } from "./limiter";
import { TierStore, RATELIMIT_MIGRATIONS } from "./store";
import { rateLimitRoutes } from "./routes";
import type { Clock } from "./bucket";
import { SharedRateLimiter } from "./shared";
import type { TierAdmin } from "./routes";
import type { Bus, FailPolicy, SharedStore } from "../core/hotstate";

export { RateLimiter, rateHeaders, type Decision, type TenantLimits, type RateLimiterOptions } from "./limiter";
export { TokenBucket, FakeClock, systemClock, type Clock } from "./bucket";
export { TIERS, TIER_NAMES, DEFAULT_TIER, GROUP_LIMITS, type TierName, type Group, type Tier } from "./tiers";
export { TierStore, RATELIMIT_MIGRATIONS, type TierAssignment, type TierAssignments } from "./store";
export { SharedRateLimiter } from "./shared";
export { RATE_LIMIT_SECTIONS, type RateLimitConfig } from "./config";

export interface RateLimitDeps {
  storage: AsyncStorage;
  metrics: Metrics;
  config: RateLimitConfig;
  clock?: Clock;
}

/** The shared store the limits are decided in when several replicas run (absent: in process memory). */
export interface SharedLimits {
  store: SharedStore;
  bus: Bus;
  fail: FailPolicy;
  prefix: string;
}

/** The limiter alone: the kernel needs it before any domain mounts routes. */
export function createLimiter(deps: RateLimitDeps): RateLimiter;
export function createLimiter(deps: RateLimitDeps, shared: SharedLimits): SharedRateLimiter;
export function createLimiter(deps: RateLimitDeps, shared?: SharedLimits): RateLimiter | SharedRateLimiter {
  const rejections = deps.metrics.counter("svc_rate_limit_rejections_total", "Requests rejected by rate limits", ["group", "limit"]);
  const local = new RateLimiter((tenantId) => new TierStore(deps.storage.tenant(tenantId)), { enabled: deps.config.enabled, clock: deps.clock, rejections });
  return shared ? new SharedRateLimiter(local, { ...shared, rejections }) : local;
}

export function create(deps: { kernel: Kernel; limiter: TierAdmin }): Domain<TierAdmin> {
  return {
    name: "ratelimit",
    migrations: RATELIMIT_MIGRATIONS,
    routes: rateLimitRoutes(deps.kernel, deps.limiter),
    service: deps.limiter,
  };
}
