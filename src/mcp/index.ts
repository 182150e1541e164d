/**
 * MCP gateway domain (doc2): server registry with health and discovery, tool classification, a
 * tool-result cache every call through svc really goes through (exact, semantic, coalescing,
 * write-invalidates-read with the entity cascade), analytics, YAML configuration, connections and
 * two WebSocket streams.
 *
 *   /api/v1/mcp/*                   routes/registry.ts, routes/activity.ts     (doc2 envelope)
 *   /api/v1/tool-cache/*            routes/activity.ts; POST …/stats natively (exact 64-bit keys in the body)
 *   /api/v1/mcp/config/import       natively (the body is YAML, not JSON)
 *   /mcp                            the MCP endpoint for clients (endpoint.ts, official server SDK)
 *   /api/v1/mcp/stream, /api/v1/mcp/connections/events   WebSockets (sockets.ts)
 * Tables: mcp_servers, mcp_tools, mcp_entities, mcp_tool_entities, mcp_rules, mcp_cache_entries,
 * mcp_cache_tags, mcp_calls, mcp_connections. Every upstream connection goes through the outbound
 * policy (core/outbound.ts); STDIO servers only from the operator's allow-list.
 */
import { Elysia } from "elysia";
import type { Bus } from "../core/hotstate";
import { Type as T } from "@sinclair/typebox";
import type { DocumentedOperation } from "../core/openapi";
import type { AsyncStorage } from "../storage/async";
import type { Kernel, NativeHandler } from "../core/kernel";
import type { Domain } from "../core/domain";
import type { OutboundPolicy } from "../core/outbound";
import type { Logger } from "../core/log";
import { ApiError, DOC2 } from "../core/errors";
import { requirePermission, type Permission } from "../core/auth";
import { jsonDepthExceeds, MAX_JSON_DEPTH, readUtf8Body } from "../core/validation";
import type { McpConfig } from "./config";
import type { CredentialAuthenticator, Embedder, WallClock } from "./ports";
import { MCP_MIGRATIONS } from "./migrations";
import { mcpServices, type McpServices } from "./services";
import { registryRoutes } from "./routes/registry";
import { activityRoutes, toolCacheRoutes } from "./routes/activity";
import { mcpEndpoint } from "./endpoint";
import { socketRoutes, tokenAuthenticator, CONNECTION_EVENTS_PATH } from "./sockets";
import { jsonResponse, parseJsonExact } from "./json";
import { parseCacheKey } from "./toolcache/key";
import type { Env } from "./upstream/auth";

export { MCP_SECTIONS, type McpConfig } from "./config";
export type { McpServices } from "./services";
export type { CredentialAuthenticator, Embedder as McpEmbedder, WallClock } from "./ports";

export interface McpDeps {
  storage: AsyncStorage;
  kernel: Kernel;
  outbound: OutboundPolicy;
  embedder: Embedder;
  /** resolves the connection-events stream's `?token=` credential with the front door's checks */
  auth: CredentialAuthenticator;
  config: McpConfig;
  log: Logger;
  clock: WallClock;
  env: Env;
  /** several replicas (Redis): tool-cache invalidations and stream events reach every replica */
  bus?: Bus;
}

export const MCP_ENDPOINT = "/mcp";

/** The permission of each native route: its handler checks it (`needs`) and /openapi.json states it. */
const NATIVE_PERM = { toolCacheStats: "ViewMetrics", configImport: "ManageConfig" } as const satisfies Record<string, Permission>;

/** OpenAPI entries of the routes served natively (the composition root adds them to /openapi.json). */
export function nativeDocs(): DocumentedOperation[] {
  const tags = ["mcp"];
  const errorBodies = {
    statuses: [400, 404, 405, 406, 415],
    name: "JsonRpcError",
    description: "A protocol error, answered as the MCP transport does: a JSON-RPC error response (authentication, rate limits and body size are answered in the doc2 envelope)",
    schema: {
      type: "object",
      required: ["jsonrpc", "error"],
      properties: { jsonrpc: { type: "string", const: "2.0" }, error: { type: "object", required: ["code", "message"], properties: { code: { type: "integer" }, message: { type: "string" }, data: {} } }, id: {} },
    },
  };
  const endpoint = "The MCP endpoint (Streamable HTTP, both protocol eras) an MCP client connects to: it lists the tenant's tools of every server as <server>__<tool> and routes each call through svc's tool cache.";
  return [
    { method: "POST", path: MCP_ENDPOINT, summary: "MCP JSON-RPC request (tools/list, tools/call, server/discover, initialize)", description: endpoint, tags, stream: "sse", errorBodies },
    { method: "GET", path: MCP_ENDPOINT, summary: "MCP server-to-client stream (legacy era; answered 405 by the stateless endpoint)", description: endpoint, tags, errorBodies },
    { method: "DELETE", path: MCP_ENDPOINT, summary: "MCP session end (legacy era; answered 405 by the stateless endpoint)", description: endpoint, tags, errorBodies },
    {
      method: "POST",
      path: "/api/v1/tool-cache/stats",
      summary: "Access count, hit rate and latency of one cache key",
      perm: NATIVE_PERM.toolCacheStats,
      description: "Answers how often one cached tool result was read, its hit rate and its latency. cacheKey: a 64-bit integer (a JSON integer read exactly, or a string of digits).",
      body: T.Object({ cacheKey: T.Union([T.Integer(), T.String({ pattern: "^-?\\d{1,20}$" })]) }),
      tags: ["tool-cache"],
    },
    {
      method: "POST",
      path: "/api/v1/mcp/config/import",
      summary: "Apply a configuration document (the YAML of GET /config/export; JSON accepted)",
      perm: NATIVE_PERM.configImport,
      description: "Applies a configuration document as GET /api/v1/mcp/config/export writes it (request body: application/yaml). Merges servers, entities and tools by name; a listed tool gets exactly the file's mappings and rules; all or nothing.",
      tags,
      errors: [413],
    },
  ];
}
const MAX_IMPORT_BYTES = 1_048_576;

/** A native route's `perm` (what `perm:` is on a mounted route): checked before the body is read. */
const needs =
  (perm: Permission, handler: NativeHandler): NativeHandler =>
  (request, state) => {
    requirePermission(state.principal!, perm);
    return handler(request, state);
  };

export function create(deps: McpDeps): Domain<McpServices> {
  const s = mcpServices(deps);
  const { kernel } = deps;
  const endpoint = mcpEndpoint(s.stores.registry, s.calls);
  const ws = socketRoutes(s.events, deps.config.max_connection_event_sockets);

  kernel.register({ prefix: MCP_ENDPOINT, exact: true, envelope: DOC2 });
  kernel.register({ prefix: CONNECTION_EVENTS_PATH, exact: true, envelope: DOC2, auth: tokenAuthenticator(deps.auth) });

  const stats: NativeHandler = async (request, state) => {
    let body: unknown;
    const text = await readUtf8Body(request);
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) throw new ApiError("validation_error", `request body nests deeper than ${MAX_JSON_DEPTH} levels`);
    try {
      body = parseJsonExact(text);
    } catch {
      throw new ApiError("invalid_request_error", "malformed request body: expected valid JSON");
    }
    if (!body || typeof body !== "object" || Array.isArray(body) || !("cacheKey" in body)) throw new ApiError("validation_error", "body field 'cacheKey': required (a 64-bit integer)");
    return jsonResponse(await s.cache.stats(state.principal!.tenantId, parseCacheKey((body as { cacheKey: unknown }).cacheKey, "body field 'cacheKey'")));
  };

  const importConfig: NativeHandler = async (request, state) => {
    const text = await readUtf8Body(request);
    if (text.length > MAX_IMPORT_BYTES) throw new ApiError("invalid_request_error", `configuration larger than ${MAX_IMPORT_BYTES} bytes`, undefined, undefined, 413);
    return jsonResponse(await s.configIO.importText(state.principal!.tenantId, text));
  };

  let timer: ReturnType<typeof setInterval> | undefined;
  let running = false;
  return {
    name: "mcp",
    migrations: MCP_MIGRATIONS,
    routes: new Elysia({ name: "svc-mcp" }).use(registryRoutes(kernel, s)).use(activityRoutes(kernel, s)).use(toolCacheRoutes(kernel, s)),
    native: {
      [MCP_ENDPOINT]: { GET: endpoint.handler, POST: endpoint.handler, DELETE: endpoint.handler },
      "/api/v1/tool-cache/stats": { POST: needs(NATIVE_PERM.toolCacheStats, stats) },
      "/api/v1/mcp/config/import": { POST: needs(NATIVE_PERM.configImport, importConfig) },
    },
    sockets: ws.routes,
    service: s,
    start() {
      const every = deps.config.health_interval_secs;
      if (every <= 0) return;
      timer = setInterval(() => {
        if (running) return; // a slow pass is not stacked
        running = true;
        s.tick()
          .catch((e) => deps.log.error("mcp background pass failed", { error: String(e) }))
          .finally(() => (running = false));
      }, every * 1000);
      timer.unref?.();
    },
    async close() {
      if (timer) clearInterval(timer);
      await endpoint.close().catch(() => {});
      await s.close();
    },
  };
}
