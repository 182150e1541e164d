import { describe, expect, test, beforeAll, afterAll, setSystemTime } from "bun:test";
import { SignJWT, generateKeyPair, exportJWK } from "jose";
import { TokenService, Authenticator, hasPermission, requirePermission, extractCredential, PERMISSIONS, parsePermissions, type Principal } from "../src/core/auth";
import { ApiError } from "../src/core/errors";
import { Db } from "../src/storage/db";
import { openStorage } from "../src/storage/open";
import { createKeyService, isApiKey, KEYS_MIGRATIONS } from "../src/keys";

/** The keys domain's service over a database with its table. */
const keyService = (path: string) => {
  const db = new Db(path, [{ domain: "keys", migrations: KEYS_MIGRATIONS }]);
  return { db, keys: createKeyService(openStorage({ path, db })) };
};
const isGatewayCredential = (c: string) => isApiKey(c) || c.split(".").length === 3;

const SECRET = "unit-test-secret-unit-test-secret";
const key = new TextEncoder().encode(SECRET);

async function expectAuthError(p: Promise<unknown>, message: string) {
  try {
    await p;
    throw new Error("expected an authentication error");
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).type).toBe("authentication_error");
    expect((e as ApiError).status).toBe(401);
    expect((e as ApiError).message).toBe(message);
  }
}

describe("HS256 access tokens", () => {
  const tokens = new TokenService(SECRET);
  test("sign -> verify round trip with tenant, sub, permissions", async () => {
    const t = await tokens.sign({ tenantId: "acme", sub: "alice", permissions: ["ViewMetrics"] });
    const p = await tokens.verify(t);
    expect(p.tenantId).toBe("acme");
    expect(p.sub).toBe("alice");
    expect([...p.permissions]).toEqual(["ViewMetrics"]);
    expect(p.via).toBe("jwt");
  });
  test("expired -> 401 'access token expired'", async () => {
    const t = await new SignJWT({ tenant_id: "acme" }).setProtectedHeader({ alg: "HS256" }).setExpirationTime(Math.floor(Date.now() / 1000) - 5).sign(key);
    await expectAuthError(tokens.verify(t), "access token expired");
  });
  test("a verified token is remembered only until its exp: past it, the memo no longer answers and it is refused as expired", async () => {
    const t = await tokens.sign({ tenantId: "acme", sub: "memo" }, 60);
    expect((await tokens.verify(t)).sub).toBe("memo");
    expect(tokens.memoised(t)?.sub).toBe("memo");
    try {
      // the wall clock past exp (no waiting): the memo's lifetime is the token's, not a timer of its own
      setSystemTime(new Date(Date.now() + 61_000));
      expect(tokens.memoised(t)).toBeUndefined();
      await expectAuthError(tokens.verify(t), "access token expired");
    } finally {
      setSystemTime();
    }
  });
  test("bad signature -> 401", async () => {
    const t = await new SignJWT({ tenant_id: "acme" }).setProtectedHeader({ alg: "HS256" }).setExpirationTime("1h").sign(new TextEncoder().encode("x".repeat(40)));
    await expectAuthError(tokens.verify(t), "invalid access token");
  });
  test("missing tenant_id -> 401", async () => {
    const t = await new SignJWT({ permissions: [] }).setProtectedHeader({ alg: "HS256" }).setExpirationTime("1h").sign(key);
    await expectAuthError(tokens.verify(t), "access token has no tenant_id");
  });
  test("missing exp -> 401", async () => {
    const t = await new SignJWT({ tenant_id: "acme" }).setProtectedHeader({ alg: "HS256" }).sign(key);
    await expectAuthError(tokens.verify(t), "access token has no exp");
  });
  test("alg none / unsupported alg without JWKS -> 401", async () => {
    const header = Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url");
    const body = Buffer.from(JSON.stringify({ tenant_id: "acme", exp: 9999999999 })).toString("base64url");
    await expectAuthError(tokens.verify(`${header}.${body}.`), "invalid access token");
  });
});

describe("JWKS (RS256) access tokens", () => {
  let server: ReturnType<typeof Bun.serve>;
  let privateKey: CryptoKey;
  let tokens: TokenService;
  beforeAll(async () => {
    const pair = await generateKeyPair("RS256");
    privateKey = pair.privateKey as CryptoKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ keys: [jwk] }) });
    tokens = new TokenService(SECRET, { jwksUrl: `http://127.0.0.1:${server.port}/.well-known/jwks.json` });
  });
  afterAll(() => server.stop(true));
  test("a token signed by the JWKS key verifies", async () => {
    const t = await new SignJWT({ tenant_id: "sso-tenant", permissions: ["ManageConfig"] })
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setSubject("bob")
      .setExpirationTime("1h")
      .sign(privateKey);
    const p = await tokens.verify(t);
    expect(p.tenantId).toBe("sso-tenant");
    expect(p.sub).toBe("bob");
    expect(p.permissions.has("ManageConfig")).toBe(true);
  });
  test("a token signed by another RSA key is rejected", async () => {
    const other = await generateKeyPair("RS256");
    const t = await new SignJWT({ tenant_id: "sso-tenant" }).setProtectedHeader({ alg: "RS256", kid: "k1" }).setExpirationTime("1h").sign(other.privateKey);
    await expectAuthError(tokens.verify(t), "invalid access token");
  });
  test("HS256 tokens keep working beside the JWKS", async () => {
    const p = await tokens.verify(await tokens.sign({ tenantId: "local" }));
    expect(p.tenantId).toBe("local");
  });
});

describe("JWKS (ES256) access tokens", () => {
  let server: ReturnType<typeof Bun.serve>;
  let privateKey: CryptoKey;
  let tokens: TokenService;
  beforeAll(async () => {
    const pair = await generateKeyPair("ES256");
    privateKey = pair.privateKey as CryptoKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: "ec1", alg: "ES256", use: "sig" };
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ keys: [jwk] }) });
    tokens = new TokenService(SECRET, { jwksUrl: `http://127.0.0.1:${server.port}/.well-known/jwks.json` });
  });
  afterAll(() => server.stop(true));
  test("a token signed by the JWKS EC key verifies; another EC key, an expired token and a missing tenant are refused", async () => {
    const sign = (key: CryptoKey, claims: Record<string, unknown>, exp: string | number = "1h") => new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid: "ec1" }).setSubject("eve").setExpirationTime(exp).sign(key);
    const p = await tokens.verify(await sign(privateKey, { tenant_id: "ec-tenant", permissions: ["ViewLogs"] }));
    expect(p).toMatchObject({ tenantId: "ec-tenant", sub: "eve", via: "jwt" });
    expect(p.permissions.has("ViewLogs")).toBe(true);
    const other = await generateKeyPair("ES256");
    await expectAuthError(tokens.verify(await sign(other.privateKey as CryptoKey, { tenant_id: "ec-tenant" })), "invalid access token");
    await expectAuthError(tokens.verify(await sign(privateKey, { tenant_id: "ec-tenant" }, Math.floor(Date.now() / 1000) - 10)), "access token expired");
    await expectAuthError(tokens.verify(await sign(privateKey, { sub: "x" })), "access token has no tenant_id");
  });
});

describe("permissions", () => {
  const principal = (perms: string[]): Principal => ({ tenantId: "t", sub: "s", permissions: new Set(perms), via: "jwt" });
  test("WorkspaceAdmin implies every permission", () => {
    for (const p of PERMISSIONS) expect(hasPermission(principal(["WorkspaceAdmin"]), p)).toBe(true);
  });
  test("a permission grants only itself", () => {
    const p = principal(["ViewMetrics"]);
    expect(hasPermission(p, "ViewMetrics")).toBe(true);
    expect(hasPermission(p, "ManageConfig")).toBe(false);
    expect(() => requirePermission(p, "ManageConfig")).toThrow("missing permission ManageConfig");
    try {
      requirePermission(p, "ManageConfig");
    } catch (e) {
      expect((e as ApiError).status).toBe(403);
      expect((e as ApiError).type).toBe("authorization_error");
    }
  });
  test("parsePermissions rejects unknown names", () => {
    expect(parsePermissions("ViewMetrics, ManageConfig")).toEqual(["ViewMetrics", "ManageConfig"]);
    expect(() => parsePermissions("Root")).toThrow(/unknown permission "Root"/);
  });
});

describe("credentials and API keys", () => {
  test("the credential is found wherever an SDK puts it", () => {
    const r = (h: Record<string, string>, q = "") => new Request(`http://localhost/v1/x${q}`, { headers: h });
    expect(extractCredential(r({ authorization: "Bearer abc.def.ghi" }), "sdk", undefined, isGatewayCredential)).toBe("abc.def.ghi");
    expect(extractCredential(r({ "x-api-key": "svc_key" }), "sdk", undefined, isGatewayCredential)).toBe("svc_key");
    expect(extractCredential(r({ "x-goog-api-key": "svc_key2" }), "sdk", undefined, isGatewayCredential)).toBe("svc_key2");
    expect(extractCredential(r({}, "?key=svc_q"), "sdk", undefined, isGatewayCredential)).toBe("svc_q");
    expect(extractCredential(r({}), "sdk", undefined, isGatewayCredential)).toBeUndefined();
  });
  test("API key: create, authenticate, revoke", async () => {
    const { db, keys } = keyService(":memory:");
    const auth = new Authenticator(new TokenService(SECRET), [keys]);
    const { key, record } = await keys.create("acme", "ci", ["ViewKeys"]);
    expect(key.startsWith("svc_")).toBe(true);
    const p = await auth.authenticateCredential(key);
    expect(p).toMatchObject({ tenantId: "acme", via: "api_key", keyId: record.id });
    await keys.revoke("acme", record.id);
    await expectAuthError(auth.authenticateCredential(key), "invalid API key");
    await expectAuthError(auth.authenticateCredential(undefined), "missing credentials: send Authorization: Bearer <token>");
    await expectAuthError(auth.authenticateCredential("plain-garbage"), "invalid credentials");
    await expect(keys.revoke("other-tenant", record.id)).rejects.toThrow("api key not found");
    db.close();
  });
});

describe("CLI: svc keys create | list | revoke, svc token", () => {
  const { mkdtempSync, rmSync } = require("node:fs") as typeof import("node:fs");
  const { join, resolve } = require("node:path") as typeof import("node:path");
  const { tmpdir } = require("node:os") as typeof import("node:os");
  const ROOT = resolve(import.meta.dir, "..");
  const dir = mkdtempSync(join(tmpdir(), "svc-cli-"));
  const env = { ...process.env, SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: SECRET };
  const cli = (...args: string[]) => {
    const p = Bun.spawnSync([process.execPath, "src/main.ts", ...args], { cwd: ROOT, env });
    return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
  };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a created key is listed without its secret, authenticates, and stops working once revoked", async () => {
    const created = cli("keys", "create", "--tenant", "cli-t", "--name", "deploy", "--permissions", "ViewMetrics,ManageConfig");
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^svc_[A-Za-z0-9_-]{40,}$/);
    expect(created.stderr).toContain("shown only once");

    const listed = cli("keys", "list", "--tenant", "cli-t");
    expect(listed.code).toBe(0);
    const records = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    expect(records.length).toBe(1);
    expect(records[0]).toMatchObject({ tenantId: "cli-t", name: "deploy", permissions: ["ViewMetrics", "ManageConfig"], revokedAt: null, prefix: key.slice(0, 12) });
    expect(listed.stdout).not.toContain(key);
    expect(JSON.parse(cli("keys", "list", "--tenant", "other-t").stdout)).toEqual([]); // tenant-scoped

    const { db, keys } = keyService(join(dir, "svc.db"));
    try {
      const p = await new Authenticator(new TokenService(SECRET), [keys]).authenticateCredential(key);
      expect(p).toMatchObject({ tenantId: "cli-t", via: "api_key" });
    } finally {
      db.close();
    }

    const id = String(records[0]!.id);
    expect(cli("keys", "revoke", "--tenant", "other-t", "--id", id)).toMatchObject({ code: 1, stderr: "api key not found\n" });
    const revoked = cli("keys", "revoke", "--tenant", "cli-t", "--id", id);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(cli("keys", "list", "--tenant", "cli-t").stdout)[0].revokedAt).toEqual(expect.any(String));
    expect(cli("keys", "revoke", "--tenant", "cli-t", "--id", id)).toMatchObject({ code: 1, stderr: "api key not found\n" }); // already revoked

    const { db: db2, keys: keys2 } = keyService(join(dir, "svc.db"));
    try {
      await expectAuthError(new Authenticator(new TokenService(SECRET), [keys2]).authenticateCredential(key), "invalid API key");
    } finally {
      db2.close();
    }
  }, 60_000);

  test("bad invocations exit 1 with a message", () => {
    expect(cli("keys", "revoke", "--tenant", "cli-t").stderr).toContain("--id is required");
    // the arguments are checked before the database is looked at (nor opened, nor migrated): a usage error names the argument
    const elsewhere = { ...env, SVC_STORAGE__PATH: join(dir, "never", "svc.db") };
    for (const [args, message] of [[["keys", "revoke", "--tenant", "cli-t"], "--id is required"], [["keys", "create", "--tenant", "cli-t"], "--name is required"], [["keys", "list"], "--tenant is required"], [["keys", "create", "--tenant", "cli-t", "--name", "x", "--permissions", "Root"], 'unknown permission "Root"']] as const) {
      const p = Bun.spawnSync([process.execPath, "src/main.ts", ...args], { cwd: ROOT, env: elsewhere });
      expect({ code: p.exitCode, message: p.stderr.toString().includes(message) }).toEqual({ code: 1, message: true });
    }
    expect(require("node:fs").existsSync(join(dir, "never"))).toBe(false);
    expect(cli("keys", "create", "--tenant", "cli-t", "--name", "x", "--permissions", "Root")).toMatchObject({ code: 1 });
    expect(cli("keys", "rotate", "--tenant", "cli-t").stderr).toContain('unknown keys subcommand "rotate"');
    const tok = cli("token", "--tenant", "t", "--ttl", "forever");
    expect(tok.code).toBe(1);
    expect(tok.stderr).toContain("--ttl: expected");
  }, 60_000);

  test("svc token prints a verifiable token with the requested claims and lifetime", async () => {
    const r = cli("token", "--tenant", "cli-t", "--sub", "ops", "--permissions", "WorkspaceAdmin", "--ttl", "30m");
    expect(r.code).toBe(0);
    const token = r.stdout.trim();
    const p = await new TokenService(SECRET).verify(token);
    expect(p).toMatchObject({ tenantId: "cli-t", sub: "ops" });
    expect([...p.permissions]).toEqual(["WorkspaceAdmin"]);
    const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString());
    expect(claims.exp - claims.iat).toBe(1800);
  }, 60_000);
});

describe("API keys across processes and the token exchange's budget", () => {
  const { resolve } = require("node:path") as typeof import("node:path");
  const { join } = require("node:path") as typeof import("node:path");
  const ROOT = resolve(import.meta.dir, "..");

  test("a key revoked by another process (the CLI) stops authenticating at the running server within the documented 5 s", async () => {
    const { startGateway, TEST_JWT_SECRET } = await import("./helpers/gateway");
    const gw = await startGateway();
    try {
      const { key, record } = await gw.ctx.apiKeys.create("multi-p", "ci", ["ViewMetrics"]);
      const call = () => fetch(gw.url + "/api/v1/rate-limits/tiers", { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);
      expect(await call()).toBe(200); // verified and memoised in the server process
      const cli = Bun.spawnSync([process.execPath, "src/main.ts", "keys", "revoke", "--tenant", "multi-p", "--id", record.id], {
        cwd: ROOT,
        env: { ...process.env, SVC_STORAGE__PATH: join(gw.dir, "svc.db"), SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET },
      });
      expect(cli.exitCode).toBe(0);
      const revokedAt = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - revokedAt < 7_000) {
        await Bun.sleep(250);
        status = await call();
      }
      expect(status).toBe(401);
      expect(Date.now() - revokedAt).toBeLessThanOrEqual(5_500); // the memo lives 5 s
    } finally {
      await gw.stop();
    }
  }, 60_000);

  test("exchanges with an unknown or revoked key are refused and cost the key's tenant nothing", async () => {
    const { startGateway } = await import("./helpers/gateway");
    const { FakeClock } = await import("../src/ratelimit");
    const gw = await startGateway({ rate_limits: { enabled: true } }, {}, { clock: new FakeClock() });
    try {
      const exchange = (apiKey: string) => fetch(gw.url + "/api/v1/auth/token", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ apiKey }) }).then((r) => r.status);
      const revoked = await gw.ctx.apiKeys.create("budget-t", "old");
      await gw.ctx.apiKeys.revoke("budget-t", revoked.record.id);
      for (let i = 0; i < 15; i++) {
        expect(await exchange(`svc_unknown${i}`)).toBe(401);
        expect(await exchange(revoked.key)).toBe(401);
      }
      // the tenant's 10-per-minute exchange budget is untouched
      const { key } = await gw.ctx.apiKeys.create("budget-t", "live");
      const statuses = [];
      for (let i = 0; i < 11; i++) statuses.push(await exchange(key));
      expect(statuses).toEqual([...Array(10).fill(200), 429]);
    } finally {
      await gw.stop();
    }
  });
});
