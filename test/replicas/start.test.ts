/**
 * svc on PostgreSQL in-process: it starts, migrates under the lock, refuses to start without the
 * secrets replicas must share or with different ones, names the database in /ready.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { startGateway, TEST_JWT_SECRET, type TestGateway } from "../helpers/gateway";
import { postgresEnv } from "../helpers/pg-gateway";
import { loadConfig } from "../../src/config";
import { createApp, createAppAsync, closeApp } from "../../src/app";

const T = 60_000;
const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const g of gateways) await g.stop();
});

describe("svc on PostgreSQL", () => {
  test(
    "starts, serves a key created through it, and /ready names the database",
    async () => {
      const env = await postgresEnv("start");
      const gw = await startGateway({}, env);
      gateways.push(gw);
      expect(gw.ctx.data.description).toContain("postgres");
      const admin = await gw.token("tenant-a", ["ManageKeys", "ManageConfig", "ManagePrompts"]);
      const created = await gw.api("/api/v1/virtual-keys", { method: "POST", token: admin, json: { name: "k1", permissions: ["ViewKeys"] } });
      expect(created.status).toBe(201);
      const { key } = (await created.json()) as { key: string };
      const list = await gw.api("/api/v1/virtual-keys", { token: key });
      expect(list.status).toBe(200);
      expect(JSON.stringify(await list.json())).toContain("k1");
      // /ready waits for the embedding model and the cache's index: poll it
      let ready = await gw.api("/ready");
      for (const deadline = Date.now() + 45_000; ready.status !== 200 && Date.now() < deadline; ) {
        await Bun.sleep(50);
        ready = await gw.api("/ready");
      }
      const body = (await ready.json()) as { checks: Record<string, boolean> };
      expect(ready.status, JSON.stringify(body)).toBe(200);
      expect(body.checks).toMatchObject({ database: true, migrations: true, cache: true });
      expect(() => gw.ctx.db).toThrow(/use app.data/);
    },
    T,
  );

  test(
    "refuses to start without the JWT secret and the SSO secret key, or with a JWT secret other replicas do not use",
    async () => {
      const env = await postgresEnv("secrets");
      const { SVC_IDENTITY__SSO__SECRET_KEY: _sso, ...noSso } = env;
      expect(() => createApp(loadConfig({ ...noSso, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET }))).toThrow(/SVC_IDENTITY__SSO__SECRET_KEY/);
      expect(() => createApp(loadConfig(env))).toThrow(/SVC_AUTH__JWT_SECRET/);
      expect(() => createApp(loadConfig({ ...env, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET }))).toThrow(/createAppAsync/);
      const first = await createAppAsync(loadConfig({ ...env, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET }));
      await closeApp(first);
      const again = await createAppAsync(loadConfig({ ...env, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET }));
      await closeApp(again);
      await expect(createAppAsync(loadConfig({ ...env, SVC_AUTH__JWT_SECRET: "another-secret-of-enough-length" }))).rejects.toThrow(/SVC_AUTH__JWT_SECRET differs/);
      // the same SSO key spelled in hex is the same key
      const hex = await createAppAsync(loadConfig({ ...env, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET, SVC_IDENTITY__SSO__SECRET_KEY: Buffer.from(env.SVC_IDENTITY__SSO__SECRET_KEY!, "base64").toString("hex") }));
      await closeApp(hex);
      await expect(
        createAppAsync(loadConfig({ ...env, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET, SVC_IDENTITY__SSO__SECRET_KEY: Buffer.alloc(32, 9).toString("base64") })),
      ).rejects.toThrow(/SVC_IDENTITY__SSO__SECRET_KEY differs/);
    },
    T,
  );
});
