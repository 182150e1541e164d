import { describe, expect, test, beforeAll, afterAll, setSystemTime } from "bun:test";
import { now } from "../src/core/ids";
import { jsonDepthExceeds } from "../src/core/validation";
import { requestIdOf } from "../src/core/kernel";
import { startGateway, type TestGateway } from "./helpers/gateway";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

describe("auth token exchange", () => {
  test("valid API key -> 24h bearer token that authenticates", async () => {
    const { key } = await gw.ctx.apiKeys.create("tenant-a", "k1", ["ViewMetrics"]);
    const r = await gw.api("/api/v1/auth/token", { method: "POST", json: { apiKey: key } });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.tokenType).toBe("Bearer");
    expect(body.expiresIn).toBe(86400);
    // doc1 §5.3 "JWTs are valid for 24 hours": the token itself says so, not only the answer
    const claims = JSON.parse(Buffer.from(body.accessToken.split(".")[1], "base64url").toString());
    expect(claims.exp - claims.iat).toBe(86_400);
    expect(Math.abs(claims.iat - Date.now() / 1000)).toBeLessThan(60);
    const p = await gw.ctx.tokens.verify(body.accessToken);
    expect(p.tenantId).toBe("tenant-a");
    expect([...p.permissions]).toEqual(["ViewMetrics"]);
  });
  test("invalid key -> 401 authentication_error envelope", async () => {
    const r = await gw.api("/api/v1/auth/token", { method: "POST", json: { apiKey: "svc_nope" } });
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ error: { message: "invalid API key", type: "authentication_error" } });
  });
  test("missing field -> 400 validation_error; malformed JSON -> 400 invalid_request_error", async () => {
    const r1 = await gw.api("/api/v1/auth/token", { method: "POST", json: {} });
    expect(r1.status).toBe(400);
    expect((await r1.json()).error.type).toBe("validation_error");
    const r2 = await gw.api("/api/v1/auth/token", { method: "POST", body: "{nope", headers: { "content-type": "application/json" } });
    expect(r2.status).toBe(400);
    expect((await r2.json()).error.type).toBe("invalid_request_error");
  });
  test("revoked key no longer exchanges", async () => {
    const { key, record } = await gw.ctx.apiKeys.create("tenant-a", "k2");
    await gw.ctx.apiKeys.revoke("tenant-a", record.id);
    const r = await gw.api("/api/v1/auth/token", { method: "POST", json: { apiKey: key } });
    expect(r.status).toBe(401);
  });
  test("keys are stored hashed", async () => {
    const { key } = await gw.ctx.apiKeys.create("tenant-a", "k3");
    const rows = gw.ctx.db.all<any>("SELECT * FROM api_keys");
    expect(JSON.stringify(rows)).not.toContain(key);
  });
});

describe("errors", () => {
  test("unknown route -> 404 not_found in the doc1 envelope with X-Request-ID (401 first without a credential)", async () => {
    const anonymous = await gw.api("/nope");
    expect(anonymous.status).toBe(401);
    const r = await gw.api("/nope", { token: await gw.token("tenant-a") });
    expect(r.status).toBe(404);
    expect((await r.json()).error.type).toBe("not_found");
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
  test("valid incoming X-Request-ID is echoed", async () => {
    const id = crypto.randomUUID();
    const r = await gw.api("/nope", { headers: { "x-request-id": id } });
    expect(r.headers.get("x-request-id")).toBe(id);
  });
  test("a generated X-Request-ID is a time-ordered UUID (v7): each sorts after the one before (tables keyed by request id are appended to, not written all over)", async () => {
    const ids = Array.from({ length: 2000 }, () => requestIdOf(new Request("http://svc.test/v1/models")));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    const served = await gw.api("/nope", { token: await gw.token("tenant-a") });
    expect(served.headers.get("x-request-id")! > ids.at(-1)!).toBe(true);
  });
});

describe("validation messages", () => {
  test("an out-of-range query parameter is named in the 400 message", async () => {
    const token = await gw.token("tenant-a");
    const r = await gw.api("/api/v1/prompts?pageSize=500", { token });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({
      error: { message: "query field 'pageSize': Expected integer to be less or equal to 100", type: "validation_error" },
    });
  });
});

describe("validation messages say what was expected", () => {
  test("enum-like unions list the allowed values; coerced integers name the type and range", async () => {
    const admin = await gw.token("tenant-a", ["ManageConfig", "ViewMetrics"]);
    const r1 = await gw.api("/api/v1/rate-limits/tenant-a", { token: admin, method: "PUT", json: { tier: "gold" } });
    expect(r1.status).toBe(400);
    expect(await r1.json()).toEqual({ error: { message: `body field 'tier': Expected one of "starter", "pro", "enterprise"`, type: "validation_error" } });
    const r2 = await gw.api("/api/v1/prompts?page=2.5", { token: admin });
    expect(r2.status).toBe(400);
    expect(await r2.json()).toEqual({ error: { message: "query field 'page': Expected an integer from 1 to 2147483647", type: "validation_error" } });
  });
  test("an offset or page beyond what the database can bind is 400 validation_error, not 500", async () => {
    const admin = await gw.token("tenant-a", ["ManageConfig", "ViewMetrics"]);
    for (const path of ["/api/v1/cache/entries?offset=99999999999999999999", "/api/v1/prompts?page=99999999999999999"]) {
      const r = await gw.api(path, { token: admin });
      expect(`${path} -> ${r.status}`).toBe(`${path} -> 400`);
      expect(((await r.json()) as any).error.type).toBe("validation_error");
    }
  });
});

describe("body limit", () => {
  // a body streamed without Content-Length (chunked) must hit the same limit as a declared one
  const chunked = (bytes: number) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        const chunk = new TextEncoder().encode(JSON.stringify({ apiKey: "x".repeat(bytes) }));
        c.enqueue(chunk);
        c.close();
      },
    });
  let small: TestGateway;
  let auth: Record<string, string>;
  beforeAll(async () => {
    small = await startGateway({ server: { max_body_bytes: 4096 } });
    auth = { authorization: `Bearer ${await small.token("tenant-small")}` };
  });
  afterAll(() => small.stop());

  // (each domain's own envelope on 413 is checked for every route by the fuzz suite, test/fuzz)
  for (const path of ["/api/v1/auth/token", "/v1/chat/completions", "/api/v1/prompts"]) {
    test(`chunked body over the limit -> 413 in the envelope of ${path}`, async () => {
      const r = await fetch(small.url + path, { method: "POST", body: chunked(10_000), headers: { "content-type": "application/json", ...auth } });
      expect(r.status).toBe(413);
      expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      const err = (await r.json()).error;
      expect(err.type).toBe("invalid_request_error");
      expect(err.message).toBe("request body exceeds 4096 bytes");
    });
  }
  // a declared Content-Length far above the limit used to be answered by Bun itself (bare 413,
  // empty body, no X-Request-ID) once it passed Bun's own backstop limit
  for (const path of ["/api/v1/auth/token", "/v1/chat/completions", "/v1/messages", "/api/v1/prompts", "/api/v1/chains"]) {
    test(`declared body 50x the limit -> 413 in the envelope of ${path}`, async () => {
      const r = await fetch(small.url + path, { method: "POST", body: "x".repeat(200_000), headers: { "content-type": "application/json", ...auth } });
      expect(r.status).toBe(413);
      expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      const body = (await r.json()) as any;
      expect(body.error).toEqual({ type: "invalid_request_error", message: "request body exceeds 4096 bytes" });
      expect(Object.keys(body)).toEqual(["error"]);
    });
  }
  test("a 413 on a native proxy route is counted in /metrics like any other response", async () => {
    const count = async () => {
      const line = (await (await small.api("/metrics")).text()).split("\n").find((l) => l.startsWith('svc_http_requests_total{method="POST",route="/v1/chat/completions",status="413"}'));
      return line ? Number(line.split(" ").pop()) : 0;
    };
    const before = await count();
    await fetch(small.url + "/v1/chat/completions", { method: "POST", body: chunked(10_000), headers: { "content-type": "application/json", ...auth } });
    expect(await count()).toBe(before + 1);
  });
  test("without a credential an oversize body is answered 401 before it is read (authentication comes first)", async () => {
    for (const path of ["/v1/chat/completions", "/api/v1/prompts"]) {
      const r = await fetch(small.url + path, { method: "POST", body: "x".repeat(200_000), headers: { "content-type": "application/json" } });
      expect(`${path} ${r.status}`).toBe(`${path} 401`);
    }
  });
  test("chunked body under the limit is served normally", async () => {
    const r = await fetch(small.url + "/api/v1/auth/token", { method: "POST", body: chunked(100), headers: { "content-type": "application/json" } });
    expect(r.status).toBe(401); // parsed and checked: the key is just not valid
  });
});

describe("storage", () => {
  const { mkdtempSync, rmSync } = require("node:fs") as typeof import("node:fs");
  const { join } = require("node:path") as typeof import("node:path");
  const { tmpdir } = require("node:os") as typeof import("node:os");
  const { Db } = require("../src/storage/db") as typeof import("../src/storage/db");
  const { TenantDb } = require("../src/storage/scoped") as typeof import("../src/storage/scoped");
  const set = (migrations: import("../src/storage/migrations").Migration[]) => [{ domain: "t", migrations }];
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), "svc-storage-"));
    dirs.push(d);
    return d;
  };
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  test("pragmas: WAL, busy_timeout 5000, synchronous NORMAL (new and existing file), foreign keys", () => {
    const path = join(tmp(), "svc.db");
    for (let i = 0; i < 2; i++) {
      const db = new Db(path, []); // opened with its (here: no) migrations
      expect(db.sqlite.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(db.sqlite.query("PRAGMA busy_timeout").get()).toEqual({ timeout: 5000 });
      expect(db.sqlite.query("PRAGMA synchronous").get()).toEqual({ synchronous: 1 });
      expect(db.sqlite.query("PRAGMA foreign_keys").get()).toEqual({ foreign_keys: 1 });
      db.close();
    }
  });

  test("migrations: applied in id order once, recorded, a new one applied on the next open; a failing one rolls back", () => {
    const path = join(tmp(), "svc.db");
    const order: string[] = [];
    const m = (id: string, sql: string) => ({ id, up: (d: import("bun:sqlite").Database) => (order.push(id), d.run(sql)) });
    const first = [m("0002_t_b", "ALTER TABLE t ADD COLUMN b TEXT"), m("0001_t_create", "CREATE TABLE t (a TEXT)")];
    let db = new Db(path, set(first));
    expect(order).toEqual(["0001_t_create", "0002_t_b"]);
    expect(db.appliedMigrations()).toEqual(["t/0001_t_create", "t/0002_t_b"]);
    db.run("INSERT INTO t (a, b) VALUES ('x', 'y')");
    db.close();

    const more = [...first, m("0003_t_c", "ALTER TABLE t ADD COLUMN c TEXT")];
    db = new Db(path, set(more));
    expect(order).toEqual(["0001_t_create", "0002_t_b", "0003_t_c"]); // old ones not re-run
    expect(db.get("SELECT a, b, c FROM t")).toEqual({ a: "x", b: "y", c: null });
    expect(db.pendingMigrations()).toEqual([]);
    db.close();

    const broken = [...more, { id: "0004_t_broken", up: "CREATE TABLE u (x TEXT); INSERT INTO nowhere VALUES (1);" }];
    expect(() => new Db(path, set(broken))).toThrow();
    db = new Db(path, set(more));
    expect(db.appliedMigrations()).not.toContain("t/0004_t_broken");
    expect(db.get("SELECT name FROM sqlite_master WHERE name = 'u'")).toBeUndefined(); // rolled back whole
    db.close();
  });

  test("migration ids: NNNN_<what> unique within each domain, recorded as <domain>/<id>", async () => {
    const { loadConfig } = await import("../src/config");
    const { createApp, closeApp } = await import("../src/app");
    const { Logger } = await import("../src/core/log");
    const app = createApp(loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_AUTH__JWT_SECRET: "x".repeat(32) }), { logger: new Logger("error") });
    try {
      const recorded: string[] = ["core/0001_secrets"];
      for (const d of app.domains) {
        const ids = d.migrations.map((m) => m.id);
        expect(new Set(ids).size).toBe(ids.length);
        for (const id of ids) expect(id).toMatch(/^\d{4}_[a-z0-9_]+$/);
        recorded.push(...ids.map((id) => `${d.name}/${id}`));
      }
      expect(app.db.appliedMigrations().sort()).toEqual(recorded.sort());
    } finally {
      await closeApp(app);
    }
  });

  test("a database written by the build before namespaced ids (683d91c) opens with every row and runs no migration again", async () => {
    const { copyFileSync } = require("node:fs") as typeof import("node:fs");
    const fixture = require("./fixtures/main-683d91c.json") as { tenant: string; apiKey: string; promptId: string; legacyMigrations: string[] };
    const dir = tmp();
    copyFileSync(join(import.meta.dir, "fixtures/main-683d91c.db"), join(dir, "svc.db"));
    const { loadConfig } = await import("../src/config");
    const { createApp, closeApp } = await import("../src/app");
    const { Logger } = await import("../src/core/log");
    const app = createApp(loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "x".repeat(32) }), { logger: new Logger("error") });
    try {
      const applied = app.db.appliedMigrations();
      for (const legacy of fixture.legacyMigrations) expect(applied).toContain(legacy); // kept as history
      expect(app.db.pendingMigrations()).toEqual([]);
      const count = (table: string) => app.db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)!.n;
      expect({ keys: count("api_keys"), prompts: count("prompts"), versions: count("prompt_versions"), folders: count("prompt_folders"), chains: count("prompt_chains"), cache: count("cache_entries"), usage: count("usage_records"), tiers: count("rate_limit_tiers") }).toEqual({
        keys: 1,
        prompts: 1,
        versions: 2,
        folders: 1,
        chains: 1,
        cache: 2,
        usage: 2,
        tiers: 1,
      });
      // and the data is usable through the services: the old key authenticates, the prompt reads
      expect(await app.apiKeys.verify(fixture.apiKey)).toMatchObject({ tenantId: fixture.tenant, via: "api_key" });
      expect(await app.prompts.prompts.get({ tenantId: fixture.tenant, sub: "t" }, fixture.promptId)).toMatchObject({ currentVersion: 2, template: "Hi {{name}}!" });
      expect((await app.cache.stats(fixture.tenant)).entries).toBe(2);
    } finally {
      await closeApp(app);
    }
  });

  test("tx is IMMEDIATE: it holds the write lock from the start (a second connection cannot write meanwhile)", () => {
    const path = join(tmp(), "svc.db");
    const a = new Db(path, set([{ id: "0001_t", up: "CREATE TABLE t (n INTEGER)" }]));
    const b = new Db(path, []);
    b.sqlite.run("PRAGMA busy_timeout = 0");
    a.tx(() => {
      a.get("SELECT count(*) AS n FROM t"); // a read first: a DEFERRED transaction would hold no write lock yet
      expect(() => b.run("INSERT INTO t (n) VALUES (1)")).toThrow(/locked|busy/i);
      a.run("INSERT INTO t (n) VALUES (2)");
    });
    b.run("INSERT INTO t (n) VALUES (3)");
    expect(a.all("SELECT n FROM t ORDER BY n")).toEqual([{ n: 2 }, { n: 3 }]);
    b.close();
    a.close();
  });

  test("TenantDb refuses SQL without $tenant and binds the tenant itself", () => {
    const db = new Db(":memory:", set([{ id: "0001_t", up: "CREATE TABLE t (tenant_id TEXT, v TEXT)" }]));
    const a = new TenantDb(db, "a");
    const b = new TenantDb(db, "b");
    a.run("INSERT INTO t (tenant_id, v) VALUES ($tenant, $v)", { v: "secret-a" });
    expect(() => a.all("SELECT * FROM t")).toThrow(/unscoped query/);
    // a caller cannot override the bound tenant through params
    expect(b.all("SELECT v FROM t WHERE tenant_id = $tenant", { tenant: "a" })).toEqual([]);
    expect(a.all("SELECT v FROM t WHERE tenant_id = $tenant")).toEqual([{ v: "secret-a" }]);
    db.close();
  });

  test("data survives a restart of the gateway on the same file (keys, tier assignments, jwt secret)", async () => {
    const dir = tmp();
    const { loadConfig } = await import("../src/config");
    const { startServer } = await import("../src/server");
    const { Logger } = await import("../src/core/log");
    const config = loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db") }, { server: { host: "127.0.0.1", port: 0, request_log: false } });
    const quiet = { logger: new Logger("error", () => {}) };
    let s = await startServer(config, quiet);
    const { key } = await s.ctx.apiKeys.create("persist-t", "k", ["ManageConfig", "ViewMetrics"]);
    const token = await s.ctx.tokens.sign({ tenantId: "persist-t", permissions: ["ManageConfig", "ViewMetrics"] });
    const put = await fetch(`${s.url}/api/v1/rate-limits/persist-t`, { method: "PUT", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: '{"tier":"enterprise"}' });
    expect(put.status).toBe(200);
    await s.stop();

    s = await startServer(config, quiet); // generated jwt secret is read back from the data dir
    try {
      const get = await fetch(`${s.url}/api/v1/rate-limits/persist-t`, { headers: { authorization: `Bearer ${token}` } });
      expect(get.status).toBe(200);
      expect(((await get.json()) as any).tier).toBe("enterprise");
      const ex = await fetch(`${s.url}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ apiKey: key }) });
      expect(ex.status).toBe(200);
      expect(s.ctx.db.pendingMigrations()).toEqual([]);
    } finally {
      await s.stop();
    }
  });
});

describe("jsonDepthExceeds (the depth bound before JSON.parse)", () => {
  test("64 levels pass and 65 fail, for objects, arrays and mixed nesting", () => {
    expect(jsonDepthExceeds('{"a":'.repeat(64) + "1" + "}".repeat(64), 64)).toBe(false);
    expect(jsonDepthExceeds('{"a":'.repeat(65) + "1" + "}".repeat(65), 64)).toBe(true);
    expect(jsonDepthExceeds("[".repeat(65) + "]".repeat(65), 64)).toBe(true);
    expect(jsonDepthExceeds("[".repeat(30) + '{"a":'.repeat(35) + "1" + "}".repeat(35) + "]".repeat(30), 64)).toBe(true);
  });
  test("brackets inside strings do not count, however many there are; many shallow siblings are not deep", () => {
    expect(jsonDepthExceeds(JSON.stringify({ code: "{[(".repeat(500) }), 64)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify(Array.from({ length: 500 }, () => ({ a: [1] }))), 64)).toBe(false);
  });
});

describe("now() (ISO 8601 of the current millisecond, built once per millisecond)", () => {
  test("follows the clock: the same millisecond gives the same text, the next one a new text", () => {
    try {
      setSystemTime(new Date("2026-01-02T03:04:05.006Z"));
      expect(now()).toBe("2026-01-02T03:04:05.006Z");
      expect(now()).toBe("2026-01-02T03:04:05.006Z");
      setSystemTime(new Date("2026-01-02T03:04:05.007Z"));
      expect(now()).toBe("2026-01-02T03:04:05.007Z");
      setSystemTime(new Date("2025-12-31T23:59:59.999Z"));
      expect(now()).toBe("2025-12-31T23:59:59.999Z");
    } finally {
      setSystemTime();
    }
    expect(Math.abs(Date.parse(now()) - Date.now())).toBeLessThan(1000);
  });
  test("the same text as toISOString within a second, across second, day and year boundaries, before 1970 and past 9999", () => {
    const times = [0, -1, 999, 1000, 1001, Date.parse("2026-12-31T23:59:59.998Z"), 253402300799999, 253402300800000, -62167219200001];
    // a run of close milliseconds (the usual: one second's prefix reused) and scattered ones
    for (let t = Date.parse("2026-01-02T03:04:05.990Z"), i = 0; i < 40; i++) times.push((t += i % 3));
    for (let i = 0; i < 200; i++) times.push(Math.round(Math.sin(i + 1) * 4e12));
    try {
      for (const ms of times) {
        setSystemTime(new Date(ms));
        expect(now()).toBe(new Date(ms).toISOString());
      }
    } finally {
      setSystemTime();
    }
  });
});
