/**
 * /api/v1/memory/projects/* (doc1 §4.12): projects, store, recall, log, branches, merge, roadmap,
 * project search, metrics, promote, metadata segments. Thin: TypeBox validates, one service call,
 * the answer is serialised with exact 64-bit integers (json.ts). Access (docs/security.md, "Access
 * matrix"): agents write memory with ordinary keys — any credential of the tenant creates projects
 * and stores, branches, merges, logs and promotes; deleting a project (everything it holds, every
 * agent's work) needs ManageConfig.
 */
import type { Kernel } from "../../core/kernel";
import { DOC1 } from "../../core/errors";
import type { MemoryService } from "../service";
import { jsonResponse } from "../json";
import * as S from "../schemas";

const doc = (summary: string) => ({ detail: { summary, tags: ["memory"] } });

export const projectRoutes = (kernel: Kernel, memory: MemoryService) =>
  kernel
    .mount({ prefix: "/api/v1/memory", envelope: DOC1, rateGroup: { read: "memory_read", write: "memory_write" } })
    .post("/projects", ({ principal, body }) => jsonResponse(memory.createProject(principal.tenantId, body), 201), { body: S.ProjectCreate, ...doc("Create a project (branch main, active)") })
    .get(
      "/projects",
      ({ principal, query }) => {
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const { items, total } = memory.listProjects(principal.tenantId, limit, offset);
        return jsonResponse({ projects: items, total, limit, offset });
      },
      { query: S.ListQuery, ...doc("List projects") },
    )
    .get("/projects/:id", ({ principal, params }) => jsonResponse(memory.getProject(principal.tenantId, params.id)), { params: S.ProjectParams, ...doc("Get a project") })
    .delete(
      "/projects/:id",
      ({ principal, params }) => {
        memory.deleteProject(principal.tenantId, params.id);
        return new Response(null, { status: 200 });
      },
      { params: S.ProjectParams, perm: "ManageConfig", ...doc("Delete a project with everything it holds (empty body)") },
    )
    .put("/projects/:id/roadmap", ({ principal, params, body }) => jsonResponse(memory.updateRoadmap(principal.tenantId, params.id, body.roadmap)), {
      params: S.ProjectParams,
      body: S.RoadmapUpdate,
      ...doc("Replace the roadmap"),
    })
    .post(
      "/projects/:id/store",
      async ({ principal, params, body }) => {
        const { milestone, deduplicated } = await memory.storeMilestone(principal.tenantId, params.id, body);
        return jsonResponse({ ...milestone, deduplicated }, deduplicated ? 200 : 201);
      },
      { params: S.ProjectParams, body: S.Store, ...doc("Store a milestone (identical content: the existing one, deduplicated)") },
    )
    .get("/projects/:id/recall", ({ principal, params, query }) => jsonResponse(memory.recall(principal.tenantId, params.id, query)), {
      params: S.ProjectParams,
      query: S.RecallQuery,
      ...doc("Recall: overview, branch, milestone, log or metadata view"),
    })
    .put("/projects/:id/metadata/:segment", ({ principal, params, body }) => jsonResponse(memory.putSegment(principal.tenantId, params.id, params.segment, body.data)), {
      params: S.SegmentParams,
      body: S.SegmentPut,
      ...doc("Write a custom metadata segment"),
    })
    .post("/projects/:id/log", ({ principal, params, body }) => jsonResponse(memory.appendLog(principal.tenantId, params.id, body), 201), {
      params: S.ProjectParams,
      body: S.Log,
      ...doc("Append a reasoning-trace entry"),
    })
    .post("/projects/:id/branches", ({ principal, params, body }) => jsonResponse(memory.createBranch(principal.tenantId, params.id, body), 201), {
      params: S.ProjectParams,
      body: S.BranchCreate,
      ...doc("Create a branch"),
    })
    .get(
      "/projects/:id/branches",
      ({ principal, params, query }) => {
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const { items, total } = memory.listBranches(principal.tenantId, params.id, limit, offset);
        return jsonResponse({ branches: items, total, limit, offset });
      },
      { params: S.ProjectParams, query: S.ListQuery, ...doc("List branches") },
    )
    .get("/projects/:id/branches/:name", ({ principal, params }) => jsonResponse(memory.getBranch(principal.tenantId, params.id, params.name)), {
      params: S.BranchParams,
      ...doc("Get a branch"),
    })
    .post("/projects/:id/branches/:name/abandon", ({ principal, params, body }) => jsonResponse(memory.abandonBranch(principal.tenantId, params.id, params.name, body.reason)), {
      params: S.BranchParams,
      body: S.Abandon,
      ...doc("Abandon a branch (milestones kept)"),
    })
    .post("/projects/:id/merge", async ({ principal, params, body }) => jsonResponse(await memory.merge(principal.tenantId, params.id, body)), {
      params: S.ProjectParams,
      body: S.Merge,
      ...doc("Merge a branch into another (atomic)"),
    })
    .post("/projects/:id/search", async ({ principal, params, body }) => jsonResponse(await memory.search(principal.tenantId, body, params.id)), {
      params: S.ProjectParams,
      body: S.ProjectSearch,
      ...doc("Search a project's milestones (semantic + lexical)"),
    })
    .post(
      "/projects/:id/metrics",
      ({ principal, params, body }) => {
        const { session, created } = memory.recordSession(principal.tenantId, params.id, body);
        return jsonResponse(session, created ? 201 : 200);
      },
      { params: S.ProjectParams, body: S.Metrics, ...doc("Record a session's metrics (same sessionId: replaced)") },
    )
    .get("/projects/:id/metrics/summary", ({ principal, params }) => jsonResponse(memory.metricsSummary(principal.tenantId, params.id)), {
      params: S.ProjectParams,
      ...doc("Session metrics summary"),
    })
    .post(
      "/projects/:id/promote",
      async ({ principal, params, body }) => {
        const r = await memory.promote(principal.tenantId, params.id, body);
        return jsonResponse(r, r.deduplicated ? 200 : 201);
      },
      { params: S.ProjectParams, body: S.Promote, ...doc("Promote a cached response to project knowledge") },
    )
    .post("/search", async ({ principal, body }) => jsonResponse(await memory.search(principal.tenantId, body)), { body: S.CrossSearch, ...doc("Search milestones across projects") });
