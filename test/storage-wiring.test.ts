/**
 * The composition root's side of the PostgreSQL move (docs/notes/postgres-plan.md, step 1):
 * SVC_STORAGE__URL is validated, an unreachable PostgreSQL fails the start (never a silent
 * SQLite), the async storage the domains get on SQLite sees the
 * same SQLite connection as the sync one, and an unavailable database answers 503 with Retry-After
 * in the envelope instead of a 500.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config";
import { createApp, createAppAsync, closeApp } from "../src/app";
import { ConfigError } from "../src/core/config";
import { Logger } from "../src/core/log";
import { DOC1, DOC2, errorResponse, toApiError } from "../src/core/errors";
import { StorageUnavailableError } from "../src/storage/errors";

const quiet = () => new Logger("error", () => {});

describe("SVC_STORAGE__URL", () => {
  test("must be a postgres:// URL (the variable is named)", () => {
    expect(() => loadConfig({ SVC_STORAGE__URL: "mysql://x/y" })).toThrow(/SVC_STORAGE__URL/);
    expect(loadConfig({ SVC_STORAGE__URL: "postgres://u:p@127.0.0.1:5432/svc" }).storage.url).toBe("postgres://u:p@127.0.0.1:5432/svc");
    expect(loadConfig({}).storage.pool_size).toBe(10);
  });

  test("an unreachable database fails the start at once, naming it (never a silent SQLite); createApp is SQLite-only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-pgwire-"));
    try {
      const env = { SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_STORAGE__URL: "postgres://u:secret-pw@127.0.0.1:1/svc", SVC_AUTH__JWT_SECRET: "x".repeat(32), SVC_IDENTITY__SSO__SECRET_KEY: Buffer.alloc(32, 1).toString("base64") };
      expect(() => createApp(loadConfig(env), { logger: quiet() })).toThrow(/createAppAsync/);
      const t0 = Date.now();
      let err: unknown;
      try {
        await createAppAsync(loadConfig(env), { logger: quiet() });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(StorageUnavailableError);
      expect(String((err as Error).message)).toContain("127.0.0.1:1/svc");
      expect(String((err as Error).message)).not.toContain("secret-pw");
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(existsSync(join(dir, "svc.db"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

test("the async storage shares the SQLite connection: a write through either is read through the other at once", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-pgwire-"));
  const app = createApp(loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "x".repeat(32) }), { logger: quiet() });
  try {
    app.db.sqlite.run("CREATE TABLE wiring_probe (tenant TEXT NOT NULL, v TEXT NOT NULL)");
    app.storage.tenant("t1").run("INSERT INTO wiring_probe (tenant, v) VALUES ($tenant, 'sync')");
    await app.data.tenant("t1").run("INSERT INTO wiring_probe (tenant, v) VALUES ($tenant, 'async')");
    expect((await app.data.tenant("t1").all<{ v: string }>("SELECT v FROM wiring_probe WHERE tenant = $tenant ORDER BY v")).map((r) => r.v)).toEqual(["async", "sync"]);
    expect(app.storage.tenant("t2").all("SELECT v FROM wiring_probe WHERE tenant = $tenant")).toEqual([]);
    expect(app.data.description).toContain("svc.db");
  } finally {
    await closeApp(app);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("an unavailable database is 503 service_unavailable with Retry-After and retry_after_secs, in each envelope", async () => {
  const e = toApiError(new StorageUnavailableError("connection refused", 3));
  expect(e.status).toBe(503);
  const r1 = errorResponse(e, DOC1);
  expect(r1.headers.get("retry-after")).toBe("3");
  expect(await r1.json()).toEqual({ error: { message: "database unavailable; retry shortly", type: "service_unavailable", retry_after_secs: 3 } });
  const r2 = errorResponse(toApiError(new StorageUnavailableError("deadline", 0.2)), DOC2);
  expect(r2.status).toBe(503);
  expect(r2.headers.get("retry-after")).toBe("1"); // at least a second
  expect(await r2.json()).toMatchObject({ type: "service_unavailable" });
});
