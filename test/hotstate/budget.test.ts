/**
 * The team budget guard over a real Redis, in process: admission and settle in the shared store,
 * `closed` refuses with 503 service_unavailable while Redis is down and admits again by itself
 * when it returns, `open` admits on local state and counts it. Plus the Redis test setup's
 * failure message and the fail mode's configuration check.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TestRedis, redisServerBinary, INSTALL_REDIS } from "../helpers/redis";
import { createApp, closeApp, type App } from "../../src/app";
import { loadConfig } from "../../src/config";
import { Logger } from "../../src/core/log";
import { ApiError } from "../../src/core/errors";
import { until } from "./replicas";

let redis: TestRedis;
const apps: App[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  redis = await TestRedis.start();
}, 30_000);
afterAll(async () => {
  for (const a of apps) await closeApp(a);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await redis.stop();
});

async function appWith(failMode: "closed" | "open") {
  const dir = mkdtempSync(join(tmpdir(), "svc-hot-budget-"));
  dirs.push(dir);
  const config = loadConfig({}, { storage: { path: join(dir, "svc.db") }, auth: { jwt_secret: "hot-budget-secret-hot-budget-secret" }, cache: { enabled: false }, redis: { url: redis.url, fail_mode: failMode, prefix: `${failMode}:` } });
  const app = createApp(config, { logger: new Logger("error") });
  apps.push(app);
  await until("redis ready", async () => app.hotState!.ready(), 10_000);
  const team = await app.identity.teams.create("t1", { name: "team", maxBudgetCents: 1_000 });
  const key = await app.identity.keys.create("t1", { name: "k", teamId: team.id });
  const admit = async () => {
    try {
      const ticket = await app.identity.guard.admit({ tenantId: "t1", sub: `key:${key.id}`, keyId: key.id }, "gpt-4o-mini");
      return { status: 200, ticket };
    } catch (e) {
      return { status: e instanceof ApiError ? e.status : 500, error: e as ApiError };
    }
  };
  return { app, team, admit };
}

describe("team budget guard on a real Redis", () => {
  test("closed: the spend lives in Redis; Redis down → 503 service_unavailable with Retry-After; back by itself", async () => {
    const { team, admit } = await appWith("closed");
    const first = await admit();
    expect(first.status).toBe(200);
    first.ticket!.settle(11); // 1100 cents: over the 1000-cent budget
    await until("the settle reached Redis", async () => (await admit()).status === 429, 5_000);
    const keys = (await redis.command("KEYS", ["closed:budget:*"])) as string[];
    expect(keys.length).toBe(1);
    expect(keys[0]).toContain(team.id);
    expect(Number(await redis.command("HGET", [keys[0]!, "s"]))).toBeCloseTo(11, 9);

    await redis.kill();
    const down = await admit();
    expect(down.status).toBe(503);
    expect(down.error!.type).toBe("service_unavailable");
    expect(down.error!.headers?.["retry-after"]).toBe("1");
    await redis.spawn();
    // Redis came back empty: the spend is rebuilt from the usage records (none here: admitted again)
    await until("admitted again", async () => (await admit()).status === 200, 20_000);
  }, 60_000);

  test("open: Redis down → admitted on this replica's state, counted", async () => {
    const { app, admit } = await appWith("open");
    expect((await admit()).status).toBe(200);
    await redis.kill();
    await until("disconnected", async () => !app.hotState!.connected, 10_000);
    expect((await admit()).status).toBe(200);
    expect(await app.metrics.render()).toMatch(/svc_hotstate_degraded_decisions_total\{kind="budget",mode="open"\} [1-9]/);
    await redis.spawn();
    await until("reconnected", async () => app.hotState!.ready(), 20_000);
  }, 60_000);
});

describe("setup and configuration", () => {
  test("without redis-server and not root, the setup fails naming the command to run (never a skip)", () => {
    expect(() => redisServerBinary({ path: "/nonexistent", root: false })).toThrow(INSTALL_REDIS);
  });

  test("SVC_REDIS__FAIL_MODE accepts closed or open only, named in the error", () => {
    expect(loadConfig({ SVC_REDIS__URL: "redis://127.0.0.1:6379", SVC_REDIS__FAIL_MODE: "open" }).redis).toMatchObject({ url: "redis://127.0.0.1:6379", fail_mode: "open" });
    expect(loadConfig({}).redis.fail_mode).toBe("closed");
    expect(() => loadConfig({ SVC_REDIS__FAIL_MODE: "sometimes" })).toThrow(/SVC_REDIS__FAIL_MODE/);
  });
});
