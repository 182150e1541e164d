/** users rows, over the tenant-bound handle. */
import type { TenantDb } from "../../storage/scoped";
import type { Listed } from "../../core/pagination";
import { fold, type User, type UserStatus } from "../types";

interface Row {
  id: string;
  email: string;
  name: string | null;
  external_id: string | null;
  identity_provider: string | null;
  metadata: string;
  status: UserStatus;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

const userOf = (r: Row): User => ({
  id: r.id,
  email: r.email,
  name: r.name,
  external_id: r.external_id,
  identity_provider: r.identity_provider,
  metadata: JSON.parse(r.metadata),
  status: r.status,
  created_at: r.created_at,
  updated_at: r.updated_at,
  deleted_at: r.deleted_at,
});

const searchTextOf = (u: Pick<User, "email" | "name">) => fold(`${u.email}\n${u.name ?? ""}`);

const params = (u: User) => ({
  id: u.id,
  email: u.email,
  email_lower: fold(u.email),
  name: u.name,
  external_id: u.external_id,
  identity_provider: u.identity_provider,
  metadata: JSON.stringify(u.metadata),
  status: u.status,
  search_text: searchTextOf(u),
  created_at: u.created_at,
  updated_at: u.updated_at,
  deleted_at: u.deleted_at,
});

const LIVE = `tenant_id = $tenant AND deleted_at IS NULL`;

export interface UserFilter {
  status?: UserStatus;
  search?: string;
}

export class UserStore {
  constructor(readonly db: TenantDb) {}

  insert(u: User) {
    this.db.run(
      `INSERT INTO users (id, tenant_id, email, email_lower, name, external_id, identity_provider, metadata, status, search_text, created_at, updated_at, deleted_at)
       VALUES ($id, $tenant, $email, $email_lower, $name, $external_id, $identity_provider, $metadata, $status, $search_text, $created_at, $updated_at, $deleted_at)`,
      params(u),
    );
  }

  update(u: User) {
    this.db.run(
      `UPDATE users SET email = $email, email_lower = $email_lower, name = $name, external_id = $external_id, identity_provider = $identity_provider,
         metadata = $metadata, status = $status, search_text = $search_text, updated_at = $updated_at, deleted_at = $deleted_at
       WHERE tenant_id = $tenant AND id = $id`,
      params(u),
    );
  }

  /** a live (not soft-deleted) user */
  get(id: string): User | undefined {
    const r = this.db.get<Row>(`SELECT * FROM users WHERE ${LIVE} AND id = $id`, { id });
    return r ? userOf(r) : undefined;
  }

  /** any row of this workspace, soft-deleted ones included (they are kept with deleted_at, doc3 §3) */
  getAny(id: string): User | undefined {
    const r = this.db.get<Row>(`SELECT * FROM users WHERE tenant_id = $tenant AND id = $id`, { id });
    return r ? userOf(r) : undefined;
  }

  /** status check of the per-request check: any row, deleted or not */
  statusOf(id: string): { status: UserStatus; deleted: boolean } | undefined {
    const r = this.db.get<{ status: UserStatus; deleted_at: string | null }>(`SELECT status, deleted_at FROM users WHERE tenant_id = $tenant AND id = $id`, { id });
    return r ? { status: r.status, deleted: r.deleted_at !== null } : undefined;
  }

  byEmail(email: string): User | undefined {
    const r = this.db.get<Row>(`SELECT * FROM users WHERE ${LIVE} AND email_lower = $e`, { e: fold(email) });
    return r ? userOf(r) : undefined;
  }

  byExternalId(externalId: string, provider?: string): User | undefined {
    const r =
      provider === undefined
        ? this.db.get<Row>(`SELECT * FROM users WHERE ${LIVE} AND external_id = $x ORDER BY created_at LIMIT 1`, { x: externalId })
        : this.db.get<Row>(`SELECT * FROM users WHERE ${LIVE} AND external_id = $x AND identity_provider = $p ORDER BY created_at LIMIT 1`, { x: externalId, p: provider });
    return r ? userOf(r) : undefined;
  }

  list(f: UserFilter, limit: number, offset: number): Listed<User> {
    const where = `${LIVE} AND ($status IS NULL OR status = $status) AND ($q IS NULL OR instr(search_text, $q) > 0)`;
    const p = { status: f.status ?? null, q: f.search ? fold(f.search) : null };
    const total = this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM users WHERE ${where}`, p)!.n;
    const items = this.db.all<Row>(`SELECT * FROM users WHERE ${where} ORDER BY created_at, rowid LIMIT $limit OFFSET $offset`, { ...p, limit, offset }).map(userOf);
    return { items, total };
  }

  /** live users whose e-mail, or SCIM userName (metadata.scim.userName), is this login, case-insensitively */
  byLogin(login: string): User[] {
    return this.db
      .all<Row>(
        `SELECT * FROM users WHERE ${LIVE} AND (email_lower = $l OR lower(json_extract(metadata, '$.scim.userName')) = $l) ORDER BY created_at, rowid`,
        { l: fold(login) },
      )
      .map(userOf);
  }

  /** live users with this external id (any identity provider) */
  allByExternalId(externalId: string): User[] {
    return this.db.all<Row>(`SELECT * FROM users WHERE ${LIVE} AND external_id = $x ORDER BY created_at, rowid`, { x: externalId }).map(userOf);
  }

  /** e-mail of each live user among these ids */
  emailsOf(ids: string[]): Map<string, string> {
    if (ids.length === 0) return new Map();
    const rows = this.db.all<{ id: string; email: string }>(`SELECT id, email FROM users WHERE ${LIVE} AND id IN (SELECT value FROM json_each($ids))`, { ids: JSON.stringify(ids) });
    return new Map(rows.map((r) => [r.id, r.email]));
  }

  /** which of these ids are live users */
  liveIds(ids: string[]): Set<string> {
    if (ids.length === 0) return new Set();
    const rows = this.db.all<{ id: string }>(`SELECT id FROM users WHERE ${LIVE} AND id IN (SELECT value FROM json_each($ids))`, { ids: JSON.stringify(ids) });
    return new Set(rows.map((r) => r.id));
  }
}
