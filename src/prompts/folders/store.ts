/** Prompt folders, over the async tenant-bound handle (one SQL text per query; the case-insensitive order from the dialect). */
import type { AsyncTenantDb } from "../../storage/async";
import type { Dialect } from "../../storage/dialect";
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

const listTexts = new Map<Dialect, { root: string; children: string }>();
/** the children of a folder (or the root), by name ignoring case, then id */
const listTextsOf = (d: Dialect) => {
  let t = listTexts.get(d);
  if (!t) {
    const list = (cond: string) => `SELECT * FROM prompt_folders WHERE tenant_id = $tenant AND ${cond} ORDER BY ${d.ciOrder("name")}, id LIMIT $limit OFFSET $offset`;
    listTexts.set(d, (t = { root: list("parent_id IS NULL"), children: list("parent_id = $parent") }));
  }
  return t;
};

export class FolderStore {
  private readonly texts: { root: string; children: string };
  constructor(
    private readonly db: AsyncTenantDb,
    dialect: Dialect,
  ) {
    this.texts = listTextsOf(dialect);
  }

  /** fn in one transaction: it touches only the database and may run more than once (PostgreSQL) */
  tx<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.tx(fn);
  }

  async insert(f: Folder) {
    await this.db.run(
      `INSERT INTO prompt_folders (id, tenant_id, name, parent_id, created_by, created_at, updated_at)
       VALUES ($id, $tenant, $name, $parent_id, $created_by, $created_at, $updated_at)`,
      { id: f.id, name: f.name, parent_id: f.parentId, created_by: f.createdBy, created_at: f.createdAt, updated_at: f.updatedAt },
    );
  }

  async update(f: Folder) {
    await this.db.run("UPDATE prompt_folders SET name = $name, parent_id = $parent_id, updated_at = $updated_at WHERE tenant_id = $tenant AND id = $id", {
      id: f.id,
      name: f.name,
      parent_id: f.parentId,
      updated_at: f.updatedAt,
    });
  }

  async get(id: string) {
    const r = await this.db.get<FolderRow>("SELECT * FROM prompt_folders WHERE tenant_id = $tenant AND id = $id", { id });
    return r && folderOf(r);
  }

  async listChildren(parentId: string | null, page: Page) {
    const cond = parentId === null ? "parent_id IS NULL" : "parent_id = $parent";
    const params: Record<string, string> = parentId === null ? {} : { parent: parentId };
    const total = (await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM prompt_folders WHERE tenant_id = $tenant AND ${cond}`, params))!.n;
    const rows = await this.db.all<FolderRow>(parentId === null ? this.texts.root : this.texts.children, { ...params, limit: page.limit, offset: page.offset });
    return { items: rows.map(folderOf), total };
  }

  /** the folder's id, its parent's, … up to the root */
  async ancestry(id: string) {
    const rows = await this.db.all<{ id: string }>(
        `WITH RECURSIVE up(id, parent_id, depth) AS (
           SELECT id, parent_id, 0 FROM prompt_folders WHERE tenant_id = $tenant AND id = $id
           UNION ALL
           SELECT f.id, f.parent_id, up.depth + 1 FROM prompt_folders f JOIN up ON f.id = up.parent_id
           WHERE f.tenant_id = $tenant AND up.depth < 10000
         ) SELECT id FROM up ORDER BY depth`,
      { id },
    );
    return rows.map((r) => r.id);
  }

  async contents(id: string) {
    const folders = (await this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_folders WHERE tenant_id = $tenant AND parent_id = $id", { id }))!.n;
    const prompts = (await this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompts WHERE tenant_id = $tenant AND folder_id = $id", { id }))!.n;
    return { folders, prompts };
  }

  async delete(id: string) {
    return (await this.db.run("DELETE FROM prompt_folders WHERE tenant_id = $tenant AND id = $id", { id })).changes > 0;
  }
}
