/**
 * SCIM activity log and statistics (doc3 §2.2, §4.2, §6): every write the identity provider makes
 * through the SCIM provider (create, update, delete of users and groups) is recorded with its
 * outcome, including refused ones (status `error` with the message).
 */
import { uuid } from "../../core/ids";
import type { Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import type { AsyncTenantDb } from "../../storage/async";
import { iso, type WallClock } from "../types";

export const OPERATIONS = ["create", "update", "delete"] as const;
export type Operation = (typeof OPERATIONS)[number];
export const RESOURCE_TYPES = ["user", "group"] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];
export const ACTIVITY_STATUSES = ["success", "error"] as const;
export type ActivityStatus = (typeof ACTIVITY_STATUSES)[number];

export interface Activity {
  id: string;
  tokenId: string | null;
  operation: Operation;
  resourceType: ResourceType;
  resourceId: string | null;
  status: ActivityStatus;
  errorMessage: string | null;
  details: Record<string, unknown>;
  timestamp: string;
}

interface Row {
  id: string;
  token_id: string | null;
  operation: Operation;
  resource_type: ResourceType;
  resource_id: string | null;
  status: ActivityStatus;
  error_message: string | null;
  details: string;
  created_at: string;
}

export interface ActivityFilter {
  operation?: Operation;
  resourceType?: ResourceType;
  status?: ActivityStatus;
  startDate?: string;
  endDate?: string;
}

export interface ScimStatistics {
  totalUsers: number;
  totalGroups: number;
  usersAdded24h: number;
  usersRemoved24h: number;
  groupsAdded24h: number;
  groupsRemoved24h: number;
  lastSyncAt: string | null;
  errorCount24h: number;
  activeTokens: number;
}

export class ActivityStore {
  constructor(readonly db: AsyncTenantDb) {}
  async insert(a: Activity) {
    await this.db.run(
      `INSERT INTO scim_activities (id, tenant_id, token_id, operation, resource_type, resource_id, status, error_message, details, created_at)
       VALUES ($id, $tenant, $token, $op, $type, $rid, $status, $err, $details, $at)`,
      { id: a.id, token: a.tokenId, op: a.operation, type: a.resourceType, rid: a.resourceId, status: a.status, err: a.errorMessage, details: JSON.stringify(a.details), at: a.timestamp },
    );
  }
  async list(f: ActivityFilter, limit: number, offset: number): Promise<Listed<Row>> {
    const where = `tenant_id = $tenant AND (CAST($op AS TEXT) IS NULL OR operation = $op) AND (CAST($type AS TEXT) IS NULL OR resource_type = $type) AND (CAST($status AS TEXT) IS NULL OR status = $status)
      AND (CAST($start AS TEXT) IS NULL OR created_at >= $start) AND (CAST($end AS TEXT) IS NULL OR created_at <= $end)`;
    const p = { op: f.operation ?? null, type: f.resourceType ?? null, status: f.status ?? null, start: f.startDate ?? null, end: f.endDate ?? null };
    const total = (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM scim_activities WHERE ${where}`, p))!.n;
    const items = await this.db.all<Row>(`SELECT * FROM scim_activities WHERE ${where} ORDER BY created_at DESC, rowid DESC LIMIT $limit OFFSET $offset`, { ...p, limit, offset });
    return { items, total };
  }
  async counts(since: string) {
    const n = async (sql: string) => (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM scim_activities WHERE tenant_id = $tenant AND created_at >= $since AND ${sql}`, { since }))!.n;
    return {
      usersAdded24h: await n(`operation = 'create' AND resource_type = 'user' AND status = 'success'`),
      usersRemoved24h: await n(`operation = 'delete' AND resource_type = 'user' AND status = 'success'`),
      groupsAdded24h: await n(`operation = 'create' AND resource_type = 'group' AND status = 'success'`),
      groupsRemoved24h: await n(`operation = 'delete' AND resource_type = 'group' AND status = 'success'`),
      errorCount24h: await n(`status = 'error'`),
    };
  }
  async lastAt(): Promise<string | null> {
    return (await this.db.get<{ at: string | null }>(`SELECT MAX(created_at) AS at FROM scim_activities WHERE tenant_id = $tenant`))!.at;
  }
  /** live users / teams provisioned through SCIM */
  async totals(): Promise<{ users: number; groups: number }> {
    return {
      users: (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM users WHERE tenant_id = $tenant AND deleted_at IS NULL AND identity_provider = 'scim'`))!.n,
      groups: (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM teams WHERE tenant_id = $tenant AND deleted_at IS NULL AND substr(created_by, 1, 5) = 'scim:'`))!.n,
    };
  }
}

const view = (r: Row): Activity => ({
  id: r.id,
  tokenId: r.token_id,
  operation: r.operation,
  resourceType: r.resource_type,
  resourceId: r.resource_id,
  status: r.status,
  errorMessage: r.error_message,
  details: JSON.parse(r.details),
  timestamp: r.created_at,
});

export class ActivityService {
  constructor(
    private readonly store: ForTenant<ActivityStore>,
    private readonly clock: WallClock,
    private readonly activeTokens: (tenantId: string) => Promise<number>,
  ) {}

  async record(tenantId: string, a: Omit<Activity, "id" | "timestamp">): Promise<void> {
    await this.store(tenantId).insert({ ...a, errorMessage: a.errorMessage?.slice(0, 1_000) ?? null, id: uuid(), timestamp: iso(this.clock()) });
  }

  async list(tenantId: string, f: ActivityFilter & { offset: number; limit: number }): Promise<Listed<Activity>> {
    const norm = (d?: string) => (d === undefined ? undefined : new Date(d).toISOString());
    const { items, total } = await this.store(tenantId).list({ ...f, startDate: norm(f.startDate), endDate: norm(f.endDate) }, f.limit, f.offset);
    return { items: items.map(view), total };
  }

  async statistics(tenantId: string): Promise<ScimStatistics> {
    const s = this.store(tenantId);
    const totals = await s.totals();
    return {
      totalUsers: totals.users,
      totalGroups: totals.groups,
      ...(await s.counts(iso(this.clock() - 86_400_000))),
      lastSyncAt: await s.lastAt(),
      activeTokens: await this.activeTokens(tenantId),
    };
  }
}
