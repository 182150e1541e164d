/**
 * /mcp answers exactly what the official SDK answers: every request is sent to the endpoint's
 * handler (which reads the body itself and hands it to the SDK parsed) and to a reference —
 * createMcpHandler over the same server factory, reading the body itself — and the two answers
 * must be the same status, headers and bytes.
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
