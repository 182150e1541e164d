/**
 * Folder tree rules: parentId null = root; a parent must exist in the tenant; a folder cannot be
 * moved under itself or one of its descendants; only an empty folder (no prompts, no subfolders)
 * can be deleted.
 */
import { badRequest, invalidRequest, notFound } from "../../core/errors";
import { uuid, now } from "../../core/ids";
import type { Page, Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import type { FolderStore } from "./store";
import { refusable } from "../tx";
import type { Actor, Folder } from "../types";

export class FolderService {
  constructor(private readonly stores: ForTenant<FolderStore>) {}

  private async must(store: FolderStore, id: string): Promise<Folder> {
    const f = await store.get(id);
    if (!f) throw notFound(`folder '${id}'`);
    return f;
  }

  create(actor: Actor, input: { name: string; parentId?: string | null }): Promise<Folder> {
    const store = this.stores(actor.tenantId);
    return refusable(store, async () => {
      if (input.parentId) await this.must(store, input.parentId);
      const at = now();
      const f: Folder = { id: uuid(), name: input.name, parentId: input.parentId ?? null, createdBy: actor.sub, createdAt: at, updatedAt: at };
      await store.insert(f);
      return f;
    });
  }

  get(actor: Actor, id: string): Promise<Folder> {
    return this.must(this.stores(actor.tenantId), id);
  }

  async list(actor: Actor, parentId: string | null, page: Page): Promise<Listed<Folder>> {
    const store = this.stores(actor.tenantId);
    if (parentId) await this.must(store, parentId);
    return store.listChildren(parentId, page);
  }

  update(actor: Actor, id: string, input: { name?: string; parentId?: string | null }): Promise<Folder> {
    const store = this.stores(actor.tenantId);
    return refusable(store, async () => {
      const cur = await this.must(store, id);
      if (input.parentId) {
        await this.must(store, input.parentId);
        // the new parent's path up to the root must not pass through this folder
        if ((await store.ancestry(input.parentId)).includes(id))
          throw badRequest(input.parentId === id ? "a folder cannot be its own parent" : "a folder cannot be moved under one of its own descendants");
      }
      const next: Folder = {
        ...cur,
        name: input.name ?? cur.name,
        parentId: input.parentId !== undefined ? input.parentId : cur.parentId,
        updatedAt: now(),
      };
      await store.update(next);
      return next;
    });
  }

  async delete(actor: Actor, id: string): Promise<void> {
    const store = this.stores(actor.tenantId);
    await refusable(store, async () => {
      await this.must(store, id);
      const c = await store.contents(id);
      if (c.folders > 0 || c.prompts > 0)
        throw invalidRequest(`folder '${id}' is not empty (${c.prompts} prompt(s), ${c.folders} subfolder(s)); move or delete them first`);
      await store.delete(id);
    });
  }
}
