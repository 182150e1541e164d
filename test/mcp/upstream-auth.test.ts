/**
 * How svc reaches registered servers: API_KEY sends the named header with the environment
 * variable's value; OAUTH runs the client-credentials grant and caches the token until it expires;
 * every connection goes through the outbound policy — a name that later resolves to an internal
 * address (DNS rebinding) is refused at connection time.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { useMcpFixture, startMcpGateway, registerAndDiscover, callTool, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { OutboundPolicy } from "../../src/core/outbound";
import { Logger } from "../../src/core/log";
import { loadConfig } from "../../src/config";
import { MCP_MIGRATIONS } from "../../src/mcp/migrations";
import { mcpServices } from "../../src/mcp/services";
import { WordEmbedder } from "./helpers";

let h: McpGateway;
let fake: FakeMcpServer;

const fx = useMcpFixture();
beforeAll(() => ({ h, fake } = fx));

/** A proxy in front of the fake server that records the headers svc sends. */
function recordingProxy(target: string, check?: (r: Request) => Response | undefined) {
  const seen: Headers[] = [];
  const proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (r) => {
      seen.push(new Headers(r.headers));
      return check?.(r) ?? fetch(target, { method: r.method, headers: r.headers, body: r.body });
    },
  });
  return { url: `http://127.0.0.1:${proxy.port}/mcp`, seen, stop: () => proxy.stop(true) };
}

describe("credentials", () => {
  test("API_KEY: the named header carries the environment variable's value on every request", async () => {
    process.env.MCP_SECRET_APIKEY_TEST = "key-123";
    const p = recordingProxy(fake.url, (r) => (r.headers.get("x-api-key") === "key-123" ? undefined : new Response("forbidden", { status: 401 })));
    const reg = await h.call("POST", "/api/v1/mcp/servers", h.A, { name: "apikey", url: p.url, authType: "API_KEY", authConfig: { type: "API_KEY", header: "X-Api-Key", valueEnv: "MCP_SECRET_APIKEY_TEST" } });
    const d = await h.call("POST", `/api/v1/mcp/servers/${reg.body.server.id}/discover`, h.A);
    expect(d.body.toolsDiscovered).toBe(9);
    expect(p.seen.length).toBeGreaterThan(0);
    expect(p.seen.every((hd) => hd.get("x-api-key") === "key-123")).toBe(true);
    // a missing variable: the connection fails with the variable's name (never a value)
    const reg2 = await h.call("POST", "/api/v1/mcp/servers", h.A, { name: "apikey-missing", url: p.url, authType: "API_KEY", authConfig: { type: "API_KEY", header: "X-Api-Key", valueEnv: "MCP_SECRET_NOT_SET" } });
    const d2 = await h.call("POST", `/api/v1/mcp/servers/${reg2.body.server.id}/discover`, h.A);
    expect(d2.status).toBe(500);
    expect(d2.body.message).toContain("MCP_SECRET_NOT_SET");
    p.stop();
  });

  test("OAUTH: client-credentials grant at tokenUrl, token cached until it expires, then fetched again", async () => {
    process.env.MCP_SECRET_OAUTH_TEST = "client-secret";
    const grants: URLSearchParams[] = [];
    let issued = 0;
    const tokenServer = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (r) => {
        const form = new URLSearchParams(await r.text());
        grants.push(form);
        return Response.json({ access_token: `tok-${++issued}`, token_type: "Bearer", expires_in: 120 });
      },
    });
    const p = recordingProxy(fake.url, (r) => (/^Bearer tok-\d+$/.test(r.headers.get("authorization") ?? "") ? undefined : new Response("no", { status: 401 })));
    const reg = await h.call("POST", "/api/v1/mcp/servers", h.A, {
      name: "oauth",
      url: p.url,
      authType: "OAUTH",
      authConfig: { type: "OAUTH", tokenUrl: `http://127.0.0.1:${tokenServer.port}/token`, clientId: "svc", clientSecretEnv: "MCP_SECRET_OAUTH_TEST", scopes: ["tools.read", "tools.call"] },
    });
    const { tools } = await (async () => {
      const d = await h.call("POST", `/api/v1/mcp/servers/${reg.body.server.id}/discover`, h.A);
      return { tools: Object.fromEntries(d.body.tools.map((x: any) => [x.name, x])) as Record<string, any> };
    })();
    await callTool(h, tools.frobnicate.id, {});
    expect(grants).toHaveLength(1);
    expect(Object.fromEntries(grants[0]!)).toEqual({ grant_type: "client_credentials", client_id: "svc", client_secret: "client-secret", scope: "tools.read tools.call" });
    expect(p.seen.every((hd) => hd.get("authorization") === "Bearer tok-1")).toBe(true);
    h.clock.advance(91_000); // expires_in 120 s, refreshed 30 s early
    await callTool(h, tools.frobnicate.id, {});
    expect(grants).toHaveLength(2);
    expect(p.seen.at(-1)!.get("authorization")).toBe("Bearer tok-2");
    p.stop();
    await tokenServer.stop(true);
  });
});

describe("outbound policy at every connection", () => {
  test("DNS rebinding: a name that resolved to a public address at registration and to loopback at connection is refused", async () => {
    const db = new Db(":memory:");
    db.migrate([{ domain: "mcp", migrations: MCP_MIGRATIONS }]);
    let answer = "93.184.216.34";
    const outbound = new OutboundPolicy({ allowPrivate: false, resolve: async () => [answer] });
    const config = loadConfig({}, { mcp: { health_interval_secs: 0 } }).mcp;
    const s = mcpServices({ storage: openStorage({ path: ":memory:", db }), outbound, embedder: new WordEmbedder(), config, log: new Logger("error"), clock: { now: () => Date.now() }, env: {} });
    const server = await s.registry.register("t", { name: "rebind", url: `http://mcp.rebind.test:${fake.port}/mcp` });
    expect(server.status).toBe("PENDING");
    answer = "127.0.0.1"; // the name now points at the gateway's own host
    const before = fake.listPages;
    await expect(s.registry.discover("t", server.id)).rejects.toMatchObject({ type: "discovery_error", message: expect.stringContaining("127.0.0.1 is a loopback address") });
    expect(fake.listPages).toBe(before); // nothing reached the loopback server
    const health = await s.health.check("t", await s.registry.server("t", server.id));
    expect(health).toMatchObject({ status: "PENDING", error: expect.stringContaining("loopback") });
    await s.close();
    db.close();
  });
});

describe("MTLS (certificates in test/fixtures/tls, one test CA)", () => {
  test("the client certificate from mtls_dir is presented to an upstream that demands it; without MTLS the upstream refuses", async () => {
    const dir = `${import.meta.dir}/../fixtures/tls`;
    const file = (n: string) => Bun.file(`${dir}/${n}`);
    // a TLS front for the fake server that accepts only clients with a certificate of the test CA
    const front = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: file("server.pem"), key: file("server.key"), ca: file("ca.pem"), requestCert: true, rejectUnauthorized: true },
      fetch: (r) => fetch(fake.url, { method: r.method, headers: r.headers, body: r.body }),
    });
    const g = await startMcpGateway({ mtls_dir: dir });
    try {
      const url = `https://localhost:${front.port}/mcp`;
      const reg = await g.call("POST", "/api/v1/mcp/servers", g.A, { name: "mtls", url, authType: "MTLS", authConfig: { type: "MTLS", certPath: "client.pem", keyPath: "client.key", caPath: "ca.pem" } });
      expect(reg.status).toBe(200);
      const d = await g.call("POST", `/api/v1/mcp/servers/${reg.body.server.id}/discover`, g.A);
      expect(d.status).toBe(200);
      expect(d.body.toolsDiscovered).toBe(9);
      const tool = d.body.tools.find((t: any) => t.name === "frobnicate");
      const out = await callTool(g, tool.id, {});
      expect(out.status).toBe(200);
      // the same upstream without a client certificate: the handshake fails, discovery reports it
      const plain = await g.call("POST", "/api/v1/mcp/servers", g.A, { name: "no-cert", url, authType: "NONE" });
      const d2 = await g.call("POST", `/api/v1/mcp/servers/${plain.body.server.id}/discover`, g.A);
      expect(d2.status).toBeGreaterThanOrEqual(400);
      // a path outside mtls_dir is refused at registration
      const outside = await g.call("POST", "/api/v1/mcp/servers", g.A, { name: "escape", url, authType: "MTLS", authConfig: { type: "MTLS", certPath: "../../package.json", keyPath: "client.key" } });
      expect(outside.status).toBe(400);
    } finally {
      await g.gw.stop();
      front.stop(true);
    }
  });
});
