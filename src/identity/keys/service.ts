/**
 * Virtual keys: svc API keys (KeyRegistry port) as users administer them, with their team
 * (teams/store.ts team_keys), and their analytics from the usage records (analytics.ts).
 * A caller can only mint keys whose permissions it holds itself.
 */
import { forbidden, notFound } from "../../core/errors";
import { implies } from "../../core/permissions";
import type { Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import type { KeyRecord, KeyRegistry } from "../ports";
import type { TeamService } from "../teams/service";
import type { TeamStore } from "../teams/store";

export const KEY_STATUSES = ["active", "revoked"] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export interface VirtualKey {
  id: string;
  name: string;
  /** the first characters of the key, to recognise it */
  prefix: string;
  permissions: string[];
  teamId: string | null;
  status: KeyStatus;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface KeyInput {
  name: string;
  permissions?: string[];
  teamId?: string | null;
}

export class VirtualKeyService {
  constructor(
    private readonly registry: KeyRegistry,
    private readonly teams: TeamService,
    private readonly teamStore: ForTenant<TeamStore>,
  ) {}

  /**
   * A new key (the plain key is in the answer, once), assigned to a live team if one is named.
   * `held`: the caller's permissions (a key may not carry what its creator does not hold); the CLI passes none.
   */
  async create(tenantId: string, input: KeyInput, held?: ReadonlySet<string>): Promise<VirtualKey & { key: string }> {
    const permissions = [...new Set(input.permissions ?? [])];
    if (held) for (const p of permissions) if (!implies(held, p)) throw forbidden(`cannot create a key with permission ${p}, which the caller does not hold`);
    if (input.teamId != null) await this.teams.require(tenantId, input.teamId);
    const { key, record } = this.registry.create(tenantId, input.name, permissions);
    if (input.teamId != null) await this.teams.assignKey(tenantId, record.id, input.teamId);
    return { key, ...this.view(record, input.teamId ?? null) };
  }

  async list(tenantId: string, q: { teamId?: string; status?: KeyStatus; offset: number; limit: number }): Promise<Listed<VirtualKey>> {
    const links = await this.teamStore(tenantId).keyTeams();
    const all = this.registry
      .list(tenantId)
      .map((r) => this.view(r, links.get(r.id) ?? null))
      .filter((k) => (q.teamId === undefined || k.teamId === q.teamId) && (q.status === undefined || k.status === q.status))
      .reverse();
    return { items: all.slice(q.offset, q.offset + q.limit), total: all.length };
  }

  async get(tenantId: string, id: string): Promise<VirtualKey> {
    const r = this.registry.get(tenantId, id);
    if (!r) throw notFound("virtual key");
    return this.view(r, await this.teams.teamOfKey(tenantId, id));
  }

  /** revoke (idempotent: a revoked key answers as it is) */
  revoke(tenantId: string, id: string): Promise<VirtualKey> {
    const r = this.registry.get(tenantId, id);
    if (!r) throw notFound("virtual key");
    if (!r.revokedAt) this.registry.revoke(tenantId, id);
    return this.get(tenantId, id);
  }

  /** assign to a live team, or unlink with null */
  async assign(tenantId: string, id: string, teamId: string | null): Promise<VirtualKey> {
    await this.teams.assignKey(tenantId, id, teamId);
    return this.get(tenantId, id);
  }

  view(r: KeyRecord, teamId: string | null): VirtualKey {
    return {
      id: r.id,
      name: r.name,
      prefix: r.prefix,
      permissions: r.permissions,
      teamId,
      status: r.revokedAt ? "revoked" : "active",
      createdAt: r.createdAt,
      lastUsedAt: r.lastUsedAt,
      revokedAt: r.revokedAt,
    };
  }
}
