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
  {
    // keys of one millisecond were listed in SQLite's rowid order; `seq` is an explicit column
    // both backends have (written by the store), existing keys keep their order
    id: "0002_seq",
    up: {
      sqlite: `
        ALTER TABLE api_keys ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
        UPDATE api_keys SET seq = rowid;
      `,
      postgres: "ALTER TABLE api_keys ADD COLUMN seq BIGINT NOT NULL DEFAULT 0",
    },
  },
];
