import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { openStorage } from "../src/storage/open";
import { FakeClock, RateLimiter, TierStore, TokenBucket, TIERS, RATELIMIT_MIGRATIONS, type TierAssignments, type TierAssignment } from "../src/ratelimit";
import { ApiError, DOC1 } from "../src/core/errors";
import type { Principal } from "../src/core/auth";
import { Metrics, type Counter } from "../src/core/metrics";
import { groupOf } from "../src/core/kernel";
import { testKernel } from "./helpers/kernel";
import { startGateway, type TestGateway } from "./helpers/gateway";
import { startFakeUpstream } from "./fake-upstream/server";
import OpenAI from "openai";

/** In-memory store that counts reads, to prove assignments are cached. */
class MemStore {
  reads = 0;
  m = new Map<string, TierAssignment>();
  /** the limiter's view: one tenant's assignments */
  readonly forTenant = (t: string): TierAssignments => ({
    get: async () => {
      this.reads++;
      return this.m.get(t);
    },
    set: async (tier, by) => {
      const a = { tenantId: t, tier, updatedAt: new Date().toISOString(), updatedBy: by };
      this.m.set(t, a);
      return a;
    },
    remove: async () => this.m.delete(t),
  });
}

/** The mounts the gateway declares (proxies, memory, token exchange; other admin routes declare no group). */
const { kernel } = testKernel();
kernel.register({ prefix: "/v1", envelope: DOC1, rateGroup: "proxy" });
kernel.register({ prefix: "/v1beta", envelope: DOC1, rateGroup: "proxy" });
kernel.register({ prefix: "/api/v1/memory", envelope: DOC1, rateGroup: { read: "memory_read", write: "memory_write" } });
kernel.register({ prefix: "/api/v1/auth", envelope: DOC1, rateGroup: "token_exchange" });
kernel.register({ prefix: "/api/v1/rate-limits", envelope: DOC1 });
const groupFor = (method: string, path: string) => groupOf(kernel.mountOf(path), method);

const principal = (tenantId: string): Principal => ({ tenantId, sub: tenantId, permissions: new Set(), via: "jwt" });

async function run(l: RateLimiter, tenant: string, path: string, n: number, method = "POST") {
  let ok = 0;
  let last: ApiError | undefined;
  for (let i = 0; i < n; i++) {
    try {
      await l.enforce(principal(tenant), groupFor(method, path), {});
      ok++;
    } catch (e) {
      last = e as ApiError;
    }
  }
  return { ok, last };
}

describe("token bucket (fake clock)", () => {
  test("burst up to capacity, then refills at capacity/period", async () => {
    const c = new FakeClock();
    const b = new TokenBucket(60, 1000, c);
    expect(b.level()).toBe(60);
    b.take(60);
    expect(b.level()).toBe(0);
    c.advance(500);
    expect(b.level()).toBeCloseTo(30);
    c.advance(10_000);
    expect(b.level()).toBe(60); // never above capacity
    expect(b.msUntil(61)).toBeGreaterThan(0);
  });
  test("negative level (charged after the fact) recovers over time", async () => {
    const c = new FakeClock();
    const b = new TokenBucket(100, 60_000, c);
    b.take(250);
    expect(b.level()).toBe(-150);
    expect(b.msUntil(0)).toBeCloseTo(90_000);
  });
});

describe("groups", () => {
  test("the mount a path falls under and the method pick the group", async () => {
    expect(groupFor("POST", "/v1/chat/completions")).toBe("proxy");
    expect(groupFor("POST", "/v1beta/models/gemini-pro/generateContent")).toBe("proxy");
    expect(groupFor("GET", "/api/v1/memory/projects")).toBe("memory_read");
    expect(groupFor("POST", "/api/v1/memory/projects")).toBe("memory_write");
    expect(groupFor("DELETE", "/api/v1/memory/projects/x")).toBe("memory_write");
    expect(groupFor("POST", "/api/v1/auth/token")).toBe("token_exchange");
    expect(groupFor("GET", "/api/v1/rate-limits/tiers")).toBeUndefined(); // tier limits only
    expect(groupFor("GET", "/v1x")).toBeUndefined();
  });
  test("an unknown group name is a programming error, not a silent pass", async () => {
    const l = new RateLimiter(new MemStore().forTenant, { clock: new FakeClock() });
    expect(() => l.enforce(principal("a"), "memroy_read", {})).toThrow(/unknown rate-limit group/);
  });
});

describe("limiter (fake clock)", () => {
  test("starter tier: 10 requests/second on admin routes, then 429 with retry_after_secs", async () => {
    const clock = new FakeClock();
    const l = new RateLimiter(new MemStore().forTenant, { clock });
    const r = await run(l, "a", "/api/v1/rate-limits/tiers", 25, "GET");
    expect(r.ok).toBe(10);
    expect(r.last!.status).toBe(429);
    expect(r.last!.type).toBe("rate_limit_error");
    expect(r.last!.extra).toEqual({ retry_after_secs: 1 });
    expect(r.last!.headers!["retry-after"]).toBe("1");
    expect(r.last!.headers!["x-ratelimit-limit"]).toBe("10");
    expect(r.last!.headers!["x-ratelimit-remaining"]).toBe("0");
    clock.advance(1000);
    expect((await run(l, "a", "/api/v1/rate-limits/tiers", 25, "GET")).ok).toBe(10);
  });
  test("enterprise tier: the proxy group's 60/s is the binding limit (exactly 60 of 100)", async () => {
    const clock = new FakeClock();
    const store = new MemStore();
    const l = new RateLimiter(store.forTenant, { clock });
    await l.setTier("e", "enterprise", "test");
    expect((await run(l, "e", "/v1/chat/completions", 100)).ok).toBe(60);
    clock.advance(500); // half a second refills 30
    expect((await run(l, "e", "/v1/chat/completions", 100)).ok).toBe(30);
  });
  test("memory read 100/s and write 50/s are separate buckets", async () => {
    const clock = new FakeClock();
    const l = new RateLimiter(new MemStore().forTenant, { clock });
    await l.setTier("e", "enterprise", "test");
    expect((await run(l, "e", "/api/v1/memory/projects", 80)).ok).toBe(50);
    expect((await run(l, "e", "/api/v1/memory/projects", 150, "GET")).ok).toBe(100);
  });
  test("token exchange: 10 per minute even on enterprise; retry after ~6 s", async () => {
    const clock = new FakeClock();
    const l = new RateLimiter(new MemStore().forTenant, { clock });
    await l.setTier("e", "enterprise", "test");
    const r = await run(l, "e", "/api/v1/auth/token", 20);
    expect(r.ok).toBe(10);
    expect(r.last!.extra!.retry_after_secs).toBe(6);
    clock.advance(6000);
    expect((await run(l, "e", "/api/v1/auth/token", 5)).ok).toBe(1);
  });
  test("requests per day of the tier binds a tenant that sends at its full rate for long", async () => {
    const clock = new FakeClock();
    const l = new RateLimiter(new MemStore().forTenant, { clock });
    // starter: 10/s and 10,000/day. At 10/s the day bucket is empty after ~1000 s.
    let ok = 0;
    let last: ApiError | undefined;
    for (let s = 0; s < 1500; s++) {
      const r = await run(l, "d", "/api/v1/x", 10);
      ok += r.ok;
      last = r.last ?? last;
      clock.advance(1000);
    }
    const refill = (1500 * 10_000) / 86_400; // what the day bucket regains in 1500 s
    expect(ok).toBeGreaterThanOrEqual(10_000 + Math.floor(refill) - 1);
    expect(ok).toBeLessThanOrEqual(10_000 + Math.ceil(refill) + 1);
    expect(last!.message).toContain("requests per day");
    const wait = last!.extra!.retry_after_secs as number; // one request per 8.64 s
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(9);
    const d = await l.describe("d");
    expect(d.limits).toEqual({ requestsPerSecond: 10, requestsPerMinute: 600, tokensPerMinute: 100_000, requestsPerDay: 10_000 });
    expect(d.remaining.requestsPerDay).toBe(0);
  });
  test("a rejected request consumes nothing (all-or-nothing)", async () => {
    const clock = new FakeClock();
    const l = new RateLimiter(new MemStore().forTenant, { clock });
    await run(l, "a", "/api/v1/x", 10);
    const before = (await l.describe("a")).remaining.requestsPerMinute;
    await run(l, "a", "/api/v1/x", 50);
    expect((await l.describe("a")).remaining.requestsPerMinute).toBe(before);
  });
  test("tokens per minute: charged after the response, blocks proxy requests while negative", async () => {
    const clock = new FakeClock();
    const l = new RateLimiter(new MemStore().forTenant, { clock });
    await l.setTier("p", "pro", "test");
    expect((await run(l, "p", "/v1/messages", 1)).ok).toBe(1);
    l.chargeTokens("p", 1_250_000); // pro: 1,000,000 per minute -> 250,000 in debt
    const r = await run(l, "p", "/v1/messages", 1);
    expect(r.ok).toBe(0);
    expect(r.last!.message).toContain("tokens per minute");
    expect(r.last!.extra!.retry_after_secs).toBe(15); // 250k at 1M/min
    // non-proxy groups are not blocked by token debt
    expect((await run(l, "p", "/api/v1/rate-limits/tiers", 1, "GET")).ok).toBe(1);
    clock.advance(15_000);
    expect((await run(l, "p", "/v1/messages", 1)).ok).toBe(1);
  });
  test("tier assignments are read once per tenant and cached (write-through)", async () => {
    const store = new MemStore();
    const l = new RateLimiter(store.forTenant, { clock: new FakeClock() });
    await run(l, "a", "/api/v1/x", 5);
    expect(store.reads).toBe(1);
    await l.setTier("a", "pro", "x");
    await run(l, "a", "/api/v1/x", 50);
    expect(store.reads).toBe(1);
    expect(await l.tierOf("a")).toBe("pro");
    expect(store.m.get("a")!.tier).toBe("pro");
    await l.resetTier("a");
    expect(await l.tierOf("a")).toBe("starter");
    expect(store.m.has("a")).toBe(false);
  });
  test("tenants never share buckets", async () => {
    const l = new RateLimiter(new MemStore().forTenant, { clock: new FakeClock() });
    expect((await run(l, "a", "/api/v1/x", 30)).ok).toBe(10);
    expect((await run(l, "b", "/api/v1/x", 30)).ok).toBe(10);
    l.chargeTokens("a", 10_000_000);
    expect((await run(l, "b", "/v1/chat/completions", 1)).ok).toBe(0); // b's own rps bucket is empty
    expect((await l.describe("b")).remaining.tokensPerMinute).toBe(TIERS.starter.tokensPerMinute);
  });
  test("rejections are counted in the metrics", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const rejections: Counter = metrics.counter("svc_rate_limit_rejections_total", "rejections", ["group", "limit"]);
    const l = new RateLimiter(new MemStore().forTenant, { clock: new FakeClock(), rejections });
    await run(l, "a", "/v1/chat/completions", 13);
    const v = (await rejections.get()).values;
    expect(v).toEqual([{ value: 3, labels: { group: "proxy", limit: "requests_per_second" } }]);
  });
  test("disabled: everything passes", async () => {
    const l = new RateLimiter(new MemStore().forTenant, { clock: new FakeClock(), enabled: false });
    expect((await run(l, "a", "/v1/chat/completions", 100)).ok).toBe(100);
  });
  test("SQLite store persists assignments across instances", async () => {
    const storage = openStorage({ path: ":memory:" });
    await storage.migrate([{ domain: "ratelimit", migrations: RATELIMIT_MIGRATIONS }]);
    const store = (t: string) => new TierStore(storage.tenant(t));
    await new RateLimiter(store).setTier("t", "enterprise", "admin");
    expect(await new RateLimiter(store).tierOf("t")).toBe("enterprise");
    expect(await new RateLimiter(store).tierOf("other")).toBe("starter");
    await storage.close();
  });
  test("tokens charged to a tenant no request was decided for yet count once its tier is read", async () => {
    const l = new RateLimiter(new MemStore().forTenant, { clock: new FakeClock() });
    l.chargeTokens("c", 150_000);
    expect((await l.describe("c")).remaining.tokensPerMinute).toBe(-50_000); // starter: 100,000 per minute
  });
  test("a tier read that fails rejects that request (503 upstream of here) and is not cached: the next request reads again", async () => {
    const store = new MemStore();
    let down = true;
    const l = new RateLimiter((t) => ({ ...store.forTenant(t), get: () => (down ? Promise.reject(new Error("database unavailable")) : store.forTenant(t).get()) }), { clock: new FakeClock() });
    await expect(Promise.resolve(l.enforce(principal("f"), undefined, {}))).rejects.toThrow("database unavailable");
    down = false;
    await l.enforce(principal("f"), undefined, {});
    expect(l.enforce(principal("f"), undefined, {})).toBeUndefined();
  });
  test("a known tenant is decided synchronously (no promise); an unseen one waits for one read shared by concurrent requests", async () => {
    const store = new MemStore();
    const l = new RateLimiter(store.forTenant, { clock: new FakeClock() });
    const first = [0, 1, 2].map(() => l.enforce(principal("s"), "proxy", {}));
    expect(first.every((p) => p instanceof Promise)).toBe(true);
    await Promise.all(first);
    expect(store.reads).toBe(1);
    const headers: Record<string, string> = {};
    expect(l.enforce(principal("s"), "proxy", headers)).toBeUndefined();
    expect(headers["x-ratelimit-remaining"]).toBe("6"); // starter: 10/s, 4 taken
    l.forgetAssignment("s"); // another replica changed it: read again on the next request
    await store.forTenant("s").set("pro", "other replica");
    expect(l.enforce(principal("s"), "proxy", {})).toBeInstanceOf(Promise);
    expect(await l.tierOf("s")).toBe("pro");
    expect((await l.describe("s")).limits.requestsPerSecond).toBe(100); // the new tier's buckets
  });
});

describe("HTTP", () => {
  let gw: TestGateway;
  let clock: FakeClock;
  beforeAll(async () => {
    clock = new FakeClock();
    // fake clock: nothing refills while a burst is in flight
    gw = await startGateway({ rate_limits: { enabled: true } }, {}, { clock });
  });
  afterAll(() => gw.stop());

  test("100 parallel requests on a starter tenant: exactly 10 pass, the rest 429 with headers and envelope", async () => {
    const token = await gw.token("par", ["ViewMetrics"]);
    const rs = await Promise.all(Array.from({ length: 100 }, () => gw.api("/api/v1/rate-limits/tiers", { token })));
    const ok = rs.filter((r) => r.status === 200);
    const limited = rs.filter((r) => r.status === 429);
    expect(ok.length).toBe(10);
    expect(limited.length).toBe(90);
    expect(ok[0]!.headers.get("x-ratelimit-limit")).toBe("10");
    const r = limited[0]!;
    expect(r.headers.get("retry-after")).toBe("1");
    expect(r.headers.get("x-ratelimit-limit")).toBe("10");
    expect(r.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(Number(r.headers.get("x-ratelimit-reset"))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const body = ((await r.json()) as any);
    expect(body).toEqual({ error: { message: expect.any(String), type: "rate_limit_error", retry_after_secs: 1 } });
    expect(Number.isInteger(body.error.retry_after_secs)).toBe(true);
    clock.advance(1000);
    expect((await gw.api("/api/v1/rate-limits/tiers", { token })).status).toBe(200);
  });

  test("token exchange: 30 parallel exchanges by a pro tenant -> exactly 10 pass (10/min group)", async () => {
    const admin = await gw.token("tx", ["ManageConfig"]); // a fresh tenant: fresh buckets
    expect((await gw.api("/api/v1/rate-limits/tx", { token: admin, method: "PUT", json: { tier: "pro" } })).status).toBe(200);
    const { key } = await gw.ctx.apiKeys.create("tx", "k");
    const rs = await Promise.all(Array.from({ length: 30 }, () => gw.api("/api/v1/auth/token", { method: "POST", json: { apiKey: key } })));
    expect(rs.filter((r) => r.status === 200).length).toBe(10);
    const r = rs.find((r) => r.status === 429)!;
    expect(((await r.json()) as any).error.retry_after_secs).toBe(6);
  });

  test("GET /tiers is doc1 §8's preset table exactly; PUT of each tier applies its limits; DELETE returns to starter", async () => {
    const admin = await gw.token("tiers-t", ["ViewMetrics", "ManageConfig"]);
    const tiers = await gw.api("/api/v1/rate-limits/tiers", { token: admin });
    expect(tiers.status).toBe(200);
    const table = {
      starter: { requestsPerSecond: 10, requestsPerMinute: 600, tokensPerMinute: 100_000, requestsPerDay: 10_000 },
      pro: { requestsPerSecond: 100, requestsPerMinute: 6_000, tokensPerMinute: 1_000_000, requestsPerDay: 100_000 },
      enterprise: { requestsPerSecond: 500, requestsPerMinute: 30_000, tokensPerMinute: 10_000_000, requestsPerDay: 1_000_000 },
    };
    expect(await tiers.json()).toEqual({ tiers: Object.entries(table).map(([name, limits]) => ({ name, ...limits })) });
    // new tenants start on starter (§8), with no stored assignment
    const fresh = (await (await gw.api("/api/v1/rate-limits/tiers-t", { token: admin })).json()) as any;
    expect(fresh).toMatchObject({ tenantId: "tiers-t", tier: "starter", isDefault: true, updatedAt: null, limits: table.starter });
    for (const tier of ["pro", "enterprise", "starter"] as const) {
      const put = await gw.api("/api/v1/rate-limits/tiers-t", { token: admin, method: "PUT", json: { tier } });
      expect(put.status).toBe(200);
      const body = (await put.json()) as any;
      expect(body).toMatchObject({ tenantId: "tiers-t", tier, isDefault: false, limits: table[tier] });
      expect(new Date(body.updatedAt).toISOString()).toBe(body.updatedAt); // ISO 8601 UTC (§2.1)
      expect(((await (await gw.api("/api/v1/rate-limits/tiers-t", { token: admin })).json()) as any).tier).toBe(tier);
    }
    await gw.api("/api/v1/rate-limits/tiers-t", { token: admin, method: "PUT", json: { tier: "pro" } });
    // the assigned tier is what the limiter enforces: pro allows 100 requests in a second where starter allows 10
    const burst = await Promise.all(Array.from({ length: 120 }, () => gw.api("/api/v1/rate-limits/tiers", { token: admin })));
    expect(burst.filter((r) => r.status === 200).length).toBe(100);
    clock.advance(1000);
    const reset = await gw.api("/api/v1/rate-limits/tiers-t", { token: admin, method: "DELETE" });
    expect(reset.status).toBe(200);
    expect(await reset.json()).toMatchObject({ tier: "starter", isDefault: true, updatedAt: null, limits: table.starter });
    expect(((await (await gw.api("/api/v1/rate-limits", { token: admin })).json()) as any).tenants).toMatchObject([{ tenantId: "tiers-t", tier: "starter" }]);
    clock.advance(1000);
  });

  test("two tenants: neither sees nor spends the other's rate-limit state", async () => {
    const a = await gw.token("iso-a", ["ViewMetrics", "ManageConfig"]);
    const b = await gw.token("iso-b", ["ViewMetrics", "ManageConfig"]);
    expect((await gw.api("/api/v1/rate-limits/iso-a", { token: a, method: "PUT", json: { tier: "enterprise" } })).status).toBe(200);
    // b cannot read, change or reset a's assignment
    for (const method of ["GET", "PUT", "DELETE"]) {
      const r = await gw.api("/api/v1/rate-limits/iso-a", { token: b, method, json: method === "PUT" ? { tier: "starter" } : undefined });
      expect(r.status).toBe(404);
      expect(((await r.json()) as any).error.type).toBe("not_found");
    }
    const listB = ((await (await gw.api("/api/v1/rate-limits", { token: b })).json()) as any);
    expect(listB.tenants.map((t: any) => t.tenantId)).toEqual(["iso-b"]);
    expect(listB.tenants[0].tier).toBe("starter");
    // b exhausting its own bucket leaves a untouched
    const rs = await Promise.all(Array.from({ length: 30 }, () => gw.api("/api/v1/rate-limits/tiers", { token: b })));
    expect(rs.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    const ra = await gw.api("/api/v1/rate-limits/iso-a", { token: a });
    expect(ra.status).toBe(200);
    const da = ((await ra.json()) as any);
    expect(da.tier).toBe("enterprise");
    expect(da.remaining.requestsPerSecond).toBeGreaterThan(490);
  });
});

describe("HTTP: the proxy group (doc1 §8 \"Proxy API | 60 requests per second\")", () => {
  test("an enterprise tenant (500/s) gets exactly 60 proxy requests in a second; the 61st is 429 with retry_after_secs, through the SDK too", async () => {
    const clock = new FakeClock();
    const fake = await startFakeUpstream();
    const gw = await startGateway({ rate_limits: { enabled: true }, providers: { openai: { base_url: fake.url, api_key: "sk-up" } } }, {}, { clock });
    try {
      const admin = await gw.token("proxy-t", ["ManageConfig"]);
      expect((await gw.api("/api/v1/rate-limits/proxy-t", { token: admin, method: "PUT", json: { tier: "enterprise" } })).status).toBe(200);
      const token = await gw.token("proxy-t");
      const rs = await Promise.all(Array.from({ length: 80 }, () => gw.api("/v1/models", { token })));
      expect(rs.filter((r) => r.status === 200).length).toBe(60);
      const limited = rs.filter((r) => r.status === 429);
      expect(limited.length).toBe(20);
      expect(await limited[0]!.json()).toEqual({ error: { message: expect.any(String), type: "rate_limit_error", retry_after_secs: 1 } });
      expect(limited[0]!.headers.get("retry-after")).toBe("1");
      expect(limited[0]!.headers.get("x-ratelimit-limit")).toBe("60");
      const client = new OpenAI({ apiKey: token, baseURL: gw.url + "/v1", maxRetries: 0 });
      const err: any = await client.models.list().catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.RateLimitError);
      expect(err.error).toMatchObject({ type: "rate_limit_error", retry_after_secs: 1 });
      expect(fake.received("/v1/models")).toHaveLength(60); // refused requests never went upstream
      clock.advance(1000);
      expect((await client.models.list()).data.length).toBeGreaterThan(0);
    } finally {
      await gw.stop();
      await fake.stop();
    }
  });
});
