/**
 * The MCP endpoint clients call (/mcp), with the official client SDK in both eras: a tenant's
 * bearer token lists its tools of HEALTHY/DEGRADED enabled servers under `<server>__<tool>`, and
 * tools/call goes through svc's cache (a READ twice: one upstream call).
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { useMcpFixture, startMcpGateway, registerAndDiscover, connectMcp, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";

let h: McpGateway;
let fake: FakeMcpServer;
let server: any;

const fx = useMcpFixture({ serverName: "issue tracker" });
beforeAll(() => ({ h, fake, server } = fx));

const connect = (token: string, mode: "auto" | "legacy", agent?: string) => connectMcp(h, token, mode, agent);

describe("/mcp", () => {
  for (const mode of ["auto", "legacy"] as const)
    test(`official client (${mode === "auto" ? "2026-07-28" : "2025 handshake"}): lists the tenant's tools, calls go through the cache`, async () => {
      const client = await connect(h.A, mode, `agent-${mode}`);
      expect(client.getProtocolEra()).toBe(mode === "auto" ? "modern" : "legacy");
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name).sort();
      expect(names).toContain("issue-tracker__get_issue");
      expect(names).toHaveLength(9);
      const getIssue = tools.find((t) => t.name === "issue-tracker__get_issue")!;
      expect(getIssue).toMatchObject({ description: "Gets one issue", inputSchema: { type: "object", properties: { issue_id: { type: "string" } } }, annotations: { readOnlyHint: true } });
      const before = fake.calls.get("get_issue") ?? 0;
      const a = await client.callTool({ name: "issue-tracker__get_issue", arguments: { issue_id: `mcp-${mode}` } });
      const b = await client.callTool({ name: "issue-tracker__get_issue", arguments: { issue_id: `mcp-${mode}` } });
      expect(a.content).toEqual(b.content);
      expect((a._meta as any)["svc/cache"]).toMatchObject({ status: "MISS" });
      expect((b._meta as any)["svc/cache"]).toMatchObject({ status: "HIT", tier: "exact" });
      // svc answers as itself: the upstream server's identity stamp is not passed through (2026 era: every result carries one)
      for (const r of [a, b]) expect((r._meta as any)["io.modelcontextprotocol/serverInfo"]?.name ?? "svc-mcp-gateway").toBe("svc-mcp-gateway");
      if (mode === "auto") expect((a._meta as any)["io.modelcontextprotocol/serverInfo"]).toMatchObject({ name: "svc-mcp-gateway" });
      // a further hit is answered from the SDK's answer to the first (endpoint-wire.test.ts): the client reads the same
      const c = await client.callTool({ name: "issue-tracker__get_issue", arguments: { issue_id: `mcp-${mode}` } });
      expect(c).toEqual(b);
      expect(fake.calls.get("get_issue")).toBe(before + 1);
      // an error result passes through (and is not cached)
      const err = await client.callTool({ name: "issue-tracker__flaky_read", arguments: { q: "x" } });
      expect(err.isError).toBe(true);
      // an unknown tool is a protocol error
      await expect(client.callTool({ name: "nope__tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
      await client.close();
      // the calls were recorded for analytics with the agent
      const stats = await h.call("GET", `/api/v1/mcp/analytics?serverId=${server.id}&toolName=get_issue`, h.A);
      expect(stats.body.summary.totalCalls).toBeGreaterThanOrEqual(2);
    });

  test("tools of DISABLED or not yet healthy servers are not exposed; another tenant sees only its own", async () => {
    const pending = await h.call("POST", "/api/v1/mcp/servers", h.A, { name: "pending", url: fake.url });
    const b = await connect(h.B, "auto");
    expect((await b.listTools()).tools).toEqual([]);
    await b.close();
    const client = await connect(h.A, "auto");
    expect((await client.listTools()).tools.some((t) => t.name.startsWith("pending__"))).toBe(false);
    expect(pending.body.server.status).toBe("PENDING");
    await h.call("POST", `/api/v1/mcp/servers/${server.id}/disable`, h.A);
    expect((await client.listTools()).tools).toEqual([]);
    await h.call("POST", `/api/v1/mcp/servers/${server.id}/enable`, h.A);
    await h.call("GET", `/api/v1/mcp/servers/${server.id}/health`, h.A); // healthy again
    expect((await client.listTools()).tools.length).toBe(9);
    await client.close();
  });

  test("what /mcp exposes follows the registry at once (a tool's cache settings, rediscovery)", async () => {
    const client = await connect(h.A, "auto", "agent-follow");
    const call = async (name = "issue-tracker__get_issue") => ((await client.callTool({ name, arguments: { issue_id: "follow" } }))._meta as any)["svc/cache"].status;
    const getIssue = (await h.call("GET", `/api/v1/mcp/tools?serverId=${server.id}&name=get_issue`, h.A)).body.tools[0];
    expect(await call()).toBe("MISS");
    expect(await call()).toBe("HIT");
    // the tool record a call uses is the current one: caching off answers BYPASS (a stale record would still look the entry up)
    expect((await h.call("PATCH", `/api/v1/mcp/tools/${getIssue.id}/config`, h.A, { cacheEnabled: false })).status).toBe(200);
    expect(await call()).toBe("BYPASS");
    expect((await h.call("PATCH", `/api/v1/mcp/tools/${getIssue.id}/config`, h.A, { cacheEnabled: true })).status).toBe(200);
    // a tool the server no longer offers is no longer callable, and is again once rediscovered
    const all = fake.tools;
    fake.tools = all.filter((t) => t.name !== "get_issue");
    await h.call("POST", `/api/v1/mcp/servers/${server.id}/discover`, h.A);
    await expect(client.callTool({ name: "issue-tracker__get_issue", arguments: { issue_id: "follow" } })).rejects.toThrow(/Unknown tool/);
    fake.tools = all;
    await h.call("POST", `/api/v1/mcp/servers/${server.id}/discover`, h.A);
    expect(await call()).toBe("MISS"); // its cached results went with it
    await client.close();
  });

  test("401 in the doc2 envelope without a valid bearer token", async () => {
    const r = await fetch(`${h.gw.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ type: "authentication_error", message: expect.any(String) });
    const client = new Client({ name: "x", version: "1" });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${h.gw.url}/mcp`), { requestInit: { headers: { authorization: "Bearer nope" } } }))).rejects.toThrow();
  });
});
