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

export const promptRoutes = (kernel: Kernel, prompts: PromptService, runs: PromptRunner) => {
  return kernel
    .mount({ prefix: "/api/v1/prompts", envelope: DOC1 })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await prompts.list(actorOf(principal), { status: query.status, folderId: query.folderId, tag: query.tag, search: query.search }, page);
      return pageEnvelope("prompts", items, total, page);
    }, { query: S.PromptListQuery, detail: { summary: "List prompts", ...tag("prompts") } })
    .post("", ({ principal, body, set }) => {
      set.status = 201;
      return prompts.create(actorOf(principal), body);
    }, { body: S.PromptCreate, perm: "ManageConfig", detail: { summary: "Create a prompt (version 1)", ...tag("prompts") } })
    .get("/:id", ({ principal, params }) => prompts.get(actorOf(principal), params.id), { params: S.IdParams, detail: { summary: "Get a prompt", ...tag("prompts") } })
    .put("/:id", ({ principal, params, body }) => prompts.update(actorOf(principal), params.id, body), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.PromptUpdate,
      detail: { summary: "Update a prompt; a changed template creates a new version", ...tag("prompts") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await prompts.delete(actorOf(principal), params.id);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete a prompt with its versions and runs", ...tag("prompts") } })
    .post("/:id/duplicate", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.duplicate(actorOf(principal), params.id, body ?? {});
    }, { params: S.IdParams, body: t.Optional(S.PromptDuplicate), perm: "ManageConfig", detail: { summary: "Copy the current template into a new prompt", ...tag("prompts") } })
    .get("/:id/versions", async ({ principal, params, query }) => {
      const page = pageOf(query);
      const { items, total } = await prompts.listVersions(actorOf(principal), params.id, page);
      return pageEnvelope("versions", items, total, page);
    }, { params: S.IdParams, query: S.PageOnlyQuery, detail: { summary: "List versions, newest first", ...tag("prompts") } })
    .post("/:id/versions", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.addVersion(actorOf(principal), params.id, body);
    }, { params: S.IdParams, body: S.VersionCreate, perm: "ManageConfig", detail: { summary: "Add a version explicitly", ...tag("prompts") } })
    .get("/:id/versions/:version", ({ principal, params }) => prompts.getVersion(actorOf(principal), params.id, params.version), {
      params: S.VersionParams,
      detail: { summary: "Get one version", ...tag("prompts") },
    })
    .get("/:id/diff", ({ principal, params, query }) => prompts.diff(actorOf(principal), params.id, query.fromVersion, query.toVersion), {
      params: S.IdParams,
      query: S.DiffQuery,
      detail: { summary: "Unified diff between two versions", ...tag("prompts") },
    })
    .post("/:id/rollback", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.rollback(actorOf(principal), params.id, body.version, body.message);
    }, { params: S.IdParams, body: S.Rollback, perm: "ManageConfig", detail: { summary: "New version with an old version's content", ...tag("prompts") } })
    .post("/:id/execute", ({ principal, params, body, request }) => runs.execute(actorOf(principal), params.id, body ?? {}, { requestId: kernel.stateOf(request)?.id }), {
      params: S.IdParams,
      body: t.Optional(S.Execute),
      detail: { summary: "Render and send through the gateway (cache first)", ...tag("prompts") },
    })
    .post("/:id/test", ({ principal, params, body }) => runs.execute(actorOf(principal), params.id, { ...(body ?? {}), dryRun: true }), {
      params: S.IdParams,
      body: t.Optional(S.Execute),
      detail: { summary: "Render only (always a dry run)", ...tag("prompts") },
    })
    .get("/:id/runs", async ({ principal, params, query }) => {
      const page = pageOf(query);
      const { items, total } = await runs.listRuns(actorOf(principal), params.id, { status: query.status, version: query.version }, page);
      return pageEnvelope("runs", items, total, page);
    }, { params: S.IdParams, query: S.RunListQuery, perm: "ViewLogs", detail: { summary: "List runs, newest first", ...tag("prompts") } })
    .get("/:id/runs/:runId", ({ principal, params }) => runs.getRun(actorOf(principal), params.id, params.runId), {
      perm: "ViewLogs",
      params: S.RunParams,
      detail: { summary: "Get one run", ...tag("prompts") },
    });
};
