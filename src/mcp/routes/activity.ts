/**
 * /api/v1/mcp analytics, configuration export and connections (doc2 §4.6, §4.7), and
 * /api/v1/tool-cache (§4.5). Creating a connection and moving its state need ManageConfig (doc2),
 * as does invalidating cached results; analytics and cache statistics need ViewMetrics; the rest
 * any credential of the tenant (docs/security.md, "Access matrix").
 * Responses that carry a 64-bit cacheKey are rendered with exact integers (json.ts).
 */
import type { Kernel } from "../../core/kernel";
import { ApiError, DOC2 } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import type { McpServices } from "../services";
import { jsonResponse } from "../json";
import { tag } from "../types";
import { parseCacheKey } from "../toolcache/key";
import * as S from "../schemas";

export const activityRoutes = (kernel: Kernel, s: McpServices) =>
  kernel
    .routes("/api/v1/mcp")
    .get("/analytics", ({ principal, query }) => s.analytics.report(principal.tenantId, query), {
      perm: "ViewMetrics",
      query: S.AnalyticsQuery,
      detail: { summary: "Tool-call analytics: hit rates, latency, estimated savings", description: "Summarises the tenant's tool calls over a date range (default the last 30 days): calls, hits (cache hits and coalesced calls), hit rate and latency, by server, by tool and as a trend in hour, day, week or month buckets, with the time and cost the hits saved (cost: an operator's per-call estimate).", ...tag("mcp") },
    })
    .get("/config/export", async ({ principal }) => new Response(await s.configIO.exportYaml(principal.tenantId), { headers: { "content-type": "application/yaml; charset=utf-8" } }), {
      detail: { summary: "Servers, tools, entities, mappings and rules as YAML", description: "Exports the tenant's MCP configuration (servers without secrets, tool settings, entities, mappings and rules) as a YAML document that POST /api/v1/mcp/config/import applies.", ...tag("mcp") },
    })
    .get("/connections", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.connections.list(principal.tenantId, { serverId: query.serverId, clientId: query.clientId, state: query.state }, page);
      return pageEnvelope("connections", items, total, page);
    }, { query: S.ConnectionListQuery, detail: { summary: "List connections", description: "Lists tracked client connections (paged), filtered by server, client or state.", ...tag("mcp") } })
    .post("/connections", ({ principal, body }) => s.connections.create(principal.tenantId, S.bodyOf(S.ConnectionCreate, body)), { perm: "ManageConfig", detail: { summary: "Track a client connection (starts CONNECTING)", description: "Creates the record a client keeps of its connection to a server; it starts CONNECTING and moves by state changes and heartbeats, each an event on the connection-events stream.", ...tag("mcp") } })
    .get("/connections/:id", ({ principal, params }) => s.connections.get(principal.tenantId, params.id), { params: S.IdParams, detail: { summary: "Get a connection", description: "Answers one tracked connection with its state, last heartbeat and error.", ...tag("mcp") } })
    .patch("/connections/:id/state", ({ principal, params, body }) => s.connections.setState(principal.tenantId, params.id, S.bodyOf(S.ConnectionStateBody, body).state), {
      perm: "ManageConfig",
      params: S.IdParams,
      detail: { summary: "Move a connection to another state", description: "Moves the connection to another state (CONNECTING, CONNECTED, DISCONNECTING, DISCONNECTED, ERROR) along the allowed transitions; another move is refused with 409.", ...tag("mcp") },
    })
    .post("/connections/:id/heartbeat", ({ principal, params }) => s.connections.heartbeat(principal.tenantId, params.id), {
      params: S.IdParams,
      detail: { summary: "Record that a connection is alive", description: "Records a heartbeat; a CONNECTING or CONNECTED connection without one for the heartbeat timeout goes DISCONNECTED.", ...tag("mcp") },
    });

export const toolCacheRoutes = (kernel: Kernel, s: McpServices) =>
  kernel
    .mount({ prefix: "/api/v1/tool-cache", envelope: DOC2 })
    .post("/search", async ({ principal, body }) => {
      if ((body.queryEmbedding === undefined) === (body.queryText === undefined)) throw new ApiError("validation_error", "send exactly one of queryEmbedding or queryText");
      return jsonResponse(await s.cache.search(principal.tenantId, body));
    }, { body: S.CacheSearch, detail: { summary: "Cached tool results by similarity to a vector or a text", description: "Finds the tenant's cached tool results whose arguments are closest to `queryText` or `queryEmbedding` (exactly one), above a threshold, optionally of one tool or server.", ...tag("tool-cache") } })
    .post("/invalidate", ({ principal, body }) => s.cache.invalidateByApi(principal.tenantId, body), {
      perm: "ManageConfig",
      body: S.CacheInvalidate,
      detail: { summary: "Invalidate the cached results of an entity type (optionally one id, optionally cascading)", description: "Removes cached tool results that read the named entity (one instance with `entityId`), and its child entities' with `cascade`; answers how many were removed.", ...tag("tool-cache") },
    })
    .get("/metrics", ({ principal }) => s.cache.metrics(principal.tenantId), { perm: "ViewMetrics", detail: { summary: "Entries, memory, hit rate, configuration", description: "Answers the tenant's tool cache figures: live and expired entries, entries with embeddings, memory used, hits, misses and hit rate, and the configuration in force (embedder, result size bound, each category's default cache settings).", ...tag("tool-cache") } })
    .get("/:cache_key", async ({ principal, params }) => jsonResponse(await s.cache.get(principal.tenantId, parseCacheKey(params.cache_key))), {
      params: S.CacheKeyParams,
      detail: { summary: "A cached entry by its 64-bit key (404 if absent or expired)", description: "Answers one cached tool result by its cache key: tool, agent, arguments, result, access count, expiry and the entities it reads.", ...tag("tool-cache") },
    });
