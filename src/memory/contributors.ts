/**
 * Memory contributors (doc1 §4.12, /api/v1/memory/contributors/*): the people agents work for,
 * the agent ids that act for them, and their activity (milestones by those agents). Every method
 * takes the caller's tenant; stores are tenant-bound.
 */
import { notFound } from "../core/errors";
import type { MemoryStore } from "./store";
import type { Contributor } from "./types";

export class ContributorService {
  constructor(
    private readonly stores: (tenantId: string) => MemoryStore,
    private readonly clock: () => number = Date.now,
  ) {}

  private at() {
    return new Date(this.clock()).toISOString();
  }

  /**
   * Create, or update an existing contributorId (spec: "creating with an existing contributorId
   * updates it"): fields the body leaves out keep their values, so re-registering a name does not
   * empty the contributor's agentIds (and with them its activity); `role: null` clears the role.
   */
  async upsertContributor(tenantId: string, b: { contributorId: string; displayName: string; agentIds?: string[]; role?: string | null }): Promise<{ contributor: Contributor; created: boolean }> {
    const s = this.stores(tenantId);
    const old = await s.contributor(b.contributorId);
    const agentIds = b.agentIds ?? old?.agentIds ?? [];
    const role = b.role !== undefined ? b.role : (old?.role ?? null);
    await s.upsertContributor({ contributorId: b.contributorId, displayName: b.displayName, agentIds: [...new Set(agentIds)], role, at: this.at() });
    return { contributor: (await s.contributor(b.contributorId))!, created: !old };
  }

  listContributors(tenantId: string, limit: number, offset: number) {
    return this.stores(tenantId).listContributors(limit, offset);
  }

  async getContributor(tenantId: string, id: string): Promise<Contributor> {
    const c = await this.stores(tenantId).contributor(id);
    if (!c) throw notFound(`contributor '${id}'`);
    return c;
  }

  async deleteContributor(tenantId: string, id: string) {
    if (!(await this.stores(tenantId).deleteContributor(id))) throw notFound(`contributor '${id}'`);
  }

  async activity(tenantId: string, id: string, limit: number, offset: number) {
    const contributor = await this.getContributor(tenantId, id);
    const { items, total } = await this.stores(tenantId).milestonesOfAgents(contributor.agentIds, limit, offset);
    return { contributor, milestones: items, totalMilestones: total, limit, offset };
  }
}
