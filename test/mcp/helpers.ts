/**
 * Test support for the MCP gateway: a gateway with loopback targets allowed (test mode), a fake
 * wall clock, a deterministic embedder and the stdio allow-list naming server-everything; a JSON
 * call wrapper; the doc2 flat error check.
 */
import { expect, beforeAll, afterAll } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { FakeClock } from "../../src/ratelimit/bucket";
import { HashEmbedder } from "../cache/helpers";
import type { McpServices } from "../../src/mcp";
import { parseJsonExact } from "../../src/mcp/json";
import { EVERYTHING_JS, startFakeMcpServer, type FakeMcpServer } from "./fake-server";

/** The cache tests' deterministic embedder (bag of hashed words, 64 dimensions): texts sharing words are similar. */
export { HashEmbedder as WordEmbedder } from "../cache/helpers";

export interface McpGateway {
  gw: TestGateway;
  clock: FakeClock;
  mcp: McpServices;
  embedder: HashEmbedder;
  /** token of tenant-a with every permission */
  A: string;
  /** token of tenant-b with every permission */
  B: string;
  call(method: string, path: string, token: string | undefined, json?: unknown): Promise<{ status: number; body: any; headers: Headers }>;
}

export async function startMcpGateway(overrides: Record<string, unknown> = {}): Promise<McpGateway> {
  const clock = new FakeClock(1_000_000);
  const embedder = new HashEmbedder();
  const gw = await startGateway(
    {
      outbound: { allow_private: true },
      mcp: { health_interval_secs: 0, stdio_commands: { everything: { command: "node", args: [EVERYTHING_JS, "stdio"] } }, ...overrides },
    },
    {},
    { clock, embedder },
  );
  const A = await gw.token("tenant-a", ["WorkspaceAdmin"], "alice");
  const B = await gw.token("tenant-b", ["WorkspaceAdmin"], "bob");
  return {
    gw,
    clock,
    embedder,
    mcp: gw.ctx.mcp,
    A,
    B,
    async call(method, path, token, json) {
      const r = await gw.api(path, { method, token, json });
      const text = await r.text();
      let body: any = text;
      try {
        body = parseJsonExact(text); // a cacheKey beyond 2^53 stays exact (bigint)
      } catch {}
      return { status: r.status, body, headers: r.headers };
    },
  };
}

/** Exact status and exactly the doc2 flat envelope {type, message}; optionally a substring of the message. */
export function expectError(r: { status: number; body: any }, status: number, type: string, contains?: string) {
  expect(r.status).toBe(status);
  expect(r.body).toEqual({ type, message: expect.any(String) });
  if (contains) expect(r.body.message).toContain(contains);
}

/** Register a server and discover its tools; returns the server and its tools by name. */
export async function registerAndDiscover(h: McpGateway, url: string, opts: { name?: string; token?: string; transport?: string } = {}) {
  const token = opts.token ?? h.A;
  const reg = await h.call("POST", "/api/v1/mcp/servers", token, { name: opts.name ?? `srv-${crypto.randomUUID().slice(0, 8)}`, url, ...(opts.transport ? { transport: opts.transport } : {}) });
  expect(reg.status).toBe(200);
  const disc = await h.call("POST", `/api/v1/mcp/servers/${reg.body.server.id}/discover`, token);
  if (disc.status !== 200) throw new Error(`discovery of ${url} answered ${disc.status}: ${JSON.stringify(disc.body)}`);
  const tools: Record<string, any> = Object.fromEntries(disc.body.tools.map((t: any) => [t.name, t]));
  return { server: reg.body.server, discovery: disc.body, tools };
}

/** The official MCP client connected to the gateway's /mcp with a tenant's token (optionally as an agent). */
export async function connectMcp(h: McpGateway, token: string, mode: "auto" | "legacy" = "auto", agent?: string) {
  const client = new Client({ name: "test-client", version: "1.0.0" }, { versionNegotiation: { mode } });
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (agent) headers["x-svc-agent-id"] = agent;
  await client.connect(new StreamableHTTPClientTransport(new URL(`${h.gw.url}/mcp`), { requestInit: { headers } }));
  return client;
}

export const callTool = (h: McpGateway, toolId: string, args: Record<string, unknown>, token?: string, agentId?: string) =>
  h.call("POST", `/api/v1/mcp/tools/${toolId}/call`, token ?? h.A, { arguments: args, ...(agentId ? { agentId } : {}) });

export interface McpFixture {
  h: McpGateway;
  fake: FakeMcpServer;
  /** set when a server name was given: that server, registered and discovered for tenant-a */
  server: any;
  tools: Record<string, any>;
}

/**
 * A test file's gateway and fake MCP server (started in beforeAll, stopped in afterAll), with a
 * server registered and discovered for tenant-a when `serverName` is given. Fields are filled
 * before the file's own beforeAll hooks run.
 */
export function useMcpFixture(opts: { overrides?: Record<string, unknown>; serverName?: string } = {}): McpFixture {
  const fx = { tools: {} } as McpFixture;
  beforeAll(async () => {
    fx.h = await startMcpGateway(opts.overrides);
    fx.fake = startFakeMcpServer();
    if (opts.serverName) ({ server: fx.server, tools: fx.tools } = await registerAndDiscover(fx.h, fx.fake.url, { name: opts.serverName }));
  });
  afterAll(async () => {
    await fx.fake.stop();
    await fx.h.gw.stop();
  });
  return fx;
}
