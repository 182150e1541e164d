/**
 * /api/v1/prompts (doc1 §4.9), /api/v1/folders (§4.10), /api/v1/chains (§4.11).
 * Thin routes: TypeBox validates, a service does the work, the route shapes the response.
 * Any authenticated caller of the tenant (JWT or API key) may read and write (docs/decisions.md).
 */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context";
import { kernel } from "../core/http";
import { pageEnvelope, pageOf } from "../core/pagination";
import type { Principal } from "../core/auth";
import { sqlStores, type PromptStores } from "./repository";
import { PromptService } from "./service";
import { FolderService } from "./folders.service";
import { ChainService } from "./chains.service";
import * as S from "./schemas";
import type { Actor } from "./types";

const actorOf = (p: Principal): Actor => ({ tenantId: p.tenantId, sub: p.sub });
/** the X-Request-ID the app already put on the response, forwarded to the gateway */
const requestIdFrom = (headers: Record<string, unknown>) => {
  const id = headers["x-request-id"];
  return typeof id === "string" ? id : undefined;
};
const deleted = (id: string) => ({ deleted: true as const, id });

export interface PromptDomain {
  prompts: PromptService;
  folders: FolderService;
  chains: ChainService;
}

export function promptDomain(ctx: AppContext, stores: PromptStores = sqlStores(ctx.db)): PromptDomain {
  const gateway = () => ctx.gateway;
  return {
    prompts: new PromptService(stores.prompts, stores.folders, gateway),
    folders: new FolderService(stores.folders),
    chains: new ChainService(stores.chains, gateway),
  };
}

const textOf = (content: string | Array<{ type: string; text?: string }>) =>
  typeof content === "string" ? content : content.map((p) => p.text ?? "").join("");

export const promptRoutes = (ctx: AppContext, domain: PromptDomain = promptDomain(ctx)) => {
  const { prompts, folders, chains } = domain;
  const auth = true as const;
  const tag = (t: string) => ({ tags: [t] });

  const promptsApi = new Elysia({ prefix: "/api/v1/prompts" })
    .use(kernel(ctx))
    .get("/", ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = prompts.list(actorOf(principal), { status: query.status, folderId: query.folderId, tag: query.tag, search: query.search }, page);
      return pageEnvelope("prompts", items, total, page);
    }, { auth, query: S.PromptListQuery, detail: { summary: "List prompts", ...tag("prompts") } })
    .post("/", ({ principal, body, set }) => {
      set.status = 201;
      return prompts.create(actorOf(principal), body);
    }, { auth, body: S.PromptCreate, detail: { summary: "Create a prompt (version 1)", ...tag("prompts") } })
    .get("/:id", ({ principal, params }) => prompts.get(actorOf(principal), params.id), { auth, params: S.IdParams, detail: { summary: "Get a prompt", ...tag("prompts") } })
    .put("/:id", ({ principal, params, body }) => prompts.update(actorOf(principal), params.id, body), {
      auth,
      params: S.IdParams,
      body: S.PromptUpdate,
      detail: { summary: "Update a prompt; a changed template creates a new version", ...tag("prompts") },
    })
    .delete("/:id", ({ principal, params }) => {
      prompts.delete(actorOf(principal), params.id);
      return deleted(params.id);
    }, { auth, params: S.IdParams, detail: { summary: "Delete a prompt with its versions and runs", ...tag("prompts") } })
    .post("/:id/duplicate", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.duplicate(actorOf(principal), params.id, body ?? {});
    }, { auth, params: S.IdParams, body: t.Optional(S.PromptDuplicate), detail: { summary: "Copy the current template into a new prompt", ...tag("prompts") } })
    .get("/:id/versions", ({ principal, params, query }) => {
      const page = pageOf(query);
      const { items, total } = prompts.listVersions(actorOf(principal), params.id, page);
      return pageEnvelope("versions", items, total, page);
    }, { auth, params: S.IdParams, query: S.PageOnlyQuery, detail: { summary: "List versions, newest first", ...tag("prompts") } })
    .post("/:id/versions", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.addVersion(actorOf(principal), params.id, body);
    }, { auth, params: S.IdParams, body: S.VersionCreate, detail: { summary: "Add a version explicitly", ...tag("prompts") } })
    .get("/:id/versions/:version", ({ principal, params }) => prompts.getVersion(actorOf(principal), params.id, params.version), {
      auth,
      params: S.VersionParams,
      detail: { summary: "Get one version", ...tag("prompts") },
    })
    .get("/:id/diff", ({ principal, params, query }) => prompts.diff(actorOf(principal), params.id, query.fromVersion, query.toVersion), {
      auth,
      params: S.IdParams,
      query: S.DiffQuery,
      detail: { summary: "Unified diff between two versions", ...tag("prompts") },
    })
    .post("/:id/rollback", ({ principal, params, body, set }) => {
      set.status = 201;
      return prompts.rollback(actorOf(principal), params.id, body.version, body.message);
    }, { auth, params: S.IdParams, body: S.Rollback, detail: { summary: "New version with an old version's content", ...tag("prompts") } })
    .post("/:id/execute", ({ principal, params, body, set }) => prompts.execute(actorOf(principal), params.id, body ?? {}, { requestId: requestIdFrom(set.headers) }), {
      auth,
      params: S.IdParams,
      body: t.Optional(S.Execute),
      detail: { summary: "Render and send through the gateway (cache first)", ...tag("prompts") },
    })
    .post("/:id/test", ({ principal, params, body }) => prompts.execute(actorOf(principal), params.id, { ...(body ?? {}), dryRun: true }), {
      auth,
      params: S.IdParams,
      body: t.Optional(S.Execute),
      detail: { summary: "Render only (always a dry run)", ...tag("prompts") },
    })
    .get("/:id/runs", ({ principal, params, query }) => {
      const page = pageOf(query);
      const { items, total } = prompts.listRuns(actorOf(principal), params.id, { status: query.status, version: query.version }, page);
      return pageEnvelope("runs", items, total, page);
    }, { auth, params: S.IdParams, query: S.RunListQuery, detail: { summary: "List runs, newest first", ...tag("prompts") } })
    .get("/:id/runs/:runId", ({ principal, params }) => prompts.getRun(actorOf(principal), params.id, params.runId), {
      auth,
      params: S.RunParams,
      detail: { summary: "Get one run", ...tag("prompts") },
    });

  const foldersApi = new Elysia({ prefix: "/api/v1/folders" })
    .use(kernel(ctx))
    .get("/", ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = folders.list(actorOf(principal), query.parentId ?? null, page);
      return pageEnvelope("folders", items, total, page);
    }, { auth, query: S.FolderListQuery, detail: { summary: "List the children of a folder (root when parentId is omitted)", ...tag("folders") } })
    .post("/", ({ principal, body, set }) => {
      set.status = 201;
      return folders.create(actorOf(principal), body);
    }, { auth, body: S.FolderCreate, detail: { summary: "Create a folder", ...tag("folders") } })
    .get("/:id", ({ principal, params }) => folders.get(actorOf(principal), params.id), { auth, params: S.IdParams, detail: { summary: "Get a folder", ...tag("folders") } })
    .put("/:id", ({ principal, params, body }) => folders.update(actorOf(principal), params.id, body), {
      auth,
      params: S.IdParams,
      body: S.FolderUpdate,
      detail: { summary: "Rename or move a folder", ...tag("folders") },
    })
    .delete("/:id", ({ principal, params }) => {
      folders.delete(actorOf(principal), params.id);
      return deleted(params.id);
    }, { auth, params: S.IdParams, detail: { summary: "Delete an empty folder", ...tag("folders") } });

  const chainsApi = new Elysia({ prefix: "/api/v1/chains" })
    .use(kernel(ctx))
    .get("/", ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = chains.list(actorOf(principal), page);
      return pageEnvelope("chains", items, total, page);
    }, { auth, query: S.PageOnlyQuery, detail: { summary: "List chains", ...tag("chains") } })
    .post("/", ({ principal, body, set }) => {
      set.status = 201;
      return chains.create(actorOf(principal), body);
    }, { auth, body: S.ChainBody, detail: { summary: "Create a chain", ...tag("chains") } })
    .get("/:id", ({ principal, params }) => chains.get(actorOf(principal), params.id), { auth, params: S.IdParams, detail: { summary: "Get a chain", ...tag("chains") } })
    .put("/:id", ({ principal, params, body }) => chains.replace(actorOf(principal), params.id, body), {
      auth,
      params: S.IdParams,
      body: S.ChainBody,
      detail: { summary: "Replace a chain (whole steps array)", ...tag("chains") },
    })
    .delete("/:id", ({ principal, params }) => {
      chains.delete(actorOf(principal), params.id);
      return deleted(params.id);
    }, { auth, params: S.IdParams, detail: { summary: "Delete a chain", ...tag("chains") } })
    .post(
      "/:id/execute",
      ({ principal, params, body, set }) =>
        chains.execute(
          actorOf(principal),
          params.id,
          body.messages.map((m) => ({ role: m.role, content: textOf(m.content) })),
          { requestId: requestIdFrom(set.headers) },
        ),
      { auth, params: S.IdParams, body: S.ChainExecute, detail: { summary: "Run the steps in order through the gateway", ...tag("chains") } },
    );

  return new Elysia({ name: "svc-prompts" }).use(promptsApi).use(foldersApi).use(chainsApi);
};
