/**
 * Analytics from the recorded calls (doc2 §4.6: every field, granularity buckets, date and
 * server/tool filters) and the YAML configuration: export exactly as §4.6, import applies it,
 * export → import into an empty tenant → export gives the same document.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import * as YAML from "yaml";
import { useMcpFixture, startMcpGateway, expectError, registerAndDiscover, callTool, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";

let h: McpGateway;
let fake: FakeMcpServer;

const fx = useMcpFixture({ overrides: { cost_per_call_usd: 0.002 } });
beforeAll(() => ({ h, fake } = fx));

describe("analytics", () => {
  test("summary, byServer, byTool, trend and executionTimeMs from the recorded calls; filters; granularity", async () => {
    const t = await h.gw.token("tenant-an", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const hh = { ...h, A: t };
    const one = await registerAndDiscover(hh, fake.url, { name: "one" });
    const two = await registerAndDiscover(hh, fake.url, { name: "two" });
    const day0 = Date.parse(two.server.createdAt); // the gateway's (fake-clock driven) wall time
    await callTool(hh, one.tools.get_issue.id, { issue_id: "1" }); // miss
    await callTool(hh, one.tools.get_issue.id, { issue_id: "1" }); // hit
    await callTool(hh, one.tools.get_issue.id, { issue_id: "1" }); // hit
    await callTool(hh, one.tools.update_issue.id, { issue_id: "1" }); // bypass (upstream)
    h.clock.advance(86_400_000); // the next day
    await callTool(hh, two.tools.list_issues.id, { repo: "a" }); // miss
    await callTool(hh, two.tools.list_issues.id, { repo: "a" }); // hit
    const r = await h.call("GET", "/api/v1/mcp/analytics", t);
    expect(r.status).toBe(200);
    const body = structuredClone(r.body);
    expect(r.body).toEqual({
      summary: {
        totalCalls: 6,
        cacheHits: 3,
        cacheMisses: 3,
        hitRate: 0.5,
        avgLatencyCacheMs: expect.any(Number),
        avgLatencyMissMs: expect.any(Number),
        estimatedTimeSavedMs: expect.any(Number),
        estimatedCostSaved: 0.006,
      },
      byServer: [
        { serverId: one.server.id, serverName: "one", totalCalls: 4, cacheHits: 2, hitRate: 0.5, toolCount: 9 },
        { serverId: two.server.id, serverName: "two", totalCalls: 2, cacheHits: 1, hitRate: 0.5, toolCount: 9 },
      ],
      byTool: [
        { toolId: one.tools.get_issue.id, toolName: "get_issue", serverId: one.server.id, category: "READ", totalCalls: 3, cacheHits: 2, hitRate: 0.6667, avgLatencyMs: expect.any(Number) },
        { toolId: two.tools.list_issues.id, toolName: "list_issues", serverId: two.server.id, category: "READ", totalCalls: 2, cacheHits: 1, hitRate: 0.5, avgLatencyMs: expect.any(Number) },
        { toolId: one.tools.update_issue.id, toolName: "update_issue", serverId: one.server.id, category: "WRITE", totalCalls: 1, cacheHits: 0, hitRate: 0, avgLatencyMs: expect.any(Number) },
      ],
      trend: [
        { period: new Date(day0).toISOString().slice(0, 10), totalCalls: 4, cacheHits: 2, cacheMisses: 2, hitRate: 0.5 },
        { period: new Date(day0 + 86_400_000).toISOString().slice(0, 10), totalCalls: 2, cacheHits: 1, cacheMisses: 1, hitRate: 0.5 },
      ],
      executionTimeMs: expect.any(Number),
    });
    expect(body.summary.avgLatencyMissMs).toBeGreaterThan(body.summary.avgLatencyCacheMs);
    expect(body.summary.estimatedTimeSavedMs).toBeGreaterThan(0);

    const onlyOne = (await h.call("GET", `/api/v1/mcp/analytics?serverId=${one.server.id}`, t)).body;
    expect(onlyOne.summary.totalCalls).toBe(4);
    expect(onlyOne.byServer.map((s: any) => s.serverName)).toEqual(["one"]);
    expect((await h.call("GET", "/api/v1/mcp/analytics?toolName=list", t)).body.summary.totalCalls).toBe(2);
    const day2 = new Date(day0 + 86_400_000).toISOString().slice(0, 10);
    const fromDay2 = (await h.call("GET", `/api/v1/mcp/analytics?startDate=${day2}T00:00:00Z`, t)).body;
    expect(fromDay2.summary.totalCalls).toBe(2);
    const untilDay2 = (await h.call("GET", `/api/v1/mcp/analytics?startDate=2020-01-01T00:00:00Z&endDate=${day2}T00:00:00Z`, t)).body;
    expect(untilDay2.summary.totalCalls).toBe(4);
    const hourly = (await h.call("GET", "/api/v1/mcp/analytics?granularity=hour", t)).body.trend;
    expect(hourly.map((b: any) => b.period)).toEqual([new Date(day0).toISOString().slice(0, 13) + ":00:00Z", new Date(day0 + 86_400_000).toISOString().slice(0, 13) + ":00:00Z"]);
    const monthly = (await h.call("GET", "/api/v1/mcp/analytics?granularity=month", t)).body.trend;
    expect(monthly[0].period).toMatch(/^\d{4}-\d{2}$/);
    expect(monthly.reduce((n: number, b: any) => n + b.totalCalls, 0)).toBe(6);
    const weekly = (await h.call("GET", "/api/v1/mcp/analytics?granularity=week", t)).body.trend;
    for (const b of weekly) expect(new Date(`${b.period}T00:00:00Z`).getUTCDay()).toBe(1); // weeks start on Monday
    const daily = (await h.call("GET", "/api/v1/mcp/analytics?granularity=day", t)).body.trend;
    expect(daily).toHaveLength(2);
  });

  test("validation, isolation, 401", async () => {
    expectError(await h.call("GET", "/api/v1/mcp/analytics?granularity=year", h.A), 400, "validation_error", "granularity");
    expectError(await h.call("GET", "/api/v1/mcp/analytics?startDate=yesterday", h.A), 400, "validation_error", "startDate");
    expectError(await h.call("GET", "/api/v1/mcp/analytics?serverId=x", h.A), 400, "validation_error", "serverId");
    expectError(await h.call("GET", "/api/v1/mcp/analytics?startDate=2030-01-02T00:00:00Z&endDate=2030-01-01T00:00:00Z", h.A), 400, "validation_error", "startDate");
    expectError(await h.call("GET", "/api/v1/mcp/analytics", undefined), 401, "authentication_error");
    const empty = (await h.call("GET", "/api/v1/mcp/analytics", h.B)).body;
    expect(empty.summary).toEqual({ totalCalls: 0, cacheHits: 0, cacheMisses: 0, hitRate: 0, avgLatencyCacheMs: 0, avgLatencyMissMs: 0, estimatedTimeSavedMs: 0, estimatedCostSaved: 0 });
    expect(empty.byTool).toEqual([]);
  });
});

describe("YAML configuration", () => {
  test("export: exactly the §4.6 shape; import into an empty tenant; export again gives the same document", async () => {
    const t = await h.gw.token("tenant-yaml", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const hh = { ...h, A: t };
    process.env.MCP_SECRET_ISSUES = "k";
    const reg = await h.call("POST", "/api/v1/mcp/servers", t, { name: "issues", url: fake.url, authType: "API_KEY", authConfig: { type: "API_KEY", header: "x-api-key", valueEnv: "MCP_SECRET_ISSUES" } });
    const { tools } = await (async () => {
      const d = await h.call("POST", `/api/v1/mcp/servers/${reg.body.server.id}/discover`, t);
      return { tools: Object.fromEntries(d.body.tools.map((x: any) => [x.name, x])) as Record<string, any> };
    })();
    const repo = (await h.call("POST", "/api/v1/mcp/entities", t, { name: "repository" })).body;
    const issue = (await h.call("POST", "/api/v1/mcp/entities", t, { name: "issue", parentId: repo.id })).body;
    await h.call("POST", "/api/v1/mcp/tool-entities", t, { toolId: tools.get_issue.id, entityId: issue.id, paramName: "issue_id", operation: "READ" });
    await h.call("POST", "/api/v1/mcp/tool-entities", t, { toolId: tools.update_issue.id, entityId: issue.id, paramName: "issue_id", operation: "WRITE" });
    await h.call("POST", "/api/v1/mcp/tool-entities", t, { toolId: tools.list_issues.id, entityId: repo.id, paramName: "repo", operation: "READ" });
    await h.call("POST", "/api/v1/mcp/rules", t, { writeToolId: tools.update_issue.id, invalidateToolId: tools.get_issue.id });
    await h.call("POST", "/api/v1/mcp/rules", t, { writeToolId: tools.update_issue.id, invalidateToolId: tools.list_issues.id, enabled: false });
    await h.call("PATCH", `/api/v1/mcp/tools/${tools.get_issue.id}/config`, t, { cacheTtlSecs: 120, semanticThreshold: 0.9, crossAgentEnabled: true });

    const res = await h.gw.api("/api/v1/mcp/config/export", { token: t, headers: { accept: "application/yaml" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("application/yaml");
    const text = await res.text();
    const doc = YAML.parse(text);
    expect(Object.keys(doc)).toEqual(["servers", "tools", "entities"]);
    expect(doc.servers).toEqual([{ name: "issues", url: fake.url, transport: "HTTP", auth: { type: "API_KEY", header: "x-api-key", valueEnv: "MCP_SECRET_ISSUES" } }]);
    expect(doc.tools.get_issue).toEqual({ category: "read", cache: { enabled: true, ttlSecs: 120, semanticThreshold: 0.9, crossAgent: true }, entities: [{ param: "issue_id", type: "issue" }] });
    expect(doc.tools.update_issue).toEqual({
      category: "write",
      cache: { enabled: false, ttlSecs: 300, semanticThreshold: 1, crossAgent: false },
      entities: [{ param: "issue_id", type: "issue" }],
      invalidates: ["get_issue", { tool: "list_issues", enabled: false }],
    });
    expect(Object.keys(doc.tools)).toHaveLength(9);
    expect(doc.entities).toEqual({ issue: { parent: "repository" }, repository: {} });
    expect(text).not.toContain("\"k\"");

    // import into an empty tenant, then export: the same document
    const admin = await h.gw.token("tenant-yaml-copy", ["ManageConfig"], "ops");
    const imp = await h.gw.api("/api/v1/mcp/config/import", { method: "POST", token: admin, headers: { "content-type": "application/yaml" }, body: text });
    expect(imp.status).toBe(200);
    expect(await imp.json()).toEqual({ serversCreated: 1, serversUpdated: 0, entitiesCreated: 2, entitiesUpdated: 0, toolsCreated: 9, toolsUpdated: 0, mappings: 3, rules: 2, message: expect.any(String) });
    const copy = await (await h.gw.api("/api/v1/mcp/config/export", { token: admin })).text();
    expect(copy).toBe(text);
    // imported tools are known but not callable until discovered; discovery completes them and keeps the file's settings
    const copied = (await h.call("GET", "/api/v1/mcp/tools?name=get_issue", admin)).body.tools[0];
    expect(copied).toMatchObject({ available: false, categoryManualOverride: true, cacheConfig: { ttlSecs: 120, crossAgent: true } });
    const server = (await h.call("GET", "/api/v1/mcp/servers", admin)).body.servers[0];
    expect(server).toMatchObject({ name: "issues", status: "PENDING", authType: "API_KEY" });
    const d = await h.call("POST", `/api/v1/mcp/servers/${server.id}/discover`, admin);
    expect(d.body).toMatchObject({ toolsAdded: 0, toolsUpdated: 9 });
    expect((await h.call("GET", `/api/v1/mcp/tools/${copied.id}`, admin)).body).toMatchObject({ available: true, description: "Gets one issue", cacheConfig: { ttlSecs: 120 } });
    expect(await (await h.gw.api("/api/v1/mcp/config/export", { token: admin })).text()).toBe(text);
    // importing the same file again changes nothing
    const again = await h.gw.api("/api/v1/mcp/config/import", { method: "POST", token: admin, body: text });
    expect(await again.json()).toMatchObject({ serversCreated: 0, serversUpdated: 0, entitiesCreated: 0, toolsCreated: 0, toolsUpdated: 9 });
    expect(await (await h.gw.api("/api/v1/mcp/config/export", { token: admin })).text()).toBe(text);
  });

  test("import: several servers need `server` on tools; every error is a 400 naming the entry and nothing is applied; ManageConfig", async () => {
    const admin = await h.gw.token("tenant-yaml-bad", ["ManageConfig"], "ops");
    const imp = (body: string, token = admin) => h.gw.api("/api/v1/mcp/config/import", { method: "POST", token, headers: { "content-type": "application/yaml" }, body });
    const two = `servers:\n  - {name: a, url: "${fake.url}"}\n  - {name: b, url: "${fake.url}"}\n`;
    const cases: Array<[string, string]> = [
      [`${two}tools:\n  get_issue: {category: read}\n`, "several servers"],
      [`${two}tools:\n  get_issue: {server: c, category: read}\n`, "unknown server"],
      [`${two}tools:\n  get_issue: {server: a, category: readonly}\n`, "category"],
      [`${two}tools:\n  update_issue: {server: a, category: write, cache: {enabled: true}}\n`, "read or idempotent"],
      [`${two}tools:\n  get_issue: {server: a, category: read, entities: [{param: issue_id, type: nope}]}\n`, "unknown entity type"],
      [`${two}tools:\n  get_issue: {server: a, category: read, cache: {semanticThreshold: 2}}\n`, "semanticThreshold"],
      [`${two}tools:\n  get_issue: {server: a, category: read, invalidates: [ghost]}\n`, "unknown tool"],
      [`servers:\n  - {name: x, url: "http://0.0.0.0/"}\n`, "unspecified"],
      [`servers:\n  - {name: x, url: "stdio://rm", transport: STDIO}\n`, "allow-list"],
      [`servers:\n  - {name: x, url: "${fake.url}", auth: {type: API_KEY, header: h, value: secret}}\n`, "auth"],
      [`entities:\n  a: {parent: b}\n  b: {parent: a}\n`, "cycle"],
      [`nonsense: 1\n`, "unknown top-level key"],
      [`servers: [\n`, "not valid YAML"],
      [`- just a list\n`, "expected a mapping"],
    ];
    for (const [body, msg] of cases) {
      const r = await imp(body);
      const j = (await r.json()) as any;
      expect({ status: r.status, type: j.type, has: j.message.includes(msg) ? msg : j.message }).toEqual({ status: 400, type: "validation_error", has: msg });
    }
    expect((await h.call("GET", "/api/v1/mcp/servers", admin)).body.total).toBe(0); // nothing applied
    expect((await h.call("GET", "/api/v1/mcp/entities", admin)).body.total).toBe(0);
    const ok = await imp(`${two}tools:\n  get_issue: {server: a, category: read}\n  b/get_issue: {category: read}\n`);
    expect(((await ok.json()) as any).toolsCreated).toBe(2);
    const reader = await h.gw.token("tenant-yaml-bad", ["ViewMetrics"], "reader");
    const denied = await imp("servers: []", reader);
    expectError({ status: denied.status, body: await denied.json() }, 403, "permission_error");
    const anon = await h.gw.api("/api/v1/mcp/config/import", { method: "POST", body: "servers: []" });
    expect(anon.status).toBe(401);
    expectError(await h.call("GET", "/api/v1/mcp/config/export", undefined), 401, "authentication_error");
  });
});
