/**
 * usage_records. Each migration has a PostgreSQL side: the same steps with PostgreSQL's types
 * (BIGINT counters, DOUBLE PRECISION for SQLite's REAL, which is 4 bytes on PostgreSQL).
 */
import type { Migration } from "../storage/migrations";

/** SQLite's text as PostgreSQL runs it: REAL → DOUBLE PRECISION, token INTEGERs → BIGINT */
const pg = (sqlite: string) => ({
  sqlite,
  postgres: sqlite.replace(/\bREAL\b/g, "DOUBLE PRECISION").replace(/(_tokens|attempts) INTEGER/g, "$1 BIGINT"),
});

export const GATEWAY_MIGRATIONS: Migration[] = [
  {
    id: "0001_usage_records",
    legacyId: "0100_gateway_usage_records",
    up: pg(`
      CREATE TABLE usage_records (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        request_id TEXT NOT NULL,
        style TEXT NOT NULL,
        provider TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        model TEXT NOT NULL,
        cache_status TEXT NOT NULL,
        cache_tier TEXT,
        streamed INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        latency_ms REAL NOT NULL,
        cost_saved_usd REAL NOT NULL
      );
      CREATE INDEX usage_records_tenant_time ON usage_records(tenant_id, created_at);
      CREATE INDEX usage_records_tenant_model ON usage_records(tenant_id, model, created_at);
    `),
  },
  {
    // who spent what: the API key of the request (team budgets, key analytics) and the list-price
    // cost of what went upstream (0 for cache hits)
    id: "0002_usage_spend",
    up: pg(`
      ALTER TABLE usage_records ADD COLUMN key_id TEXT;
      ALTER TABLE usage_records ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
      CREATE INDEX usage_records_tenant_key_time ON usage_records(tenant_id, key_id, created_at);
    `),
  },
  {
    // which deployment answered (retries and fallbacks, models.fallbacks), the model it was asked
    // for, and how many upstream attempts the request took
    id: "0003_usage_deployment",
    up: pg(`
      ALTER TABLE usage_records ADD COLUMN deployment TEXT;
      ALTER TABLE usage_records ADD COLUMN upstream_model TEXT;
      ALTER TABLE usage_records ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
    `),
  },
  {
    // whether the model's list price was known (0: cost_usd / cost_saved_usd are 0 because the
    // price is unknown, not because the request was free; /api/v1/usage reports it as unpriced)
    id: "0004_usage_priced",
    up: pg(`ALTER TABLE usage_records ADD COLUMN priced INTEGER NOT NULL DEFAULT 1;`),
  },
  {
    // why a request hit or missed (the dashboard's request detail, and "this hit was wrong" on the
    // entry that answered): the cache entry of a hit, the similarity (a hit's, or a miss's nearest
    // cached question), the learned stage's score when it decided, and the operating point used
    id: "0007_usage_cache_detail",
    up: pg(`
      ALTER TABLE usage_records ADD COLUMN cache_entry_id TEXT;
      ALTER TABLE usage_records ADD COLUMN similarity REAL;
      ALTER TABLE usage_records ADD COLUMN learned_score REAL;
      ALTER TABLE usage_records ADD COLUMN cache_point REAL;
    `),
  },
];
