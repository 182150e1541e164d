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
import { examples, type Examples } from "../../core/openapi";

/** A route's reference entry: what it does (who may call it is added by the OpenAPI document), with examples for the main ones. */
const MILESTONE = {
  milestoneId: "22489ee7-5a44-4cd3-8870-a377d5c6f849",
  projectId: "checkout-service",
  branchName: "main",
  branchPurpose: "Harden the login flow",
  cumulativeProgress: "Rate limiting done; lockout pending",
  thisContribution: "Added per-account lockout after 6 failed sign-ins, for 45 minutes",
  contentHash: 8002580031035559,
  contentHashHex: "001c6e4ddc0958a7",
  sequenceNumber: 1,
  agentId: "claude-code-1",
  agentType: "coding-agent",
  mergedFrom: null,
  createdAt: "2026-11-27T08:24:56.873Z",
};
const MEMORY_STORE_EXAMPLE: Examples = {
  status: 201,
  request: {
    branchPurpose: MILESTONE.branchPurpose,
    cumulativeProgress: MILESTONE.cumulativeProgress,
    thisContribution: MILESTONE.thisContribution,
    agentId: MILESTONE.agentId,
    agentType: MILESTONE.agentType,
  },
  response: { ...MILESTONE, deduplicated: false },
};
const MEMORY_SEARCH_EXAMPLE: Examples = {
  request: { query: "brute force protection for logins", limit: 5 },
  response: { milestones: [{ ...MILESTONE, score: 0.408264, similarity: 0.469504, lexicalRank: 1 }], query: "brute force protection for logins", count: 1 },
};

const doc = (summary: string, description: string, e?: Examples) => ({ detail: { summary, description, tags: ["memory"], ...(e ? examples(e) : {}) } });

export const projectRoutes = (kernel: Kernel, memory: MemoryService) =>
  kernel
    .mount({ prefix: "/api/v1/memory", envelope: DOC1, rateGroup: { read: "memory_read", write: "memory_write" } })
    .post("/projects", async ({ principal, body }) => jsonResponse(await memory.createProject(principal.tenantId, body), 201), { body: S.ProjectCreate, ...doc("Create a project (branch main, active)", "Creates a memory project under the id you choose, with a name and a roadmap; it starts with one active branch, `main`. 409 if the id is taken.") })
    .get(
      "/projects",
      async ({ principal, query }) => {
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const { items, total } = await memory.listProjects(principal.tenantId, limit, offset);
        return jsonResponse({ projects: items, total, limit, offset });
      },
      { query: S.ListQuery, ...doc("List projects", "Lists the tenant's memory projects (limit/offset) with their milestone counts and active branches.") },
    )
    .get("/projects/:id", async ({ principal, params }) => jsonResponse(await memory.getProject(principal.tenantId, params.id)), { params: S.ProjectParams, ...doc("Get a project", "Answers one project with its roadmap, milestone count and active branches; 404 if the tenant has none with this id.") })
    .delete(
      "/projects/:id",
      async ({ principal, params }) => {
        await memory.deleteProject(principal.tenantId, params.id);
        return new Response(null, { status: 200 });
      },
      { params: S.ProjectParams, perm: "ManageConfig", ...doc("Delete a project with everything it holds (empty body)", "Deletes the project with its branches, milestones, logs, metadata, sessions and promoted knowledge, in one transaction; irreversible.") },
    )
    .put("/projects/:id/roadmap", async ({ principal, params, body }) => jsonResponse(await memory.updateRoadmap(principal.tenantId, params.id, body.roadmap)), {
      params: S.ProjectParams,
      body: S.RoadmapUpdate,
      ...doc("Replace the roadmap", "Replaces the project's roadmap text and answers the project."),
    })
    .post(
      "/projects/:id/store",
      async ({ principal, params, body }) => {
        const { milestone, deduplicated } = await memory.storeMilestone(principal.tenantId, params.id, body);
        return jsonResponse({ ...milestone, deduplicated }, deduplicated ? 200 : 201);
      },
      { params: S.ProjectParams, body: S.Store, ...doc("Store a milestone (identical content: the existing one, deduplicated)", "Records what an agent contributed on a branch (default `main`): the branch's purpose, the progress so far and this contribution, embedded for search and numbered in sequence. The same content again answers the existing milestone with `deduplicated: true`.", MEMORY_STORE_EXAMPLE) },
    )
    .get("/projects/:id/recall", async ({ principal, params, query }) => jsonResponse(await memory.recall(principal.tenantId, params.id, query)), {
      params: S.ProjectParams,
      query: S.RecallQuery,
      ...doc("Recall: overview, branch, milestone, log or metadata view", "Reads the project back the way an agent resumes work: an overview (the project and its branches), one branch's milestones, one milestone, the reasoning log, or a metadata segment, with `limit`/`offset`."),
    })
    .put("/projects/:id/metadata/:segment", async ({ principal, params, body }) => jsonResponse(await memory.putSegment(principal.tenantId, params.id, params.segment, body.data)), {
      params: S.SegmentParams,
      body: S.SegmentPut,
      ...doc("Write a custom metadata segment", "Stores a JSON object under a segment name of the project (replacing it); the derived segments (agents, branches, stats, sessions) are read-only."),
    })
    .post("/projects/:id/log", async ({ principal, params, body }) => jsonResponse(await memory.appendLog(principal.tenantId, params.id, body), 201), {
      params: S.ProjectParams,
      body: S.Log,
      ...doc("Append a reasoning-trace entry", "Appends an observation, thought or action of an agent to the branch's reasoning log (default `main`)."),
    })
    .post("/projects/:id/branches", async ({ principal, params, body }) => jsonResponse(await memory.createBranch(principal.tenantId, params.id, body), 201), {
      params: S.ProjectParams,
      body: S.BranchCreate,
      ...doc("Create a branch", "Opens a branch of the project from `parentBranch` (default `main`) with its purpose and the agent that opened it; 409 if the name is taken."),
    })
    .get(
      "/projects/:id/branches",
      async ({ principal, params, query }) => {
        const limit = query.limit ?? 50;
        const offset = query.offset ?? 0;
        const { items, total } = await memory.listBranches(principal.tenantId, params.id, limit, offset);
        return jsonResponse({ branches: items, total, limit, offset });
      },
      { params: S.ProjectParams, query: S.ListQuery, ...doc("List branches", "Lists the project's branches, oldest first (`main` first), with status, purpose and milestone counts.") },
    )
    .get("/projects/:id/branches/:name", async ({ principal, params }) => jsonResponse(await memory.getBranch(principal.tenantId, params.id, params.name)), {
      params: S.BranchParams,
      ...doc("Get a branch", "Answers one branch of the project with its status, parent and purpose; 404 if there is none with this name."),
    })
    .post("/projects/:id/branches/:name/abandon", async ({ principal, params, body }) => jsonResponse(await memory.abandonBranch(principal.tenantId, params.id, params.name, body.reason)), {
      params: S.BranchParams,
      body: S.Abandon,
      ...doc("Abandon a branch (milestones kept)", "Marks a branch abandoned with the reason; its milestones stay searchable and recallable."),
    })
    .post("/projects/:id/merge", async ({ principal, params, body }) => jsonResponse(await memory.merge(principal.tenantId, params.id, body)), {
      params: S.ProjectParams,
      body: S.Merge,
      ...doc("Merge a branch into another (atomic)", "Merges `sourceBranch` into `targetBranch` (default `main`) in one transaction: a merge milestone with the summary is added to the target and the source is marked merged; its milestones keep their branch."),
    })
    .post("/projects/:id/search", async ({ principal, params, body }) => jsonResponse(await memory.search(principal.tenantId, body, params.id)), {
      params: S.ProjectParams,
      body: S.ProjectSearch,
      ...doc("Search a project's milestones (semantic + lexical)", "Ranks the project's milestones for a query by meaning (embedding similarity) and by words (BM25), fused into one score from 0 to 1, best first; milestones close to the query in neither way are left out, so an unrelated question finds (almost) nothing. Each hit carries its score, similarity and lexical rank.", MEMORY_SEARCH_EXAMPLE),
    })
    .post(
      "/projects/:id/metrics",
      async ({ principal, params, body }) => {
        const { session, created } = await memory.recordSession(principal.tenantId, params.id, body);
        return jsonResponse(session, created ? 201 : 200);
      },
      { params: S.ProjectParams, body: S.Metrics, ...doc("Record a session's metrics (same sessionId: replaced)", "Records an agent session's figures (milestones recalled, tool calls by kind, compactions, duration); the same `sessionId` again replaces them.") },
    )
    .get("/projects/:id/metrics/summary", async ({ principal, params }) => jsonResponse(await memory.metricsSummary(principal.tenantId, params.id)), {
      params: S.ProjectParams,
      ...doc("Session metrics summary", "Compares the project's sessions that recalled memory with those that did not (compactions, context tool calls, duration, per agent type) and lists the most recent sessions."),
    })
    .post(
      "/projects/:id/promote",
      async ({ principal, params, body }) => {
        const r = await memory.promote(principal.tenantId, params.id, body);
        return jsonResponse(r, r.deduplicated ? 200 : 201);
      },
      { params: S.ProjectParams, body: S.Promote, ...doc("Promote a cached response to project knowledge", "Keeps a reusable answer (a response cache key with its summary and reuse score) as knowledge of the project, searchable by intelligence queries; the same key again is deduplicated, and promotions per project are rate-limited.") },
    )
    .post("/search", async ({ principal, body }) => jsonResponse(await memory.search(principal.tenantId, body)), { body: S.CrossSearch, ...doc("Search milestones across projects", "Ranks milestones of the listed projects (default: every project of the tenant) for a query, as the project search does: meaning and words fused into one score, best first, unrelated milestones left out.") });
