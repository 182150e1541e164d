/**
 * /api/v1/tool-cache (doc2 §4.5): search (exactly one of queryEmbedding — dimension checked — or
 * queryText; tenant isolation), get by exact 64-bit key (404 absent/expired, 400 non-integer),
 * per-key stats (body key parsed exactly), metrics; and the key function itself.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { useMcpFixture, startMcpGateway, expectError, registerAndDiscover, callTool, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";
import { cacheKeyOf, canonical, parseCacheKey, MAX_CACHE_KEY } from "../../src/mcp/toolcache/key";
import { parseJsonExact, toJson } from "../../src/mcp/json";

let h: McpGateway;
let fake: FakeMcpServer;
let tools: Record<string, any>;
const C = "/api/v1/tool-cache";

const fx = useMcpFixture({ serverName: "issues" });
beforeAll(() => ({ h, fake, tools } = fx));

describe("cache keys", () => {
  test("canonical arguments, 63-bit keys that differ by tenant, server, tool, agent and arguments", () => {
    expect(canonical({ b: [1, { d: 1, c: 2 }], a: "x", u: undefined })).toBe('{"a":"x","b":[1,{"c":2,"d":1}]}');
    const k = cacheKeyOf("t", "s", "tool", "agent", "{}");
    expect(k).toBeGreaterThanOrEqual(0n);
    expect(k).toBeLessThanOrEqual(MAX_CACHE_KEY);
    const others = [cacheKeyOf("t2", "s", "tool", "agent", "{}"), cacheKeyOf("t", "s2", "tool", "agent", "{}"), cacheKeyOf("t", "s", "tool2", "agent", "{}"), cacheKeyOf("t", "s", "tool", "", "{}"), cacheKeyOf("t", "s", "tool", "agent", '{"a":1}')];
    expect(new Set([k, ...others]).size).toBe(6);
    expect(cacheKeyOf("t", "s", "tool", "agent", "{}")).toBe(k);
  });

  test("64-bit integers survive JSON both ways; non-integers and out-of-range values are refused", () => {
    const big = 9_223_372_036_854_775_807n;
    expect(toJson({ k: big, n: 1 })).toBe('{"k":9223372036854775807,"n":1}');
    expect(parseJsonExact('{"k": 9223372036854775807, "n": 1.5}')).toEqual({ k: big, n: 1.5 });
    expect(parseCacheKey("18446744073709551615")).toBe(18_446_744_073_709_551_615n);
    expect(parseCacheKey(42)).toBe(42n);
    for (const bad of ["1.5", "abc", "18446744073709551616", "-9223372036854775809", "", 1.5, 1e300, null, true, "0x10"]) expect(() => parseCacheKey(bad)).toThrow("64-bit integer");
  });
});

describe("get, stats, metrics", () => {
  let key: string;
  beforeAll(async () => {
    const r = await callTool(h, tools.get_issue.id, { issue_id: "500" });
    key = r.body.cache.cacheKey.toString();
    await callTool(h, tools.get_issue.id, { issue_id: "500" });
    await callTool(h, tools.get_issue.id, { issue_id: "500" });
  });

  test("GET /{cache_key}: the entry with an exact integer key; 404 absent, expired or another tenant's; 400 non-integer", async () => {
    const raw = await (await h.gw.api(`${C}/${key}`, { token: h.A })).text();
    expect(raw).toContain(`"cacheKey":${key},`); // a JSON integer, digit for digit
    const r = await h.call("GET", `${C}/${key}`, h.A);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      cacheKey: parseCacheKey(key) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(key) : BigInt(key),
      toolId: tools.get_issue.id,
      toolName: "get_issue",
      serverId: tools.get_issue.serverId,
      agentId: "alice",
      arguments: { issue_id: "500" },
      result: { content: [{ type: "text", text: expect.stringContaining("get_issue#") }], _meta: expect.any(Object) },
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
      ttlSecs: 300,
      accessCount: 2,
      lastAccessedAt: expect.any(String),
      upstreamLatencyMs: expect.any(Number),
      sizeBytes: expect.any(Number),
      entities: [],
    });
    expectError(await h.call("GET", `${C}/${key}`, h.B), 404, "not_found");
    expectError(await h.call("GET", `${C}/123`, h.A), 404, "not_found");
    expectError(await h.call("GET", `${C}/18446744073709551615`, h.A), 404, "not_found"); // valid 64-bit, never a key
    expectError(await h.call("GET", `${C}/12.5`, h.A), 400, "validation_error", "64-bit integer");
    expectError(await h.call("GET", `${C}/abc`, h.A), 400, "validation_error", "64-bit integer");
    expectError(await h.call("GET", `${C}/18446744073709551616`, h.A), 400, "validation_error", "64-bit integer");
    expectError(await h.call("GET", `${C}/${key}`, undefined), 401, "authentication_error");
    h.clock.advance(300_000);
    expectError(await h.call("GET", `${C}/${key}`, h.A), 404, "not_found");
    h.clock.advance(-300_000);
  });

  test("POST /stats {cacheKey}: access count, hit rate and latency of the key; exact key from the body", async () => {
    await callTool(h, tools.get_issue.id, { issue_id: "501" });
    const k = (await callTool(h, tools.get_issue.id, { issue_id: "501" })).body.cache.cacheKey.toString();
    // the body carries the key as a raw integer token (beyond 2^53 a JS number would round it)
    const r = await h.gw.api(`${C}/stats`, { method: "POST", token: h.A, headers: { "content-type": "application/json" }, body: `{"cacheKey": ${k}}` });
    expect(r.status).toBe(200);
    const body = parseJsonExact(await r.text()) as any;
    expect(body).toEqual({
      cacheKey: expect.anything(),
      cached: true,
      toolId: tools.get_issue.id,
      accessCount: 1,
      misses: 1,
      totalCalls: 2,
      hitRate: 0.5,
      avgHitLatencyMs: expect.any(Number),
      avgMissLatencyMs: expect.any(Number),
      upstreamLatencyMs: expect.any(Number),
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
      lastAccessedAt: expect.any(String),
    });
    expect(body.cacheKey.toString()).toBe(k);
    expect((await h.call("POST", `${C}/stats`, h.A, { cacheKey: k })).status).toBe(200); // a digit string too (JS clients)
    expectError(await h.call("POST", `${C}/stats`, h.A, { cacheKey: 1.5 }), 400, "validation_error", "cacheKey");
    expectError(await h.call("POST", `${C}/stats`, h.A, { cacheKey: "x" }), 400, "validation_error", "cacheKey");
    expectError(await h.call("POST", `${C}/stats`, h.A, {}), 400, "validation_error", "cacheKey");
    expectError(await h.call("POST", `${C}/stats`, h.A, { cacheKey: 7 }), 404, "not_found");
    expectError(await h.call("POST", `${C}/stats`, h.B, { cacheKey: k }), 404, "not_found");
    expectError(await h.call("POST", `${C}/stats`, undefined, { cacheKey: k }), 401, "authentication_error");
    const bad = await h.gw.api(`${C}/stats`, { method: "POST", token: h.A, headers: { "content-type": "application/json" }, body: "{nope" });
    expect(bad.status).toBe(400);
  });

  test("GET /metrics: entries, memory, hits/misses/hit rate, configuration", async () => {
    const m = await h.call("GET", `${C}/metrics`, h.A);
    expect(m.status).toBe(200);
    const figures = structuredClone(m.body); // (bun's toMatchObject writes its matchers into the received object)
    expect(m.body).toMatchObject({
      totalEntries: expect.any(Number),
      expiredEntries: 0,
      entriesWithEmbeddings: expect.any(Number),
      memoryUsageBytes: expect.any(Number),
      hits: expect.any(Number),
      misses: expect.any(Number),
      hitRate: expect.any(Number),
      configuration: {
        embedder: { id: "test:hash-64", dimensions: 64, ready: true },
        maxResultBytes: 1_048_576,
        defaults: { READ: { enabled: true, ttlSecs: 300 }, WRITE: { enabled: false, coalescingWindowMs: 0 } },
      },
    });
    expect(figures.totalEntries).toBeGreaterThanOrEqual(1); // (issue 500 expired in the test above and was removed when read)
    expect(figures.memoryUsageBytes).toBeGreaterThan(0);
    expect(figures.hitRate).toBeCloseTo(figures.hits / (figures.hits + figures.misses), 3);
    const other = await h.call("GET", `${C}/metrics`, h.B);
    expect(other.body).toMatchObject({ totalEntries: 0, hits: 0, misses: 0, hitRate: 0 });
  });
});

describe("search", () => {
  beforeAll(async () => {
    await callTool(h, tools.search_docs.id, { query: "rotate the signing secret of tokens", limit: 3 });
    await callTool(h, tools.search_docs.id, { query: "cache eviction of idle tenants", limit: 3 });
  });

  test("queryText: cached outputs scored by similarity, best first; threshold and limit; tool/server filters", async () => {
    const r = await h.call("POST", `${C}/search`, h.A, { queryText: "search_docs signing secret tokens" });
    expect(r.status).toBe(200);
    expect(r.body.embedder).toEqual({ id: "test:hash-64", dimensions: 64 });
    expect(r.body.results.length).toBeGreaterThanOrEqual(2);
    const sims = r.body.results.map((x: any) => x.similarity);
    expect(r.body.results[0]).toMatchObject({ similarity: expect.any(Number), toolName: "search_docs", arguments: { query: "rotate the signing secret of tokens", limit: 3 }, result: expect.any(Object) });
    expect(sims).toEqual([...sims].sort((a, b) => b - a));
    expect((await h.call("POST", `${C}/search`, h.A, { queryText: "signing secret tokens", limit: 1 })).body.results).toHaveLength(1);
    const strict = await h.call("POST", `${C}/search`, h.A, { queryText: "search_docs signing secret tokens", threshold: 0.99 });
    expect(strict.body.results.every((x: any) => x.similarity >= 0.99)).toBe(true);
    const byTool = await h.call("POST", `${C}/search`, h.A, { queryText: "issue", toolId: tools.get_issue.id, limit: 100 });
    expect(byTool.body.results.every((x: any) => x.toolId === tools.get_issue.id)).toBe(true);
    expect((await h.call("POST", `${C}/search`, h.A, { queryText: "issue", serverId: crypto.randomUUID() })).body.results).toEqual([]);
  });

  test("queryEmbedding: used as given (dimension checked)", async () => {
    const [v] = await h.embedder.embed(["search_docs query: cache eviction of idle tenants, limit: 3"]);
    const r = await h.call("POST", `${C}/search`, h.A, { queryEmbedding: Array.from(v!), limit: 1 });
    expect(r.body.results[0]).toMatchObject({ arguments: { query: "cache eviction of idle tenants" } });
    expect(r.body.results[0].similarity).toBeCloseTo(1, 5);
    expectError(await h.call("POST", `${C}/search`, h.A, { queryEmbedding: [0.1, 0.2] }), 400, "validation_error", "dimensions");
  });

  test("exactly one of queryEmbedding or queryText; limits", async () => {
    expectError(await h.call("POST", `${C}/search`, h.A, {}), 400, "validation_error", "exactly one");
    expectError(await h.call("POST", `${C}/search`, h.A, { queryText: "a", queryEmbedding: [1] }), 400, "validation_error", "exactly one");
    expectError(await h.call("POST", `${C}/search`, h.A, { queryText: "" }), 400, "validation_error", "queryText");
    expect((await h.call("POST", `${C}/search`, h.A, { queryText: "x".repeat(10_000) })).status).toBe(200);
    expectError(await h.call("POST", `${C}/search`, h.A, { queryText: "x".repeat(10_001) }), 400, "validation_error", "queryText");
    expectError(await h.call("POST", `${C}/search`, h.A, { queryText: "a", limit: 101 }), 400, "validation_error", "limit");
    expectError(await h.call("POST", `${C}/search`, h.A, { queryText: "a", threshold: 1.5 }), 400, "validation_error", "threshold");
    expectError(await h.call("POST", `${C}/search`, h.A, { queryEmbedding: ["a"] }), 400, "validation_error", "queryEmbedding");
    expectError(await h.call("POST", `${C}/search`, undefined, { queryText: "a" }), 401, "authentication_error");
  });

  test("tenant isolation: another tenant's search never returns these entries", async () => {
    const r = await h.call("POST", `${C}/search`, h.B, { queryText: "search_docs signing secret tokens", limit: 100 });
    expect(r.body.results).toEqual([]);
  });
});
