/**
 * /api/v1/prompts (doc1 §4.9). Thin routes: TypeBox validates, a service does the work, the
 * route shapes the response. Access (docs/security.md, "Access matrix"): any credential of the
 * tenant reads and executes; creating, changing and deleting need ManageConfig; runs (the request
 * log of executions) need ViewLogs — each route declares its `perm`.
 */
import { t } from "elysia";
import type { Kernel } from "../core/kernel";
import { DOC1 } from "../core/errors";
import { pageEnvelope, pageOf } from "../core/pagination";
import type { PromptService } from "./service";
import type { PromptRunner } from "./execute";
import * as S from "./schemas";
import { actorOf, deleted, tag } from "./types";
import { examples } from "../core/openapi";

const PROMPT_CREATE_EXAMPLE = {
  status: 201,
  request: { name: "Summarise a ticket", template: "Summarise this support ticket in two sentences:\n\n{{ticket}}", description: "Short summary for the triage queue", model: "gpt-4o-mini", temperature: 0.2, maxTokens: 200, tags: ["support"] },
  response: {
    id: "4fbd6e57-8dfc-467a-bb03-f665e9cc5ee2",
    name: "Summarise a ticket",
    slug: "summarise-a-ticket",
    description: "Short summary for the triage queue",
    template: "Summarise this support ticket in two sentences:\n\n{{ticket}}",
    variables: [{ name: "ticket", varType: "string", defaultValue: null }],
    model: "gpt-4o-mini",
    temperature: 0.2,
    maxTokens: 200,
    tags: ["support"],
    folderId: null,
    status: "DRAFT",
    currentVersion: 1,
    createdBy: "user:3f2a9c1e-7b4d-4c8a-9e21-5d6f0a1b2c3d",
    createdAt: "2026-11-27T08:24:56.376Z",
    updatedAt: "2026-11-27T08:24:56.376Z",
  },
};
const PROMPT_EXECUTE_EXAMPLE = {
  request: { variables: { ticket: "The export button does nothing when the report has more than 1,000 rows." } },
  response: {
    runId: "44549c36-16dc-4fc5-af6e-4794c5a6b12b",
    renderedPrompt: "Summarise this support ticket in two sentences:\n\nThe export button does nothing when the report has more than 1,000 rows.",
    estimatedTokens: 27,
    response: "Exporting a report with more than 1,000 rows fails silently. The customer needs large exports to work.",
    usage: { promptTokens: 27, completionTokens: 21, totalTokens: 48 },
    cacheHit: false,
    durationMs: 812,
    dryRun: false,
    model: "gpt-4o-mini",
    version: 1,
  },
};

export const promptRoutes = (kernel: Kernel, prompts: PromptService, runs: PromptRunner) => {
  return kernel
    .mount({ prefix: "/api/v1/prompts", envelope: DOC1 })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await prompts.list(actorOf(principal), { status: query.status, folderId: query.folderId, tag: query.tag, search: query.search }, page);
      return pageEnvelope("prompts", items, total, page);
    }, { query: S.PromptListQuery, detail: { summary: "List prompts", description: "Lists the tenant's prompts (paged), filtered by status, folder, tag or a search in name and description.", ...tag("prompts") } })
    .post("", ({ principal, body, set }) => {
      set.status = 201;
      return prompts.create(actorOf(principal), body);
    }, { body: S.PromptCreate, perm: "ManageConfig", detail: { ...examples(PROMPT_CREATE_EXAMPLE), summary: "Create a prompt (version 1)", description: "Creates a prompt from a template with `{{variable}}` placeholders; the template becomes version 1 and its variables are detected. `model`, `temperature` and `maxTokens` are the defaults executions use.", ...tag("prompts") } })
    .get("/:id", ({ principal, params }) => prompts.get(actorOf(principal), params.id), { params: S.IdParams, detail: { summary: "Get a prompt", description: "Answers one prompt of the tenant with its current template, detected variables and settings; 404 if there is none with this id.", ...tag("prompts") } })
    .put("/:id", ({ principal, params, body }) => prompts.update(actorOf(principal), params.id, body), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.PromptUpdate,
      detail: { summary: "Update a prompt; a changed template creates a new version", description: "Changes a prompt's fields partially. A different template is saved as the next version (with `message` as its note); the other fields change in place.", ...tag("prompts") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await prompts.delete(actorOf(principal), params.id);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete a prompt with its versions and runs", description: "Deletes the prompt, every version and the log of its runs; irreversible.", ...tag("prompts") } })
    .post("/:id/duplicate", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.duplicate(actorOf(principal), params.id, body ?? {});
    }, { params: S.IdParams, body: t.Optional(S.PromptDuplicate), perm: "ManageConfig", detail: { summary: "Copy the current template into a new prompt", description: "Creates a new prompt (version 1) from the current version of this one, optionally with another name or folder.", ...tag("prompts") } })
    .get("/:id/versions", async ({ principal, params, query }) => {
      const page = pageOf(query);
      const { items, total } = await prompts.listVersions(actorOf(principal), params.id, page);
      return pageEnvelope("versions", items, total, page);
    }, { params: S.IdParams, query: S.PageOnlyQuery, detail: { summary: "List versions, newest first", description: "Lists the prompt's saved versions, newest first (paged), each with its template, settings and note.", ...tag("prompts") } })
    .post("/:id/versions", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.addVersion(actorOf(principal), params.id, body);
    }, { params: S.IdParams, body: S.VersionCreate, perm: "ManageConfig", detail: { summary: "Add a version explicitly", description: "Saves a new version with this template and settings and makes it current.", ...tag("prompts") } })
    .get("/:id/versions/:version", ({ principal, params }) => prompts.getVersion(actorOf(principal), params.id, params.version), {
      params: S.VersionParams,
      detail: { summary: "Get one version", description: "Answers one saved version of the prompt; 404 if the prompt or the version does not exist.", ...tag("prompts") },
    })
    .get("/:id/diff", ({ principal, params, query }) => prompts.diff(actorOf(principal), params.id, query.fromVersion, query.toVersion), {
      params: S.IdParams,
      query: S.DiffQuery,
      detail: { summary: "Unified diff between two versions", description: "Compares two versions of the prompt: a unified diff of their templates, the variables added, removed or changed, and counts of added and removed lines.", ...tag("prompts") },
    })
    .post("/:id/rollback", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.rollback(actorOf(principal), params.id, body.version, body.message);
    }, { params: S.IdParams, body: S.Rollback, perm: "ManageConfig", detail: { summary: "New version with an old version's content", description: "Restores an old version by saving its template and settings as the next version; history is kept.", ...tag("prompts") } })
    .post("/:id/execute", ({ principal, params, body, request }) => runs.execute(actorOf(principal), params.id, body ?? {}, { requestId: kernel.stateOf(request)?.id }), {
      params: S.IdParams,
      body: t.Optional(S.Execute),
      detail: { ...examples(PROMPT_EXECUTE_EXAMPLE), summary: "Render and send through the gateway (cache first)", description: "Fills the template (current version, or `version`) with `variables`, sends it as one user message through the gateway (answered from the cache when it can) and records the run. `model`, `temperature` and `maxTokens` override the prompt's; `dryRun: true` only renders.", ...tag("prompts") },
    })
    .post("/:id/test", ({ principal, params, body }) => runs.execute(actorOf(principal), params.id, { ...(body ?? {}), dryRun: true }), {
      params: S.IdParams,
      body: t.Optional(S.Execute),
      detail: { summary: "Render only (always a dry run)", description: "Fills the template with `variables` and answers the rendered text and its estimated tokens without calling a model; the dry run is recorded.", ...tag("prompts") },
    })
    .get("/:id/runs", async ({ principal, params, query }) => {
      const page = pageOf(query);
      const { items, total } = await runs.listRuns(actorOf(principal), params.id, { status: query.status, version: query.version }, page);
      return pageEnvelope("runs", items, total, page);
    }, { params: S.IdParams, query: S.RunListQuery, perm: "ViewLogs", detail: { summary: "List runs, newest first", description: "The log of the prompt's executions and dry runs, newest first (paged), filtered by status or version: rendered text, answer, tokens, cache hit and duration.", ...tag("prompts") } })
    .get("/:id/runs/:runId", ({ principal, params }) => runs.getRun(actorOf(principal), params.id, params.runId), {
      perm: "ViewLogs",
      params: S.RunParams,
      detail: { summary: "Get one run", description: "Answers one recorded execution of the prompt with its variables, rendered text, answer, tokens, cache hit, duration and error if it failed.", ...tag("prompts") },
    });
};
