/** users rows, over the tenant-bound handle. */
import type { AsyncTenantDb } from "../../storage/async";
import { likePattern, type Dialect } from "../../storage/dialect";
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
  constructor(
    readonly db: AsyncTenantDb,
    private readonly d: Dialect,
  ) {}

  async insert(u: User) {
    await this.db.run(
      `INSERT INTO users (id, tenant_id, email, email_lower, name, external_id, identity_provider, metadata, status, search_text, created_at, updated_at, deleted_at)
       VALUES ($id, $tenant, $email, $email_lower, $name, $external_id, $identity_provider, $metadata, $status, $search_text, $created_at, $updated_at, $deleted_at)`,
      params(u),
    );
  }

  async update(u: User) {
    await this.db.run(
      `UPDATE users SET email = $email, email_lower = $email_lower, name = $name, external_id = $external_id, identity_provider = $identity_provider,
         metadata = $metadata, status = $status, search_text = $search_text, updated_at = $updated_at, deleted_at = $deleted_at
       WHERE tenant_id = $tenant AND id = $id`,
      params(u),
    );
  }

  /** a live (not soft-deleted) user */
  async get(id: string): Promise<User | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM users WHERE ${LIVE} AND id = $id`, { id });
    return r ? userOf(r) : undefined;
  }

  /** any row of this workspace, soft-deleted ones included (they are kept with deleted_at, doc3 §3) */
  async getAny(id: string): Promise<User | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM users WHERE tenant_id = $tenant AND id = $id`, { id });
    return r ? userOf(r) : undefined;
  }

  /** status check of the per-request check: any row, deleted or not */
  async statusOf(id: string): Promise<{ status: UserStatus; deleted: boolean } | undefined> {
    const r = await this.db.get<{ status: UserStatus; deleted_at: string | null }>(`SELECT status, deleted_at FROM users WHERE tenant_id = $tenant AND id = $id`, { id });
    return r ? { status: r.status, deleted: r.deleted_at !== null } : undefined;
  }

  async byEmail(email: string): Promise<User | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM users WHERE ${LIVE} AND email_lower = $e`, { e: fold(email) });
    return r ? userOf(r) : undefined;
  }

  async byExternalId(externalId: string, provider?: string): Promise<User | undefined> {
    const r =
      provider === undefined
        ? await this.db.get<Row>(`SELECT * FROM users WHERE ${LIVE} AND external_id = $x ORDER BY created_at, rowid LIMIT 1`, { x: externalId })
        : await this.db.get<Row>(`SELECT * FROM users WHERE ${LIVE} AND external_id = $x AND identity_provider = $p ORDER BY created_at, rowid LIMIT 1`, { x: externalId, p: provider });
    return r ? userOf(r) : undefined;
  }

  async list(f: UserFilter, limit: number, offset: number): Promise<Listed<User>> {
    const where = `${LIVE} AND (CAST($status AS TEXT) IS NULL OR status = $status) AND (CAST($q AS TEXT) IS NULL OR search_text LIKE $q ESCAPE '\\')`;
    const p = { status: f.status ?? null, q: f.search ? likePattern(fold(f.search)) : null };
    const total = (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM users WHERE ${where}`, p))!.n;
    const items = (await this.db.all<Row>(`SELECT * FROM users WHERE ${where} ORDER BY created_at, rowid LIMIT $limit OFFSET $offset`, { ...p, limit, offset })).map(userOf);
    return { items, total };
  }

  /** live users whose e-mail, or SCIM userName (metadata.scim.userName), is this login, case-insensitively */
  async byLogin(login: string): Promise<User[]> {
    const rows = await this.db.all<Row>(
      `SELECT * FROM users WHERE ${LIVE} AND (email_lower = $l OR lower(${this.d.jsonText("metadata", ["scim", "userName"])}) = $l) ORDER BY created_at, rowid`,
      { l: fold(login) },
    );
    return rows.map(userOf);
  }

  /** live users with this external id (any identity provider) */
  async allByExternalId(externalId: string): Promise<User[]> {
    return (await this.db.all<Row>(`SELECT * FROM users WHERE ${LIVE} AND external_id = $x ORDER BY created_at, rowid`, { x: externalId })).map(userOf);
  }

  /** e-mail of each live user among these ids */
  async emailsOf(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.all<{ id: string; email: string }>(`SELECT id, email FROM users WHERE ${LIVE} AND id IN ${this.d.inJsonArray("$ids")}`, { ids: JSON.stringify(ids) });
    return new Map(rows.map((r) => [r.id, r.email]));
  }

  /** which of these ids are live users */
  async liveIds(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.all<{ id: string }>(`SELECT id FROM users WHERE ${LIVE} AND id IN ${this.d.inJsonArray("$ids")}`, { ids: JSON.stringify(ids) });
    return new Set(rows.map((r) => r.id));
  }
}
