/**
 * Cache tables. SQLite is the source of truth for entries and their f32 query / context vectors;
 * the USearch index files are a start-up accelerator rebuilt from here when they do not match.
 * vec_key (INTEGER PRIMARY KEY) is also the entry's key in the vector index.
 */
import type { Migration } from "../storage/migrations";

export const CACHE_MIGRATIONS: Migration[] = [
  {
    id: "0001_entries",
    legacyId: "0100_cache_entries",
    up: (db) => {
      db.run(`CREATE TABLE cache_entries (
        vec_key INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        exact_key TEXT NOT NULL,
        partition TEXT,
        mode TEXT NOT NULL,
        style TEXT NOT NULL,
        model TEXT NOT NULL,
        query_text TEXT,
        query_vec BLOB,
        context_vec BLOB,
        code_scope TEXT,
        code_hash TEXT,
        payload TEXT NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        last_used_at INTEGER NOT NULL,
        hits INTEGER NOT NULL DEFAULT 0
      )`);
      db.run("CREATE UNIQUE INDEX cache_entries_exact ON cache_entries (tenant_id, exact_key)");
      db.run("CREATE INDEX cache_entries_lru ON cache_entries (tenant_id, last_used_at)");
      db.run("CREATE INDEX cache_entries_partition ON cache_entries (tenant_id, partition)");
      db.run("CREATE INDEX cache_entries_expiry ON cache_entries (tenant_id, expires_at) WHERE expires_at IS NOT NULL");
      db.run("CREATE INDEX cache_entries_code ON cache_entries (tenant_id, code_scope) WHERE code_scope IS NOT NULL");
    },
  },
  {
    // the earlier user turns of a context entry (texts + f32 vectors), checked pairwise by the verifier
    id: "0002_context_users",
    legacyId: "0101_cache_context_users",
    up: (db) => {
      db.run("ALTER TABLE cache_entries ADD COLUMN context_users TEXT");
      db.run("ALTER TABLE cache_entries ADD COLUMN context_user_vecs BLOB");
    },
  },
  {
    // a tenant's own operating point of the learned hit decision (issue 14)
    id: "0003_settings",
    up: (db) => {
      db.run(`CREATE TABLE cache_settings (
        tenant_id TEXT PRIMARY KEY,
        decision_threshold REAL,
        updated_at INTEGER NOT NULL
      )`);
    },
  },
];
