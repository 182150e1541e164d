/**
 * /api/v1/mcp servers, tools, tool calls, entities, mappings and rules (doc2 §4.1–§4.4). Thin
 * routes: TypeBox validates, a service works, the route shapes the answer. Access (docs/security.md,
 * "Access matrix"): any credential of the tenant reads and calls tools; every change to servers,
 * tools, entities, mappings and rules needs ManageConfig; statistics need ViewMetrics.
 */
import type { Kernel } from "../../core/kernel";
import { DOC2 } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import type { McpServices } from "../services";
import { jsonResponse } from "../json";
import { AGENT_HEADER } from "../endpoint";
import { publicServer, publicTool } from "../registry/service";
import { deleted, tag } from "../types";
import * as S from "../schemas";
import { examples } from "../../core/openapi";

const REGISTER_EXAMPLE = {
  request: { name: "github", description: "GitHub tools", url: "https://mcp.example.com/mcp", transport: "HTTP", authType: "API_KEY", authConfig: { header: "Authorization", valueEnv: "MCP_SECRET_GITHUB_TOKEN" } },
  response: {
    server: {
      id: "34f5f6a3-917a-42d4-ac83-9be93da20125",
      name: "github",
      description: "GitHub tools",
      url: "https://mcp.example.com/mcp",
      transport: "HTTP",
      authType: "API_KEY",
      status: "PENDING",
      healthLatencyP50Ms: null,
      healthLatencyP99Ms: null,
      lastHealthCheck: null,
      lastError: null,
      createdAt: "2026-11-27T08:28:59.583Z",
      updatedAt: "2026-11-27T08:28:59.583Z",
    },
    message: "server github registered; it stays PENDING until a health check succeeds",
  },
};

export const registryRoutes = (kernel: Kernel, s: McpServices) =>
  kernel
    .mount({ prefix: "/api/v1/mcp", envelope: DOC2 })
    // ---- servers ----
    .get("/servers", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.registry.list(principal.tenantId, { status: query.status, name: query.name }, page);
      return pageEnvelope("servers", items, total, page);
    }, { query: S.ServerListQuery, detail: { summary: "List MCP servers", description: "Lists the tenant's registered MCP servers (paged), filtered by status or name, with their status and health figures (never their authentication settings).", ...tag("mcp") } })
    .post("/servers", async ({ principal, body }) => {
      // doc2 §4: "success status 200" — creates included (doc2 names no 201)
      const server = await s.registry.register(principal.tenantId, body);
      return { server, message: `server ${server.name} registered; it stays PENDING until a health check succeeds` };
    }, { body: S.ServerCreate, perm: "ManageConfig", detail: { ...examples(REGISTER_EXAMPLE), summary: "Register an MCP server", description: "Registers an MCP server by URL (HTTP or SSE; STDIO only for allow-listed commands) with how svc authenticates to it; the URL must pass the outbound policy (private addresses need SVC_OUTBOUND__ALLOW_PRIVATE) and secrets are named by environment variable. The server stays PENDING until a health check succeeds; then discover its tools.", ...tag("mcp") } })
    .get("/servers/:id", async ({ principal, params }) => publicServer(await s.registry.server(principal.tenantId, params.id)), {
      params: S.IdParams,
      detail: { summary: "Get a server", description: "Answers one registered server with its status and health figures; 404 if the tenant has none with this id.", ...tag("mcp") },
    })
    .delete("/servers/:id", async ({ principal, params }) => {
      const server = await s.registry.delete(principal.tenantId, params.id);
      return deleted(`server ${server.name} deleted with its tools, entity mappings, invalidation rules, connections and cached results`);
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete a server (irreversible)", description: "Deletes the server with its tools, entity mappings, invalidation rules, connections and cached results.", ...tag("mcp") } })
    .get("/servers/:id/health", async ({ principal, params }) => s.health.get(principal.tenantId, await s.registry.server(principal.tenantId, params.id)), {
      params: S.IdParams,
      detail: { summary: "Health of a server (cached 30 s)", description: "Answers the server's health (status, latency, consecutive failures), checking it now unless the last check is younger than 30 seconds; a failing server is an answer, not an error.", ...tag("mcp") },
    })
    .post("/servers/:id/discover", ({ principal, params }) => s.registry.discover(principal.tenantId, params.id), {
      perm: "ManageConfig",
      params: S.IdParams,
      detail: { summary: "List the server's tools (every page) and merge them", description: "Asks the server for its tools (following every page), adds new ones with a derived category and cache configuration, updates changed ones and marks tools that disappeared unavailable.", ...tag("mcp") },
    })
    .post("/servers/:id/disable", ({ principal, params }) => s.registry.setEnabled(principal.tenantId, params.id, false), {
      perm: "ManageConfig",
      params: S.IdParams,
      detail: { summary: "Set a server DISABLED: never checked, never called", description: "Disables the server: health checks skip it and tool calls to it are refused until it is enabled again.", ...tag("mcp") },
    })
    .post("/servers/:id/enable", ({ principal, params }) => s.registry.setEnabled(principal.tenantId, params.id, true), {
      perm: "ManageConfig",
      params: S.IdParams,
      detail: { summary: "Clear DISABLED: the server is PENDING until a check succeeds", description: "Enables a disabled server again; it is PENDING until its next successful health check.", ...tag("mcp") },
    })
    .get("/servers/:id/connection-stats", ({ principal, params }) => s.connectionStats(principal.tenantId, params.id), {
      perm: "ViewMetrics",
      params: S.IdParams,
      detail: { summary: "Connection statistics of a server", description: "Counts the server's tracked client connections by state, their state changes and errors, the last heartbeat, and its tool calls that failed.", ...tag("mcp") },
    })
    // ---- tools ----
    .get("/tools", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.registry.listTools(principal.tenantId, { serverId: query.serverId, category: query.category, cacheEnabled: query.cacheEnabled, name: query.name }, page);
      return pageEnvelope("tools", items, total, page);
    }, { query: S.ToolListQuery, detail: { summary: "List discovered tools", description: "Lists the tools discovered on the tenant's servers (paged), filtered by server, category, cache on or off, or name.", ...tag("mcp") } })
    .get("/tools/:id", async ({ principal, params }) => publicTool(await s.registry.tool(principal.tenantId, params.id)), {
      params: S.IdParams,
      detail: { summary: "Get a tool", description: "Answers one tool with its input schema, category (READ, WRITE, IDEMPOTENT, UNKNOWN) and cache configuration.", ...tag("mcp") },
    })
    .patch("/tools/:id/config", ({ principal, params, body }) => s.registry.configure(principal.tenantId, params.id, body), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.ToolConfig,
      detail: { summary: "Set a tool's category and cache configuration", description: "Sets the tool's category by hand (never re-derived afterwards) and its cache settings: on or off, TTL, semantic threshold, sharing across agents, coalescing window.", ...tag("mcp") },
    })
    .get("/tools/:id/entities", ({ principal, params }) => s.entities.mappingsOfTool(principal.tenantId, params.id), {
      params: S.IdParams,
      detail: { summary: "Entity mappings of a tool", description: "Lists which entities the tool reads or writes, and through which argument.", ...tag("mcp") },
    })
    .post("/tools/:id/call", async ({ principal, params, body, request }) => {
      const agentId = body?.agentId ?? (request.headers.get(AGENT_HEADER)?.slice(0, 256) || principal.sub);
      const out = await s.calls.call(principal.tenantId, params.id, { arguments: body?.arguments ?? {}, agentId });
      return jsonResponse(out, 200, { "x-cache-status": out.cache.status });
    }, { params: S.IdParams, body: S.ToolCall, detail: { summary: "Call a tool through svc (cache, coalescing, invalidation)", description: "Calls the tool with `arguments`: a READ or IDEMPOTENT tool with its cache on is answered from the tool cache (exact, then semantic) or shares an identical call in flight; otherwise the server is called, and a WRITE invalidates the cached results its rules and entity mappings name. The X-Cache-Status header says which happened.", ...tag("mcp") } })
    // ---- entities ----
    .get("/entities", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.entities.list(principal.tenantId, { parentId: query.parentId, name: query.name }, page);
      return pageEnvelope("entities", items, total, page);
    }, { query: S.EntityListQuery, detail: { summary: "List entities", description: "Lists the tenant's entities (paged), the things tools read and write (e.g. issue, repository), filtered by parent or name.", ...tag("mcp") } })
    .post("/entities", ({ principal, body }) => s.entities.create(principal.tenantId, body), { body: S.EntityCreate, perm: "ManageConfig", detail: { summary: "Create an entity", description: "Creates an entity type, optionally under a parent (an invalidation of the parent can cascade to its children); names are unique in the tenant.", ...tag("mcp") } })
    .get("/entities/:id", ({ principal, params }) => s.entities.entity(principal.tenantId, params.id), { params: S.IdParams, detail: { summary: "Get an entity", description: "Answers one entity with its parent; 404 if the tenant has none with this id.", ...tag("mcp") } })
    .patch("/entities/:id", ({ principal, params, body }) => s.entities.update(principal.tenantId, params.id, body), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.EntityUpdate,
      detail: { summary: "Update an entity (parentId null removes the parent)", description: "Renames an entity or moves it under another parent; it cannot become its own descendant.", ...tag("mcp") },
    })
    .delete("/entities/:id", async ({ principal, params }) => {
      const r = await s.entities.delete(principal.tenantId, params.id);
      return {
        ...deleted(`entity ${r.entity.name} deleted: ${r.invalidated} cached result(s) invalidated (cascade), ${r.mappingsRemoved} mapping(s) and ${r.rulesRemoved} rule(s) removed`),
        invalidated: r.invalidated,
      };
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete an entity (cascade invalidation)", description: "Deletes the entity, invalidates its cached results and its descendants', removes its mappings and the rules it explains; its children become top-level.", ...tag("mcp") } })
    .post("/tool-entities", async ({ principal, body }) => (await s.entities.map(principal.tenantId, body)).mapping, { body: S.MappingCreate, perm: "ManageConfig", detail: { summary: "Map a tool parameter to an entity", description: "Declares that a tool reads or writes an entity through one of its arguments, so a write invalidates the matching cached reads; one mapping per tool and entity (posting again replaces it).", ...tag("mcp") } })
    .delete("/tool-entities/:tool_id/:entity_id", async ({ principal, params }) => {
      await s.entities.unmap(principal.tenantId, params.tool_id, params.entity_id);
      return deleted("tool-entity mapping deleted");
    }, { params: S.MappingParams, perm: "ManageConfig", detail: { summary: "Delete a tool-entity mapping", description: "Removes the mapping between a tool and an entity.", ...tag("mcp") } })
    // ---- rules ----
    .get("/rules", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.entities.listRules(principal.tenantId, { writeToolId: query.writeToolId, invalidateToolId: query.invalidateToolId, enabled: query.enabled }, page);
      return pageEnvelope("rules", items, total, page);
    }, { query: S.RuleListQuery, detail: { summary: "List invalidation rules", description: "Lists the tenant's invalidation rules (paged): a write tool and the tool whose cached results it invalidates, filtered by either or by enabled.", ...tag("mcp") } })
    .post("/rules", ({ principal, body }) => s.entities.createRule(principal.tenantId, body), { body: S.RuleCreate, perm: "ManageConfig", detail: { summary: "Create an invalidation rule", description: "Declares that calling `writeToolId` invalidates the cached results of `invalidateToolId`.", ...tag("mcp") } })
    .post("/rules/generate", ({ principal }) => s.entities.generate(principal.tenantId), { perm: "ManageConfig", detail: { summary: "Generate rules from entity mappings", description: "Creates a rule for every pair of a tool that writes an entity and a READ or IDEMPOTENT tool that reads it, from the mappings; existing pairs are skipped.", ...tag("mcp") } })
    .patch("/rules/:id", ({ principal, params, body }) => s.entities.setRuleEnabled(principal.tenantId, params.id, body.enabled), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.RuleUpdate,
      detail: { summary: "Enable or disable a rule", description: "Turns a rule on or off without deleting it.", ...tag("mcp") },
    })
    .delete("/rules/:id", async ({ principal, params }) => {
      await s.entities.deleteRule(principal.tenantId, params.id);
      return deleted("invalidation rule deleted");
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete a rule", description: "Deletes an invalidation rule.", ...tag("mcp") } });
