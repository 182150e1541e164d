/**
 * The ratelimit domain's tier assignments over the async storage, the same tests on bun:sqlite and
 * PostgreSQL: set/get/remove and tenant isolation in the store; an assignment made through one
 * limiter read by another on a second storage (another replica) once it forgets its cached one;
 * the request path of a known tenant stays synchronous and off the database.
 */
import { beforeAll, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { FakeClock, RATELIMIT_MIGRATIONS, RateLimiter, TierStore } from "../../src/ratelimit";
import type { Principal } from "../../src/core/auth";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";

const SETS = [{ domain: "ratelimit", migrations: RATELIMIT_MIGRATIONS }];
const principal = (tenantId: string): Principal => ({ tenantId, sub: tenantId, permissions: new Set(), via: "jwt" });

eachBackend("ratelimit", (b) => {
  let s: AsyncStorage;
  let other: AsyncStorage;
  beforeAll(async () => {
    s = await b.open();
    await s.migrate(SETS);
    other = await b.open();
  }, SETUP_TIMEOUT);

  test("set, get, overwrite and remove a tenant's tier; other tenants see none of it", async () => {
    const a = new TierStore(s.tenant("ta"));
    expect(await a.get()).toBeUndefined();
    const set = await a.set("pro", "admin-1");
    expect(set).toMatchObject({ tenantId: "ta", tier: "pro", updatedBy: "admin-1" });
    expect(await new TierStore(other.tenant("ta")).get()).toEqual(set);
    expect((await a.set("enterprise", "admin-2")).tier).toBe("enterprise");
    expect(await a.get()).toMatchObject({ tier: "enterprise", updatedBy: "admin-2" });
    const tb = new TierStore(s.tenant("tb"));
    expect(await tb.get()).toBeUndefined();
    expect(await tb.remove()).toBe(false);
    expect(await a.remove()).toBe(true);
    expect(await a.remove()).toBe(false);
    expect(await a.get()).toBeUndefined();
  });

  test("a tier set through one replica's limiter applies on another once it forgets its cached one; a known tenant never waits", async () => {
    const clock = new FakeClock();
    let reads = 0;
    const counted = (st: AsyncStorage) => (t: string) => {
      const store = new TierStore(st.tenant(t));
      return { get: () => (reads++, store.get()), set: store.set.bind(store), remove: store.remove.bind(store) };
    };
    const la = new RateLimiter(counted(s), { clock });
    const lb = new RateLimiter(counted(other), { clock });
    await lb.enforce(principal("tr"), undefined, {});
    expect(reads).toBe(1);
    for (let i = 0; i < 5; i++) expect(lb.enforce(principal("tr"), undefined, {})).toBeUndefined(); // sync, no read
    expect(reads).toBe(1);
    await la.setTier("tr", "enterprise", "admin");
    expect(await lb.tierOf("tr")).toBe("starter"); // cached until told
    lb.forgetAssignment("tr");
    await lb.enforce(principal("tr"), undefined, {});
    expect(await lb.tierOf("tr")).toBe("enterprise");
    expect((await lb.describe("tr")).limits.requestsPerSecond).toBe(500);
    await la.resetTier("tr");
    lb.forgetAssignment();
    expect((await lb.describe("tr")).tier).toBe("starter");
  });
});
