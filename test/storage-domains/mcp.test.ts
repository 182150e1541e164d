/**
 * The MCP domain's services on both backends (SQLite and a throwaway PostgreSQL): registry,
 * entities/mappings/rules, the tool cache (64-bit keys, tags, vectors), the call log and its
 * analytics (time buckets from the dialect), connections, tenant isolation and the all-or-nothing
 * configuration import. The HTTP behaviour is tested over SQLite in test/mcp/.
 */
import { beforeAll, expect, test } from "bun:test";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import type { AsyncStorage } from "../../src/storage/async";
import { OutboundPolicy } from "../../src/core/outbound";
import { Logger } from "../../src/core/log";
import { loadConfig } from "../../src/config";
import { MCP_MIGRATIONS } from "../../src/mcp/migrations";
import { mcpServices, type McpServices } from "../../src/mcp/services";
import type { CallRecord } from "../../src/mcp/calls/store";
import { cacheKeyOf, canonical } from "../../src/mcp/toolcache/key";
import type { ToolRecord } from "../../src/mcp/registry/store";
import { HashEmbedder } from "../cache/helpers";
import { ExposedTools } from "../../src/mcp/endpoint";

const T0 = Date.UTC(2026, 10, 25, 10, 30); // Wednesday 2026-11-25 10:30 UTC
const page = { page: 1, pageSize: 50, limit: 50, offset: 0 };

eachBackend("mcp", (b) => {
  let storage: AsyncStorage;
  let s: McpServices;
  const servicesOver = (st: AsyncStorage) =>
    mcpServices({
      storage: st,
      outbound: new OutboundPolicy({ allowPrivate: true }),
      embedder: new HashEmbedder(),
      config: loadConfig({}, { mcp: { health_interval_secs: 0 } }).mcp,
      log: new Logger("error"),
      clock,
      env: {},
    });
  const clock = { t: T0, now: () => clock.t };
  const A = "tenant-a";
  const B = "tenant-b";
  let read: ToolRecord;
  let write: ToolRecord;
  let serverId: string;

  beforeAll(async () => {
    storage = await b.open();
    await storage.migrate([{ domain: "mcp", migrations: MCP_MIGRATIONS }]);
    s = servicesOver(storage);
    const server = await s.registry.register(A, { name: "Alpha-Issues", url: "http://127.0.0.1:9/mcp" });
    serverId = server.id;
    const { tools } = await s.registry.applyDiscovery(A, server.id, [
      { name: "get_issue", inputSchema: { type: "object", properties: { issue_id: { type: "string" } } }, annotations: { readOnlyHint: true } },
      { name: "update_issue", inputSchema: { type: "object", properties: { issue_id: { type: "string" } } }, annotations: { destructiveHint: true } },
    ]);
    read = await s.registry.tool(A, tools.find((t) => t.name === "get_issue")!.id);
    write = await s.registry.tool(A, tools.find((t) => t.name === "update_issue")!.id);
  }, SETUP_TIMEOUT);

  test("registry: name filters are case-insensitive, a duplicate name is 409, another tenant sees nothing", async () => {
    expect((await s.registry.list(A, { name: "alpha" }, page)).items.map((x) => x.name)).toEqual(["Alpha-Issues"]);
    expect((await s.registry.list(A, { name: "ISSUES" }, page)).total).toBe(1);
    expect((await s.registry.list(A, { name: "a%" }, page)).total).toBe(0); // LIKE wildcards are literal
    expect((await s.registry.listTools(A, { name: "ISSUE", cacheEnabled: true }, page)).items.map((t) => t.name)).toEqual(["get_issue"]);
    await expect(s.registry.register(A, { name: "Alpha-Issues", url: "http://127.0.0.1:9/mcp" })).rejects.toMatchObject({ type: "conflict" });
    expect((await s.registry.list(B, {}, page)).total).toBe(0);
    await expect(s.registry.server(B, serverId)).rejects.toMatchObject({ type: "not_found" });
    await expect(s.registry.tool(B, read.id)).rejects.toMatchObject({ type: "not_found" });
  });

  test("tool cache: a result stored under a 64-bit key is found exactly, tagged, and invalidated by entity value", async () => {
    const issue = await s.entities.create(A, { name: "issue" });
    const child = await s.entities.create(A, { name: "comment", parentId: issue.id });
    expect(await s.stores.entities(A).withDescendants(issue.id)).toEqual(expect.arrayContaining([issue.id, child.id]));
    await s.entities.map(A, { toolId: read.id, entityId: issue.id, paramName: "issue_id", operation: "READ" });
    await s.entities.map(A, { toolId: write.id, entityId: issue.id, paramName: "issue_id", operation: "WRITE" });
    const keys: bigint[] = [];
    for (const id of ["1", "2"]) {
      const args = { issue_id: id };
      const c = canonical(args);
      const key = cacheKeyOf(A, serverId, read.name, "", c);
      keys.push(key);
      expect(await s.cache.store(A, read, { key, args, canonicalArgs: c, agentScope: "", structKey: c, result: { content: [{ type: "text", text: `issue ${id}` }] }, upstreamMs: 5, epoch: s.cache.epoch(A) })).toBe(true);
    }
    expect(keys.some((k) => k > 2n ** 53n || k < -(2n ** 53n))).toBe(true); // keys beyond a double's precision round-trip
    const hit = await s.cache.exact(A, keys[0]!);
    expect(hit).toMatchObject({ cacheKey: keys[0], toolId: read.id, hits: 0 });
    expect(await s.cache.exact(B, keys[0]!)).toBeUndefined();
    expect((await s.cache.get(A, keys[0]!)).entities).toEqual([{ entityId: issue.id, entityType: "issue", value: "1" }]);
    // the write of issue 1 drops issue 1's result, not issue 2's
    expect(await s.cache.afterExecution(A, write, { issue_id: "1" })).toBe(1);
    expect(await s.cache.exact(A, keys[0]!)).toBeUndefined();
    expect(await s.cache.exact(A, keys[1]!)).toBeDefined();
    // a hit counted through the call log lands on its entry
    const entry = (await s.cache.exact(A, keys[1]!))!;
    s.callLog.record(A, call({ serverId, toolId: read.id, toolName: read.name, cacheStatus: "HIT", tier: "exact", cacheKey: keys[1]! }), entry.vecKey);
    const stats = await s.cache.stats(A, keys[1]!);
    expect(stats).toMatchObject({ cacheKey: keys[1], cached: true, accessCount: 1, totalCalls: 1, hitRate: 1 });
    expect((await s.cache.exact(A, keys[1]!))!.hits).toBe(1);
    const m = await s.cache.metrics(A);
    expect(m).toMatchObject({ totalEntries: 1, expiredEntries: 0, entriesWithEmbeddings: 0, hits: 1, misses: 0 });
    // search embeds the entry (vector BLOB/BYTEA round trip) and finds it by text
    const found = await s.cache.search(A, { queryText: "get_issue issue_id 2", limit: 5 });
    expect(found.results.map((r) => r.cacheKey)).toEqual([keys[1]!]);
    expect((await s.cache.metrics(A)).entriesWithEmbeddings).toBe(1);
    // expiry: the sweep removes it
    clock.t += 3_600_000 * 24;
    expect(await s.cache.sweepExpired()).toBe(1);
    clock.t = T0;
    expect((await s.cache.invalidateByApi(A, { entityType: "issue", cascade: true })).entityTypes.sort()).toEqual(["comment", "issue"]);
  });

  test("rules: generated from mappings, removed with the entity they explain", async () => {
    const issue = (await s.stores.entities(A).byName("issue"))!;
    const g = await s.entities.generate(A);
    expect(g.generatedRules).toEqual([{ writeToolId: write.id, writeToolName: "update_issue", invalidateToolId: read.id, invalidateToolName: "get_issue", sharedEntities: ["issue"] }]);
    expect((await s.entities.generate(A)).rulesSkipped).toBe(1);
    expect((await s.entities.listRules(A, { enabled: true }, page)).total).toBe(1);
    expect((await s.entities.listRules(B, {}, page)).total).toBe(0);
    const del = await s.entities.delete(A, issue.id);
    expect(del).toMatchObject({ rulesRemoved: 1, mappingsRemoved: 2 });
    expect((await s.entities.list(A, {}, page)).items.map((e) => [e.name, e.parentId])).toEqual([["comment", null]]);
  });

  test("call log and analytics: multi-row batches; hour/day/week/month buckets in UTC; per tool and server", async () => {
    const C = "tenant-c";
    const srv = await s.registry.register(C, { name: "c", url: "http://127.0.0.1:9/mcp" });
    const { tools } = await s.registry.applyDiscovery(C, srv.id, [{ name: "list_things", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }]);
    const base = { serverId: srv.id, toolId: tools[0]!.id, toolName: "list_things" };
    // 100 calls (batches of 64 + 32 + 4 rows): Wednesday 10:30, Sunday 23:59:59.999, next Monday 00:00, December
    const at = [T0, Date.UTC(2026, 10, 29, 23, 59, 59, 999), Date.UTC(2026, 10, 30), Date.UTC(2026, 11, 2, 5)];
    for (let i = 0; i < 100; i++)
      s.callLog.record(C, { ...call({ ...base, atMs: at[i % 4]!, cacheStatus: i % 2 ? "HIT" : "MISS", latencyMs: i % 2 ? 1 : 11, upstreamMs: i % 2 ? null : 10 }) }, null);
    const q = { startDate: "2026-11-01T00:00:00Z", endDate: "2026-12-31T00:00:00Z" };
    const trend = async (granularity: "hour" | "day" | "week" | "month") => (await s.analytics.report(C, { ...q, granularity })).trend.map((t) => [t.period, t.totalCalls]);
    expect(await trend("hour")).toEqual([["2026-11-25T10:00:00Z", 25], ["2026-11-29T23:00:00Z", 25], ["2026-11-30T00:00:00Z", 25], ["2026-12-02T05:00:00Z", 25]]);
    expect(await trend("day")).toEqual([["2026-11-25", 25], ["2026-11-29", 25], ["2026-11-30", 25], ["2026-12-02", 25]]);
    expect(await trend("week")).toEqual([["2026-11-23", 50], ["2026-11-30", 50]]);
    expect(await trend("month")).toEqual([["2026-11", 75], ["2026-12", 25]]);
    const r = await s.analytics.report(C, { ...q, toolName: "THINGS" });
    expect(r.summary).toMatchObject({ totalCalls: 100, cacheHits: 50, cacheMisses: 50, hitRate: 0.5, avgLatencyCacheMs: 1, avgLatencyMissMs: 11, estimatedTimeSavedMs: 450 });
    expect(r.byServer).toEqual([{ serverId: srv.id, serverName: "c", totalCalls: 100, cacheHits: 50, hitRate: 0.5, toolCount: 1 }]);
    expect(r.byTool).toEqual([{ toolId: base.toolId, toolName: "list_things", serverId: srv.id, category: "READ", totalCalls: 100, cacheHits: 50, hitRate: 0.5, avgLatencyMs: 6 }]);
    expect((await s.analytics.report(A, q)).summary.totalCalls).toBe(1); // tenant-a's one hit only
    expect(await (await s.stores.calls(C)).serverCallErrors(srv.id)).toEqual({ totalCalls: 100, failedCalls: 0, toolErrors: 0 });
  });

  test("connections: moves count errors, the stale sweep crosses tenants, stats per server", async () => {
    const c = await s.connections.create(A, { serverId, clientId: "ide" });
    await expect(s.connections.create(B, { serverId, clientId: "ide" })).rejects.toMatchObject({ type: "not_found" });
    await s.connections.setState(A, c.id, "ERROR");
    await s.connections.setState(A, c.id, "CONNECTING");
    await expect(s.connections.setState(A, c.id, "DISCONNECTING")).resolves.toMatchObject({ state: "DISCONNECTING" });
    await expect(s.connections.setState(A, c.id, "CONNECTED")).rejects.toMatchObject({ type: "conflict" });
    await s.connections.setState(A, c.id, "DISCONNECTED");
    await s.connections.setState(A, c.id, "CONNECTING");
    expect(await s.connections.heartbeat(A, c.id)).toMatchObject({ acknowledged: true });
    clock.t += 3_600_000;
    expect(await s.connections.expireStale()).toBe(1);
    clock.t = T0;
    const st = await s.connectionStats(A, serverId);
    expect(st).toMatchObject({ totalConnections: 1, connectionErrors: 1, connectionErrorRate: 1, stateChanges: 6, activeConnections: 0, totalCalls: 1 });
    expect(st.byState.DISCONNECTED).toBe(1);
  });

  test("configuration import is all or nothing; export names what was imported", async () => {
    const D = "tenant-d";
    const bad = { servers: [{ name: "d1", url: "http://127.0.0.1:9/mcp" }], entities: { project: {} }, tools: { nothing_here: { server: "d1", category: "read", entities: [{ param: "id", type: "nope" }] } } };
    await expect(s.configIO.apply(D, bad)).rejects.toMatchObject({ type: "validation_error" });
    expect((await s.registry.list(D, {}, page)).total).toBe(0);
    expect((await s.entities.list(D, {}, page)).total).toBe(0);
    const good = { ...bad, tools: { nothing_here: { server: "d1", category: "read", entities: [{ param: "id", type: "project" }] } } };
    expect(await s.configIO.apply(D, good)).toMatchObject({ serversCreated: 1, entitiesCreated: 1, toolsCreated: 1, mappings: 1 });
    expect(await s.configIO.exportYaml(D)).toContain("nothing_here");
  });

  test("a second replica on the same database: reads another's writes at once; its /mcp exposure follows within the map's TTL", async () => {
    const other = servicesOver(await b.open());
    const R = "tenant-r";
    const srv = await s.registry.register(R, { name: "shared", url: "http://127.0.0.1:9/mcp" });
    await s.registry.applyDiscovery(R, srv.id, [{ name: "get_thing", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }]);
    await s.health.record(R, srv.id, true, 5, null); // HEALTHY: exposed
    expect((await other.registry.server(R, srv.id)).status).toBe("HEALTHY");
    const exposed = new ExposedTools(other.stores.registry);
    expect([...(await exposed.of(R)).keys()]).toEqual(["shared__get_thing"]);
    const saved = ExposedTools.TTL_MS;
    ExposedTools.TTL_MS = 20;
    try {
      await s.registry.setEnabled(R, srv.id, false); // on the first replica: the second's version does not move
      expect((await other.registry.server(R, srv.id)).status).toBe("DISABLED");
      const deadline = Date.now() + 5_000;
      while ((await exposed.of(R)).size > 0 && Date.now() < deadline) await Bun.sleep(5);
      expect((await exposed.of(R)).size).toBe(0);
    } finally {
      ExposedTools.TTL_MS = saved;
      await other.close();
    }
  });
});

function call(c: Partial<CallRecord>): CallRecord {
  return { atMs: T0, serverId: "s", toolId: "t", toolName: "t", agentId: "agent", cacheStatus: "MISS", tier: null, cacheKey: null, latencyMs: 1, upstreamMs: null, error: null, ...c };
}
