/**
 * Identity defects found from outside: a revoked key's exchanged token, permission names that are
 * Object.prototype's own, custom roles granting more than their creator holds, SSO connection URLs
 * at private or metadata addresses.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectError, startIdentity, type IdentityEnv } from "./helpers";

let env: IdentityEnv;
beforeAll(async () => {
  env = await startIdentity();
});
afterAll(() => env.gw.stop());

const exchange = async (apiKey: string) => {
  const r = await env.gw.api("/api/v1/auth/token", { method: "POST", json: { apiKey } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { accessToken: string }).accessToken;
};

describe("a revoked API key's exchanged token", () => {
  test("is refused from the next request after DELETE /api/v1/virtual-keys/{id}", async () => {
    const { call, A } = env;
    const k = (await call("POST", "/api/v1/virtual-keys", A, { name: "to revoke", permissions: ["ViewKeys"] })).body;
    const jwt = await exchange(k.key);
    // used once: the key's state is cached by the access check
    expect((await call("GET", "/api/v1/virtual-keys", jwt)).status).toBe(200);
    expect((await call("DELETE", `/api/v1/virtual-keys/${k.id}`, A)).status).toBe(200);
    const r = await call("GET", "/api/v1/virtual-keys", jwt);
    expectError(r, 401, "authentication_error", "revoked");
    // the key itself too
    expect((await call("GET", "/api/v1/virtual-keys", k.key)).status).toBe(401);
  }, 30_000);

  test("a token naming a key that never existed in its workspace is refused", async () => {
    const forged = await env.gw.token("tenant-a", ["ViewKeys"], `key:${crypto.randomUUID()}`);
    expectError(await env.call("GET", "/api/v1/virtual-keys", forged), 401, "authentication_error");
  }, 30_000);

  test("another process's revocation (the CLI writes the row) holds within the key cache's 5 s", async () => {
    const { call, A } = env;
    const k = (await call("POST", "/api/v1/virtual-keys", A, { name: "cli revoke", permissions: ["ViewKeys"] })).body;
    const jwt = await exchange(k.key);
    expect((await call("GET", "/api/v1/virtual-keys", jwt)).status).toBe(200);
    // what `keys revoke` in another process does: the row changes, this process's caches do not hear of it
    env.gw.ctx.storage.tenant("tenant-a").run(`UPDATE api_keys SET revoked_at = $at WHERE id = $id AND tenant_id = $tenant`, { at: new Date().toISOString(), id: k.id });
    const deadline = Date.now() + 15_000;
    let status = 200;
    while (Date.now() < deadline && status === 200) {
      status = (await call("GET", "/api/v1/virtual-keys", jwt)).status;
      if (status === 200) await Bun.sleep(200);
    }
    expect(status).toBe(401);
  }, 20_000);
});

describe("permission names that are Object.prototype's own", () => {
  for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"])
    test(`a token holding ${name} gets 403 (not 500) on a permission-checked route`, async () => {
      const t = await env.gw.token("tenant-a", [name], "proto");
      expectError(await env.call("GET", "/api/v1/roles", t), 403, "authorization_error");
      expectError(await env.call("GET", "/api/v1/virtual-keys", t), 403, "authorization_error");
    }, 30_000);
});

describe("custom roles grant only what their creator holds", () => {
  test("a ManageKeys holder cannot create a role granting WorkspaceAdmin (403), nor ManageConfig; nothing is stored", async () => {
    const km = await env.gw.token("tenant-a", ["ManageKeys"], "km-create");
    expectError(await env.call("POST", "/api/v1/roles", km, { name: "escalate", permissions: ["WorkspaceAdmin"] }), 403, "authorization_error", "WorkspaceAdmin");
    expectError(await env.call("POST", "/api/v1/roles", km, { name: "escalate2", permissions: ["ViewKeys", "ManageConfig"] }), 403, "authorization_error", "ManageConfig");
    const listed = (await env.call("GET", "/api/v1/roles?name=escalate", env.A)).body;
    expect(listed.roles).toEqual([]);
    // what it holds (ViewKeys is covered by ManageKeys) it may grant
    expect((await env.call("POST", "/api/v1/roles", km, { name: "key readers", permissions: ["ViewKeys", "ManageKeys"] })).status).toBe(201);
  }, 30_000);
});

describe("SSO connection URLs go through the outbound policy at create and update", () => {
  const body = (issuerUrl: string, discoveryUrl?: string) => ({
    name: `conn-${crypto.randomUUID().slice(0, 8)}`,
    protocol: "oidc",
    oidcConfig: { issuerUrl, clientId: "c", clientSecret: "s", ...(discoveryUrl ? { discoveryUrl } : {}) },
  });
  const C = "/api/v1/sso/connections";

  for (const url of ["https://169.254.169.254", "http://127.0.0.1:8080", "https://10.1.2.3/realms/x", "https://localhost"])
    test(`create with issuerUrl ${url} -> 400 naming the field`, async () => {
      expectError(await env.call("POST", C, env.A, body(url)), 400, "validation_error", "oidcConfig.issuerUrl");
    });

  test("discoveryUrl at a metadata address -> 400; update to a private issuerUrl -> 400 and nothing changes", async () => {
    expectError(await env.call("POST", C, env.A, body("https://idp.example.com", "https://169.254.169.254/.well-known/openid-configuration")), 400, "validation_error", "oidcConfig.discoveryUrl");
    const ok = await env.call("POST", C, env.A, body("https://93.184.216.34"));
    expect(ok.status).toBe(201);
    expectError(await env.call("PUT", `${C}/${ok.body.id}`, env.A, { oidcConfig: { issuerUrl: "https://192.168.0.1" } }), 400, "validation_error", "not allowed");
    expect((await env.call("GET", `${C}/${ok.body.id}`, env.A)).body.oidcConfig.issuerUrl).toBe("https://93.184.216.34");
  }, 30_000);
});
