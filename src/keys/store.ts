/** api_keys rows. Tenant-scoped, except the lookup of a presented key by its hash (it names its tenant). */
import type { SqlHandle, Storage, TenantDb } from "../storage/scoped";

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

export class ApiKeyStore {
  constructor(private readonly db: TenantDb) {}

  insert(r: ApiKeyRecord, hash: string) {
    this.db.run(
      `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, permissions, created_at) VALUES ($id, $tenant, $name, $prefix, $hash, $perms, $at)`,
      { id: r.id, name: r.name, prefix: r.prefix, hash, perms: JSON.stringify(r.permissions), at: r.createdAt },
    );
  }
  list(): ApiKeyRecord[] {
    return this.db.all<Row>(`SELECT * FROM api_keys WHERE tenant_id = $tenant ORDER BY created_at`).map(toRecord);
  }
  get(id: string): ApiKeyRecord | undefined {
    const row = this.db.get<Row>(`SELECT * FROM api_keys WHERE tenant_id = $tenant AND id = $id`, { id });
    return row ? toRecord(row) : undefined;
  }
  /** false when no active key has this id */
  revoke(id: string, at: string): boolean {
    return this.db.run(`UPDATE api_keys SET revoked_at = $at WHERE id = $id AND tenant_id = $tenant AND revoked_at IS NULL`, { at, id }).changes > 0;
  }
  touch(id: string, at: string) {
    this.db.run(`UPDATE api_keys SET last_used_at = $at WHERE id = $id AND tenant_id = $tenant`, { at, id });
  }
}

/** The owner of a presented key, found by its hash: a key names its own tenant. */
export function findByHash(global: SqlHandle, hash: string): ApiKeyRecord | undefined {
  const row = global.get<Row>(`SELECT * FROM api_keys WHERE key_hash = $hash`, { hash });
  return row ? toRecord(row) : undefined;
}

export const keyStores = (storage: Storage) => ({
  forTenant: (tenantId: string) => new ApiKeyStore(storage.tenant(tenantId)),
  byHash: (hash: string) => findByHash(storage.global("a presented API key names its tenant"), hash),
});
