/**
 * /api/v1/mcp/servers and /tools over HTTP against real MCP servers on loopback: registration
 * rules (limits, URL policy, authConfig, STDIO allow-list), discovery over Streamable HTTP
 * (paginated, 2026-07-28 era), legacy Streamable HTTP, SSE and stdio (server-everything),
 * classification, manual overrides, vanished tools, tool config, isolation, 401/403.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { useMcpFixture, startMcpGateway, expectError, registerAndDiscover, type McpGateway } from "./helpers";
import { startFakeMcpServer, startEverything, type FakeMcpServer } from "./fake-server";
import { startGateway } from "../helpers/gateway";

let h: McpGateway;
let fake: FakeMcpServer;
const S = "/api/v1/mcp/servers";

const fx = useMcpFixture();
beforeAll(() => ({ h, fake } = fx));

describe("doc2 §7 envelope", () => {
  test("a malformed JSON body is 400 validation_error (doc2 §7 names no other 400 type), on kernel and native routes", async () => {
    for (const path of [S, "/api/v1/mcp/entities", "/api/v1/tool-cache/search", "/api/v1/tool-cache/stats"]) {
      const r = await h.gw.api(path, { method: "POST", token: h.A, headers: { "content-type": "application/json" }, body: "{not json" });
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ type: "validation_error", message: expect.any(String) });
    }
  });
});

describe("register, get, list, delete", () => {
  test("register answers 200 {server, message} with PENDING and the defaults; secrets are never returned", async () => {
    process.env.MCP_SECRET_GH = "sk-live-secret";
    const r = await h.call("POST", S, h.A, {
      name: "github",
      description: "GitHub tools",
      url: fake.url,
      authType: "API_KEY",
      authConfig: { type: "API_KEY", header: "x-api-key", valueEnv: "MCP_SECRET_GH" },
    });
    expect(r.status).toBe(200);
    expect(r.body.message).toContain("PENDING");
    expect(r.body.server).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "github",
      description: "GitHub tools",
      url: fake.url,
      transport: "HTTP",
      authType: "API_KEY",
      status: "PENDING",
      healthLatencyP50Ms: null,
      healthLatencyP99Ms: null,
      lastHealthCheck: null,
      lastError: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(JSON.stringify(r.body)).not.toContain("MCP_SECRET_GH");
    const got = await h.call("GET", `${S}/${r.body.server.id}`, h.A);
    expect(got.body).toEqual(r.body.server);
    const bare = await h.call("POST", S, h.A, { name: "bare", url: fake.url });
    expect(bare.body.server).toMatchObject({ transport: "HTTP", authType: "NONE", status: "PENDING", description: "" });
    expectError(await h.call("POST", S, h.A, { name: "bare", url: fake.url }), 409, "conflict", "already exists");
  });

  test("list: filters by status and partial name, pages with the doc2 envelope", async () => {
    const t = await h.gw.token("tenant-list", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    for (const n of ["alpha-one", "alpha_two", "beta"]) expect((await h.call("POST", S, t, { name: n, url: fake.url })).status).toBe(200);
    const all = await h.call("GET", S, t);
    expect(all.body).toMatchObject({ total: 3, page: 1, pageSize: 20, totalPages: 1 });
    expect(all.body.servers.map((s: any) => s.name)).toEqual(["alpha-one", "alpha_two", "beta"]);
    expect((await h.call("GET", `${S}?name=alpha`, t)).body.total).toBe(2);
    expect((await h.call("GET", `${S}?name=a_t`, t)).body.servers.map((s: any) => s.name)).toEqual(["alpha_two"]); // _ is literal
    expect((await h.call("GET", `${S}?status=PENDING&pageSize=2&page=2`, t)).body).toMatchObject({ total: 3, page: 2, pageSize: 2, totalPages: 2 });
    expect((await h.call("GET", `${S}?status=HEALTHY`, t)).body.total).toBe(0);
    expectError(await h.call("GET", `${S}?status=UP`, t), 400, "validation_error", "status");
    expectError(await h.call("GET", `${S}?pageSize=101`, t), 400, "validation_error");
    expect((await h.call("GET", `${S}?pageSize=100`, t)).status).toBe(200);
  });

  test("limits: name 128, description 2000, url 2048 (at the limit accepted, one over refused); enums", async () => {
    const t = await h.gw.token("tenant-limits", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const long = (n: number) => "x".repeat(n);
    expect((await h.call("POST", S, t, { name: long(128), description: long(2000), url: fake.url })).status).toBe(200);
    expectError(await h.call("POST", S, t, { name: long(129), url: fake.url }), 400, "validation_error", "name");
    expectError(await h.call("POST", S, t, { name: "d", description: long(2001), url: fake.url }), 400, "validation_error", "description");
    const url2048 = `http://127.0.0.1/${"p".repeat(2048 - "http://127.0.0.1/".length)}`;
    expect((await h.call("POST", S, t, { name: "u2048", url: url2048 })).status).toBe(200);
    expectError(await h.call("POST", S, t, { name: "u2049", url: url2048 + "p" }), 400, "validation_error", "url");
    expectError(await h.call("POST", S, t, { name: "", url: fake.url }), 400, "validation_error", "name");
    expectError(await h.call("POST", S, t, { url: fake.url }), 400, "validation_error", "name");
    expectError(await h.call("POST", S, t, { name: "nourl" }), 400, "validation_error", "url");
    expectError(await h.call("POST", S, t, { name: "tr", url: fake.url, transport: "WS" }), 400, "validation_error", "transport");
    expectError(await h.call("POST", S, t, { name: "at", url: fake.url, authType: "BASIC" }), 400, "validation_error", "authType");
    for (const transport of ["HTTP", "SSE"]) expect((await h.call("POST", S, t, { name: `t-${transport}`, url: fake.url, transport })).status).toBe(200);
  });

  test("authConfig must match authType; secrets only by environment-variable name under the gateway's prefix", async () => {
    const t = await h.gw.token("tenant-auth", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const post = (authType: string, authConfig?: unknown) => h.call("POST", S, t, { name: crypto.randomUUID(), url: fake.url, authType, authConfig });
    expectError(await post("API_KEY"), 400, "validation_error", "authConfig is required");
    expectError(await post("API_KEY", { type: "OAUTH" }), 400, "validation_error", "must match");
    expectError(await post("API_KEY", { type: "API_KEY", header: "x-key" }), 400, "validation_error", "valueEnv");
    expectError(await post("API_KEY", { type: "API_KEY", header: "x-key", valueEnv: "sk-abc def" }), 400, "validation_error", "environment variable name");
    expectError(await post("API_KEY", { type: "API_KEY", header: "x-key", valueEnv: "SVC_AUTH__JWT_SECRET" }), 400, "validation_error", "MCP_SECRET_");
    expectError(await post("API_KEY", { type: "API_KEY", header: "x-key", valueEnv: "MCP_SECRET_X", value: "sk-literal" }), 400, "validation_error", "authConfig.value");
    expectError(await post("API_KEY", { type: "API_KEY", header: "bad header", valueEnv: "MCP_SECRET_X" }), 400, "validation_error", "header");
    expectError(await post("NONE", { type: "NONE", header: "x" }), 400, "validation_error", "does not apply");
    expect((await post("NONE", { type: "NONE" })).status).toBe(200);
    expectError(await post("OAUTH", { type: "OAUTH", tokenUrl: "http://127.0.0.1/token", clientId: "c" }), 400, "validation_error", "clientSecretEnv");
    expectError(await post("OAUTH", { type: "OAUTH", tokenUrl: "ftp://x/token", clientId: "c", clientSecretEnv: "MCP_SECRET_C" }), 400, "validation_error", "scheme");
    expectError(await post("OAUTH", { type: "OAUTH", tokenUrl: "http://x/t", clientId: "c", clientSecretEnv: "MCP_SECRET_C", scopes: "a b" }), 400, "validation_error", "scopes");
    expect((await post("OAUTH", { type: "OAUTH", tokenUrl: "http://127.0.0.1/token", clientId: "c", clientSecretEnv: "MCP_SECRET_C", scopes: ["read"] })).status).toBe(200);
    expectError(await post("MTLS", { type: "MTLS", certPath: "c.pem", keyPath: "k.pem" }), 400, "validation_error", "MTLS servers are not enabled");
  });

  test("STDIO: only an allow-listed command, named stdio://<name>; any other command is 400", async () => {
    const t = await h.gw.token("tenant-stdio", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    expect((await h.call("POST", S, t, { name: "ok", url: "stdio://everything", transport: "STDIO" })).status).toBe(200);
    expectError(await h.call("POST", S, t, { name: "cmd", url: "stdio://rm", transport: "STDIO" }), 400, "validation_error", "allow-list");
    expectError(await h.call("POST", S, t, { name: "raw", url: "/bin/sh -c id", transport: "STDIO" }), 400, "validation_error", "stdio://");
    expectError(await h.call("POST", S, t, { name: "mix", url: "stdio://everything" }), 400, "validation_error", "transport STDIO");
    expectError(await h.call("POST", S, t, { name: "proto", url: "stdio://__proto__", transport: "STDIO" }), 400, "validation_error", "allow-list");
  });

  test("delete: {deleted: true, message}; tools, mappings, rules go with it; 404 after", async () => {
    const t = await h.gw.token("tenant-del", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const { server, tools } = await registerAndDiscover({ ...h, A: t }, fake.url);
    const ent = await h.call("POST", "/api/v1/mcp/entities", t, { name: "issue" });
    expect((await h.call("POST", "/api/v1/mcp/tool-entities", t, { toolId: tools.get_issue.id, entityId: ent.body.id, paramName: "issue_id", operation: "READ" })).status).toBe(200);
    expect((await h.call("POST", "/api/v1/mcp/rules", t, { writeToolId: tools.update_issue.id, invalidateToolId: tools.get_issue.id })).status).toBe(200);
    const r = await h.call("DELETE", `${S}/${server.id}`, t);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ deleted: true, message: expect.stringContaining("deleted") });
    expectError(await h.call("GET", `${S}/${server.id}`, t), 404, "not_found");
    expect((await h.call("GET", `/api/v1/mcp/tools?serverId=${server.id}`, t)).body.total).toBe(0);
    expect((await h.call("GET", "/api/v1/mcp/rules", t)).body.total).toBe(0);
    expectError(await h.call("GET", `/api/v1/mcp/tools/${tools.get_issue.id}/entities`, t), 404, "not_found");
    expectError(await h.call("DELETE", `${S}/${server.id}`, t), 404, "not_found");
  });
});

describe("outbound URL policy at registration (test mode off)", () => {
  test("loopback, private, link-local/metadata, CGNAT, unique-local, unspecified and IPv4-mapped forms are 400 validation_error naming SVC_OUTBOUND__ALLOW_PRIVATE", async () => {
    const closed = await startGateway({ mcp: { health_interval_secs: 0 } }); // the switch off, as by default
    const t = await closed.token("tenant-ssrf", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const urls = [
      "http://127.0.0.1:8080/mcp",
      "http://localhost/mcp",
      "http://10.1.2.3/mcp",
      "http://172.16.0.1/mcp",
      "http://192.168.1.1/mcp",
      "http://169.254.169.254/latest/meta-data",
      "http://100.64.0.1/mcp",
      "http://[fd00::1]/mcp",
      "http://[::1]/mcp",
      "http://0.0.0.0/mcp",
      "http://[::]/mcp",
      "http://[::ffff:127.0.0.1]/mcp",
      "http://[::ffff:169.254.169.254]/mcp",
      "http://[fe80::1]/mcp",
      "file:///etc/passwd",
      "gopher://example.com/",
      "http://user:pw@example.com/mcp",
    ];
    for (const url of urls) {
      const r = await closed.api(S, { method: "POST", token: t, json: { name: url.slice(0, 100), url } });
      expect({ url, status: r.status, type: ((await r.json()) as any).type }).toEqual({ url, status: 400, type: "validation_error" });
    }
    // an address refusal names the operator's switch and says why provider base URLs are not held to it
    for (const url of ["http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://10.1.2.3/mcp"]) {
      const r = await closed.api(S, { method: "POST", token: t, json: { name: "private", url } });
      const message = ((await r.json()) as any).message as string;
      expect(message).toContain("is not allowed");
      expect(message).toContain("SVC_OUTBOUND__ALLOW_PRIVATE=true");
      expect(message).toContain("SVC_OUTBOUND__ALLOW_CIDRS");
      expect(message).toMatch(/Provider base URLs .* are the operator's configuration, not a tenant's/);
    }
    // a refusal that no setting lifts (a scheme) does not point at it
    const scheme = await closed.api(S, { method: "POST", token: t, json: { name: "file", url: "file:///etc/passwd" } });
    expect(((await scheme.json()) as any).message).not.toContain("ALLOW_PRIVATE");
    // a public literal and a name that does not resolve yet are accepted (checked again at every connection)
    for (const url of ["https://93.184.216.34/mcp", "https://mcp.does-not-resolve.invalid/mcp"]) {
      const r = await closed.api(S, { method: "POST", token: t, json: { name: url, url } });
      expect(r.status).toBe(200);
    }
    await closed.stop();
  });
});

describe("discovery", () => {
  test("Streamable HTTP, 2026-07-28 era: every page listed; added/updated counts; classification from annotations, then names", async () => {
    const t = await h.gw.token("tenant-disc", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const pagesBefore = fake.listPages;
    const { server, discovery, tools } = await registerAndDiscover({ ...h, A: t }, fake.url);
    expect(fake.listPages - pagesBefore).toBe(3); // 9 tools, 3 per page
    expect(discovery).toMatchObject({ serverId: server.id, toolsDiscovered: 9, toolsAdded: 9, toolsUpdated: 0, toolsRemoved: 0 });
    expect(tools.get_issue).toMatchObject({ category: "READ", categoryConfidence: 0.95, categoryManualOverride: false, available: true, serverId: server.id });
    expect(tools.update_issue).toMatchObject({ category: "WRITE", categoryConfidence: 0.9 });
    expect(tools.set_label).toMatchObject({ category: "IDEMPOTENT", categoryConfidence: 0.9 });
    expect(tools.get_comment).toMatchObject({ category: "READ", categoryConfidence: 0.7 }); // no annotations: the name's verb
    expect(tools.frobnicate).toMatchObject({ category: "UNKNOWN", categoryConfidence: 0 });
    expect(tools.get_issue.cacheConfig).toEqual({ enabled: true, ttlSecs: 300, semanticThreshold: 1, crossAgent: false, coalescingWindowMs: 1000 });
    expect(tools.update_issue.cacheConfig).toEqual({ enabled: false, ttlSecs: 300, semanticThreshold: 1, crossAgent: false, coalescingWindowMs: 0 });
    expect(tools.set_label.cacheConfig).toMatchObject({ enabled: false, coalescingWindowMs: 1000 });
    expect(tools.get_issue.inputSchema).toMatchObject({ type: "object", properties: { issue_id: { type: "string" } } });
    // the successful listing was a protocol round trip: the server is HEALTHY now
    expect((await h.call("GET", `${S}/${server.id}`, t)).body.status).toBe("HEALTHY");
    expect(h.mcp.pool.protocolOf(server.id)).toEqual({ era: "modern", version: "2026-07-28" });
  });

  test("rediscovery updates, keeps ids and manual categories; vanished tools are marked unavailable and not callable", async () => {
    const own = startFakeMcpServer();
    const t = await h.gw.token("tenant-redisc", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const { server, tools } = await registerAndDiscover({ ...h, A: t }, own.url);
    const manual = await h.call("PATCH", `/api/v1/mcp/tools/${tools.frobnicate.id}/config`, t, { category: "READ" });
    expect(manual.body).toMatchObject({ category: "READ", categoryConfidence: 1, categoryManualOverride: true });
    own.tools = own.tools.filter((x) => x.name !== "get_comment").map((x) => (x.name === "list_issues" ? { ...x, description: "Lists issues (v2)" } : x));
    own.tools.push({ name: "delete_issue", inputSchema: { type: "object" } });
    const again = await h.call("POST", `${S}/${server.id}/discover`, t);
    expect(again.body).toMatchObject({ toolsDiscovered: 9, toolsAdded: 1, toolsUpdated: 8, toolsRemoved: 1 });
    const byName = Object.fromEntries(again.body.tools.map((x: any) => [x.name, x]));
    expect(byName.list_issues.id).toBe(tools.list_issues.id);
    expect(byName.list_issues.description).toBe("Lists issues (v2)");
    expect(byName.frobnicate).toMatchObject({ category: "READ", categoryManualOverride: true, categoryConfidence: 1 });
    expect(byName.delete_issue.category).toBe("WRITE");
    const gone = await h.call("GET", `/api/v1/mcp/tools/${tools.get_comment.id}`, t);
    expect(gone.body).toMatchObject({ available: false });
    expectError(await h.call("POST", `/api/v1/mcp/tools/${tools.get_comment.id}/call`, t, { arguments: { comment_id: "1" } }), 409, "conflict", "not offered");
    await own.stop();
  });

  test("unreachable or failing server: 500 discovery_error; lastError recorded", async () => {
    const t = await h.gw.token("tenant-derr", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const dead = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("nope", { status: 500 }) });
    const reg = await h.call("POST", S, t, { name: "broken", url: `http://127.0.0.1:${dead.port}/mcp` });
    const r = await h.call("POST", `${S}/${reg.body.server.id}/discover`, t);
    expectError(r, 500, "discovery_error", "broken");
    await dead.stop(true);
    const reg2 = await h.call("POST", S, t, { name: "gone", url: `http://127.0.0.1:${dead.port}/mcp` });
    expectError(await h.call("POST", `${S}/${reg2.body.server.id}/discover`, t), 500, "discovery_error");
    const s = (await h.call("GET", `${S}/${reg2.body.server.id}`, t)).body;
    expect(s.status).toBe("PENDING"); // stays PENDING until a check succeeds
    expect(s.lastError).toEqual(expect.any(String));
    expectError(await h.call("POST", `${S}/${crypto.randomUUID()}/discover`, t), 404, "not_found");
  });

  test("real servers: server-everything over Streamable HTTP and SSE (legacy era), and over an allow-listed stdio command", async () => {
    const t = await h.gw.token("tenant-everything", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const http = await startEverything("streamableHttp");
    const sse = await startEverything("sse");
    try {
      for (const [url, transport] of [
        [http.url, "HTTP"],
        [sse.url, "SSE"],
        ["stdio://everything", "STDIO"],
      ] as const) {
        const { server, discovery, tools } = await registerAndDiscover({ ...h, A: t }, url, { transport, name: `everything-${transport}` });
        expect(discovery.toolsDiscovered).toBeGreaterThan(5);
        expect(h.mcp.pool.protocolOf(server.id)?.era).toBe("legacy"); // the 1.x SDK server: auto negotiation fell back to initialize
        expect(tools.echo).toMatchObject({ category: "READ", categoryConfidence: 0.95 });
        const c1 = await h.call("POST", `/api/v1/mcp/tools/${tools.echo.id}/call`, t, { arguments: { message: `hi ${transport}` } });
        expect(c1.body.result.content[0].text).toBe(`Echo: hi ${transport}`);
        expect(c1.body.cache.status).toBe("MISS");
        const c2 = await h.call("POST", `/api/v1/mcp/tools/${tools.echo.id}/call`, t, { arguments: { message: `hi ${transport}` } });
        expect(c2.body.cache).toMatchObject({ status: "HIT", tier: "exact" });
        const health = await h.call("GET", `${S}/${server.id}/health`, t);
        expect(health.body).toMatchObject({ error: null, status: expect.stringMatching(/^(HEALTHY|DEGRADED)$/) }); // a spawn on a busy machine may exceed the latency threshold
      }
    } finally {
      http.stop();
      sse.stop();
    }
  }, 60_000);
});

describe("tools", () => {
  let t: string;
  let tools: Record<string, any>;
  let serverId: string;
  beforeAll(async () => {
    t = await h.gw.token("tenant-tools", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const d = await registerAndDiscover({ ...h, A: t }, fake.url, { name: "issues" });
    tools = d.tools;
    serverId = d.server.id;
  });

  test("list filters: serverId, category, cacheEnabled, partial name; page envelope", async () => {
    const all = await h.call("GET", "/api/v1/mcp/tools", t);
    expect(all.body).toMatchObject({ total: 9, page: 1, pageSize: 20, totalPages: 1 });
    expect((await h.call("GET", `/api/v1/mcp/tools?serverId=${serverId}`, t)).body.total).toBe(9);
    expect((await h.call("GET", `/api/v1/mcp/tools?serverId=${crypto.randomUUID()}`, t)).body.total).toBe(0);
    expect((await h.call("GET", "/api/v1/mcp/tools?category=WRITE", t)).body.tools.map((x: any) => x.name)).toEqual(["update_issue"]);
    expect((await h.call("GET", "/api/v1/mcp/tools?cacheEnabled=false", t)).body.tools.map((x: any) => x.name).sort()).toEqual(["frobnicate", "set_label", "update_issue"]);
    expect((await h.call("GET", "/api/v1/mcp/tools?cacheEnabled=true&name=issue", t)).body.tools.map((x: any) => x.name)).toEqual(["get_issue", "list_issues"]);
    expect((await h.call("GET", "/api/v1/mcp/tools?pageSize=4&page=3", t)).body).toMatchObject({ total: 9, totalPages: 3, tools: [expect.any(Object)] });
    expectError(await h.call("GET", "/api/v1/mcp/tools?serverId=nope", t), 400, "validation_error");
    expectError(await h.call("GET", "/api/v1/mcp/tools?category=DELETE", t), 400, "validation_error", "category");
    expectError(await h.call("GET", "/api/v1/mcp/tools?cacheEnabled=maybe", t), 400, "validation_error");
  });

  test("PATCH config: every field, limits, WRITE never cached, 404", async () => {
    const id = tools.list_issues.id;
    const r = await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { cacheEnabled: true, cacheTtlSecs: 60, semanticThreshold: 0.9, crossAgentEnabled: true, coalescingWindowMs: 250 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id, category: "READ", categoryManualOverride: false, cacheConfig: { enabled: true, ttlSecs: 60, semanticThreshold: 0.9, crossAgent: true, coalescingWindowMs: 250 } });
    expect((await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { semanticThreshold: 0 })).body.cacheConfig.semanticThreshold).toBe(0);
    expect((await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { semanticThreshold: 1 })).body.cacheConfig.semanticThreshold).toBe(1);
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { semanticThreshold: 1.01 }), 400, "validation_error", "semanticThreshold");
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { semanticThreshold: -0.01 }), 400, "validation_error", "semanticThreshold");
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { cacheTtlSecs: 0 }), 400, "validation_error", "cacheTtlSecs");
    expect((await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { cacheTtlSecs: 2_592_000 })).status).toBe(200);
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { cacheTtlSecs: 2_592_001 }), 400, "validation_error", "cacheTtlSecs");
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { cacheTtlSecs: 1.5 }), 400, "validation_error");
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { coalescingWindowMs: -1 }), 400, "validation_error");
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { coalescingWindowMs: 60_001 }), 400, "validation_error");
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { category: "DELETE" }), 400, "validation_error", "category");
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { cacheEnabled: "yes" }), 400, "validation_error");
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${tools.update_issue.id}/config`, t, { cacheEnabled: true }), 400, "validation_error", "READ or IDEMPOTENT");
    // moving a cached tool to WRITE turns its cache off
    const w = await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, t, { category: "WRITE" });
    expect(w.body).toMatchObject({ category: "WRITE", categoryManualOverride: true, cacheConfig: { enabled: false, coalescingWindowMs: 0 } });
    expectError(await h.call("PATCH", `/api/v1/mcp/tools/${crypto.randomUUID()}/config`, t, { cacheEnabled: false }), 404, "not_found");
    for (const c of ["READ", "IDEMPOTENT", "UNKNOWN", "WRITE"]) expect((await h.call("PATCH", `/api/v1/mcp/tools/${tools.frobnicate.id}/config`, t, { category: c })).body.category).toBe(c);
  });

  test("tenant isolation: another tenant gets 404 on servers and tools and never sees them", async () => {
    expect((await h.call("GET", "/api/v1/mcp/tools", h.B)).body.tools.some((x: any) => x.id === tools.get_issue.id)).toBe(false);
    expect((await h.call("GET", S, h.B)).body.servers.some((x: any) => x.id === serverId)).toBe(false);
    for (const [m, p, body] of [
      ["GET", `${S}/${serverId}`],
      ["DELETE", `${S}/${serverId}`],
      ["GET", `${S}/${serverId}/health`],
      ["POST", `${S}/${serverId}/discover`],
      ["GET", `${S}/${serverId}/connection-stats`],
      ["POST", `${S}/${serverId}/disable`],
      ["GET", `/api/v1/mcp/tools/${tools.get_issue.id}`],
      ["PATCH", `/api/v1/mcp/tools/${tools.get_issue.id}/config`, { cacheEnabled: false }],
      ["GET", `/api/v1/mcp/tools/${tools.get_issue.id}/entities`],
      ["POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, { arguments: { issue_id: "1" } }],
    ] as const)
      expectError(await h.call(m, p, h.B, body), 404, "not_found");
    // a same-named server in another tenant is fine
    expect((await h.call("POST", S, h.B, { name: "issues", url: fake.url })).status).toBe(200);
  });

  test("401 without a token (before validation), 403 permission_error without ManageConfig on disable/enable", async () => {
    expectError(await h.call("GET", S, undefined), 401, "authentication_error");
    expectError(await h.call("POST", S, undefined, { name: "x".repeat(500) }), 401, "authentication_error");
    expectError(await h.call("GET", "/api/v1/mcp/tools", "not-a-token"), 401, "authentication_error");
    const reader = await h.gw.token("tenant-tools", ["ViewMetrics"], "reader");
    expectError(await h.call("POST", `${S}/${serverId}/disable`, reader), 403, "permission_error", "ManageConfig");
    expectError(await h.call("POST", `${S}/${serverId}/enable`, reader), 403, "permission_error");
    expect((await h.call("GET", S, reader)).status).toBe(200);
  });
});

describe("doc2 §7 types", () => {
  test("the doc2 envelope uses only §7's types: 403 permission_error, 500 discovery_error or internal_error", async () => {
    const { ApiError, DOC2 } = await import("../../src/core/errors");
    expect(DOC2.body(new ApiError("authorization_error", "x"))).toEqual({ type: "permission_error", message: "x" });
    expect(DOC2.body(new ApiError("database_error", "database error"))).toEqual({ type: "internal_error", message: "database error" });
    expect(DOC2.body(new ApiError("configuration_error", "MCP_SECRET_X is not set"))).toEqual({ type: "internal_error", message: "MCP_SECRET_X is not set" });
    expect(DOC2.body(new ApiError("discovery_error", "d"))).toEqual({ type: "discovery_error", message: "d" });
    expect(DOC2.body(new ApiError("invalid_request_error", "malformed"))).toEqual({ type: "validation_error", message: "malformed" });
  });
});
