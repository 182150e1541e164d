/** Chains, over the async tenant-bound handle (portable SQL: no dialect differences here). */
import type { AsyncTenantDb } from "../../storage/async";
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
  constructor(private readonly db: AsyncTenantDb) {}

  /** fn in one transaction: it touches only the database and may run more than once (PostgreSQL) */
  tx<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.tx(fn);
  }

  async insert(c: Chain) {
    await this.db.run(
      `INSERT INTO prompt_chains (id, tenant_id, name, description, steps, created_by, created_at, updated_at)
       VALUES ($id, $tenant, $name, $description, $steps, $created_by, $created_at, $updated_at)`,
      { id: c.id, name: c.name, description: c.description, steps: JSON.stringify(c.steps), created_by: c.createdBy, created_at: c.createdAt, updated_at: c.updatedAt },
    );
  }

  async update(c: Chain) {
    await this.db.run("UPDATE prompt_chains SET name = $name, description = $description, steps = $steps, updated_at = $updated_at WHERE tenant_id = $tenant AND id = $id", {
      id: c.id,
      name: c.name,
      description: c.description,
      steps: JSON.stringify(c.steps),
      updated_at: c.updatedAt,
    });
  }

  async get(id: string) {
    const r = await this.db.get<ChainRow>("SELECT * FROM prompt_chains WHERE tenant_id = $tenant AND id = $id", { id });
    return r && chainOf(r);
  }

  async list(page: Page) {
    const total = (await this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_chains WHERE tenant_id = $tenant"))!.n;
    const rows = await this.db.all<ChainRow>("SELECT * FROM prompt_chains WHERE tenant_id = $tenant ORDER BY created_at DESC, id LIMIT $limit OFFSET $offset", {
      limit: page.limit,
      offset: page.offset,
    });
    return { items: rows.map(chainOf), total };
  }

  async delete(id: string) {
    return (await this.db.run("DELETE FROM prompt_chains WHERE tenant_id = $tenant AND id = $id", { id })).changes > 0;
  }
}
