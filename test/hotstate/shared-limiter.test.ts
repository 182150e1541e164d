/**
 * The shared rate limiter in process, two "replicas" (two RedisHotState connections) on one real
 * Redis: they share buckets; a replica that was refused refuses again from memory (no round trip:
 * it answers 429 even with Redis gone) but never allows what Redis would refuse; a tier change
 * published by one clears the other's memory; open mode falls back to the local buckets and
 * counts it.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { TestRedis } from "../helpers/redis";
import { RedisHotState } from "../../src/core/redis";
import type { RedisConfig } from "../../src/core/config";
import { Logger } from "../../src/core/log";
import { Metrics } from "../../src/core/metrics";
import { RateLimiter, SharedRateLimiter } from "../../src/ratelimit";
import type { TierAssignment } from "../../src/ratelimit";
import { ApiError } from "../../src/core/errors";
import type { Principal } from "../../src/core/auth";
import { until } from "./replicas";
import { TOPICS } from "../../src/core/hotstate";

let redis: TestRedis;
const states: RedisHotState[] = [];
const log = new Logger("error");

beforeAll(async () => {
  redis = await TestRedis.start();
}, 30_000);
afterAll(async () => {
  for (const s of states) s.close();
  await redis.stop();
});

/** the tier assignments table every replica reads (the shared database) */
const tiers = new Map<string, TierAssignment>();

function replica(mode: RedisConfig["fail_mode"], metrics = new Metrics()) {
  const hs = new RedisHotState({ url: redis.url, fail_mode: mode, prefix: "t:", command_timeout_ms: 300 }, log, metrics.counter("svc_hotstate_degraded_decisions_total", "x", ["kind", "mode"]));
  states.push(hs);
  const local = new RateLimiter((t) => ({
    get: async () => tiers.get(t),
    set: async (tier, by) => {
      const a = { tenantId: t, tier, updatedAt: new Date().toISOString(), updatedBy: by };
      tiers.set(t, a);
      return a;
    },
    remove: async () => tiers.delete(t),
  }));
  return { hs, metrics, limiter: new SharedRateLimiter(local, { store: hs, bus: hs, fail: hs.fail, prefix: "t:" }) };
}

const p = (tenantId: string): Principal => ({ tenantId, sub: tenantId, permissions: new Set(), via: "jwt" });
const outcome = async (l: SharedRateLimiter, tenant: string, group?: string) => {
  try {
    await l.enforce(p(tenant), group, {});
    return 200;
  } catch (e) {
    return e instanceof ApiError ? e.status : 500;
  }
};

describe("shared rate limiter on a real Redis", () => {
  test("two replicas share the token-exchange bucket; the refused one refuses from memory with Redis gone; back with Redis", async () => {
    const a = replica("closed");
    const b = replica("closed");
    await until("both connected", async () => a.hs.ready() && b.hs.ready(), 10_000);
    const results = [];
    for (let i = 0; i < 12; i++) results.push(await outcome(i % 2 ? b.limiter : a.limiter, "ten-1", "token_exchange"));
    expect(results.filter((s) => s === 200).length).toBe(10);
    expect(results.slice(10)).toEqual([429, 429]);
    await redis.kill();
    await until("disconnected", async () => !a.hs.connected, 10_000);
    // refused before: still refused from memory (a token comes back only in 6 s)
    expect(await outcome(a.limiter, "ten-1", "token_exchange")).toBe(429);
    // never asked: no local knowledge, closed mode → 503
    expect(await outcome(a.limiter, "ten-2", "token_exchange")).toBe(503);
    await redis.spawn();
    await until("reconnected", async () => a.hs.ready(), 20_000);
    expect(await outcome(a.limiter, "ten-2", "token_exchange")).toBe(200);
  }, 60_000);

  test("a hung Redis (SIGSTOP) is a failure after command_timeout_ms, not a hung request; it resumes by itself", async () => {
    const a = replica("closed");
    await until("connected", async () => a.hs.ready(), 10_000);
    expect(await outcome(a.limiter, "ten-5")).toBe(200);
    redis.pause();
    try {
      const t0 = performance.now();
      expect(await outcome(a.limiter, "ten-5")).toBe(503);
      expect(performance.now() - t0).toBeLessThan(10_000);
    } finally {
      redis.resume();
    }
    await until("answers again", async () => (await outcome(a.limiter, "ten-5")) === 200, 10_000);
  }, 30_000);

  test("a tier change on one replica reaches the other's cached tier (bus) and its limits", async () => {
    const a = replica("closed");
    const b = replica("closed");
    await until("both connected", async () => a.hs.ready() && b.hs.ready(), 10_000);
    for (let i = 0; i < 10; i++) expect(await outcome(a.limiter, "ten-3")).toBe(200);
    expect(await outcome(b.limiter, "ten-3")).toBe(429);
    expect(await b.limiter.local.tierOf("ten-3")).toBe("starter");
    await a.limiter.setTier("ten-3", "enterprise", "admin");
    // without the message b would keep its cached "starter" for ever
    await until("b sees the new tier", async () => (await b.limiter.local.tierOf("ten-3")) === "enterprise", 5_000);
    expect(await outcome(b.limiter, "ten-3")).toBe(200);
  }, 30_000);

  test("another tenant's tier set while a tenant's tier is being read: the read still counts (describe and enforce answer, no 500)", async () => {
    const a = replica("closed");
    const b = replica("closed");
    await until("both connected", async () => a.hs.ready() && b.hs.ready(), 10_000);
    // b's read of ten-slow's assignment waits at the "database" until released
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = new SharedRateLimiter(
      new RateLimiter((t) => ({
        get: async () => (t === "ten-slow" ? (await held, undefined) : tiers.get(t)),
        set: async () => {
          throw new Error("not used");
        },
        remove: async () => false,
      })),
      { store: b.hs, bus: b.hs, fail: b.hs.fail, prefix: "t:" },
    );
    let heard = false;
    b.hs.subscribe(TOPICS.tier, (m) => (heard ||= m.includes("ten-other")));
    const described = slow.describe("ten-slow");
    const enforced = outcome(slow, "ten-slow");
    // a tier change of ANOTHER tenant reaches b over the bus while the read is in flight
    await a.limiter.setTier("ten-other", "pro", "admin");
    await until("b got the message", async () => heard, 5_000);
    release();
    expect((await described).tier).toBe("starter");
    expect(await enforced).toBe(200);
  }, 30_000);

  test("open mode: without Redis the local buckets decide, each decision counted", async () => {
    const o = replica("open");
    await until("connected", async () => o.hs.ready(), 10_000);
    await redis.kill();
    await until("disconnected", async () => !o.hs.connected, 10_000);
    const results = [];
    for (let i = 0; i < 12; i++) results.push(await outcome(o.limiter, "ten-4", "token_exchange"));
    expect(results.filter((s) => s === 200).length).toBe(10);
    expect(results.filter((s) => s === 429).length).toBe(2);
    expect(await o.metrics.render()).toContain('svc_hotstate_degraded_decisions_total{kind="rate_limit",mode="open"} 12');
    await redis.spawn();
    await until("reconnected", async () => o.hs.ready(), 20_000);
  }, 60_000);
});
