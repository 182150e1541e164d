/**
 * Teams (doc3 §4.3): hierarchical (parentTeamId in the same workspace, never a cycle), a budget
 * in USD cents per period over the virtual keys assigned to them, members (users; SCIM groups map
 * onto teams), soft delete (keys unlinked, not revoked; children move up to the deleted team's
 * parent so the budgets above them still apply).
 */
import { badRequest, conflict, notFound } from "../../core/errors";
import { uuid } from "../../core/ids";
import type { Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import { BUDGET_PERIODS, iso, uniqueOr409, type BudgetPeriod, type Team, type WallClock } from "../types";
import type { KeyRecord, KeyRegistry, UsageReader } from "../ports";
import type { UserStore } from "../users/store";
import type { TeamStore } from "./store";
import { centsOf, periodOf } from "./period";

export const TEAM_LIMITS = { name: 128, description: 2_000, externalId: 256, maxBudgetCents: 1e13, members: 10_000 } as const;

export interface TeamInput {
  name: string;
  description?: string;
  parentTeamId?: string | null;
  maxBudgetCents?: number | null;
  budgetPeriod?: BudgetPeriod;
  external_id?: string | null;
}

export type TeamPatch = Partial<TeamInput>;

export interface TeamSpend {
  teamId: string;
  totalSpendCents: number;
  teamSpendCents: number;
  totalKeys: number;
  activeKeys: number;
  maxBudgetCents: number | null;
  budgetPeriod: BudgetPeriod;
  periodStart: string;
  periodEnd: string;
}

/** characters as a reader counts them (code points): `"😀".length` is 2, so 128 emoji are 128 characters, not 256 */
export const charCount = (s: string) => [...s].length;

function checkFields(t: TeamPatch) {
  if (t.name !== undefined && (t.name.length < 1 || charCount(t.name) > TEAM_LIMITS.name)) throw badRequest(`name: 1 to ${TEAM_LIMITS.name} characters`);
  if (t.description !== undefined && t.description.length > TEAM_LIMITS.description) throw badRequest(`description: at most ${TEAM_LIMITS.description} characters`);
  if (t.external_id != null && t.external_id.length > TEAM_LIMITS.externalId) throw badRequest(`external_id: at most ${TEAM_LIMITS.externalId} characters`);
  if (t.maxBudgetCents != null && (!Number.isInteger(t.maxBudgetCents) || t.maxBudgetCents < 0 || t.maxBudgetCents > TEAM_LIMITS.maxBudgetCents))
    throw badRequest(`maxBudgetCents: an integer from 0 to ${TEAM_LIMITS.maxBudgetCents}, or null for no limit`);
  if (t.budgetPeriod !== undefined && !BUDGET_PERIODS.includes(t.budgetPeriod)) throw badRequest(`budgetPeriod: one of ${BUDGET_PERIODS.join(", ")}`);
}

const dupName = (name: string) => conflict(`a team named ${name} already exists in this workspace`);

export class TeamService {
  constructor(
    private readonly store: ForTenant<TeamStore>,
    private readonly users: ForTenant<UserStore>,
    private readonly keyRegistry: KeyRegistry,
    private readonly usage: UsageReader,
    private readonly clock: WallClock,
    /** budgets depend on the hierarchy, budgets and key links: told on every such change */
    private readonly changed: (tenantId: string) => void,
  ) {}

  async create(tenantId: string, input: TeamInput, by?: string): Promise<Team> {
    checkFields(input);
    const s = this.store(tenantId);
    const at = iso(this.clock());
    const team: Team = {
      id: uuid(),
      name: input.name,
      description: input.description ?? "",
      parentTeamId: input.parentTeamId ?? null,
      maxBudgetCents: input.maxBudgetCents ?? null,
      budgetPeriod: input.budgetPeriod ?? "monthly",
      external_id: input.external_id ?? null,
      createdBy: by ?? null,
      createdAt: at,
      updatedAt: at,
      deletedAt: null,
    };
    await s.db.tx(async () => {
      if (team.parentTeamId !== null && !(await s.get(team.parentTeamId))) throw notFound("parent team");
      if (await s.byName(team.name)) throw dupName(team.name);
      await uniqueOr409(() => s.insert(team), () => dupName(team.name));
    });
    this.changed(tenantId);
    return team;
  }

  get(tenantId: string, id: string): Promise<Team | undefined> {
    return this.store(tenantId).get(id);
  }

  async require(tenantId: string, id: string): Promise<Team> {
    const t = await this.get(tenantId, id);
    if (!t) throw notFound("team");
    return t;
  }

  /** an admin's read: live teams, or soft-deleted ones too when requested (doc3 §2.3) */
  async view(tenantId: string, id: string, includeDeleted = false): Promise<Team> {
    const t = includeDeleted ? await this.store(tenantId).getAny(id) : await this.get(tenantId, id);
    if (!t) throw notFound("team");
    return t;
  }

  findByName(tenantId: string, name: string): Promise<Team | undefined> {
    return this.store(tenantId).byName(name);
  }

  findByExternalId(tenantId: string, externalId: string): Promise<Team | undefined> {
    return this.store(tenantId).byExternalId(externalId);
  }

  list(tenantId: string, q: { offset: number; limit: number; includeDeleted?: boolean }): Promise<Listed<Team>> {
    return this.store(tenantId).list(q.includeDeleted === true, q.limit, q.offset);
  }

  async update(tenantId: string, id: string, patch: TeamPatch): Promise<Team> {
    checkFields(patch);
    const s = this.store(tenantId);
    const team = await s.db.tx(async () => {
      const t = await s.get(id);
      if (!t) throw notFound("team");
      const next: Team = { ...t, updatedAt: iso(this.clock()) };
      if (patch.name !== undefined) next.name = patch.name;
      if (patch.description !== undefined) next.description = patch.description;
      if (patch.maxBudgetCents !== undefined) next.maxBudgetCents = patch.maxBudgetCents;
      if (patch.budgetPeriod !== undefined) next.budgetPeriod = patch.budgetPeriod;
      if (patch.external_id !== undefined) next.external_id = patch.external_id;
      if (patch.parentTeamId !== undefined && patch.parentTeamId !== t.parentTeamId) {
        if (patch.parentTeamId !== null) {
          if (patch.parentTeamId === id) throw badRequest("parentTeamId: a team cannot be its own parent");
          if (!(await s.get(patch.parentTeamId))) throw notFound("parent team");
          if ((await s.subtree(id)).includes(patch.parentTeamId)) throw badRequest("parentTeamId: a team cannot move under one of its own sub-teams (cycle)");
        }
        next.parentTeamId = patch.parentTeamId;
      }
      if (next.name.toLowerCase() !== t.name.toLowerCase()) {
        const other = await s.byName(next.name);
        if (other && other.id !== id) throw dupName(next.name);
      }
      await uniqueOr409(() => s.update(next), () => dupName(next.name));
      return next;
    });
    this.changed(tenantId);
    return team;
  }

  /** soft delete: keys unlinked (not revoked), sub-teams moved to this team's parent */
  async remove(tenantId: string, id: string): Promise<void> {
    const s = this.store(tenantId);
    await s.db.tx(async () => {
      const t = await s.get(id);
      if (!t) throw notFound("team");
      const at = iso(this.clock());
      await s.unlinkKeys(id);
      await s.reparentChildren(id, t.parentTeamId, at);
      await s.update({ ...t, updatedAt: at, deletedAt: at });
    });
    this.changed(tenantId);
  }

  // ------------------------------------------------------------------ members

  async members(tenantId: string, teamId: string): Promise<string[]> {
    await this.require(tenantId, teamId);
    return this.store(tenantId).members(teamId);
  }

  /** the groups each user is in (live teams and users), for one user or all */
  async memberships(tenantId: string, userId?: string): Promise<Map<string, Array<{ value: string; display: string }>>> {
    const out = new Map<string, Array<{ value: string; display: string }>>();
    for (const r of await this.store(tenantId).memberships(userId)) {
      let l = out.get(r.user_id);
      if (!l) out.set(r.user_id, (l = []));
      l.push({ value: r.team_id, display: r.team_name });
    }
    return out;
  }

  addMembers(tenantId: string, teamId: string, userIds: string[]): Promise<void> {
    return this.changeMembers(tenantId, teamId, userIds, async (s, at) => {
      for (const u of userIds) await s.addMember(teamId, u, at);
    });
  }

  removeMembers(tenantId: string, teamId: string, userIds: string[]): Promise<void> {
    return this.changeMembers(tenantId, teamId, [], async (s) => {
      for (const u of userIds) await s.removeMember(teamId, u);
    });
  }

  setMembers(tenantId: string, teamId: string, userIds: string[]): Promise<void> {
    return this.changeMembers(tenantId, teamId, userIds, async (s, at) => {
      await s.clearMembers(teamId);
      for (const u of userIds) await s.addMember(teamId, u, at);
    });
  }

  private async changeMembers(tenantId: string, teamId: string, mustExist: string[], fn: (s: TeamStore, at: string) => Promise<void>) {
    const s = this.store(tenantId);
    const unique = [...new Set(mustExist)];
    if (unique.length > TEAM_LIMITS.members) throw badRequest(`at most ${TEAM_LIMITS.members} members at once`);
    await s.db.tx(async () => {
      if (!(await s.get(teamId))) throw notFound("team");
      const live = await this.users(tenantId).liveIds(unique);
      const missing = unique.find((u) => !live.has(u));
      if (missing) throw notFound(`user ${missing}`);
      await fn(s, iso(this.clock()));
    });
  }

  /** which of these ids are live users of the workspace */
  liveUserIds(tenantId: string, ids: string[]): Promise<Set<string>> {
    return this.users(tenantId).liveIds(ids);
  }

  // ------------------------------------------------------------------ virtual keys and spend

  /** the team's virtual keys (revoked ones included) */
  async keys(tenantId: string, teamId: string): Promise<KeyRecord[]> {
    await this.require(tenantId, teamId);
    const ids = new Set(await this.store(tenantId).keyIds(teamId));
    return (await this.keyRegistry.list(tenantId)).filter((k) => ids.has(k.id));
  }

  async teamOfKey(tenantId: string, keyId: string): Promise<string | null> {
    return (await this.store(tenantId).teamOfKey(keyId)) ?? null;
  }

  /** Assign a key to a live team, or unlink it (null). */
  async assignKey(tenantId: string, keyId: string, teamId: string | null): Promise<void> {
    if (!(await this.keyRegistry.get(tenantId, keyId))) throw notFound("virtual key");
    const s = this.store(tenantId);
    await s.db.tx(async () => {
      if (teamId !== null && !(await s.get(teamId))) throw notFound("team");
      await s.setKeyTeam(keyId, teamId, iso(this.clock()));
    });
    this.changed(tenantId);
  }

  /**
   * Spend in the team's current budget period from the usage records (buffered ones written
   * first): `teamSpendCents` = the team's own keys, `totalSpendCents` = its keys and every live
   * sub-team's (what its budget is enforced on). Keys count for the team they are assigned to now.
   */
  async spend(tenantId: string, teamId: string): Promise<TeamSpend> {
    const team = await this.require(tenantId, teamId);
    const s = this.store(tenantId);
    const { start, end } = periodOf(team.budgetPeriod, this.clock());
    const since = iso(start);
    await this.usage.flush();
    const own = await s.keyIds(teamId);
    const all = await s.keyIdsOf(await s.subtree(teamId));
    const ownSet = new Set(own);
    const keys = (await this.keyRegistry.list(tenantId)).filter((k) => ownSet.has(k.id));
    return {
      teamId,
      totalSpendCents: centsOf(await this.usage.spendUsd(tenantId, all, since)),
      teamSpendCents: centsOf(await this.usage.spendUsd(tenantId, own, since)),
      totalKeys: keys.length,
      activeKeys: keys.filter((k) => !k.revokedAt).length,
      maxBudgetCents: team.maxBudgetCents,
      budgetPeriod: team.budgetPeriod,
      periodStart: since,
      periodEnd: iso(end),
    };
  }
}
