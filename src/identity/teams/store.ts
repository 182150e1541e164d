/** teams, team_members and team_keys rows. */
import type { AsyncTenantDb } from "../../storage/async";
import type { Dialect } from "../../storage/dialect";
import type { Listed } from "../../core/pagination";
import { fold, type BudgetPeriod, type Team } from "../types";

interface Row {
  id: string;
  name: string;
  description: string;
  parent_team_id: string | null;
  max_budget_cents: number | null;
  budget_period: BudgetPeriod;
  external_id: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

const teamOf = (r: Row): Team => ({
  id: r.id,
  name: r.name,
  description: r.description,
  parentTeamId: r.parent_team_id,
  maxBudgetCents: r.max_budget_cents,
  budgetPeriod: r.budget_period,
  external_id: r.external_id,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
});

const params = (t: Team) => ({
  id: t.id,
  name: t.name,
  lower: fold(t.name),
  description: t.description,
  parent: t.parentTeamId,
  budget: t.maxBudgetCents,
  period: t.budgetPeriod,
  external: t.external_id,
  by: t.createdBy,
  created: t.createdAt,
  updated: t.updatedAt,
  deleted: t.deletedAt,
});

const LIVE = `tenant_id = $tenant AND deleted_at IS NULL`;

export class TeamStore {
  constructor(
    readonly db: AsyncTenantDb,
    private readonly d: Dialect,
  ) {}

  async insert(t: Team) {
    await this.db.run(
      `INSERT INTO teams (id, tenant_id, name, name_lower, description, parent_team_id, max_budget_cents, budget_period, external_id, created_by, created_at, updated_at, deleted_at)
       VALUES ($id, $tenant, $name, $lower, $description, $parent, $budget, $period, $external, $by, $created, $updated, $deleted)`,
      params(t),
    );
  }
  async update(t: Team) {
    await this.db.run(
      `UPDATE teams SET name = $name, name_lower = $lower, description = $description, parent_team_id = $parent, max_budget_cents = $budget,
         budget_period = $period, external_id = $external, created_by = $by, created_at = $created, updated_at = $updated, deleted_at = $deleted
       WHERE tenant_id = $tenant AND id = $id`,
      params(t),
    );
  }
  async get(id: string): Promise<Team | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM teams WHERE ${LIVE} AND id = $id`, { id });
    return r ? teamOf(r) : undefined;
  }
  /** a team, soft-deleted ones included */
  async getAny(id: string): Promise<Team | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM teams WHERE tenant_id = $tenant AND id = $id`, { id });
    return r ? teamOf(r) : undefined;
  }
  async byName(name: string): Promise<Team | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM teams WHERE ${LIVE} AND name_lower = $n`, { n: fold(name) });
    return r ? teamOf(r) : undefined;
  }
  async byExternalId(x: string): Promise<Team | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM teams WHERE ${LIVE} AND external_id = $x ORDER BY created_at, rowid LIMIT 1`, { x });
    return r ? teamOf(r) : undefined;
  }
  async list(includeDeleted: boolean, limit: number, offset: number): Promise<Listed<Team>> {
    const where = includeDeleted ? `tenant_id = $tenant` : LIVE;
    const total = (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM teams WHERE ${where}`))!.n;
    const items = (await this.db.all<Row>(`SELECT * FROM teams WHERE ${where} ORDER BY created_at, rowid LIMIT $limit OFFSET $offset`, { limit, offset })).map(teamOf);
    return { items, total };
  }
  /** live teams whose parent is this one */
  async children(id: string): Promise<Team[]> {
    return (await this.db.all<Row>(`SELECT * FROM teams WHERE ${LIVE} AND parent_team_id = $id`, { id })).map(teamOf);
  }
  /** live descendants' ids and the team's own (one recursive query) */
  async subtree(id: string): Promise<string[]> {
    const rows = await this.db.all<{ id: string }>(
        `WITH RECURSIVE sub(id) AS (SELECT CAST($id AS TEXT) UNION SELECT t.id FROM teams t JOIN sub ON t.parent_team_id = sub.id WHERE t.tenant_id = $tenant AND t.deleted_at IS NULL)
         SELECT id FROM sub`,
        { id },
      );
    return rows.map((r) => r.id);
  }
  /** reparent the live children of one team */
  async reparentChildren(from: string, to: string | null, at: string) {
    await this.db.run(`UPDATE teams SET parent_team_id = $to, updated_at = $at WHERE ${LIVE} AND parent_team_id = $from`, { from, to, at });
  }

  // ---- members

  async members(teamId: string): Promise<string[]> {
    const rows = await this.db.all<{ user_id: string }>(
        `SELECT m.user_id FROM team_members m JOIN users u ON u.id = m.user_id AND u.tenant_id = m.tenant_id AND u.deleted_at IS NULL
         WHERE m.tenant_id = $tenant AND m.team_id = $team ORDER BY m.created_at, m.rowid`,
        { team: teamId },
      );
    return rows.map((r) => r.user_id);
  }
  /** every (team, user) membership of live teams and live users, or of one user */
  async memberships(userId?: string): Promise<Array<{ team_id: string; team_name: string; user_id: string }>> {
    return await this.db.all<{ team_id: string; team_name: string; user_id: string }>(
      `SELECT m.team_id, t.name AS team_name, m.user_id FROM team_members m
         JOIN teams t ON t.id = m.team_id AND t.tenant_id = m.tenant_id AND t.deleted_at IS NULL
         JOIN users u ON u.id = m.user_id AND u.tenant_id = m.tenant_id AND u.deleted_at IS NULL
       WHERE m.tenant_id = $tenant AND (CAST($user AS TEXT) IS NULL OR m.user_id = $user) ORDER BY t.created_at, t.rowid`,
      { user: userId ?? null },
    );
  }
  async addMember(teamId: string, userId: string, at: string) {
    await this.db.run(`INSERT INTO team_members (tenant_id, team_id, user_id, created_at) VALUES ($tenant, $team, $user, $at) ON CONFLICT DO NOTHING`, { team: teamId, user: userId, at });
  }
  async removeMember(teamId: string, userId: string) {
    await this.db.run(`DELETE FROM team_members WHERE tenant_id = $tenant AND team_id = $team AND user_id = $user`, { team: teamId, user: userId });
  }
  async clearMembers(teamId: string) {
    await this.db.run(`DELETE FROM team_members WHERE tenant_id = $tenant AND team_id = $team`, { team: teamId });
  }

  // ---- virtual keys

  async keyIds(teamId: string): Promise<string[]> {
    return (await this.db.all<{ key_id: string }>(`SELECT key_id FROM team_keys WHERE tenant_id = $tenant AND team_id = $team ORDER BY assigned_at, rowid`, { team: teamId })).map((r) => r.key_id);
  }
  /** key ids of several teams */
  async keyIdsOf(teamIds: string[]): Promise<string[]> {
    const rows = await this.db.all<{ key_id: string }>(`SELECT key_id FROM team_keys WHERE tenant_id = $tenant AND team_id IN ${this.d.inJsonArray("$ids")}`, { ids: JSON.stringify(teamIds) });
    return rows.map((r) => r.key_id);
  }
  async teamOfKey(keyId: string): Promise<string | undefined> {
    return (await this.db.get<{ team_id: string }>(`SELECT team_id FROM team_keys WHERE tenant_id = $tenant AND key_id = $key`, { key: keyId }))?.team_id;
  }
  /** every key → team link of the workspace */
  async keyTeams(): Promise<Map<string, string>> {
    return new Map((await this.db.all<{ key_id: string; team_id: string }>(`SELECT key_id, team_id FROM team_keys WHERE tenant_id = $tenant`)).map((r) => [r.key_id, r.team_id]));
  }
  async setKeyTeam(keyId: string, teamId: string | null, at: string) {
    if (teamId === null) await this.db.run(`DELETE FROM team_keys WHERE tenant_id = $tenant AND key_id = $key`, { key: keyId });
    else
      await this.db.run(
        `INSERT INTO team_keys (tenant_id, key_id, team_id, assigned_at) VALUES ($tenant, $key, $team, $at)
         ON CONFLICT (tenant_id, key_id) DO UPDATE SET team_id = excluded.team_id, assigned_at = excluded.assigned_at`,
        { key: keyId, team: teamId, at },
      );
  }
  async unlinkKeys(teamId: string) {
    await this.db.run(`DELETE FROM team_keys WHERE tenant_id = $tenant AND team_id = $team`, { team: teamId });
  }
}
