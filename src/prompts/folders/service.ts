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
import type { Actor, Folder } from "../types";

export class FolderService {
  constructor(private readonly stores: ForTenant<FolderStore>) {}

  private must(store: FolderStore, id: string): Folder {
    const f = store.get(id);
    if (!f) throw notFound(`folder '${id}'`);
    return f;
  }

  create(actor: Actor, input: { name: string; parentId?: string | null }): Folder {
    const store = this.stores(actor.tenantId);
    return store.tx(() => {
      if (input.parentId) this.must(store, input.parentId);
      const at = now();
      const f: Folder = { id: uuid(), name: input.name, parentId: input.parentId ?? null, createdBy: actor.sub, createdAt: at, updatedAt: at };
      store.insert(f);
      return f;
    });
  }

  get(actor: Actor, id: string): Folder {
    return this.must(this.stores(actor.tenantId), id);
  }

  list(actor: Actor, parentId: string | null, page: Page): Listed<Folder> {
    const store = this.stores(actor.tenantId);
    if (parentId) this.must(store, parentId);
    return store.listChildren(parentId, page);
  }

  update(actor: Actor, id: string, input: { name?: string; parentId?: string | null }): Folder {
    const store = this.stores(actor.tenantId);
    return store.tx(() => {
      const cur = this.must(store, id);
      if (input.parentId) {
        this.must(store, input.parentId);
        // the new parent's path up to the root must not pass through this folder
        if (store.ancestry(input.parentId).includes(id))
          throw badRequest(input.parentId === id ? "a folder cannot be its own parent" : "a folder cannot be moved under one of its own descendants");
      }
      const next: Folder = {
        ...cur,
        name: input.name ?? cur.name,
        parentId: input.parentId !== undefined ? input.parentId : cur.parentId,
        updatedAt: now(),
      };
      store.update(next);
      return next;
    });
  }

  delete(actor: Actor, id: string): void {
    const store = this.stores(actor.tenantId);
    store.tx(() => {
      this.must(store, id);
      const c = store.contents(id);
      if (c.folders > 0 || c.prompts > 0)
        throw invalidRequest(`folder '${id}' is not empty (${c.prompts} prompt(s), ${c.folders} subfolder(s)); move or delete them first`);
      store.delete(id);
    });
  }
}
