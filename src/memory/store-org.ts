/**
 * The Memory store's organisation-level rows (store.ts extends this): contributors (agent ids grouped
 * under a person) and external sources (their configuration and sync cursors). Tenant-bound like
 * every statement of the store.
 */
import type { AsyncTenantDb } from "../storage/async";
import type { Contributor, ExternalSource, SourceType } from "./types";
import type { ContributorRow, SourceRow } from "./store-rows";

export class MemoryOrgStore {
  constructor(readonly db: AsyncTenantDb) {}

  get tenantId() {
    return this.db.tenantId;
  }

  protected async count(sql: string, params?: Record<string, unknown>): Promise<number> {
    return (await this.db.get<{ n: number }>(sql, params as never))!.n;
  }

  // ---------------------------------------------------------------- contributors

  private contributorOf = (r: ContributorRow): Contributor => ({
    contributorId: r.contributor_id,
    tenantId: this.tenantId,
    displayName: r.display_name,
    agentIds: JSON.parse(r.agent_ids),
    role: r.role,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });

  async contributor(id: string): Promise<Contributor | undefined> {
    const r = await this.db.get<ContributorRow>(`SELECT * FROM memory_contributors WHERE tenant_id = $tenant AND contributor_id = $id`, { id });
    return r && this.contributorOf(r);
  }

  async contributorByName(name: string): Promise<Contributor | undefined> {
    const r = await this.db.get<ContributorRow>(`SELECT * FROM memory_contributors WHERE tenant_id = $tenant AND lower(display_name) = lower($name) ORDER BY contributor_id LIMIT 1`, { name });
    return r && this.contributorOf(r);
  }

  async listContributors(limit: number, offset: number): Promise<{ items: Contributor[]; total: number }> {
    const rows = await this.db.all<ContributorRow>(`SELECT * FROM memory_contributors WHERE tenant_id = $tenant ORDER BY contributor_id LIMIT $limit OFFSET $offset`, { limit, offset });
    return { items: rows.map(this.contributorOf), total: await this.count(`SELECT COUNT(*) AS n FROM memory_contributors WHERE tenant_id = $tenant`) };
  }

  async upsertContributor(c: { contributorId: string; displayName: string; agentIds: string[]; role: string | null; at: string }): Promise<void> {
    await this.db.run(
      `INSERT INTO memory_contributors (tenant_id, contributor_id, display_name, agent_ids, role, created_at, updated_at) VALUES ($tenant, $id, $name, $agents, $role, $at, $at)
       ON CONFLICT (tenant_id, contributor_id) DO UPDATE SET display_name = excluded.display_name, agent_ids = excluded.agent_ids, role = excluded.role, updated_at = excluded.updated_at`,
      { id: c.contributorId, name: c.displayName, agents: JSON.stringify(c.agentIds), role: c.role, at: c.at },
    );
  }

  async deleteContributor(id: string): Promise<boolean> {
    return (await this.db.run(`DELETE FROM memory_contributors WHERE tenant_id = $tenant AND contributor_id = $id`, { id })).changes > 0;
  }

  // ---------------------------------------------------------------- sources

  private sourceOf = (r: SourceRow): ExternalSource => ({
    sourceId: r.source_id,
    tenantId: this.tenantId,
    projectId: r.project_id,
    sourceType: r.source_type,
    config: JSON.parse(r.config),
    syncCursor: r.sync_cursor,
    lastSyncedAt: r.last_synced_at,
    enabled: r.enabled === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastError: r.last_error,
    itemsSynced: r.items_synced,
  });

  async source(id: string): Promise<ExternalSource | undefined> {
    const r = await this.db.get<SourceRow>(`SELECT * FROM memory_sources WHERE tenant_id = $tenant AND source_id = $id`, { id });
    return r && this.sourceOf(r);
  }

  async sourcesOfType(type: SourceType): Promise<ExternalSource[]> {
    return (await this.db.all<SourceRow>(`SELECT * FROM memory_sources WHERE tenant_id = $tenant AND source_type = $type ORDER BY created_at, source_id`, { type })).map(this.sourceOf);
  }

  async listSources(limit: number, offset: number, projectId?: string): Promise<{ items: ExternalSource[]; total: number }> {
    const where = projectId === undefined ? `tenant_id = $tenant` : `tenant_id = $tenant AND project_id = $p`;
    const p: Record<string, string> = projectId === undefined ? {} : { p: projectId };
    const rows = await this.db.all<SourceRow>(`SELECT * FROM memory_sources WHERE ${where} ORDER BY created_at, source_id LIMIT $limit OFFSET $offset`, { ...p, limit, offset });
    return { items: rows.map(this.sourceOf), total: await this.count(`SELECT COUNT(*) AS n FROM memory_sources WHERE ${where}`, p) };
  }

  async insertSource(s: ExternalSource) {
    await this.db.run(
      `INSERT INTO memory_sources (tenant_id, source_id, project_id, source_type, config, sync_cursor, last_synced_at, enabled, created_at, updated_at)
       VALUES ($tenant, $id, $p, $type, $config, '', NULL, 1, $at, $at)`,
      { id: s.sourceId, p: s.projectId, type: s.sourceType, config: JSON.stringify(s.config), at: s.createdAt },
    );
  }

  async updateSource(id: string, s: { projectId: string; sourceType: SourceType; config: Record<string, unknown>; enabled: boolean; resetCursor: boolean; at: string }) {
    await this.db.run(
      `UPDATE memory_sources SET project_id = $p, source_type = $type, config = $config, enabled = $enabled, updated_at = $at,
         sync_cursor = CASE WHEN $reset = 1 THEN '' ELSE sync_cursor END WHERE tenant_id = $tenant AND source_id = $id`,
      { id, p: s.projectId, type: s.sourceType, config: JSON.stringify(s.config), enabled: s.enabled ? 1 : 0, reset: s.resetCursor ? 1 : 0, at: s.at },
    );
  }

  /** Commit one synced batch's cursor (inside the batch's transaction). */
  async advanceCursor(id: string, cursor: string, items: number) {
    await this.db.run(`UPDATE memory_sources SET sync_cursor = $cursor, items_synced = items_synced + $n WHERE tenant_id = $tenant AND source_id = $id`, { id, cursor, n: items });
  }

  async addItemsSynced(id: string, items: number) {
    await this.db.run(`UPDATE memory_sources SET items_synced = items_synced + $n WHERE tenant_id = $tenant AND source_id = $id`, { id, n: items });
  }

  async finishSync(id: string, at: string, error: string | null) {
    if (error === null) await this.db.run(`UPDATE memory_sources SET last_synced_at = $at, last_error = NULL WHERE tenant_id = $tenant AND source_id = $id`, { id, at });
    else await this.db.run(`UPDATE memory_sources SET last_error = $error WHERE tenant_id = $tenant AND source_id = $id`, { id, error });
  }

  async deleteSource(id: string): Promise<boolean> {
    return (await this.db.run(`DELETE FROM memory_sources WHERE tenant_id = $tenant AND source_id = $id`, { id })).changes > 0;
  }
}
