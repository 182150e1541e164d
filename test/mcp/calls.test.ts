/**
 * Tool calls through svc end to end against an MCP server on loopback: a READ call twice is a
 * hit with no second upstream call; a WRITE invalidates the mapped READ results (and those of
 * child entities) and what its rules name; an error result is never cached; identical concurrent
 * calls share one upstream call; semantic lookup; agent scoping; TTL on the fake clock.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { useMcpFixture, startMcpGateway, expectError, registerAndDiscover, callTool, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";

let h: McpGateway;
let fake: FakeMcpServer;
let tools: Record<string, any>;
let server: any;
const E = "/api/v1/mcp/entities";

const fx = useMcpFixture({ serverName: "issues" });
beforeAll(() => ({ h, fake, tools, server } = fx));

const upstream = (name: string) => fake.calls.get(name) ?? 0;
const text = (r: { body: any }) => r.body.result.content[0].text as string;

describe("read path", () => {
  test("a READ call twice: MISS then HIT, the second never reaches the server; canonical arguments; X-Cache-Status", async () => {
    const before = upstream("get_issue");
    const a = await callTool(h, tools.get_issue.id, { issue_id: "7", extra: { b: 1, a: 2 } });
    expect(a.status).toBe(200);
    expect(a.headers.get("x-cache-status")).toBe("MISS");
    expect(a.body).toMatchObject({ toolId: tools.get_issue.id, toolName: "get_issue", serverId: server.id, cache: { status: "MISS", tier: null, similarity: null, stored: true } });
    expect(a.body.cache.cacheKey.toString()).toMatch(/^\d+$/);
    expect(a.body.upstreamLatencyMs).toBeGreaterThan(0);
    const b = await callTool(h, tools.get_issue.id, { extra: { a: 2, b: 1 }, issue_id: "7" }); // same call, other key order
    expect(b.headers.get("x-cache-status")).toBe("HIT");
    expect(b.body.cache).toMatchObject({ status: "HIT", tier: "exact", similarity: 1, stored: false });
    expect(b.body.cache.cacheKey).toEqual(a.body.cache.cacheKey);
    expect(b.body.result).toEqual(a.body.result);
    expect(b.body.upstreamLatencyMs).toBeNull();
    expect(upstream("get_issue")).toBe(before + 1);
    // different arguments: a miss
    await callTool(h, tools.get_issue.id, { issue_id: "8" });
    expect(upstream("get_issue")).toBe(before + 2);
  });

  test("an isError result is served but never cached; non-cacheable tools BYPASS", async () => {
    const r1 = await callTool(h, tools.flaky_read.id, { q: "x" });
    expect(r1.body.result.isError).toBe(true);
    expect(r1.body.cache).toMatchObject({ status: "MISS", stored: false });
    const r2 = await callTool(h, tools.flaky_read.id, { q: "x" });
    expect(r2.body.cache.status).toBe("MISS");
    expect(upstream("flaky_read")).toBe(2);
    const w = await callTool(h, tools.frobnicate.id, {});
    expect(w.body.cache).toEqual({ status: "BYPASS", tier: null, similarity: null, cacheKey: null, stored: false });
    await callTool(h, tools.frobnicate.id, {});
    expect(upstream("frobnicate")).toBe(2);
  });

  test("the agent is part of the key unless crossAgent; TTL expiry on the clock", async () => {
    const id = tools.list_issues.id;
    const n0 = upstream("list_issues");
    await callTool(h, id, { repo: "svc" }, undefined, "agent-1");
    expect((await callTool(h, id, { repo: "svc" }, undefined, "agent-1")).body.cache.status).toBe("HIT");
    expect((await callTool(h, id, { repo: "svc" }, undefined, "agent-2")).body.cache.status).toBe("MISS");
    expect(upstream("list_issues")).toBe(n0 + 2);
    await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, h.A, { crossAgentEnabled: true, cacheTtlSecs: 60 });
    await callTool(h, id, { repo: "shared" }, undefined, "agent-1");
    expect((await callTool(h, id, { repo: "shared" }, undefined, "agent-9")).body.cache.status).toBe("HIT");
    h.clock.advance(59_000);
    expect((await callTool(h, id, { repo: "shared" }, undefined, "agent-9")).body.cache.status).toBe("HIT");
    h.clock.advance(1_000);
    expect((await callTool(h, id, { repo: "shared" }, undefined, "agent-9")).body.cache.status).toBe("MISS");
    expect(upstream("list_issues")).toBe(n0 + 4);
  });

  test("identical concurrent calls inside the coalescing window share one upstream call", async () => {
    const id = tools.slow_read.id;
    const before = upstream("slow_read");
    const calls = [callTool(h, id, { q: "same" }), callTool(h, id, { q: "same" }), callTool(h, id, { q: "same" })];
    await fake.whenWaiting(1); // the leader reached the server
    const other = callTool(h, id, { q: "different" });
    await fake.whenWaiting(2);
    fake.release();
    const rs = await Promise.all([...calls, other]);
    expect(upstream("slow_read")).toBe(before + 2);
    expect(rs.map((r) => r.body.cache.status).sort()).toEqual(["COALESCED", "COALESCED", "MISS", "MISS"]);
    expect(new Set(rs.slice(0, 3).map(text)).size).toBe(1);
    // without a window, each call goes upstream
    await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, h.A, { coalescingWindowMs: 0, cacheEnabled: false });
    const two = [callTool(h, id, { q: "solo" }), callTool(h, id, { q: "solo" })];
    await fake.whenWaiting(2);
    fake.release();
    expect((await Promise.all(two)).map((r) => r.body.cache.status)).toEqual(["BYPASS", "BYPASS"]);
  });

  test("a call that arrives after the window closed does not join the flight", async () => {
    const id = tools.slow_read.id;
    await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, h.A, { coalescingWindowMs: 500, cacheEnabled: false });
    const before = upstream("slow_read");
    const first = callTool(h, id, { q: "late" });
    await fake.whenWaiting(1);
    h.clock.advance(501);
    const late = callTool(h, id, { q: "late" });
    await fake.whenWaiting(2);
    fake.release();
    await Promise.all([first, late]);
    expect(upstream("slow_read")).toBe(before + 2);
  });

  test("semantic lookup (opt-in): same structure, similar free text at the threshold; numbers and entity ids must match", async () => {
    const id = tools.search_docs.id;
    await h.call("PATCH", `/api/v1/mcp/tools/${id}/config`, h.A, { semanticThreshold: 0.8 });
    const a = await callTool(h, id, { query: "how to configure the rate limiter tiers", limit: 5 });
    expect(a.body.cache.status).toBe("MISS");
    const b = await callTool(h, id, { query: "configure the rate limiter tiers how to", limit: 5 });
    expect(b.body.cache).toMatchObject({ status: "HIT", tier: "semantic" });
    expect(b.body.cache.similarity).toBeGreaterThanOrEqual(0.8);
    expect(b.body.cache.cacheKey).toEqual(a.body.cache.cacheKey);
    expect(text(b)).toBe(text(a));
    // another number: never a semantic match
    expect((await callTool(h, id, { query: "how to configure the rate limiter tiers", limit: 6 })).body.cache.status).toBe("MISS");
    // unrelated text: a miss
    expect((await callTool(h, id, { query: "deleting workspaces permanently", limit: 5 })).body.cache.status).toBe("MISS");
  });
});

describe("write invalidates read", () => {
  let repo: any, issue: any, comment: any;
  beforeAll(async () => {
    repo = (await h.call("POST", E, h.A, { name: "repository" })).body;
    issue = (await h.call("POST", E, h.A, { name: "issue", parentId: repo.id })).body;
    comment = (await h.call("POST", E, h.A, { name: "comment", parentId: issue.id })).body;
    const map = (toolId: string, entityId: string, paramName: string, operation: string) => h.call("POST", "/api/v1/mcp/tool-entities", h.A, { toolId, entityId, paramName, operation });
    expect((await map(tools.get_issue.id, issue.id, "issue_id", "READ")).status).toBe(200);
    expect((await map(tools.list_issues.id, issue.id, "issue_id", "READ")).status).toBe(200); // called without issue_id: depends on every issue
    expect((await map(tools.get_comment.id, comment.id, "comment_id", "READ")).status).toBe(200);
    expect((await map(tools.update_issue.id, issue.id, "issue_id", "WRITE")).status).toBe(200);
    await h.call("PATCH", `/api/v1/mcp/tools/${tools.list_issues.id}/config`, h.A, { crossAgentEnabled: false });
  });

  test("a WRITE drops the cached READs of the same entity id, the entity-wide lists and the child entity's results; others stay", async () => {
    const hit = async (id: string, args: Record<string, unknown>) => (await callTool(h, id, args)).body.cache.status;
    await callTool(h, tools.get_issue.id, { issue_id: "42" });
    await callTool(h, tools.get_issue.id, { issue_id: "43" });
    await callTool(h, tools.list_issues.id, { repo: "svc" });
    await callTool(h, tools.get_comment.id, { comment_id: "c1" });
    for (const [id, args] of [
      [tools.get_issue.id, { issue_id: "42" }],
      [tools.get_issue.id, { issue_id: "43" }],
      [tools.list_issues.id, { repo: "svc" }],
      [tools.get_comment.id, { comment_id: "c1" }],
    ] as const)
      expect(await hit(id, args)).toBe("HIT");
    const w = await callTool(h, tools.update_issue.id, { issue_id: 42, title: "new" }); // 42 and "42" name the same issue
    expect(w.body.cache.status).toBe("BYPASS");
    const before = upstream("get_issue");
    expect(await hit(tools.get_issue.id, { issue_id: "42" })).toBe("MISS"); // invalidated
    expect(await hit(tools.get_issue.id, { issue_id: "43" })).toBe("HIT"); // another issue
    expect(await hit(tools.list_issues.id, { repo: "svc" })).toBe("MISS"); // depends on every issue
    expect(await hit(tools.get_comment.id, { comment_id: "c1" })).toBe("MISS"); // child entity (cascade)
    expect(upstream("get_issue")).toBe(before + 1);
  });

  test("an enabled rule drops every cached result of the tool it names; a disabled rule does nothing", async () => {
    await callTool(h, tools.search_docs.id, { query: "rules", limit: 1 });
    const rule = await h.call("POST", "/api/v1/mcp/rules", h.A, { writeToolId: tools.set_label.id, invalidateToolId: tools.search_docs.id, enabled: false });
    await callTool(h, tools.set_label.id, { issue_id: "1", label: "bug" });
    expect((await callTool(h, tools.search_docs.id, { query: "rules", limit: 1 })).body.cache.status).toBe("HIT");
    await h.call("PATCH", `/api/v1/mcp/rules/${rule.body.id}`, h.A, { enabled: true });
    await callTool(h, tools.set_label.id, { issue_id: "1", label: "bug" });
    expect((await callTool(h, tools.search_docs.id, { query: "rules", limit: 1 })).body.cache.status).toBe("MISS");
  });

  test("POST /tool-cache/invalidate by entity type: one id, all, cascade; the count of dropped entries (0 for a type with nothing cached)", async () => {
    await callTool(h, tools.get_issue.id, { issue_id: "90" });
    await callTool(h, tools.get_issue.id, { issue_id: "91" });
    await callTool(h, tools.get_comment.id, { comment_id: "c9" });
    const one = await h.call("POST", "/api/v1/tool-cache/invalidate", h.A, { entityType: "issue", entityId: "90" });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ invalidated: expect.any(Number), entityType: "issue", entityId: "90", cascade: false, entityTypes: ["issue"] });
    expect(one.body.invalidated).toBeGreaterThanOrEqual(1);
    expect((await callTool(h, tools.get_issue.id, { issue_id: "91" })).body.cache.status).toBe("HIT");
    expect((await callTool(h, tools.get_comment.id, { comment_id: "c9" })).body.cache.status).toBe("HIT");
    const all = await h.call("POST", "/api/v1/tool-cache/invalidate", h.A, { entityType: "repository", cascade: true });
    expect(all.body).toMatchObject({ entityType: "repository", entityId: null, cascade: true, entityTypes: ["repository", "issue", "comment"] });
    expect(all.body.invalidated).toBeGreaterThanOrEqual(2);
    expect((await callTool(h, tools.get_comment.id, { comment_id: "c9" })).body.cache.status).toBe("MISS");
    expect((await h.call("POST", "/api/v1/tool-cache/invalidate", h.A, { entityType: "comment" })).body.invalidated).toBe(1);
    // doc2 answers a count: an entity type nothing is cached under (never defined) is 200 with 0, not 404
    const none = await h.call("POST", "/api/v1/tool-cache/invalidate", h.A, { entityType: "nope", cascade: true });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ invalidated: 0, entityType: "nope", entityId: null, cascade: true, entityTypes: [] });
    expectError(await h.call("POST", "/api/v1/tool-cache/invalidate", h.A, {}), 400, "validation_error", "entityType");
    expectError(await h.call("POST", "/api/v1/tool-cache/invalidate", h.A, { entityType: "x".repeat(129) }), 400, "validation_error", "entityType");
    expectError(await h.call("POST", "/api/v1/tool-cache/invalidate", h.A, { entityType: "issue", cascade: "yes" }), 400, "validation_error", "cascade");
    // another tenant's entity type: nothing of that tenant's is cached under it, and tenant A's entries stay
    await callTool(h, tools.get_issue.id, { issue_id: "91" }); // cached again (the cascade above dropped it)
    const other = await h.call("POST", "/api/v1/tool-cache/invalidate", h.B, { entityType: "issue" });
    expect(other.status).toBe(200);
    expect(other.body.invalidated).toBe(0);
    expect((await callTool(h, tools.get_issue.id, { issue_id: "91" })).body.cache.status).toBe("HIT");
  });

  test("deleting an entity invalidates its results and its children's", async () => {
    const t = await h.gw.token("tenant-entdel", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const own = await registerAndDiscover({ ...h, A: t }, fake.url, { name: "own" });
    const parent = (await h.call("POST", E, t, { name: "project" })).body;
    const child = (await h.call("POST", E, t, { name: "ticket", parentId: parent.id })).body;
    await h.call("POST", "/api/v1/mcp/tool-entities", t, { toolId: own.tools.get_comment.id, entityId: child.id, paramName: "comment_id", operation: "READ" });
    await callTool({ ...h, A: t }, own.tools.get_comment.id, { comment_id: "z" });
    expect((await callTool({ ...h, A: t }, own.tools.get_comment.id, { comment_id: "z" })).body.cache.status).toBe("HIT");
    const d = await h.call("DELETE", `${E}/${parent.id}`, t);
    expect(d.body).toMatchObject({ deleted: true, invalidated: 1 });
    expect((await callTool({ ...h, A: t }, own.tools.get_comment.id, { comment_id: "z" })).body.cache.status).toBe("MISS");
    expect((await h.call("GET", `${E}/${child.id}`, t)).body.parentId).toBeNull();
  });
});

describe("call endpoint", () => {
  test("validation, 404, 409 for a DISABLED server, 401, isolation", async () => {
    expectError(await h.call("POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, h.A, { arguments: [1, 2] }), 400, "validation_error", "arguments");
    expectError(await h.call("POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, h.A, { arguments: {}, agentId: "" }), 400, "validation_error", "agentId");
    expectError(await h.call("POST", `/api/v1/mcp/tools/${crypto.randomUUID()}/call`, h.A, { arguments: {} }), 404, "not_found");
    expectError(await h.call("POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, undefined, { arguments: {} }), 401, "authentication_error");
    expectError(await h.call("POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, h.B, { arguments: {} }), 404, "not_found");
    const t = await h.gw.token("tenant-dis", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const own = await registerAndDiscover({ ...h, A: t }, fake.url, { name: "d" });
    const admin = await h.gw.token("tenant-dis", ["ManageConfig"], "admin");
    expect((await h.call("POST", `/api/v1/mcp/servers/${own.server.id}/disable`, admin)).body.status).toBe("DISABLED");
    const n = upstream("get_issue");
    expectError(await callTool({ ...h, A: t }, own.tools.get_issue.id, { issue_id: "1" }), 409, "conflict", "DISABLED");
    expect(upstream("get_issue")).toBe(n);
  });

  test("an unreachable server: 502 proxy_error, recorded", async () => {
    const t = await h.gw.token("tenant-502", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const own = startFakeMcpServer();
    const d = await registerAndDiscover({ ...h, A: t }, own.url, { name: "flaky" });
    await own.stop();
    h.mcp.pool.drop(d.server.id);
    expectError(await callTool({ ...h, A: t }, d.tools.get_issue.id, { issue_id: "1" }), 502, "proxy_error", "get_issue");
    const a = await h.call("GET", "/api/v1/mcp/analytics", t);
    expect(a.body.summary).toMatchObject({ totalCalls: 1, cacheHits: 0, cacheMisses: 1 });
  });
});
