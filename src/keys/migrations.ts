import type { Migration } from "../storage/migrations";

export const KEYS_MIGRATIONS: Migration[] = [
  {
    id: "0001_api_keys",
    legacyId: "0001_core_api_keys",
    up: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        prefix TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        permissions TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        last_used_at TEXT,
        revoked_at TEXT
      );
      CREATE INDEX api_keys_tenant ON api_keys(tenant_id);
      CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    `,
  },
];
