/**
 * Cache tables. The database (SQLite or PostgreSQL) is the source of truth for entries and their
 * f32 query / context vectors; the USearch index files are a start-up accelerator rebuilt from
 * here when they do not match. vec_key (INTEGER PRIMARY KEY on SQLite, a BIGINT identity on
 * PostgreSQL) is also the entry's key in the vector index.
 *
 * The SQLite sides are the functions SQLite has always run (never edit an applied migration);
 * the PostgreSQL sides translate each step: BIGINT for epoch milliseconds and counters, BYTEA for
 * vectors, DOUBLE PRECISION for REAL.
 */
import type { Migration } from "../storage/migrations";
import { postgresDialect as pg } from "../storage/dialect";
import { portable } from "../storage/migrations";

const ENTRIES_PG = `CREATE TABLE cache_entries (
  vec_key ${pg.autoId},
  id TEXT NOT NULL UNIQUE,
  tenant_id TEXT NOT NULL,
  exact_key TEXT NOT NULL,
  partition TEXT,
  mode TEXT NOT NULL,
  style TEXT NOT NULL,
  model TEXT NOT NULL,
  query_text TEXT,
  query_vec ${pg.blob},
  context_vec ${pg.blob},
  code_scope TEXT,
  code_hash TEXT,
  payload TEXT NOT NULL,
  input_tokens BIGINT NOT NULL DEFAULT 0,
  output_tokens BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  last_used_at BIGINT NOT NULL,
  hits BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX cache_entries_exact ON cache_entries (tenant_id, exact_key);
CREATE INDEX cache_entries_lru ON cache_entries (tenant_id, last_used_at);
CREATE INDEX cache_entries_partition ON cache_entries (tenant_id, partition);
CREATE INDEX cache_entries_expiry ON cache_entries (tenant_id, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX cache_entries_code ON cache_entries (tenant_id, code_scope) WHERE code_scope IS NOT NULL`;

export const CACHE_MIGRATIONS: Migration[] = [
  {
    id: "0001_entries",
    legacyId: "0100_cache_entries",
    up: {
      sqlite: (db) => {
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
      postgres: ENTRIES_PG,
    },
  },
  {
    // the earlier user turns of a context entry (texts + f32 vectors), checked pairwise by the verifier
    id: "0002_context_users",
    legacyId: "0101_cache_context_users",
    up: {
      sqlite: (db) => {
        db.run("ALTER TABLE cache_entries ADD COLUMN context_users TEXT");
        db.run("ALTER TABLE cache_entries ADD COLUMN context_user_vecs BLOB");
      },
      postgres: `ALTER TABLE cache_entries ADD COLUMN context_users TEXT;
ALTER TABLE cache_entries ADD COLUMN context_user_vecs ${pg.blob}`,
    },
  },
  {
    // a tenant's own operating point of the learned hit decision (issue 14)
    id: "0003_settings",
    up: {
      sqlite: (db) => {
        db.run(`CREATE TABLE cache_settings (
        tenant_id TEXT PRIMARY KEY,
        decision_threshold REAL,
        updated_at INTEGER NOT NULL
      )`);
      },
      postgres: "CREATE TABLE cache_settings (tenant_id TEXT PRIMARY KEY, decision_threshold DOUBLE PRECISION, updated_at BIGINT NOT NULL)",
    },
  },
  {
    // wrong-hit feedback that survives restarts and is shared by replicas (issue 25, feedback-store.ts):
    // a tenant's counters and point raise, its negatives (bounded per tenant), the lookups that hit
    id: "0004_feedback",
    up: portable(
      (d) => `CREATE TABLE cache_feedback_state (
  tenant_id TEXT PRIMARY KEY,
  wrong BIGINT NOT NULL,
  right_verdicts BIGINT NOT NULL,
  hits BIGINT NOT NULL,
  since_step BIGINT NOT NULL,
  raised_by DOUBLE PRECISION NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE cache_feedback_negatives (
  id ${d.autoId},
  tenant_id TEXT NOT NULL,
  entry_id TEXT NOT NULL,
  surface TEXT NOT NULL,
  query_vec ${d.blob},
  created_at BIGINT NOT NULL
);
CREATE INDEX cache_feedback_negatives_tenant ON cache_feedback_negatives (tenant_id, id);
CREATE TABLE cache_feedback_requests (
  tenant_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  caller TEXT,
  tier TEXT NOT NULL,
  entry_id TEXT NOT NULL,
  query_text TEXT,
  query_vec ${d.blob},
  verdict TEXT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (tenant_id, request_id)
);
CREATE INDEX cache_feedback_requests_age ON cache_feedback_requests (tenant_id, created_at);
CREATE INDEX cache_feedback_requests_created ON cache_feedback_requests (created_at)`,
    ),
  },
  {
    // every hit writes a cache_feedback_requests row, and the count prune later deletes it: keep it
    // in two B-trees instead of four. SQLite: rebuilt WITHOUT ROWID (the rows live in the primary
    // key's B-tree; no separate rowid table). Both: the index on created_at alone goes (the global
    // age prune walks the tenants through the age index) and the age index ends in request_id, the
    // prune's tie-break (SQLite appends the key to a WITHOUT ROWID table's index anyway).
    id: "0005_feedback_requests_two_trees",
    up: {
      sqlite: (db) => {
        db.run(`CREATE TABLE cache_feedback_requests_new (
        tenant_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        caller TEXT,
        tier TEXT NOT NULL,
        entry_id TEXT NOT NULL,
        query_text TEXT,
        query_vec BLOB,
        verdict TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, request_id)
      ) WITHOUT ROWID`);
        const cols = "tenant_id, request_id, caller, tier, entry_id, query_text, query_vec, verdict, created_at";
        db.run(`INSERT INTO cache_feedback_requests_new (${cols}) SELECT ${cols} FROM cache_feedback_requests`);
        db.run("DROP TABLE cache_feedback_requests");
        db.run("ALTER TABLE cache_feedback_requests_new RENAME TO cache_feedback_requests");
        db.run("CREATE INDEX cache_feedback_requests_age ON cache_feedback_requests (tenant_id, created_at, request_id)");
      },
      postgres: `DROP INDEX cache_feedback_requests_created;
DROP INDEX cache_feedback_requests_age;
CREATE INDEX cache_feedback_requests_age ON cache_feedback_requests (tenant_id, created_at, request_id)`,
    },
  },
];
