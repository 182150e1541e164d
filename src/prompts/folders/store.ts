/** Prompt folders, over the tenant-bound handle. */
import type { TenantDb } from "../../storage/scoped";
import type { Page } from "../../core/pagination";
import type { Folder } from "../types";

// ---- folders ----

interface FolderRow {
  id: string;
  name: string;
  parent_id: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

const folderOf = (r: FolderRow): Folder => ({
  id: r.id,
  name: r.name,
  parentId: r.parent_id,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class FolderStore {
  constructor(private readonly db: TenantDb) {}

  tx<T>(fn: () => T): T {
    return this.db.tx(fn);
  }

  insert(f: Folder) {
    this.db.run(
      `INSERT INTO prompt_folders (id, tenant_id, name, parent_id, created_by, created_at, updated_at)
       VALUES ($id, $tenant, $name, $parent_id, $created_by, $created_at, $updated_at)`,
      { id: f.id, name: f.name, parent_id: f.parentId, created_by: f.createdBy, created_at: f.createdAt, updated_at: f.updatedAt },
    );
  }

  update(f: Folder) {
    this.db.run("UPDATE prompt_folders SET name = $name, parent_id = $parent_id, updated_at = $updated_at WHERE tenant_id = $tenant AND id = $id", {
      id: f.id,
      name: f.name,
      parent_id: f.parentId,
      updated_at: f.updatedAt,
    });
  }

  get(id: string) {
    const r = this.db.get<FolderRow>("SELECT * FROM prompt_folders WHERE tenant_id = $tenant AND id = $id", { id });
    return r && folderOf(r);
  }

  listChildren(parentId: string | null, page: Page) {
    const cond = parentId === null ? "parent_id IS NULL" : "parent_id = $parent";
    const params: Record<string, string> = parentId === null ? {} : { parent: parentId };
    const total = this.db.get<{ n: number }>(`SELECT count(*) AS n FROM prompt_folders WHERE tenant_id = $tenant AND ${cond}`, params)!.n;
    const items = this.db
      .all<FolderRow>(`SELECT * FROM prompt_folders WHERE tenant_id = $tenant AND ${cond} ORDER BY name COLLATE NOCASE, id LIMIT $limit OFFSET $offset`, {
        ...params,
        limit: page.limit,
        offset: page.offset,
      })
      .map(folderOf);
    return { items, total };
  }

  ancestry(id: string) {
    return this.db
      .all<{ id: string }>(
        `WITH RECURSIVE up(id, parent_id, depth) AS (
           SELECT id, parent_id, 0 FROM prompt_folders WHERE tenant_id = $tenant AND id = $id
           UNION ALL
           SELECT f.id, f.parent_id, up.depth + 1 FROM prompt_folders f JOIN up ON f.id = up.parent_id
           WHERE f.tenant_id = $tenant AND up.depth < 10000
         ) SELECT id FROM up ORDER BY depth`,
        { id },
      )
      .map((r) => r.id);
  }

  contents(id: string) {
    const folders = this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_folders WHERE tenant_id = $tenant AND parent_id = $id", { id })!.n;
    const prompts = this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompts WHERE tenant_id = $tenant AND folder_id = $id", { id })!.n;
    return { folders, prompts };
  }

  delete(id: string) {
    return this.db.run("DELETE FROM prompt_folders WHERE tenant_id = $tenant AND id = $id", { id }).changes > 0;
  }
}
