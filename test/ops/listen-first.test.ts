/**
 * Listen first (issue 27): the socket listens before the app is built; GET /health is answered at
 * once with the ops route's answer, every other request waits for the app and is then served by it
 * like any other (body included). The build is held with startServer's `buildAfter` seam, so
 * "before the app is built" is a fact here, not a race.
 */
import { describe, test, expect, afterEach } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { earlyHealth, startServer, type RunningServer } from "../../src/server";
import { Logger } from "../../src/core/log";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const quiet = { logger: new Logger("error", () => {}) };

async function freePort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port!;
  await s.stop(true);
  return port;
}

/** Settled within a few event-loop turns? (a request that waits for the app is not) */
async function settled(p: Promise<unknown>, turns = 20): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < turns && !done; i++) await new Promise((r) => setTimeout(r, 5));
  return done;
}

const dirs: string[] = [];
const running: RunningServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function configFor(port: number, path?: string) {
  const dir = mkdtempSync(join(tmpdir(), "svc-listen-first-"));
  dirs.push(dir);
  return loadConfig({ SVC_STORAGE__PATH: path ?? join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "listen-first-secret-listen-first-secret" }, { server: { host: "127.0.0.1", port, request_log: false } });
}

describe("the early /health answer", () => {
  test("GET and HEAD /health only (query string ignored); anything else waits for the app", () => {
    expect(earlyHealth(new Request("http://x/health"))?.status).toBe(200);
    expect(earlyHealth(new Request("http://x/health?probe=1"))?.status).toBe(200);
    expect(earlyHealth(new Request("http://x/health", { method: "HEAD" }))?.status).toBe(200);
    for (const r of [new Request("http://x/health", { method: "POST" }), new Request("http://x/ready"), new Request("http://x/healthz"), new Request("http://x/health/x"), new Request("http://x/")])
      expect(earlyHealth(r)).toBeUndefined();
  });

  test("its answer is the app's own: same status, body, content type; X-Request-ID echoed when a UUID, a new UUID otherwise", async () => {
    const config = configFor(0);
    const s = await startServer(config, quiet);
    running.push(s);
    const given = crypto.randomUUID();
    for (const id of [given, "not-a-uuid", undefined]) {
      const headers: Record<string, string> = id ? { "x-request-id": id } : {};
      const early = earlyHealth(new Request("http://x/health", { headers }))!;
      const app = await fetch(`${s.url}/health`, { headers });
      expect(early.status).toBe(app.status);
      expect(await early.text()).toBe(await app.text());
      expect(early.headers.get("content-type")).toBe(app.headers.get("content-type"));
      for (const r of [early, app]) {
        if (id === given) expect(r.headers.get("x-request-id")).toBe(given);
        else expect(r.headers.get("x-request-id")).toMatch(UUID);
      }
    }
  });
});

describe("startServer listens before the app is built", () => {
  test("/health answers while the build is held; other requests wait, then the app serves them (a body included)", async () => {
    // a first start creates the database and an API key; the second start is the one held
    const port = await freePort();
    const config = configFor(port);
    const first = await startServer(config, quiet);
    const created = await first.ctx.apiKeys.create("lf-tenant", "k", ["ViewMetrics"]);
    await first.stop();

    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started = false;
    const starting = startServer(config, quiet, { buildAfter: held }).then((s) => {
      started = true;
      running.push(s);
      return s;
    });
    const base = `http://127.0.0.1:${port}`;
    // the socket listens before the build starts
    let health: Response | undefined;
    const deadline = Date.now() + 20_000;
    while (!health && Date.now() < deadline) health = await fetch(`${base}/health`).catch(() => undefined);
    expect(health?.status).toBe(200);
    expect(await health!.json()).toEqual({ status: "ok" });
    expect(started).toBe(false);

    const ready = fetch(`${base}/ready`);
    const exchange = fetch(`${base}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ apiKey: created.key }) });
    const unauthorized = fetch(`${base}/api/v1/cache/stats`);
    expect(await settled(Promise.race([ready, exchange, unauthorized]))).toBe(false);
    // still answered at once while those wait
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect(started).toBe(false);

    release();
    const s = await starting;
    const r = await ready;
    // the app's /ready: 200 with its checks, or 503 in the envelope while the embedder loads
    const rb = (await r.json()) as { checks?: Record<string, boolean>; error?: { type: string } };
    if (r.status === 200) expect(rb.checks?.database).toBe(true);
    else expect([r.status, rb.error?.type]).toEqual([503, "service_unavailable"]);
    const token = await exchange;
    expect(token.status).toBe(200);
    const { accessToken } = (await token.json()) as { accessToken: string };
    expect(await s.ctx.tokens.verify(accessToken)).toMatchObject({ tenantId: "lf-tenant" });
    const denied = await unauthorized;
    expect(denied.status).toBe(401);
    expect(denied.headers.get("x-request-id")).toMatch(UUID);
  }, 60_000);

  test("a build that fails rejects startServer and frees the port", async () => {
    const port = await freePort();
    const config = configFor(port, "/dev/null/cannot/svc.db");
    await expect(startServer(config, quiet)).rejects.toThrow();
    const again = Bun.serve({ hostname: "127.0.0.1", port, fetch: () => new Response("free") });
    expect(again.port).toBe(port);
    await again.stop(true);
  }, 60_000);
});
