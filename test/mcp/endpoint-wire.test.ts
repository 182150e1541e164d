/**
 * /mcp answers exactly what the official SDK answers: every request is sent to the endpoint's
 * handler (which reads the body itself and hands it to the SDK parsed, and replays the SDK's
 * earlier answer to a repeated exact hit) and to a reference — createMcpHandler over the same
 * server factory, reading the body itself — and the two answers must be the same status, headers
 * and bytes. Hits, misses, unknown tools, unusual requests and other tenants, in both eras.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { createMcpHandler, type McpHttpHandler } from "@modelcontextprotocol/server";
import { useMcpFixture } from "./helpers";
import { mcpEndpoint, mcpServerFactory, ExposedTools } from "../../src/mcp/endpoint";
import type { RequestState } from "../../src/core/kernel";

const fx = useMcpFixture({ serverName: "issue tracker" });
let endpoint: ReturnType<typeof mcpEndpoint>;
let reference: McpHttpHandler;

beforeAll(() => {
  endpoint = mcpEndpoint(fx.h.mcp.stores.registry, fx.h.mcp.calls);
  reference = createMcpHandler(mcpServerFactory(new ExposedTools(fx.h.mcp.stores.registry), fx.h.mcp.calls), { legacy: "stateless" });
});
afterAll(async () => {
  await endpoint.close();
  await reference.close();
});

const URL_ = "http://svc.test/mcp";
const MODERN = "2026-07-28";
const JSON_CT = { "content-type": "application/json" };
const BOTH = { accept: "application/json, text/event-stream" };

interface Sent {
  method?: string;
  headers?: Record<string, string>;
  /** a string, or bytes, or a function giving a fresh stream each time */
  body?: string | Uint8Array | (() => ReadableStream);
}

const request = (s: Sent) =>
  new Request(URL_, { method: s.method ?? "POST", headers: s.headers, body: typeof s.body === "function" ? s.body() : s.body, ...(typeof s.body === "function" ? { duplex: "half" } : {}) } as RequestInit);

async function snapshot(r: Response) {
  return { status: r.status, headers: [...r.headers].sort(), body: await r.text() };
}

/** The endpoint's answer and the plain SDK's answer to the same request, for a tenant and subject. */
async function answers(s: Sent, who: { tenantId: string; sub: string } = { tenantId: "tenant-a", sub: "alice" }) {
  const principal = { ...who, permissions: new Set(["WorkspaceAdmin"]), via: "jwt" };
  const ours = await snapshot(await endpoint.handler(request(s), { principal } as unknown as RequestState));
  const agentId = s.headers?.["x-svc-agent-id"] || who.sub;
  const authInfo = { token: "", clientId: who.sub, scopes: ["WorkspaceAdmin"], extra: { tenantId: who.tenantId, agentId } };
  const sdk = await snapshot(await reference.fetch(request(s), { authInfo }));
  return { ours, sdk };
}

const envelope = { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientInfo": { name: "wire-test", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };
const modernHeaders = (method: string, name?: string) => ({ ...JSON_CT, ...BOTH, "mcp-protocol-version": MODERN, "mcp-method": method, ...(name ? { "mcp-name": name } : {}) });

describe("/mcp body handling is the SDK's", () => {
  const cases: Array<[string, Sent]> = [
    ["modern tools/list", { headers: modernHeaders("tools/list"), body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: envelope } }) }],
    ["legacy initialize", { headers: { ...JSON_CT, ...BOTH }, body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } }) }],
    ["legacy tools/list", { headers: { ...JSON_CT, ...BOTH, "mcp-protocol-version": "2025-11-25" }, body: JSON.stringify({ jsonrpc: "2.0", id: "a", method: "tools/list" }) }],
    ["a notification", { headers: { ...JSON_CT, ...BOTH }, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) }],
    ["an empty body", { headers: { ...JSON_CT, ...BOTH }, body: "" }],
    ["a body that is not JSON", { headers: { ...JSON_CT, ...BOTH }, body: "{not json" }],
    ["JSON null", { headers: { ...JSON_CT, ...BOTH }, body: "null" }],
    ["a JSON string", { headers: { ...JSON_CT, ...BOTH }, body: '"tools/list"' }],
    ["a batch", { headers: { ...JSON_CT, ...BOTH }, body: JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tools/list" }, { jsonrpc: "2.0", id: 2, method: "ping" }]) }],
    ["an empty batch", { headers: { ...JSON_CT, ...BOTH }, body: "[]" }],
    ["a byte order mark before the JSON", { headers: { ...JSON_CT, ...BOTH }, body: "\uFEFF" + JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }) }],
    ["invalid UTF-8", { headers: { ...JSON_CT, ...BOTH }, body: new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) }],
    ["a JSON-RPC response", { headers: { ...JSON_CT, ...BOTH }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: {} }) }],
    ["text/plain", { headers: { "content-type": "text/plain", ...BOTH }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) }],
    ["no content-type", { headers: { ...BOTH }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) }],
    ["a declared size over the SDK's 4 MiB", { headers: { ...JSON_CT, ...BOTH, "content-length": String(4 * 1024 * 1024 + 1) }, body: "{}" }],
    ["a body over 4 MiB without a declared size", { headers: { ...JSON_CT, ...BOTH }, body: () => new Blob(["[", " ".repeat(4 * 1024 * 1024), "]"]).stream() }],
    ["a body that cannot be read", { headers: { ...JSON_CT, ...BOTH }, body: () => new ReadableStream({ pull: (c) => c.error(new Error("connection reset")) }) }],
    ["GET", { method: "GET", headers: { accept: "text/event-stream" } }],
    ["DELETE", { method: "DELETE", headers: {} }],
  ];
  for (const [name, sent] of cases)
    test(name, async () => {
      const { ours, sdk } = await answers(sent);
      expect(ours).toEqual(sdk);
    });
});

// ---- tools/call: repeated exact hits are replayed from the SDK's own answer ----

const TOOL = "issue-tracker__get_issue";
type Who = { tenantId: string; sub: string };
const A: Who = { tenantId: "tenant-a", sub: "alice" };

function modernCall(name: string, args: unknown, id: unknown = 1, opts: { headers?: Record<string, string | undefined>; params?: Record<string, unknown>; meta?: Record<string, unknown>; message?: Record<string, unknown> } = {}): Sent {
  const headers = Object.fromEntries(Object.entries({ ...modernHeaders("tools/call", name), ...opts.headers }).filter(([, v]) => v !== undefined)) as Record<string, string>;
  const params = { name, arguments: args, _meta: { ...envelope, ...opts.meta }, ...opts.params };
  return { headers, body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params, ...opts.message }) };
}
function legacyCall(name: string, args: unknown, id: unknown = 1, opts: { headers?: Record<string, string | undefined>; params?: Record<string, unknown>; message?: Record<string, unknown> } = {}): Sent {
  const headers = Object.fromEntries(Object.entries({ ...JSON_CT, ...BOTH, "mcp-protocol-version": "2025-11-25", ...opts.headers }).filter(([, v]) => v !== undefined)) as Record<string, string>;
  return { headers, body: JSON.stringify({ method: "tools/call", params: { name, arguments: args, ...opts.params }, jsonrpc: "2.0", id, ...opts.message }) };
}
const calls = { modern: modernCall, legacy: legacyCall };

async function ours(s: Sent, who: Who = A) {
  const principal = { ...who, permissions: new Set(["WorkspaceAdmin"]), via: "jwt" };
  const r = await snapshot(await endpoint.handler(request(s), { principal } as unknown as RequestState));
  await Bun.sleep(1); // an answer the SDK gave is kept once its copy has been read
  return r;
}
const cacheOf = (r: { body: string }) => /"svc\/cache":\{"status":"(\w+)"/.exec(r.body)?.[1];

/** Miss (stored), then the SDK's hit (kept): from now on the call is replayed. */
async function warm(s: Sent, who: Who = A) {
  expect(cacheOf(await ours(s, who))).toBe("MISS");
  const before = endpoint.replayed();
  expect(cacheOf(await ours(s, who))).toBe("HIT");
  expect(endpoint.replayed()).toBe(before);
}

/** The endpoint's answer equals the SDK's; `replayed`: whether the endpoint answered from a kept answer. */
async function same(s: Sent, replayed: boolean, who: Who = A) {
  const before = endpoint.replayed();
  const { ours: o, sdk } = await answers(s, who);
  expect(o).toEqual(sdk);
  expect(endpoint.replayed() - before).toBe(replayed ? 1 : 0);
  return o;
}

describe("tools/call on /mcp: a repeated exact hit is the SDK's answer, byte for byte", () => {
  for (const era of ["modern", "legacy"] as const) {
    test(`${era}: hits with any id are replayed exactly`, async () => {
      const args = { issue_id: `hit-${era}` };
      await warm(calls[era](TOOL, args));
      for (const id of [1, 0, 42, 9007199254740991, -3, "req-1", 'quote " and \\ and é', ""]) {
        const o = await same(calls[era](TOOL, args, id), true);
        expect(cacheOf(o)).toBe("HIT");
        expect(o.headers).toContainEqual(["content-type", era === "modern" ? "application/json" : "text/event-stream"]);
      }
      // another agent of the tenant has its own key: its first call is a miss, not a replay
      const before = endpoint.replayed();
      expect(cacheOf(await ours(calls[era](TOOL, args, 2, { headers: { "x-svc-agent-id": "someone-else" } })))).toBe("MISS");
      expect(endpoint.replayed()).toBe(before);
    });

    test(`${era}: misses, unknown tools and tools of no exposed server are the SDK's`, async () => {
      // a WRITE tool: every call goes upstream (the upstream numbers its calls: the only difference)
      const before = endpoint.replayed();
      const o = await ours(calls[era]("issue-tracker__update_issue", { issue_id: "1", title: "t" }));
      const sdk = await answers(calls[era]("issue-tracker__update_issue", { issue_id: "1", title: "t" }));
      const uncount = (b: string) => b.replace(/update_issue#\d+/g, "update_issue#N");
      expect({ ...o, body: uncount(o.body) }).toEqual({ ...sdk.sdk, body: uncount(sdk.sdk.body) });
      expect(cacheOf(o)).toBe("BYPASS");
      // a cacheable miss (the reference, second, would hit: only the endpoint is asked)
      expect(cacheOf(await ours(calls[era](TOOL, { issue_id: `new-${era}` })))).toBe("MISS");
      expect(endpoint.replayed()).toBe(before);
      await same(calls[era]("issue-tracker__nope", {}), false);
      await same(calls[era]("nope__get_issue", { issue_id: `hit-${era}` }), false);
      await same(calls[era]("", {}), false);
    });

    test(`${era}: another tenant's token neither sees nor replays the tool`, async () => {
      const args = { issue_id: `iso-${era}` };
      await warm(calls[era](TOOL, args));
      const B: Who = { tenantId: "tenant-b", sub: "bob" };
      const o = await same(calls[era](TOOL, args), false, B);
      expect(o.body).toContain("Unknown tool");
    });
  }

  test("a tenant with a server of the same name has its own entries: no replay of another tenant's answer", async () => {
    const B: Who = { tenantId: "tenant-b", sub: "alice" }; // same subject, other tenant
    const reg = await fx.h.call("POST", "/api/v1/mcp/servers", fx.h.B, { name: "issue tracker", url: fx.fake.url });
    await fx.h.call("POST", `/api/v1/mcp/servers/${reg.body.server.id}/discover`, fx.h.B);
    const args = { issue_id: "shared-name" };
    await warm(modernCall(TOOL, args)); // tenant-a's answer is kept
    const first = await ours(modernCall(TOOL, args), B);
    expect(cacheOf(first)).toBe("MISS");
    expect(cacheOf(await ours(modernCall(TOOL, args), B))).toBe("HIT"); // the SDK's, kept for tenant-b
    const o = await same(modernCall(TOOL, args, 5), true, B);
    expect(o.body).toContain(JSON.parse(first.body).result.content[0].text.replace(/"/g, '\\"'));
    await fx.h.call("DELETE", `/api/v1/mcp/servers/${reg.body.server.id}`, fx.h.B);
  });

  test("a result stored again after expiry is not answered with the old one", async () => {
    const args = { issue_id: "expiring" };
    await warm(modernCall(TOOL, args));
    const old = await same(modernCall(TOOL, args, 10), true);
    fx.h.clock.advance(301_000); // READ ttl 300 s
    const fresh = await ours(modernCall(TOOL, args, 11));
    expect(cacheOf(fresh)).toBe("MISS");
    // the entry holds another result now: the SDK answers it (and it is kept), then it is replayed
    const sdkHit = await same(modernCall(TOOL, args, 12), false);
    expect(cacheOf(sdkHit)).toBe("HIT");
    await Bun.sleep(1);
    const replayed = await same(modernCall(TOOL, args, 13), true);
    expect(JSON.parse(replayed.body).result.content).toEqual(JSON.parse(fresh.body).result.content);
    expect(JSON.parse(replayed.body).result.content).not.toEqual(JSON.parse(old.body).result.content);
  });

  describe("an unusual call is the SDK's unless its answer cannot differ (answers compared on replayable entries)", () => {
    const args = { issue_id: "odd" };
    beforeAll(async () => {
      await warm(modernCall(TOOL, args));
      expect(cacheOf(await ours(legacyCall(TOOL, args)))).toBe("HIT"); // kept for the legacy era too
      await warm(modernCall(TOOL, {}));
      expect(cacheOf(await ours(legacyCall(TOOL, {})))).toBe("HIT");
    });
    // [case, request, replayed: still a plain call (the SDK's answer to it does not depend on what differs)]
    const odd: Array<[string, Sent, boolean]> = [
      ["modern: arguments a string", modernCall(TOOL, "x"), false],
      ["modern: arguments an array", modernCall(TOOL, [1]), false],
      ["modern: no arguments", modernCall(TOOL, undefined), true],
      ["modern: name a number", { ...modernCall(TOOL, args, 1, { params: { name: 7 } }) }, false],
      ["modern: another params key", modernCall(TOOL, args, 1, { params: { task: { ttl: 1 } } }), false],
      ["modern: a progress token", modernCall(TOOL, args, 1, { meta: { progressToken: 3 } }), false],
      ["modern: capabilities not an object", modernCall(TOOL, args, 1, { meta: { "io.modelcontextprotocol/clientCapabilities": "x" } }), false],
      ["modern: no clientInfo", modernCall(TOOL, args, 1, { meta: { "io.modelcontextprotocol/clientInfo": undefined } }), true],
      ["modern: declared capabilities", modernCall(TOOL, args, 1, { meta: { "io.modelcontextprotocol/clientCapabilities": { sampling: {} } } }), true],
      ["modern: no MCP-Protocol-Version header", modernCall(TOOL, args, 1, { headers: { "mcp-protocol-version": undefined } }), false],
      ["modern: a 2025 MCP-Protocol-Version header", modernCall(TOOL, args, 1, { headers: { "mcp-protocol-version": "2025-11-25" } }), false],
      ["modern: an unknown revision", { ...modernCall(TOOL, args, 1, { meta: { "io.modelcontextprotocol/protocolVersion": "2027-01-01" }, headers: { "mcp-protocol-version": "2027-01-01" } }) }, false],
      ["modern: no Mcp-Method header", modernCall(TOOL, args, 1, { headers: { "mcp-method": undefined } }), false],
      ["modern: another Mcp-Method", modernCall(TOOL, args, 1, { headers: { "mcp-method": "tools/list" } }), false],
      ["modern: no Mcp-Name header", modernCall(TOOL, args, 1, { headers: { "mcp-name": undefined } }), false],
      ["modern: another Mcp-Name", modernCall(TOOL, args, 1, { headers: { "mcp-name": "issue-tracker__list_issues" } }), false],
      ["modern: a Base64 Mcp-Name", modernCall(TOOL, args, 1, { headers: { "mcp-name": `=?base64?${btoa(TOOL)}?=` } }), false],
      ["modern: an id that is a fraction", modernCall(TOOL, args, 1.5), false],
      ["modern: a null id", modernCall(TOOL, args, null), false],
      ["modern: jsonrpc 1.0", modernCall(TOOL, args, 1, { message: { jsonrpc: "1.0" } }), false],
      ["modern: another message key", modernCall(TOOL, args, 1, { message: { extra: true } }), false],
      ["modern: Accept JSON only", modernCall(TOOL, args, 1, { headers: { accept: "application/json" } }), true],
      ["legacy: arguments a string", legacyCall(TOOL, "x"), false],
      ["legacy: no arguments", legacyCall(TOOL, undefined), true],
      ["legacy: another params key", legacyCall(TOOL, args, 1, { params: { task: {} } }), false],
      ["legacy: a _meta", legacyCall(TOOL, args, 1, { params: { _meta: { progressToken: 1 } } }), false],
      ["legacy: an unsupported MCP-Protocol-Version", legacyCall(TOOL, args, 1, { headers: { "mcp-protocol-version": "1999-01-01" } }), false],
      ["legacy: no MCP-Protocol-Version header", legacyCall(TOOL, args, 1, { headers: { "mcp-protocol-version": undefined } }), false],
      ["legacy: an older supported version", legacyCall(TOOL, args, 1, { headers: { "mcp-protocol-version": "2025-03-26" } }), false],
      ["legacy: Accept JSON only", legacyCall(TOOL, args, 1, { headers: { accept: "application/json" } }), false],
      ["legacy: Accept SSE only", legacyCall(TOOL, args, 1, { headers: { accept: "text/event-stream" } }), false],
      ["legacy: no Accept", legacyCall(TOOL, args, 1, { headers: { accept: undefined } }), false],
      ["legacy: a session id", legacyCall(TOOL, args, 1, { headers: { "mcp-session-id": "abc" } }), true],
      ["legacy: a modern MCP-Protocol-Version without the envelope", legacyCall(TOOL, args, 1, { headers: { "mcp-protocol-version": MODERN } }), false],
      ["legacy: an id that is a fraction", legacyCall(TOOL, args, 2.5), false],
      ["legacy: a __proto__ argument", { ...legacyCall(TOOL, args), body: `{"method":"tools/call","params":{"name":"${TOOL}","arguments":{"__proto__":{"issue_id":"odd"}}},"jsonrpc":"2.0","id":1}` }, false],
    ];
    for (const [name, sent, replayed] of odd)
      test(name, async () => {
        const before = endpoint.replayed();
        const { ours: o, sdk } = await answers(sent);
        expect(o).toEqual(sdk);
        expect(endpoint.replayed() - before).toBe(replayed ? 1 : 0);
      });
  });
});
