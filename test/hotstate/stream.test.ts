/**
 * The stream every replica follows (SharedLog over a real Redis, core/redis.ts): a follower starts
 * shortly before it was created (not at the stream's beginning: a change appended while it connects
 * is not skipped), reads entries in order, goes on from its position after its connection is cut (no
 * entry lost, none read twice), and resyncs — instead of silently skipping — when entries it had
 * not read are gone (Redis restarted). Also: the LRU eviction of the semantic cache is decided by
 * the database's count, so two replicas storing at once evict what is over the bound once.
 * And the start-up warning for a shared database without Redis.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { TestRedis } from "../helpers/redis";
import { RedisHotState } from "../../src/core/redis";
import { script } from "../../src/core/hotstate";
import { Logger } from "../../src/core/log";
import { Metrics } from "../../src/core/metrics";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { CACHE_MIGRATIONS } from "../../src/cache";
import { CacheStore } from "../../src/cache/store";
import { replicaWarning } from "../../src/app";
import { until } from "./replicas";
import { CacheSync, type SyncEvent } from "../../src/cache/replicas";

let redis: TestRedis;
const states: RedisHotState[] = [];
const log = new Logger("error");
const APPEND = script("return redis.call('XADD', KEYS[1], '*', 'p', ARGV[1])");

beforeAll(async () => {
  redis = await TestRedis.start();
}, 30_000);
afterAll(async () => {
  for (const s of states) s.close();
  await redis.stop();
});

function follower(stream = "log") {
  const hs = new RedisHotState({ url: redis.url, fail_mode: "closed", prefix: "s:", command_timeout_ms: 500 }, log, new Metrics().counter("x_total", "x", ["kind", "mode"]));
  states.push(hs);
  const got: string[] = [];
  let resyncs = 0;
  hs.follow(stream, (p) => got.push(p), () => resyncs++);
  return { hs, got, resyncs: () => resyncs };
}

const append = (hs: RedisHotState, p: string) => hs.run(APPEND, ["s:log"], [p]);

describe("a followed stream", () => {
  test("starts shortly before it was created, reads in order; after its connection is cut it goes on from its position: nothing lost, nothing twice", async () => {
    const w = follower();
    await until("writer connected", async () => w.hs.connected, 10_000);
    // an old entry (its id a minute back) is history; one appended just before the follower exists is not:
    // the follower connects asynchronously, and its replica may read the database meanwhile
    await redis.command("XADD", ["s:log", `${Date.now() - 60_000}-0`, "p", "old"]);
    await append(w.hs, "before");
    const f = follower();
    await until("follower placed", async () => f.hs.ready(), 10_000);
    for (let i = 0; i < 5; i++) await append(w.hs, `a${i}`);
    await until("six entries read", async () => f.got.length === 6, 5_000);
    expect(f.got).toEqual(["before", "a0", "a1", "a2", "a3", "a4"]);
    f.got.shift();
    // cut the follower's blocking connection; entries appended meanwhile are read after it reconnects
    const list = String(await redis.command("CLIENT", ["LIST"]));
    expect(list).toContain("cmd=xread");
    await redis.command("CLIENT", ["KILL", "TYPE", "normal", "SKIPME", "no"]);
    // appended at once, from a connection of their own: while the follower waits to reconnect
    for (let i = 0; i < 5; i++) await redis.command("XADD", ["s:log", "*", "p", `b${i}`]);
    await until("ten entries read", async () => f.got.length >= 10, 10_000);
    expect(f.got).toEqual(["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"]);
    expect(f.resyncs()).toBe(0);
  }, 30_000);

  test("Redis restarted (its entries gone): the follower resyncs once and follows the new stream", async () => {
    const f = follower("log2");
    await until("follower placed", async () => f.hs.ready(), 10_000);
    await f.hs.run(APPEND, ["s:log2"], ["x0"]);
    await until("x0 read", async () => f.got.includes("x0"), 5_000);
    await redis.kill();
    await redis.spawn();
    await until("follower resynced", async () => f.resyncs() === 1, 15_000);
    await until("writer reconnected", async () => (await f.hs.run(APPEND, ["s:log2"], ["y0"]).then(() => true, () => false)), 10_000);
    await until("y0 read", async () => f.got.includes("y0"), 5_000);
    expect(f.got).toEqual(["x0", "y0"]);
  }, 40_000);
});

test("a cache change Redis did not take (frozen) is sent again once it answers: the other replica applies it", async () => {
  const mk = () => {
    const hs = new RedisHotState({ url: redis.url, fail_mode: "closed", prefix: "c:", command_timeout_ms: 200 }, log, new Metrics().counter("x_total", "x", ["kind", "mode"]));
    states.push(hs);
    const got: SyncEvent[] = [];
    const sync = new CacheSync({ store: hs, log: hs, prefix: "c:" }, (e) => void got.push(e), () => {});
    return { hs, got, sync };
  };
  const a = mk();
  const b = mk();
  await until("both following", async () => a.hs.ready() && b.hs.ready(), 10_000);
  await a.sync.added("t", 1, null, "k1");
  await until("k1 applied on b", async () => b.got.length === 1, 5_000);
  redis.pause();
  try {
    await a.sync.added("t", 2, null, "k2"); // times out: kept for a retry
  } finally {
    redis.resume();
  }
  expect(a.sync.counts.appended).toBe(1);
  await until("k2 sent again", async () => a.sync.counts.appended === 2, 10_000);
  // (Redis may have run the timed-out append too: the same change twice in the stream, applied once)
  await a.sync.added("t", 3, null, "k3");
  await until("k3 applied on b", async () => b.got.some((e) => (e as any).ek === "k3"), 5_000);
  expect(b.got.map((e) => (e as any).ek)).toEqual(["k1", "k2", "k3"]);
  a.sync.close();
  b.sync.close();
}, 30_000);

describe("LRU eviction decided once for the tenant", () => {
  test("two replicas over the bound at once: the database's count decides, the second evicts nothing", async () => {
    const db = new Db(":memory:");
    db.migrate([{ domain: "cache", migrations: CACHE_MIGRATIONS }]);
    const storage = openStorage({ path: ":memory:", db });
    const a = new CacheStore(storage.tenant("t"));
    const b = new CacheStore(storage.tenant("t"));
    for (let i = 0; i < 5; i++)
      await a.insert({ id: `e${i}`, exactKey: `k${i}`, partition: null, mode: "exact", style: "openai", model: "m", queryText: null, queryVec: null, contextVec: null, contextUsers: null, codeScope: null, codeHash: null, payload: "{}", inputTokens: 1, outputTokens: 1, createdAt: i, expiresAt: null });
    // both replicas believe they are over a bound of 3 (each counted its own stores)
    expect((await a.evictOver(3)).map((r) => r.exactKey)).toEqual(["k0", "k1"]);
    expect(await b.evictOver(3)).toEqual([]);
    expect(await a.count()).toBe(3);
    db.close();
  });
});

test("start-up warning: a shared database without Redis names the per-replica limits; none with Redis or on SQLite", () => {
  const w = replicaWarning({ storage: { url: "postgres://h/svc" }, redis: { url: undefined } } as any);
  expect(w).toContain("SVC_REDIS__URL");
  expect(w).toContain("per replica");
  expect(replicaWarning({ storage: { url: "postgres://h/svc" }, redis: { url: "redis://h:6379" } } as any)).toBeUndefined();
  expect(replicaWarning({ storage: { url: undefined }, redis: { url: undefined } } as any)).toBeUndefined();
});
