/** /api/v1/folders (doc1 §4.10). Any credential of the tenant reads; writes need ManageConfig (docs/security.md). */
import type { Kernel } from "../../core/kernel";
import { DOC1 } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import type { FolderService } from "./service";
import * as S from "../schemas";
import { actorOf, deleted, tag } from "../types";

export const folderRoutes = (kernel: Kernel, folders: FolderService) => {
  return kernel
    .mount({ prefix: "/api/v1/folders", envelope: DOC1 })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await folders.list(actorOf(principal), query.parentId ?? null, page);
      return pageEnvelope("folders", items, total, page);
    }, { query: S.FolderListQuery, detail: { summary: "List the children of a folder (root when parentId is omitted)", description: "Lists the folders directly under `parentId` (the top level when it is omitted), paged.", ...tag("folders") } })
    .post("", ({ principal, body, set }) => {
      set.status = 201;
      return folders.create(actorOf(principal), body);
    }, { body: S.FolderCreate, perm: "ManageConfig", detail: { summary: "Create a folder", description: "Creates a folder at the top level or under `parentId`, which must be a folder of the tenant.", ...tag("folders") } })
    .get("/:id", ({ principal, params }) => folders.get(actorOf(principal), params.id), { params: S.IdParams, detail: { summary: "Get a folder", description: "Answers one folder of the tenant with its parent; 404 if there is none with this id.", ...tag("folders") } })
    .put("/:id", ({ principal, params, body }) => folders.update(actorOf(principal), params.id, body), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.FolderUpdate,
      detail: { summary: "Rename or move a folder", description: "Changes a folder's name or parent (null: the top level); a folder cannot move under itself or one of its descendants.", ...tag("folders") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await folders.delete(actorOf(principal), params.id);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete an empty folder", description: "Deletes a folder that holds no prompts and no subfolders; otherwise the request is refused.", ...tag("folders") } });
};
