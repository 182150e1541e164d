/**
 * Issue 22 item 3: credentials never follow a redirect to another origin. For every outbound
 * caller — MCP HTTP and SSE transports (API key header, OAuth bearer), the MCP OAuth token
 * endpoint, memory connectors (GitHub bearer, Jira basic), OIDC discovery and token (openid-client
 * through the outbound fetch, as sign-in calls it), remote embeddings, providers — a loopback fake
 * origin A answers 302 or 307 naming origin B (another port: another origin), and B records what
 * arrived. A must have received the credential (the caller really sent it); B must never see it,
 * in any header or in a body.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import * as oidc from "openid-client";
import { startGateway, type TestGateway } from "./helpers/gateway";
import { OutboundPolicy, credentialSafeFetch, CROSS_ORIGIN_HEADERS } from "../src/core/outbound";
import { RemoteEmbedder } from "../src/embedding/remote";

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** Origin A redirects every request (same path and query) to origin B with `status`; both record what arrived. */
function redirectPair(status: number) {
  const atB: Seen[] = [];
  const atA: Seen[] = [];
  const record = async (list: Seen[], r: Request) => {
    const u = new URL(r.url);
    list.push({ method: r.method, path: u.pathname + u.search, headers: Object.fromEntries(r.headers), body: await r.text() });
  };
  const b = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (r) => {
      await record(atB, r);
      return Response.json({ error: "B is not the service" }, { status: 404 });
    },
  });
  const a = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (r) => {
      await record(atA, r);
      const u = new URL(r.url);
      return new Response(null, { status, headers: { location: `http://127.0.0.1:${b.port}${u.pathname}${u.search}` } });
    },
  });
  return {
    a: `http://127.0.0.1:${a.port}`,
    b: `http://127.0.0.1:${b.port}`,
    atA,
    atB,
    reset() {
      atA.length = 0;
      atB.length = 0;
    },
    stop() {
      a.stop(true);
      b.stop(true);
    },
  };
}

type Pair = ReturnType<typeof redirectPair>;

/** A saw the secret (the caller sent it); B never did, in any header or body; B saw only safelisted headers. */
function expectNotForwarded(p: Pair, secret: string) {
  expect(p.atA.length).toBeGreaterThan(0);
  expect(p.atA.some((s) => JSON.stringify(s).includes(secret))).toBe(true);
  for (const s of p.atB) {
    expect(JSON.stringify(s)).not.toContain(secret);
    const extra = Object.keys(s.headers).filter((h) => !CROSS_ORIGIN_HEADERS.has(h) && !["host", "connection", "content-length"].includes(h));
    expect(extra).toEqual([]);
  }
}

const pairs: Record<number, Pair> = {};
let gw: TestGateway;
let admin: string;
beforeAll(async () => {
  for (const s of [302, 307]) pairs[s] = redirectPair(s);
  process.env.MCP_SECRET_REDIRECT_KEY = "mcp-api-key-SECRET";
  process.env.MCP_SECRET_REDIRECT_OAUTH = "mcp-client-SECRET";
  process.env.MEMORY_SECRET_REDIRECT_GH = "ghp_github-SECRET";
  process.env.MEMORY_SECRET_REDIRECT_JIRA = "jira-SECRET";
  gw = await startGateway({
    outbound: { allow_private: true },
    mcp: { health_interval_secs: 0 },
    providers: {
      openai: { base_url: pairs[302]!.a, api_key: "sk-openai-SECRET", max_retries: 0 },
      anthropic: { base_url: pairs[307]!.a, api_key: "sk-ant-SECRET", max_retries: 0 },
      gemini: { base_url: pairs[302]!.a, api_key: "gemini-SECRET", max_retries: 0 },
    },
  });
  admin = await gw.token("redir-a", ["WorkspaceAdmin"], "alice");
});
afterAll(async () => {
  await gw.stop();
  for (const p of Object.values(pairs)) p.stop();
});

const api = async (method: string, path: string, json?: unknown, headers: Record<string, string> = {}) => {
  const r = await gw.api(path, { method, token: admin, json, headers });
  return { status: r.status, text: await r.text() };
};

describe("the outbound fetch itself", () => {
  const policy = new OutboundPolicy({ allowPrivate: true });
  test("same origin: every header follows; another origin: only the safelist, for both fetches", async () => {
    for (const f of [policy.fetch, credentialSafeFetch]) {
      const p = pairs[302]!;
      p.reset();
      await (await f(`${p.a}/x`, { headers: { authorization: "Bearer tok-SECRET", cookie: "s=cookie-SECRET", "proxy-authorization": "Basic proxy-SECRET", "x-custom-key": "custom-SECRET", accept: "application/json" } })).text();
      expectNotForwarded(p, "tok-SECRET");
      expect(p.atB).toHaveLength(1);
      expect(p.atB[0]!.headers.accept).toBe("application/json");
      for (const secret of ["cookie-SECRET", "proxy-SECRET", "custom-SECRET"]) expect(JSON.stringify(p.atB)).not.toContain(secret);
    }
    // a same-origin hop keeps the credential (B redirects to itself here)
    const self = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (r) => (new URL(r.url).pathname === "/start" ? new Response(null, { status: 302, headers: { location: "/end" } }) : Response.json({ auth: r.headers.get("authorization") })),
    });
    for (const f of [policy.fetch, credentialSafeFetch])
      expect(await (await f(`http://127.0.0.1:${self.port}/start`, { headers: { authorization: "Bearer same" } })).json()).toEqual({ auth: "Bearer same" });
    self.stop(true);
  });
  test("a 307/308 to another origin that would resend a body is refused; B is never reached", async () => {
    const p = pairs[307]!;
    for (const f of [policy.fetch, credentialSafeFetch]) {
      p.reset();
      await expect(f(`${p.a}/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "client_secret=body-SECRET" })).rejects.toThrow(/another origin/);
      expect(p.atA).toHaveLength(1);
      expect(p.atB).toHaveLength(0);
      // without a body there is nothing to protect: followed (credentials dropped as always)
      p.reset();
      await (await f(`${p.a}/empty`, { method: "POST", headers: { authorization: "Bearer empty-SECRET" } })).text();
      expect(p.atB).toHaveLength(1);
      expectNotForwarded(p, "empty-SECRET");
    }
  });
});

describe("MCP upstream servers", () => {
  for (const status of [302, 307])
    test(`HTTP transport, API_KEY header: ${status} to another origin`, async () => {
      const p = pairs[status]!;
      p.reset();
      const reg = await api("POST", "/api/v1/mcp/servers", { name: `apikey-${status}`, url: `${p.a}/mcp`, authType: "API_KEY", authConfig: { type: "API_KEY", header: "X-Api-Key", valueEnv: "MCP_SECRET_REDIRECT_KEY" } });
      expect(reg.status).toBeLessThan(300);
      await api("POST", `/api/v1/mcp/servers/${JSON.parse(reg.text).server.id}/discover`);
      expectNotForwarded(p, "mcp-api-key-SECRET");
    });

  test("SSE transport, API_KEY header: 302 to another origin", async () => {
    const p = pairs[302]!;
    p.reset();
    const reg = await api("POST", "/api/v1/mcp/servers", { name: "apikey-sse", url: `${p.a}/sse`, transport: "SSE", authType: "API_KEY", authConfig: { type: "API_KEY", header: "X-Api-Key", valueEnv: "MCP_SECRET_REDIRECT_KEY" } });
    expect(reg.status).toBeLessThan(300);
    await api("POST", `/api/v1/mcp/servers/${JSON.parse(reg.text).server.id}/discover`);
    expectNotForwarded(p, "mcp-api-key-SECRET");
  });

  test("OAUTH: the token endpoint redirects (client secret in the form) and the server redirects (bearer)", async () => {
    const tokens = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ access_token: "bearer-SECRET", token_type: "Bearer", expires_in: 3600 }) });
    try {
      for (const status of [302, 307]) {
        const p = pairs[status]!;
        // the token endpoint is origin A
        p.reset();
        const viaToken = await api("POST", "/api/v1/mcp/servers", {
          name: `oauth-token-${status}`,
          url: `http://127.0.0.1:${tokens.port}/mcp`,
          authType: "OAUTH",
          authConfig: { type: "OAUTH", tokenUrl: `${p.a}/token`, clientId: "svc", clientSecretEnv: "MCP_SECRET_REDIRECT_OAUTH", scopes: ["tools.read"] },
        });
        expect(viaToken.status).toBeLessThan(300);
        await api("POST", `/api/v1/mcp/servers/${JSON.parse(viaToken.text).server.id}/discover`);
        expectNotForwarded(p, "mcp-client-SECRET");
        // the MCP server is origin A; the token endpoint answers directly
        p.reset();
        const viaServer = await api("POST", "/api/v1/mcp/servers", {
          name: `oauth-server-${status}`,
          url: `${p.a}/mcp`,
          authType: "OAUTH",
          authConfig: { type: "OAUTH", tokenUrl: `http://127.0.0.1:${tokens.port}/token`, clientId: "svc", clientSecretEnv: "MCP_SECRET_REDIRECT_OAUTH", scopes: ["tools.read"] },
        });
        await api("POST", `/api/v1/mcp/servers/${JSON.parse(viaServer.text).server.id}/discover`);
        expectNotForwarded(p, "bearer-SECRET");
      }
    } finally {
      tokens.stop(true);
    }
  });
});

describe("memory connectors", () => {
  beforeAll(async () => {
    await api("POST", "/api/v1/memory/projects", { projectId: "redir", name: "redir", roadmap: "" });
  });
  for (const status of [302, 307]) {
    test(`GitHub (bearer token): ${status} to another origin`, async () => {
      const p = pairs[status]!;
      p.reset();
      const made = await api("POST", "/api/v1/memory/sources", { sourceId: `gh-${status}`, projectId: "redir", sourceType: "github", config: { owner: "acme", repo: "svc", baseUrl: p.a, tokenEnv: "MEMORY_SECRET_REDIRECT_GH" } });
      expect(made.status).toBe(201);
      await api("POST", `/api/v1/memory/sources/gh-${status}/sync`);
      expectNotForwarded(p, "ghp_github-SECRET");
    });
    test(`Jira (basic auth, POST): ${status} to another origin`, async () => {
      const p = pairs[status]!;
      p.reset();
      const made = await api("POST", "/api/v1/memory/sources", { sourceId: `jira-${status}`, projectId: "redir", sourceType: "jira", config: { baseUrl: p.a, tokenEnv: "MEMORY_SECRET_REDIRECT_JIRA", email: "bot@example.com", projectKey: "SVC" } });
      expect(made.status).toBe(201);
      await api("POST", `/api/v1/memory/sources/jira-${status}/sync`);
      // basic auth: the secret travels base64-encoded
      expectNotForwarded(p, Buffer.from("bot@example.com:jira-SECRET").toString("base64"));
    });
  }
});

describe("OIDC (openid-client through the outbound fetch, as sign-in calls it)", () => {
  const policy = new OutboundPolicy({ allowPrivate: true });
  const options = { [oidc.customFetch]: (url: string, o: unknown) => policy.fetch(url, o as RequestInit), execute: [oidc.allowInsecureRequests] };
  test("discovery and JWKS: 302 to another origin carries nothing of the caller's", async () => {
    const p = pairs[302]!;
    p.reset();
    await expect(oidc.discovery(new URL(`${p.a}/.well-known/openid-configuration`), "client", { client_secret: "oidc-SECRET" }, oidc.ClientSecretPost("oidc-SECRET"), options)).rejects.toThrow();
    expect(p.atA.length).toBeGreaterThan(0);
    expect(p.atB.length).toBeGreaterThan(0); // followed, without credentials
    expect(JSON.stringify(p.atB)).not.toContain("oidc-SECRET");
  });
  for (const status of [302, 307])
    test(`token endpoint (client_secret_post and client_secret_basic): ${status} to another origin`, async () => {
      const p = pairs[status]!;
      for (const [auth, secret] of [
        [oidc.ClientSecretPost("post-SECRET"), "post-SECRET"],
        // client_secret_basic form-encodes id and secret before base64 (RFC 6749 §2.3.1)
        [oidc.ClientSecretBasic("basic-SECRET"), Buffer.from("client:basic%2DSECRET").toString("base64")],
      ] as const) {
        p.reset();
        const config = new oidc.Configuration({ issuer: p.a, token_endpoint: `${p.a}/token` }, "client", undefined, auth);
        (config as any)[oidc.customFetch] = options[oidc.customFetch];
        oidc.allowInsecureRequests(config);
        await expect(oidc.clientCredentialsGrant(config)).rejects.toThrow();
        expectNotForwarded(p, secret);
      }
    });
});

describe("remote embeddings and providers (URLs the operator configured)", () => {
  for (const status of [302, 307])
    test(`remote embeddings: ${status} to another origin`, async () => {
      const p = pairs[status]!;
      p.reset();
      const embedder = new RemoteEmbedder({ baseUrl: p.a, model: "m", apiKey: "embed-SECRET", timeoutMs: 5_000 });
      await expect(embedder.embed(["hello"])).rejects.toThrow();
      expectNotForwarded(p, "embed-SECRET");
    });

  test("providers: openai (authorization, 302), gemini (x-goog-api-key, 302), anthropic (x-api-key, 307)", async () => {
    const cases: Array<[number, string, unknown, string]> = [
      [302, "/v1/chat/completions", { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }, "sk-openai-SECRET"],
      [302, "/v1beta/models/gemini-2.0-flash:generateContent", { contents: [{ role: "user", parts: [{ text: "hi" }] }] }, "gemini-SECRET"],
      [307, "/v1/messages", { model: "claude-3-5-haiku-latest", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }, "sk-ant-SECRET"],
    ];
    for (const [status, path, body, secret] of cases) {
      const p = pairs[status]!;
      p.reset();
      const r = await api("POST", path, body, { "cache-control": "no-store", "anthropic-version": "2023-06-01" });
      expect(`${r.status} ${r.text.slice(0, 200)}`).toMatch(/^[45]\d\d /); // B is not a provider
      expectNotForwarded(p, secret);
    }
  });
});
