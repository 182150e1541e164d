/**
 * Tier assignments (tenant -> tier), persisted in SQLite through the tenant-bound handle.
 */
import type { TenantDb } from "../storage/scoped";
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

/** One tenant's tier assignment (TierStore over SQLite; tests use an in-memory one). */
export interface TierAssignments {
  get(): TierAssignment | undefined;
  set(tier: TierName, by: string): TierAssignment;
  /** true if an assignment existed */
  remove(): boolean;
}

export class TierStore implements TierAssignments {
  constructor(private readonly db: TenantDb) {}
  get(): TierAssignment | undefined {
    const row = this.db.get<any>(`SELECT * FROM rate_limit_tiers WHERE tenant_id = $tenant`);
    return row ? { tenantId: row.tenant_id, tier: row.tier, updatedAt: row.updated_at, updatedBy: row.updated_by } : undefined;
  }
  set(tier: TierName, by: string): TierAssignment {
    const updatedAt = new Date().toISOString();
    this.db.run(
      `INSERT INTO rate_limit_tiers (tenant_id, tier, updated_at, updated_by) VALUES ($tenant, $tier, $at, $by)
       ON CONFLICT(tenant_id) DO UPDATE SET tier = excluded.tier, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
      { tier, at: updatedAt, by },
    );
    return { tenantId: this.db.tenantId, tier, updatedAt, updatedBy: by };
  }
  /** true if an assignment existed */
  remove(): boolean {
    return this.db.run(`DELETE FROM rate_limit_tiers WHERE tenant_id = $tenant`).changes > 0;
  }
}
