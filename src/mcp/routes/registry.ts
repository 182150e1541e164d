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

export const registryRoutes = (kernel: Kernel, s: McpServices) =>
  kernel
    .mount({ prefix: "/api/v1/mcp", envelope: DOC2 })
    // ---- servers ----
    .get("/servers", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.registry.list(principal.tenantId, { status: query.status, name: query.name }, page);
      return pageEnvelope("servers", items, total, page);
    }, { query: S.ServerListQuery, detail: { summary: "List MCP servers", ...tag("mcp") } })
    .post("/servers", async ({ principal, body }) => {
      // doc2 §4: "success status 200" — creates included (doc2 names no 201)
      const server = await s.registry.register(principal.tenantId, body);
      return { server, message: `server ${server.name} registered; it stays PENDING until a health check succeeds` };
    }, { body: S.ServerCreate, perm: "ManageConfig", detail: { summary: "Register an MCP server", ...tag("mcp") } })
    .get("/servers/:id", async ({ principal, params }) => publicServer(await s.registry.server(principal.tenantId, params.id)), {
      params: S.IdParams,
      detail: { summary: "Get a server", ...tag("mcp") },
    })
    .delete("/servers/:id", async ({ principal, params }) => {
      const server = await s.registry.delete(principal.tenantId, params.id);
      return deleted(`server ${server.name} deleted with its tools, entity mappings, invalidation rules, connections and cached results`);
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete a server (irreversible)", ...tag("mcp") } })
    .get("/servers/:id/health", async ({ principal, params }) => s.health.get(principal.tenantId, await s.registry.server(principal.tenantId, params.id)), {
      params: S.IdParams,
      detail: { summary: "Health of a server (cached 30 s)", ...tag("mcp") },
    })
    .post("/servers/:id/discover", ({ principal, params }) => s.registry.discover(principal.tenantId, params.id), {
      perm: "ManageConfig",
      params: S.IdParams,
      detail: { summary: "List the server's tools (every page) and merge them", ...tag("mcp") },
    })
    .post("/servers/:id/disable", ({ principal, params }) => s.registry.setEnabled(principal.tenantId, params.id, false), {
      perm: "ManageConfig",
      params: S.IdParams,
      detail: { summary: "Set a server DISABLED: never checked, never called", ...tag("mcp") },
    })
    .post("/servers/:id/enable", ({ principal, params }) => s.registry.setEnabled(principal.tenantId, params.id, true), {
      perm: "ManageConfig",
      params: S.IdParams,
      detail: { summary: "Clear DISABLED: the server is PENDING until a check succeeds", ...tag("mcp") },
    })
    .get("/servers/:id/connection-stats", ({ principal, params }) => s.connectionStats(principal.tenantId, params.id), {
      perm: "ViewMetrics",
      params: S.IdParams,
      detail: { summary: "Connection statistics of a server", ...tag("mcp") },
    })
    // ---- tools ----
    .get("/tools", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.registry.listTools(principal.tenantId, { serverId: query.serverId, category: query.category, cacheEnabled: query.cacheEnabled, name: query.name }, page);
      return pageEnvelope("tools", items, total, page);
    }, { query: S.ToolListQuery, detail: { summary: "List discovered tools", ...tag("mcp") } })
    .get("/tools/:id", async ({ principal, params }) => publicTool(await s.registry.tool(principal.tenantId, params.id)), {
      params: S.IdParams,
      detail: { summary: "Get a tool", ...tag("mcp") },
    })
    .patch("/tools/:id/config", ({ principal, params, body }) => s.registry.configure(principal.tenantId, params.id, body), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.ToolConfig,
      detail: { summary: "Set a tool's category and cache configuration", ...tag("mcp") },
    })
    .get("/tools/:id/entities", ({ principal, params }) => s.entities.mappingsOfTool(principal.tenantId, params.id), {
      params: S.IdParams,
      detail: { summary: "Entity mappings of a tool", ...tag("mcp") },
    })
    .post("/tools/:id/call", async ({ principal, params, body, request }) => {
      const agentId = body?.agentId ?? (request.headers.get(AGENT_HEADER)?.slice(0, 256) || principal.sub);
      const out = await s.calls.call(principal.tenantId, params.id, { arguments: body?.arguments ?? {}, agentId });
      return jsonResponse(out, 200, { "x-cache-status": out.cache.status });
    }, { params: S.IdParams, body: S.ToolCall, detail: { summary: "Call a tool through svc (cache, coalescing, invalidation)", ...tag("mcp") } })
    // ---- entities ----
    .get("/entities", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.entities.list(principal.tenantId, { parentId: query.parentId, name: query.name }, page);
      return pageEnvelope("entities", items, total, page);
    }, { query: S.EntityListQuery, detail: { summary: "List entities", ...tag("mcp") } })
    .post("/entities", ({ principal, body }) => s.entities.create(principal.tenantId, body), { body: S.EntityCreate, perm: "ManageConfig", detail: { summary: "Create an entity", ...tag("mcp") } })
    .get("/entities/:id", ({ principal, params }) => s.entities.entity(principal.tenantId, params.id), { params: S.IdParams, detail: { summary: "Get an entity", ...tag("mcp") } })
    .patch("/entities/:id", ({ principal, params, body }) => s.entities.update(principal.tenantId, params.id, body), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.EntityUpdate,
      detail: { summary: "Update an entity (parentId null removes the parent)", ...tag("mcp") },
    })
    .delete("/entities/:id", async ({ principal, params }) => {
      const r = await s.entities.delete(principal.tenantId, params.id);
      return {
        ...deleted(`entity ${r.entity.name} deleted: ${r.invalidated} cached result(s) invalidated (cascade), ${r.mappingsRemoved} mapping(s) and ${r.rulesRemoved} rule(s) removed`),
        invalidated: r.invalidated,
      };
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete an entity (cascade invalidation)", ...tag("mcp") } })
    .post("/tool-entities", async ({ principal, body }) => (await s.entities.map(principal.tenantId, body)).mapping, { body: S.MappingCreate, perm: "ManageConfig", detail: { summary: "Map a tool parameter to an entity", ...tag("mcp") } })
    .delete("/tool-entities/:tool_id/:entity_id", async ({ principal, params }) => {
      await s.entities.unmap(principal.tenantId, params.tool_id, params.entity_id);
      return deleted("tool-entity mapping deleted");
    }, { params: S.MappingParams, perm: "ManageConfig", detail: { summary: "Delete a tool-entity mapping", ...tag("mcp") } })
    // ---- rules ----
    .get("/rules", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await s.entities.listRules(principal.tenantId, { writeToolId: query.writeToolId, invalidateToolId: query.invalidateToolId, enabled: query.enabled }, page);
      return pageEnvelope("rules", items, total, page);
    }, { query: S.RuleListQuery, detail: { summary: "List invalidation rules", ...tag("mcp") } })
    .post("/rules", ({ principal, body }) => s.entities.createRule(principal.tenantId, body), { body: S.RuleCreate, perm: "ManageConfig", detail: { summary: "Create an invalidation rule", ...tag("mcp") } })
    .post("/rules/generate", ({ principal }) => s.entities.generate(principal.tenantId), { perm: "ManageConfig", detail: { summary: "Generate rules from entity mappings", ...tag("mcp") } })
    .patch("/rules/:id", ({ principal, params, body }) => s.entities.setRuleEnabled(principal.tenantId, params.id, body.enabled), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.RuleUpdate,
      detail: { summary: "Enable or disable a rule", ...tag("mcp") },
    })
    .delete("/rules/:id", async ({ principal, params }) => {
      await s.entities.deleteRule(principal.tenantId, params.id);
      return deleted("invalidation rule deleted");
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete a rule", ...tag("mcp") } });
