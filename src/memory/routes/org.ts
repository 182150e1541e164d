/**
 * /api/v1/memory/contributors/*, /sources/*, /intelligence/* (doc1 §4.12). Thin routes over the
 * services; routes under the same mount as projects.ts (kernel.routes: one policy for the prefix).
 * Access (docs/security.md, "Access matrix"): any credential of the tenant reads, queries and runs
 * actions; contributors (who an agent's work is attributed to) and external sources (their URLs
 * and credentials) are configuration: writing them, and syncing a source, need ManageConfig.
 */
import type { Kernel } from "../../core/kernel";
import type { MemoryService } from "../service";
import type { SourceService } from "../sources/service";
import type { IntelligenceService } from "../intelligence";
import { jsonResponse } from "../json";
import * as S from "../schemas";

const doc = (summary: string) => ({ detail: { summary, tags: ["memory"] } });

export const orgRoutes = (kernel: Kernel, sources: SourceService, intelligence: IntelligenceService, memory: MemoryService) =>
  kernel
    .routes("/api/v1/memory")
    .post(
      "/contributors",
      ({ principal, body }) => {
        const { contributor, created } = memory.upsertContributor(principal.tenantId, body);
        return jsonResponse(contributor, created ? 201 : 200);
      },
      { body: S.Contributor, perm: "ManageConfig", ...doc("Create or update a contributor") },
    )
    .get(
      "/contributors",
      ({ principal, query }) => {
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const { items, total } = memory.listContributors(principal.tenantId, limit, offset);
        return jsonResponse({ contributors: items, total, limit, offset });
      },
      { query: S.ListQuery, ...doc("List contributors") },
    )
    .get("/contributors/:id", ({ principal, params }) => jsonResponse(memory.getContributor(principal.tenantId, params.id)), { params: S.IdParams, ...doc("Get a contributor") })
    .delete(
      "/contributors/:id",
      ({ principal, params }) => {
        memory.deleteContributor(principal.tenantId, params.id);
        return jsonResponse({ deleted: true, id: params.id });
      },
      { params: S.IdParams, perm: "ManageConfig", ...doc("Delete a contributor (their milestones stay)") },
    )
    .get("/contributors/:id/activity", ({ principal, params, query }) => jsonResponse(memory.activity(principal.tenantId, params.id, query.limit ?? 50, query.offset ?? 0)), {
      params: S.IdParams,
      query: S.ActivityQuery,
      ...doc("Milestones of a contributor's agents, newest first"),
    })
    .post("/sources", async ({ principal, body }) => jsonResponse(await sources.create(principal.tenantId, body), 201), { body: S.SourceCreate, perm: "ManageConfig", ...doc("Register an external source") })
    .get(
      "/sources",
      ({ principal, query }) => {
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const { items, total } = sources.list(principal.tenantId, limit, offset, query.projectId);
        return jsonResponse({ sources: items, total, limit, offset });
      },
      { query: S.SourceListQuery, ...doc("List external sources") },
    )
    .get("/sources/:id", ({ principal, params }) => jsonResponse(sources.get(principal.tenantId, params.id)), { params: S.IdParams, ...doc("Get an external source") })
    .put("/sources/:id", async ({ principal, params, body }) => jsonResponse(await sources.update(principal.tenantId, params.id, body)), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.SourceUpdate,
      ...doc("Update a source (partial)"),
    })
    .delete(
      "/sources/:id",
      ({ principal, params }) => {
        sources.delete(principal.tenantId, params.id);
        return jsonResponse({ deleted: true, id: params.id });
      },
      { params: S.IdParams, perm: "ManageConfig", ...doc("Delete a source and its synced documents") },
    )
    .post("/sources/:id/sync", async ({ principal, params }) => jsonResponse(await sources.sync(principal.tenantId, params.id)), { params: S.IdParams, perm: "ManageConfig", ...doc("Synchronise now") })
    .get("/sources/:id/status", ({ principal, params }) => jsonResponse(sources.status(principal.tenantId, params.id)), { params: S.IdParams, ...doc("Sync status") })
    .post(
      "/intelligence/query",
      async ({ principal, body, request }) => jsonResponse(await intelligence.query(principal.tenantId, body, kernel.stateOf(request)?.id)),
      { body: S.IntelligenceQuery, ...doc("Answer a question from memory") },
    )
    .post("/intelligence/action", async ({ principal, body }) => jsonResponse(await intelligence.action(principal.tenantId, body.action, body.params)), {
      body: S.IntelligenceAction,
      ...doc("Run an action on an external service (create_jira_ticket, post_slack)"),
    });
