/**
 * /api/v1/memory/contributors/*, /sources/*, /intelligence/* (doc1 §4.12). Thin routes over the
 * services; routes under the same mount as projects.ts (kernel.routes: one policy for the prefix).
 * Access (docs/security.md, "Access matrix"): any credential of the tenant reads, queries and runs
 * actions; contributors (who an agent's work is attributed to) and external sources (their URLs
 * and credentials) are configuration: writing them, and syncing a source, need ManageConfig.
 */
import type { Kernel } from "../../core/kernel";
import type { ContributorService } from "../contributors";
import type { SourceService } from "../sources/service";
import type { IntelligenceService } from "../intelligence";
import { jsonResponse } from "../json";
import * as S from "../schemas";
import { examples, type Examples } from "../../core/openapi";

/** A route's reference entry: what it does (who may call it is added by the OpenAPI document), with examples for the main ones. */
const doc = (summary: string, description: string, e?: Examples) => ({ detail: { summary, description, tags: ["memory"], ...(e ? examples(e) : {}) } });

export const orgRoutes = (kernel: Kernel, sources: SourceService, intelligence: IntelligenceService, contributors: ContributorService) =>
  kernel
    .routes("/api/v1/memory")
    .post(
      "/contributors",
      async ({ principal, body }) => {
        const { contributor, created } = await contributors.upsertContributor(principal.tenantId, body);
        return jsonResponse(contributor, created ? 201 : 200);
      },
      { body: S.Contributor, perm: "ManageConfig", ...doc("Create or update a contributor", "Registers the person agents work for (`contributorId`, display name, role, the agent ids that act for them); an existing id is updated, fields left out keep their values.") },
    )
    .get(
      "/contributors",
      async ({ principal, query }) => {
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const { items, total } = await contributors.listContributors(principal.tenantId, limit, offset);
        return jsonResponse({ contributors: items, total, limit, offset });
      },
      { query: S.ListQuery, ...doc("List contributors", "Lists the tenant's contributors (limit/offset) with their agent ids and roles.") },
    )
    .get("/contributors/:id", async ({ principal, params }) => jsonResponse(await contributors.getContributor(principal.tenantId, params.id)), { params: S.IdParams, ...doc("Get a contributor", "Answers one contributor; 404 if the tenant has none with this id.") })
    .delete(
      "/contributors/:id",
      async ({ principal, params }) => {
        await contributors.deleteContributor(principal.tenantId, params.id);
        return jsonResponse({ deleted: true, id: params.id });
      },
      { params: S.IdParams, perm: "ManageConfig", ...doc("Delete a contributor (their milestones stay)", "Removes a contributor; the milestones their agents stored stay as they are.") },
    )
    .get("/contributors/:id/activity", async ({ principal, params, query }) => jsonResponse(await contributors.activity(principal.tenantId, params.id, query.limit ?? 50, query.offset ?? 0)), {
      params: S.IdParams,
      query: S.ActivityQuery,
      ...doc("Milestones of a contributor's agents, newest first", "Lists the milestones stored by the contributor's agents across projects, newest first (limit/offset)."),
    })
    .post("/sources", async ({ principal, body }) => jsonResponse(await sources.create(principal.tenantId, body), 201), { body: S.SourceCreate, perm: "ManageConfig", ...doc("Register an external source", "Registers a Slack, Jira, Confluence or GitHub source for a project with its connection settings (a credential only by the name of an environment variable, `tokenEnv`); its documents are searched by intelligence queries once synced.") })
    .get(
      "/sources",
      async ({ principal, query }) => {
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const { items, total } = await sources.list(principal.tenantId, limit, offset, query.projectId);
        return jsonResponse({ sources: items, total, limit, offset });
      },
      { query: S.SourceListQuery, ...doc("List external sources", "Lists the tenant's external sources (limit/offset), optionally of one project, with their last sync, items synced and last error.") },
    )
    .get("/sources/:id", async ({ principal, params }) => jsonResponse(await sources.get(principal.tenantId, params.id)), { params: S.IdParams, ...doc("Get an external source", "Answers one external source with its settings and sync status; 404 if the tenant has none with this id.") })
    .put("/sources/:id", async ({ principal, params, body }) => jsonResponse(await sources.update(principal.tenantId, params.id, body)), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.SourceUpdate,
      ...doc("Update a source (partial)", "Changes a source's project, type, settings or whether it is enabled; fields left out keep their values."),
    })
    .delete(
      "/sources/:id",
      async ({ principal, params }) => {
        await sources.delete(principal.tenantId, params.id);
        return jsonResponse({ deleted: true, id: params.id });
      },
      { params: S.IdParams, perm: "ManageConfig", ...doc("Delete a source and its synced documents", "Removes the source and every document synced from it.") },
    )
    .post("/sources/:id/sync", async ({ principal, params }) => jsonResponse(await sources.sync(principal.tenantId, params.id)), { params: S.IdParams, perm: "ManageConfig", ...doc("Synchronise now", "Fetches the source's new documents from where the last sync stopped, embeds them and commits them batch by batch; 409 while a sync of the source runs.") })
    .get("/sources/:id/status", async ({ principal, params }) => jsonResponse(await sources.status(principal.tenantId, params.id)), { params: S.IdParams, ...doc("Sync status", "Answers the source's sync state: when it last synced, items synced, the cursor, the last error and whether a sync is running.") })
    .post(
      "/intelligence/query",
      async ({ principal, body, request }) => jsonResponse(await intelligence.query(principal.tenantId, body, kernel.stateOf(request)?.id)),
      { body: S.IntelligenceQuery, ...doc("Answer a question from memory", "Retrieves the milestones, promoted knowledge and (unless excluded) synced documents that match the question, filtered by project, contributor and time range, and answers with the configured model through the gateway, citing exactly those excerpts in `sources`; without a model the answer is the top excerpts.") },
    )
    .post("/intelligence/action", async ({ principal, body }) => jsonResponse(await intelligence.action(principal.tenantId, body.action, body.params)), {
      body: S.IntelligenceAction,
      ...doc("Run an action on an external service (create_jira_ticket, post_slack)", "Calls the target service through a configured source of its type: create_jira_ticket creates a Jira issue, post_slack posts a Slack message; answers what the service returned."),
    });
