/** Chains, over the tenant-bound handle. */
import type { TenantDb } from "../../storage/scoped";
import type { Page } from "../../core/pagination";
import type { Chain } from "../types";

const json = <T>(s: string | null): T => (s === null ? (null as T) : (JSON.parse(s) as T));

// ---- chains ----

interface ChainRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  steps: string;
  created_by: string;
  created_at: string;
  updated_at: string;
}

const chainOf = (r: ChainRow): Chain => ({
  id: r.id,
  name: r.name,
  description: r.description,
  steps: json(r.steps),
  workspaceId: r.tenant_id,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class ChainStore {
  constructor(private readonly db: TenantDb) {}

  tx<T>(fn: () => T): T {
    return this.db.tx(fn);
  }

  insert(c: Chain) {
    this.db.run(
      `INSERT INTO prompt_chains (id, tenant_id, name, description, steps, created_by, created_at, updated_at)
       VALUES ($id, $tenant, $name, $description, $steps, $created_by, $created_at, $updated_at)`,
      { id: c.id, name: c.name, description: c.description, steps: JSON.stringify(c.steps), created_by: c.createdBy, created_at: c.createdAt, updated_at: c.updatedAt },
    );
  }

  update(c: Chain) {
    this.db.run("UPDATE prompt_chains SET name = $name, description = $description, steps = $steps, updated_at = $updated_at WHERE tenant_id = $tenant AND id = $id", {
      id: c.id,
      name: c.name,
      description: c.description,
      steps: JSON.stringify(c.steps),
      updated_at: c.updatedAt,
    });
  }

  get(id: string) {
    const r = this.db.get<ChainRow>("SELECT * FROM prompt_chains WHERE tenant_id = $tenant AND id = $id", { id });
    return r && chainOf(r);
  }

  list(page: Page) {
    const total = this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_chains WHERE tenant_id = $tenant")!.n;
    const items = this.db
      .all<ChainRow>("SELECT * FROM prompt_chains WHERE tenant_id = $tenant ORDER BY created_at DESC, id LIMIT $limit OFFSET $offset", { limit: page.limit, offset: page.offset })
      .map(chainOf);
    return { items, total };
  }

  delete(id: string) {
    return this.db.run("DELETE FROM prompt_chains WHERE tenant_id = $tenant AND id = $id", { id }).changes > 0;
  }
}
