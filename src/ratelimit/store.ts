/**
 * Tier assignments (tenant -> tier), persisted in SQLite. Repository interface so another
 * backend can replace it; the SQLite one goes through TenantDb (every statement is tenant-scoped).
 */
import type { Db } from "../storage/db";
import { TenantDb } from "../storage/scoped";
import type { Migration } from "../storage/migrations";
import type { TierName } from "./tiers";

export const RATELIMIT_MIGRATIONS: Migration[] = [
  {
    id: "0200_ratelimit_tiers",
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

export interface TierStore {
  get(tenantId: string): TierAssignment | undefined;
  set(tenantId: string, tier: TierName, by: string): TierAssignment;
  /** true if an assignment existed */
  remove(tenantId: string): boolean;
}

export class SqliteTierStore implements TierStore {
  constructor(private readonly db: Db) {}
  private scoped(tenantId: string) {
    return new TenantDb(this.db, tenantId);
  }
  get(tenantId: string): TierAssignment | undefined {
    const row = this.scoped(tenantId).get<any>(`SELECT * FROM rate_limit_tiers WHERE tenant_id = $tenant`);
    return row ? { tenantId: row.tenant_id, tier: row.tier, updatedAt: row.updated_at, updatedBy: row.updated_by } : undefined;
  }
  set(tenantId: string, tier: TierName, by: string): TierAssignment {
    const updatedAt = new Date().toISOString();
    this.scoped(tenantId).run(
      `INSERT INTO rate_limit_tiers (tenant_id, tier, updated_at, updated_by) VALUES ($tenant, $tier, $at, $by)
       ON CONFLICT(tenant_id) DO UPDATE SET tier = excluded.tier, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
      { tier, at: updatedAt, by },
    );
    return { tenantId, tier, updatedAt, updatedBy: by };
  }
  remove(tenantId: string): boolean {
    return this.scoped(tenantId).run(`DELETE FROM rate_limit_tiers WHERE tenant_id = $tenant`).changes > 0;
  }
}
