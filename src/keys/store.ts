/**
 * api_keys rows over the async storage (portable SQL, the same text on SQLite and PostgreSQL).
 * Tenant-scoped, except the lookup of a presented key by its hash (it names its tenant).
 */
import type { AsyncSql, AsyncStorage, AsyncTenantDb } from "../storage/async";

export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  prefix: string;
  permissions: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

interface Row {
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  permissions: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const toRecord = (row: Row): ApiKeyRecord => ({
  id: row.id,
  tenantId: row.tenant_id,
  name: row.name,
  prefix: row.prefix,
  permissions: JSON.parse(row.permissions),
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

let lastSeq = 0;
/**
 * A key's `seq` (migration 0002): microseconds since the epoch, strictly increasing in this
 * process — the tie-break of keys created in one millisecond, which was SQLite's rowid.
 */
const nextSeq = () => (lastSeq = Math.max(lastSeq + 1, Math.floor((performance.timeOrigin + performance.now()) * 1000)));

export class ApiKeyStore {
  constructor(private readonly db: AsyncTenantDb) {}

  async insert(r: ApiKeyRecord, hash: string) {
    await this.db.run(
      `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, permissions, created_at, seq) VALUES ($id, $tenant, $name, $prefix, $hash, $perms, $at, $seq)`,
      { id: r.id, name: r.name, prefix: r.prefix, hash, perms: JSON.stringify(r.permissions), at: r.createdAt, seq: nextSeq() },
    );
  }
  /** oldest first; keys of one millisecond in the order they were created */
  async list(): Promise<ApiKeyRecord[]> {
    return (await this.db.all<Row>(`SELECT * FROM api_keys WHERE tenant_id = $tenant ORDER BY created_at, seq, id`)).map(toRecord);
  }
  async get(id: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.db.get<Row>(`SELECT * FROM api_keys WHERE tenant_id = $tenant AND id = $id`, { id });
    return row ? toRecord(row) : undefined;
  }
  /** false when no active key has this id */
  async revoke(id: string, at: string): Promise<boolean> {
    return (await this.db.run(`UPDATE api_keys SET revoked_at = $at WHERE id = $id AND tenant_id = $tenant AND revoked_at IS NULL`, { at, id })).changes > 0;
  }
  async touch(id: string, at: string) {
    await this.db.run(`UPDATE api_keys SET last_used_at = $at WHERE id = $id AND tenant_id = $tenant`, { at, id });
  }
}

/** The owner of a presented key, found by its hash: a key names its own tenant. */
export async function findByHash(global: AsyncSql, hash: string): Promise<ApiKeyRecord | undefined> {
  const row = await global.get<Row>(`SELECT * FROM api_keys WHERE key_hash = $hash`, { hash });
  return row ? toRecord(row) : undefined;
}

export const keyStores = (storage: AsyncStorage) => {
  const global = storage.global("a presented API key names its tenant");
  return {
    forTenant: (tenantId: string) => new ApiKeyStore(storage.tenant(tenantId)),
    byHash: (hash: string) => findByHash(global, hash),
  };
};
