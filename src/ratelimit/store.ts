/**
 * Tier assignments (tenant -> tier), persisted through the tenant-bound async handle (SQLite or
 * PostgreSQL: the SQL is the same on both). The limiter caches them (limiter.ts): a known tenant's
 * request never waits for this store.
 */
import type { AsyncTenantDb } from "../storage/async";
import type { Migration } from "../storage/migrations";
import type { TierName } from "./tiers";

export const RATELIMIT_MIGRATIONS: Migration[] = [
  {
    id: "0001_tiers",
    legacyId: "0200_ratelimit_tiers",
    up: `CREATE TABLE rate_limit_tiers (
      tenant_id TEXT PRIMARY KEY,
      tier TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      updated_by TEXT
    )`,
  },
];

export interface TierAssignment {
  tenantId: string;
  tier: TierName;
  updatedAt: string;
  updatedBy: string | null;
}

/** One tenant's tier assignment (TierStore over the async storage; tests use an in-memory one). */
export interface TierAssignments {
  get(): Promise<TierAssignment | undefined>;
  set(tier: TierName, by: string): Promise<TierAssignment>;
  /** true if an assignment existed */
  remove(): Promise<boolean>;
}

export class TierStore implements TierAssignments {
  constructor(private readonly db: AsyncTenantDb) {}
  async get(): Promise<TierAssignment | undefined> {
    const row = await this.db.get<any>(`SELECT * FROM rate_limit_tiers WHERE tenant_id = $tenant`);
    return row ? { tenantId: row.tenant_id, tier: row.tier, updatedAt: row.updated_at, updatedBy: row.updated_by } : undefined;
  }
  async set(tier: TierName, by: string): Promise<TierAssignment> {
    const updatedAt = new Date().toISOString();
    await this.db.run(
      `INSERT INTO rate_limit_tiers (tenant_id, tier, updated_at, updated_by) VALUES ($tenant, $tier, $at, $by)
       ON CONFLICT(tenant_id) DO UPDATE SET tier = excluded.tier, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
      { tier, at: updatedAt, by },
    );
    return { tenantId: this.db.tenantId, tier, updatedAt, updatedBy: by };
  }
  /** true if an assignment existed */
  async remove(): Promise<boolean> {
    return (await this.db.run(`DELETE FROM rate_limit_tiers WHERE tenant_id = $tenant`)).changes > 0;
  }
}
