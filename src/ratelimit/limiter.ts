/**
 * Per-tenant rate limiting (doc1 §8), all state in memory of this process.
 *
 * How the group limits and the tier preset combine (docs/decisions.md):
 *  - every authenticated request is charged to the tenant's tier buckets: requests/second,
 *    requests/minute and requests/day;
 *  - a request of a group with its own limit (proxy 60/s, memory read 100/s, memory write 50/s,
 *    token exchange 10/min) is also charged to that group's bucket; other admin routes have no
 *    group bucket (tier limits only);
 *  - a request passes only if every bucket that applies has a token; then one token is taken
 *    from each (all or nothing, so a rejected request consumes nothing);
 *  - tokens/minute is charged after the upstream reports usage (chargeTokens) and may go
 *    negative; while it is negative, proxy requests are rejected.
 * JavaScript runs `enforce` to completion on one thread, so the check-and-take is exact under
 * any number of concurrent requests. Tier assignments are read from the store once per tenant
 * and cached (write-through), so the per-request cost is a few map lookups and multiplications.
 */
import type { Principal } from "../core/auth";
import { ApiError } from "../core/errors";
import type { Counter } from "../core/metrics";
import type { RequestLimiter } from "../core/kernel";
import { TokenBucket, systemClock, type Clock } from "./bucket";
import { DEFAULT_TIER, GROUP_LIMITS, TIERS, isGroup, type Group, type Tier, type TierName } from "./tiers";
import type { TierAssignment, TierAssignments } from "./store";
import type { ForTenant } from "../storage/scoped";

const EPS = 1e-9;

type LimitName = "requests_per_second" | "requests_per_minute" | "requests_per_day" | "tokens_per_minute" | Group;

interface TenantState {
  tier: TierName;
  rps: TokenBucket;
  rpm: TokenBucket;
  rpd: TokenBucket;
  tpm: TokenBucket;
  groups: Partial<Record<Group, TokenBucket>>;
}

export interface Decision {
  allowed: boolean;
  /** the request's group; undefined = tier limits only */
  group?: Group;
  /** the bucket that decided: the one that rejected, or the one with the fewest tokens left */
  limitName: LimitName;
  limit: number;
  remaining: number;
  resetSecs: number;
  retryAfterSecs: number;
}

export interface RateLimiterOptions {
  clock?: Clock;
  enabled?: boolean;
  /** rejections counter (svc_rate_limit_rejections_total) */
  rejections?: Counter;
}

export interface TenantLimits {
  tenantId: string;
  tier: TierName;
  isDefault: boolean;
  updatedAt: string | null;
  limits: Omit<Tier, "name">;
  remaining: { requestsPerSecond: number; requestsPerMinute: number; requestsPerDay: number; tokensPerMinute: number };
}

export class RateLimiter implements RequestLimiter {
  private readonly clock: Clock;
  readonly enabled: boolean;
  private readonly rejections?: Counter;
  private readonly states = new Map<string, TenantState>();
  /** write-through cache of the store: tenant -> assignment (null = default tier) */
  private readonly assignments = new Map<string, TierAssignment | null>();
  /**
   * reads of the store in flight, one per tenant; every change of the tenant's assignment removes its
   * read, so a read that started before the change does not cache its answer (a change of another
   * tenant does not concern it)
   */
  private readonly loading = new Map<string, Promise<TierAssignment | null>>();

  constructor(private readonly store: ForTenant<TierAssignments>, opts: RateLimiterOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.enabled = opts.enabled ?? true;
    this.rejections = opts.rejections;
  }

  // ---- tier assignments -------------------------------------------------------------

  /** the cached assignment of a tenant whose assignment was read (null = default tier); undefined: not read yet */
  cached(tenantId: string): TierAssignment | null | undefined {
    return this.assignments.get(tenantId);
  }

  /**
   * Read a tenant's assignment into the cache (one read however many requests wait for it). A
   * change (setTier/resetTier, or forgetAssignment from another replica) while the read is in
   * flight wins: the read's answer is then returned but not cached over it.
   */
  load(tenantId: string): Promise<TierAssignment | null> {
    const known = this.assignments.get(tenantId);
    if (known !== undefined) return Promise.resolve(known);
    let p = this.loading.get(tenantId);
    if (!p) {
      p = this.store(tenantId)
        .get()
        .then((a) => {
          const v = a ?? null;
          const unchanged = this.loading.get(tenantId) === p;
          if (unchanged) this.loading.delete(tenantId);
          if (unchanged && !this.assignments.has(tenantId)) {
            this.assignments.set(tenantId, v);
            this.retier(tenantId, v?.tier ?? DEFAULT_TIER);
          }
          return this.assignments.get(tenantId) ?? v;
        })
        .catch((e) => {
          if (this.loading.get(tenantId) === p) this.loading.delete(tenantId);
          throw e;
        });
      this.loading.set(tenantId, p);
    }
    return p;
  }

  /** A tenant's assignment (null = default tier), from the cache or the store. */
  assignment(tenantId: string): Promise<TierAssignment | null> {
    return this.load(tenantId);
  }

  /** Drop the cached assignment of a tenant (every tenant: none given): another replica changed it. */
  forgetAssignment(tenantId?: string) {
    if (tenantId === undefined) {
      this.assignments.clear();
      this.loading.clear();
    } else {
      this.assignments.delete(tenantId);
      this.loading.delete(tenantId);
    }
  }

  async tierOf(tenantId: string): Promise<TierName> {
    return (await this.load(tenantId))?.tier ?? DEFAULT_TIER;
  }

  /** the tier of a tenant whose assignment is cached (callers load it first) */
  private knownTier(tenantId: string): TierName {
    const a = this.assignments.get(tenantId);
    if (a === undefined) throw new Error(`rate limiter: the tier of tenant ${tenantId} is not loaded`);
    return a?.tier ?? DEFAULT_TIER;
  }

  /** the tier of a loaded tenant, for the shared limiter (it loads first) */
  loadedTier(tenantId: string): TierName {
    return this.knownTier(tenantId);
  }

  async setTier(tenantId: string, tier: TierName, by: string): Promise<TierAssignment> {
    const a = await this.store(tenantId).set(tier, by);
    this.loading.delete(tenantId);
    this.assignments.set(tenantId, a);
    this.retier(tenantId, tier);
    return a;
  }

  /** Back to the default tier; false if the tenant had no assignment. */
  async resetTier(tenantId: string): Promise<boolean> {
    const had = await this.store(tenantId).remove();
    this.loading.delete(tenantId);
    this.assignments.set(tenantId, null);
    this.retier(tenantId, DEFAULT_TIER);
    return had;
  }

  /** New tier buckets start full; a token debt carries over. */
  private retier(tenantId: string, tier: TierName) {
    const old = this.states.get(tenantId);
    if (!old || old.tier === tier) return;
    const fresh = this.newState(tier);
    fresh.groups = old.groups;
    const debt = old.tpm.level();
    if (debt < 0) fresh.tpm.setLevel(debt);
    this.states.set(tenantId, fresh);
  }

  private newState(tier: TierName): TenantState {
    const p = TIERS[tier];
    const c = this.clock;
    return {
      tier,
      rps: new TokenBucket(p.requestsPerSecond, 1_000, c),
      rpm: new TokenBucket(p.requestsPerMinute, 60_000, c),
      rpd: new TokenBucket(p.requestsPerDay, 86_400_000, c),
      tpm: new TokenBucket(p.tokensPerMinute, 60_000, c),
      groups: {},
    };
  }

  private state(tenantId: string): TenantState {
    let s = this.states.get(tenantId);
    if (!s) {
      s = this.newState(this.knownTier(tenantId));
      this.states.set(tenantId, s);
    }
    return s;
  }

  private groupBucket(s: TenantState, group: Group): TokenBucket {
    let b = s.groups[group];
    if (!b) {
      const g = GROUP_LIMITS[group];
      b = s.groups[group] = new TokenBucket(g.limit, g.periodMs, this.clock);
    }
    return b;
  }

  // ---- per request ------------------------------------------------------------------

  /**
   * Check and (if allowed) consume one request of `group` (undefined: tier limits only) for a
   * tenant whose assignment is loaded (`load`; `enforce` does it for an unseen tenant).
   */
  check(tenantId: string, group?: Group): Decision {
    const s = this.state(tenantId);
    const buckets: Array<[LimitName, TokenBucket]> = [
      ["requests_per_second", s.rps],
      ["requests_per_minute", s.rpm],
      ["requests_per_day", s.rpd],
    ];
    if (group) buckets.push([group, this.groupBucket(s, group)]);

    // Rejection: the failing bucket that needs the longest wait decides Retry-After.
    let failing: [LimitName, TokenBucket] | undefined;
    let waitMs = 0;
    for (const entry of buckets) {
      const w = entry[1].msUntil(1 - EPS);
      if (w > waitMs) {
        waitMs = w;
        failing = entry;
      }
    }
    if (group && GROUP_LIMITS[group].tokenDebtBlocks && s.tpm.level() < 0) {
      const w = s.tpm.msUntil(0);
      if (w > waitMs || !failing) {
        waitMs = Math.max(w, waitMs);
        failing = ["tokens_per_minute", s.tpm];
      }
    }
    if (failing) {
      const [name, b] = failing;
      return {
        allowed: false,
        group,
        limitName: name,
        limit: b.capacity,
        remaining: 0,
        resetSecs: Math.ceil(b.msUntilFull() / 1000),
        retryAfterSecs: Math.max(1, Math.ceil(waitMs / 1000)),
      };
    }
    let tightest = buckets[0]!;
    let least = Infinity;
    for (const entry of buckets) {
      entry[1].take(1);
      const left = entry[1].level();
      if (left < least) {
        least = left;
        tightest = entry;
      }
    }
    return {
      allowed: true,
      group,
      limitName: tightest[0],
      limit: tightest[1].capacity,
      remaining: Math.max(0, Math.floor(least + EPS)),
      resetSecs: Math.ceil(tightest[1].msUntilFull() / 1000),
      retryAfterSecs: 0,
    };
  }

  /**
   * The kernel's per-request check: `group` is the one the route's mount declares. Synchronous for
   * a tenant whose tier is cached (every request after its first: no promise, no database); the
   * first request of a tenant waits for one read of its assignment (shared by concurrent ones).
   */
  enforce(principal: Principal, group: string | undefined, headers: Record<string, string>): void | Promise<void> {
    if (!this.enabled) return;
    if (group !== undefined && !isGroup(group)) throw new Error(`unknown rate-limit group "${group}"`);
    const tenantId = principal.tenantId;
    // unseen (or forgotten: another replica changed it) → read it once, then decide as for a known one
    if (!this.assignments.has(tenantId)) return this.load(tenantId).then(() => this.enforce(principal, group, headers));
    const d = this.check(tenantId, group as Group | undefined);
    const h = rateHeaders(d);
    if (d.allowed) {
      Object.assign(headers, h);
      return;
    }
    this.rejections?.inc({ group: d.group ?? "admin", limit: d.limitName }); // "admin": routes with tier limits only
    throw new ApiError(
      "rate_limit_error",
      `rate limit exceeded (${d.limitName.replace(/_/g, " ")}: ${d.limit}); retry after ${d.retryAfterSecs} s`,
      { retry_after_secs: d.retryAfterSecs },
      { ...h, "retry-after": String(d.retryAfterSecs) },
    );
  }

  /** Charge LLM tokens reported by an upstream to the tenant's tokens/minute budget. */
  chargeTokens(tenantId: string, tokens: number): void {
    if (!this.enabled || !(tokens > 0)) return;
    if (this.states.has(tenantId) || this.assignments.has(tenantId)) this.state(tenantId).tpm.take(tokens);
    // a tenant never seen by enforce (a limiter that was off, or a forgotten assignment): charge once its tier is read
    else
      void this.load(tenantId)
        .then(() => this.state(tenantId).tpm.take(tokens))
        .catch(() => {}); // the database unavailable (or the tier changed meanwhile): this charge is lost, the next ones count
  }

  /** The tenant's tier, its limits and what is left right now (without consuming anything). */
  async describe(tenantId: string): Promise<TenantLimits> {
    const a = await this.load(tenantId);
    const tier = a?.tier ?? DEFAULT_TIER;
    const { name: _n, ...limits } = TIERS[tier];
    const s = this.state(tenantId);
    const left = (b: TokenBucket) => Math.floor(b.level() + EPS);
    return {
      tenantId,
      tier,
      isDefault: !a,
      updatedAt: a?.updatedAt ?? null,
      limits,
      remaining: {
        requestsPerSecond: Math.max(0, left(s.rps)),
        requestsPerMinute: Math.max(0, left(s.rpm)),
        requestsPerDay: Math.max(0, left(s.rpd)),
        tokensPerMinute: left(s.tpm),
      },
    };
  }
}

export function rateHeaders(d: Decision): Record<string, string> {
  return {
    "x-ratelimit-limit": String(d.limit),
    "x-ratelimit-remaining": String(d.remaining),
    "x-ratelimit-reset": String(d.resetSecs),
  };
}
