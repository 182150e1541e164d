/**
 * Start a real gateway for a test file: fresh SQLite file in a temp dir, port 0, loopback only.
 *   const gw = await startGateway({ providers: { openai: { base_url: upstream.url } } });
 *   const token = await gw.token("tenant-a", ["WorkspaceAdmin"]);
 *   ...; await gw.stop();
 * The backend is the test file's: SQLite unless a wrapper in test/pg/ chose PostgreSQL
 * (test/helpers/backend.ts); then each gateway gets a fresh schema of the run's test cluster
 * (unless the caller's env names a database already).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { startServer, type RunningServer } from "../../src/server";
import type { AppOptions } from "../../src/app";
import { merged } from "../../src/core/objects";
import { openStorage } from "../../src/storage/open";
import type { AsyncStorage } from "../../src/storage/async";
import { Logger } from "../../src/core/log";
import { gatewayStarted, testBackend } from "./backend";
import { postgresEnv } from "./pg-gateway";

const NO_RETRIES = Object.fromEntries(["openai", "anthropic", "gemini", "cohere"].map((p) => [p, { max_retries: 0 }]));

export const TEST_JWT_SECRET = "test-secret-test-secret-test-secret";

export interface TestGateway extends RunningServer {
  dir: string;
  token(tenantId: string, permissions?: string[], sub?: string): Promise<string>;
  /** fetch relative to the gateway with an Authorization header for the token */
  api(path: string, init?: RequestInit & { token?: string; json?: unknown }): Promise<Response>;
  /** a storage of its own on this gateway's database, SQLite or PostgreSQL (reads what is written, also after the gateway closed); close it */
  reopen(): AsyncStorage;
}

/**
 * Settings for gateways that stop and start again on one database (restart tests): the SQLite
 * file in `dir` — on PostgreSQL (a test/pg/ wrapper) also one schema for all of them; their local
 * files (index snapshots) live in `dir` either way.
 */
export async function restartableEnv(dir: string): Promise<Record<string, string>> {
  const env = { SVC_STORAGE__PATH: join(dir, "svc.db") };
  return testBackend() === "postgres" ? { ...(await postgresEnv("restart")), ...env } : env;
}

export async function startGateway(overrides: Record<string, unknown> = {}, env: Record<string, string> = {}, options: AppOptions = {}): Promise<TestGateway> {
  const dir = mkdtempSync(join(tmpdir(), "svc-test-"));
  if (testBackend() === "postgres" && env.SVC_STORAGE__URL === undefined) env = { ...(await postgresEnv("http")), ...env };
  const config = loadConfig(
    { SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET, ...env },
    // rate limits are off unless a test turns them on (starter allows 10 requests/s per tenant);
    // upstream retries are off unless a test turns them on (an injected failure is then seen by the client as is)
    // /metrics renders at every scrape unless a test asks for the cached text (tests scrape right after acting)
    merged({ server: { host: "127.0.0.1", port: 0, request_log: false }, rate_limits: { enabled: false }, providers: NO_RETRIES, metrics: { render_interval_ms: 0 } }, overrides),
  );
  const logs: string[] = [];
  const running = await startServer(config, { logger: new Logger("warn", (l) => logs.push(l)), ...options });
  gatewayStarted(config.storage.url ? "postgres" : "sqlite");
  return {
    ...running,
    dir,
    token: (tenantId, permissions = [], sub) => running.ctx.tokens.sign({ tenantId, permissions, sub }),
    api: (path, init = {}) => {
      const headers = new Headers(init.headers);
      if (init.token) headers.set("authorization", `Bearer ${init.token}`);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set("content-type", "application/json");
        body = JSON.stringify(init.json);
      }
      return fetch(running.url + path, { ...init, headers, body });
    },
    reopen: () => {
      const { path, url, schema } = config.storage;
      return openStorage({ path, url, schema, poolSize: 2 });
    },
    async stop() {
      await running.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
