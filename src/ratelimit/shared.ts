/**
 * Rate limits decided together by every replica (issue 24): the same buckets and rules as the
 * in-process limiter (limiter.ts), kept in the shared store and decided by one Lua script per
 * request — every bucket of the request refilled, checked and taken together (all or nothing),
 * on Redis's clock (TIME), so replicas' clocks do not matter and N replicas allow exactly what
 * one would.
 *
 * Early refusal: a refusal from the store says how long until the failing bucket has a token;
 * tokens come back only with time, so until then this replica refuses the same tenant and group
 * from memory (no round trip) — it never allows what the store would refuse. A tier change
 * (published on the bus) clears it.
 *
 * Without the store: `closed` answers 503 service_unavailable (Retry-After 1); `open` decides on
 * this replica's in-process buckets (the single-node limiter) and counts each such decision.
 * Tokens/minute charges are sent without waiting (a lost charge in an outage is charged locally).
 */
import type { Principal } from "../core/auth";
import { ApiError } from "../core/errors";
import type { Counter } from "../core/metrics";
import { TOPICS, hotStateUnavailable, script, type Bus, type FailPolicy, type SharedStore } from "../core/hotstate";
import { RateLimiter, rateHeaders, type Decision, type TenantLimits } from "./limiter";
import { GROUP_LIMITS, TIERS, isGroup, type Group } from "./tiers";
import type { TierAssignment } from "./store";
import type { TierName } from "./tiers";

/**
 * One hash per tenant holds every bucket (fields `<bucket>:l` level, `<bucket>:t` last refill, ms on
 * Redis's clock): one HMGET, one HSET and one PEXPIRE per request. An absent field is a full bucket;
 * the hash expires a day after its last write (the longest period), when every bucket is full again.
 */
const TTL_MS = 86_400_000 + 1_000;
const LEVEL = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local function level(l, at, cap, per)
  if not l then return cap end
  return math.min(cap, tonumber(l) + math.max(0, now - tonumber(at)) * cap / per)
end
`;

/**
 * KEYS: the tenant's hash. ARGV: n, checkTpm ('1' | '0'), tpm capacity, tpm period, then per bucket
 * its capacity and period (ms); HMGET fields follow as the script's fixed layout (JS sends them:
 * no string building in Lua): per bucket `<b>:l`, `<b>:t`, then `tpm:l`, `tpm:t`.
 */
const CHECK = script(`${LEVEL}
local n = tonumber(ARGV[1])
local F = 4 + 2 * n
local v = redis.call('HMGET', KEYS[1], unpack(ARGV, F + 1, F + 2 * n + 2))
local lv, worst, wait = {}, 0, 0
for i = 1, n do
  local cap, per = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
  local l = level(v[2 * i - 1], v[2 * i], cap, per)
  lv[i] = l
  if l < 1 - 1e-9 then
    local w = (1 - l) * per / cap
    if w > wait then wait = w; worst = i end
  end
end
local tcap, tper = tonumber(ARGV[3]), tonumber(ARGV[4])
if ARGV[2] == '1' then
  local l = level(v[2 * n + 1], v[2 * n + 2], tcap, tper)
  if l < 0 then
    local w = -l * tper / tcap
    if w > wait or worst == 0 then wait = math.max(w, wait); worst = n + 1; lv[n + 1] = l end
  end
end
if worst > 0 then
  local cap, per = tcap, tper
  if worst <= n then cap, per = tonumber(ARGV[3 + 2 * worst]), tonumber(ARGV[4 + 2 * worst]) end
  return {0, worst, tostring(wait), tostring((cap - lv[worst]) * per / cap)}
end
local tight, least = 1, math.huge
local set = {}
local snow = tostring(now)
for i = 1, n do
  local l = lv[i] - 1
  set[4 * i - 3] = ARGV[F + 2 * i - 1]; set[4 * i - 2] = tostring(l); set[4 * i - 1] = ARGV[F + 2 * i]; set[4 * i] = snow
  if l < least then least = l; tight = i end
end
redis.call('HSET', KEYS[1], unpack(set))
redis.call('PEXPIRE', KEYS[1], ${TTL_MS})
local cap, per = tonumber(ARGV[3 + 2 * tight]), tonumber(ARGV[4 + 2 * tight])
return {1, tight, tostring(least), tostring((cap - least) * per / cap)}
`);

/** KEYS: the tenant's hash. ARGV: tpm capacity, period, tokens. */
const CHARGE = script(`${LEVEL}
local cap, per, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], 'tpm:l', 'tpm:t')
local l = level(v[1], v[2], cap, per) - n
redis.call('HSET', KEYS[1], 'tpm:l', tostring(l), 'tpm:t', tostring(now))
redis.call('PEXPIRE', KEYS[1], ${TTL_MS})
return tostring(l)
`);

/** KEYS: the tenant's hash; ARGV: per bucket its name, capacity and period. Levels now, nothing taken. */
const PEEK = script(`${LEVEL}
local out = {}
for i = 1, #ARGV / 3 do
  local b = ARGV[3 * i - 2]
  local v = redis.call('HMGET', KEYS[1], b .. ':l', b .. ':t')
  out[i] = tostring(level(v[1], v[2], tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i])))
end
return out
`);

type Name = Decision["limitName"];

export interface SharedLimiterOptions {
  store: SharedStore;
  bus: Bus;
  fail: FailPolicy;
  prefix: string;
  rejections?: Counter;
}

export class SharedRateLimiter {
  /** tenant\0group → performance.now() until which the store refuses, with that refusal */
  private readonly refusedUntil = new Map<string, { until: number; d: Decision }>();
  private readonly rejections?: Counter;

  constructor(
    /** the in-process limiter: tier assignments, describe's shape, and the `open` fail mode */
    readonly local: RateLimiter,
    private readonly o: SharedLimiterOptions,
  ) {
    this.rejections = o.rejections;
    o.bus.subscribe(TOPICS.tier, (payload) => {
      const t = payload ? (JSON.parse(payload) as { t: string }).t : undefined;
      this.local.forgetAssignment(t);
      for (const k of this.refusedUntil.keys()) if (t === undefined || k.startsWith(`${t}\u0000`)) this.refusedUntil.delete(k);
    });
  }

  get enabled() {
    return this.local.enabled;
  }

  private key(tenantId: string) {
    return `${this.o.prefix}rl:${tenantId}`;
  }

  /** The buckets of a request: [name, field, capacity, period ms]. */
  private buckets(tenantId: string, group: Group | undefined): Array<[Name, string, number, number]> {
    const tier = TIERS[this.local.loadedTier(tenantId)];
    const out: Array<[Name, string, number, number]> = [
      ["requests_per_second", "rps", tier.requestsPerSecond, 1_000],
      ["requests_per_minute", "rpm", tier.requestsPerMinute, 60_000],
      ["requests_per_day", "rpd", tier.requestsPerDay, 86_400_000],
    ];
    if (group) out.push([group, group, GROUP_LIMITS[group].limit, GROUP_LIMITS[group].periodMs]);
    return out;
  }

  /** Check and (if allowed) take one request of `group` in the shared store: one round trip. */
  async check(tenantId: string, group?: Group): Promise<Decision> {
    const memo = `${tenantId}\u0000${group ?? ""}`;
    const early = this.refusedUntil.get(memo);
    if (early) {
      const left = early.until - performance.now();
      if (left > 0) return { ...early.d, retryAfterSecs: Math.max(1, Math.ceil(left / 1000)) };
      this.refusedUntil.delete(memo);
    }
    // the tenant's tier: cached, or read once (again if another replica changed it meanwhile)
    while (this.local.cached(tenantId) === undefined) await this.local.load(tenantId);
    const b = this.buckets(tenantId, group);
    const tier = TIERS[this.local.loadedTier(tenantId)];
    const args: Array<string | number> = [b.length, group && GROUP_LIMITS[group].tokenDebtBlocks ? "1" : "0", tier.tokensPerMinute, 60_000];
    for (const x of b) args.push(x[2], x[3]);
    for (const x of b) args.push(`${x[1]}:l`, `${x[1]}:t`);
    args.push("tpm:l", "tpm:t");
    const r = (await this.o.store.run(CHECK, [this.key(tenantId)], args)) as [number, number, string, string];
    const idx = Number(r[1]) - 1;
    const [name, , cap] = idx < b.length ? b[idx]! : (["tokens_per_minute", "tpm", tier.tokensPerMinute, 60_000] as const);
    const untilFull = Number(r[3]);
    if (Number(r[0]) === 1)
      return { allowed: true, group, limitName: name, limit: cap, remaining: Math.max(0, Math.floor(Number(r[2]) + 1e-9)), resetSecs: Math.ceil(untilFull / 1000), retryAfterSecs: 0 };
    const waitMs = Number(r[2]);
    const d: Decision = { allowed: false, group, limitName: name, limit: cap, remaining: 0, resetSecs: Math.ceil(untilFull / 1000), retryAfterSecs: Math.max(1, Math.ceil(waitMs / 1000)) };
    this.refusedUntil.set(memo, { until: performance.now() + waitMs, d });
    return d;
  }

  /** The kernel's per-request check (async: one round trip to the store). */
  enforce = async (principal: Principal, group: string | undefined, headers: Record<string, string>): Promise<void> => {
    if (!this.local.enabled) return;
    if (group !== undefined && !isGroup(group)) throw new Error(`unknown rate-limit group "${group}"`);
    // the tenant's tier first: a database that cannot answer is its own error (503), not Redis's
    if (this.local.cached(principal.tenantId) === undefined) await this.local.load(principal.tenantId);
    let d: Decision;
    try {
      d = await this.check(principal.tenantId, group);
    } catch (e) {
      if (this.o.fail.mode === "closed") throw hotStateUnavailable("the rate limit");
      this.o.fail.degraded("rate_limit", e);
      return this.local.enforce(principal, group, headers);
    }
    const h = rateHeaders(d);
    if (d.allowed) {
      Object.assign(headers, h);
      return;
    }
    this.rejections?.inc({ group: d.group ?? "admin", limit: d.limitName });
    throw new ApiError(
      "rate_limit_error",
      `rate limit exceeded (${d.limitName.replace(/_/g, " ")}: ${d.limit}); retry after ${d.retryAfterSecs} s`,
      { retry_after_secs: d.retryAfterSecs },
      { ...h, "retry-after": String(d.retryAfterSecs) },
    );
  };

  /** Charge LLM tokens to the tenant's shared tokens/minute bucket (sent, not awaited). */
  chargeTokens(tenantId: string, tokens: number): void {
    if (!this.local.enabled || !(tokens > 0)) return;
    const send = () => {
      const cap = TIERS[this.local.loadedTier(tenantId)].tokensPerMinute;
      return this.o.store.run(CHARGE, [this.key(tenantId)], [cap, 60_000, tokens]);
    };
    const sent = this.local.cached(tenantId) !== undefined ? send() : this.local.load(tenantId).then(send);
    sent.catch((e) => {
      this.o.fail.degraded("token_charge", e);
      this.local.chargeTokens(tenantId, tokens);
    });
  }

  async setTier(tenantId: string, tier: TierName, by: string): Promise<TierAssignment> {
    const a = await this.local.setTier(tenantId, tier, by);
    this.o.bus.publish(TOPICS.tier, JSON.stringify({ t: tenantId }));
    return a;
  }

  async resetTier(tenantId: string): Promise<boolean> {
    const had = await this.local.resetTier(tenantId);
    this.o.bus.publish(TOPICS.tier, JSON.stringify({ t: tenantId }));
    return had;
  }

  /** The tenant's tier and what is left in the shared buckets (nothing taken). */
  async describe(tenantId: string): Promise<TenantLimits> {
    const out = await this.local.describe(tenantId);
    const b = this.buckets(tenantId, undefined);
    const args: Array<string | number> = [];
    for (const [, field, cap, per] of b) args.push(field, cap, per);
    args.push("tpm", TIERS[out.tier].tokensPerMinute, 60_000);
    let lv: number[];
    try {
      lv = ((await this.o.store.run(PEEK, [this.key(tenantId)], args)) as string[]).map((x) => Math.floor(Number(x) + 1e-9));
    } catch (e) {
      if (this.o.fail.mode === "closed") throw hotStateUnavailable("the remaining rate limit");
      this.o.fail.degraded("rate_limit_describe", e);
      return out;
    }
    out.remaining = {
      requestsPerSecond: Math.max(0, lv[0]!),
      requestsPerMinute: Math.max(0, lv[1]!),
      requestsPerDay: Math.max(0, lv[2]!),
      tokensPerMinute: lv[3]!,
    };
    return out;
  }
}
