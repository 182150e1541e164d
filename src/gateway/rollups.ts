/**
 * The overview's tables (overview-api.ts): the usage rollups per tenant and minute / hour, kept by
 * a trigger on usage_records, and the request-outcome counts (OutcomeCounter).
 *
 * SQLite: a row trigger (AFTER INSERT … FOR EACH ROW) upserts both rollup rows of every record.
 * PostgreSQL: a statement trigger with a transition table (REFERENCING NEW TABLE) upserts each
 * rollup once per INSERT statement, the statement's rows grouped by tenant and minute / hour — the
 * usage writer inserts many rows per statement there (usage.ts), so a batch costs two upserts per
 * (tenant, minute) it touches, not two per row. Same counts either way; the rows are written in
 * the same transaction as the records (docs/notes: a rollback drops both).
 */
import type { Migration } from "../storage/migrations";

/** upper bounds (ms) of the latency buckets; the last bucket is everything above */
export const LATENCY_BOUNDS = [
  1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50, 63, 80, 100, 125, 160, 200, 250, 320, 400, 500, 630, 800, 1000, 1250, 1600, 2000, 2500,
  3200, 4000, 5000, 6300, 8000, 10000, 15000, 20000, 30000, 60000,
] as const;
const BUCKETS = LATENCY_BOUNDS.length + 1;
const L = Array.from({ length: BUCKETS }, (_, i) => `l${i}`);
/** the rollups' histogram columns l0 … l42 (count of records per latency bucket) */
export const ROLLUP_HISTOGRAM: readonly string[] = L;

const bucketCase = `CASE ${LATENCY_BOUNDS.map((b, i) => `WHEN NEW.latency_ms <= ${b} THEN ${i}`).join(" ")} ELSE ${LATENCY_BOUNDS.length} END`;

const ROLLUP_COLUMNS = `requests, hits_exact, hits_semantic, hits_context, misses, bypassed, input_tokens, output_tokens, cost_usd, cost_saved_usd, ${L.join(", ")}`;

/** The rollup's row for one usage record (used by the trigger, NEW.*). */
const rowOf = (r: string) =>
  `1, ${r}.cache_status = 'HIT' AND ${r}.cache_tier = 'exact', ${r}.cache_status = 'HIT' AND ${r}.cache_tier = 'semantic', ` +
  `${r}.cache_status = 'HIT' AND ${r}.cache_tier = 'l2_context', ${r}.cache_status = 'MISS', ${r}.cache_status = 'BYPASS', ` +
  `${r}.input_tokens, ${r}.output_tokens, ${r}.cost_usd, ${r}.cost_saved_usd`;

/** One rollup table: per tenant and `unit` (minute: created_at's first 16 characters, hour: 13). */
const rollupTable = (table: string, unit: string) => `
  CREATE TABLE ${table} (
    tenant_id TEXT NOT NULL,
    ${unit} TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    hits_exact INTEGER NOT NULL DEFAULT 0,
    hits_semantic INTEGER NOT NULL DEFAULT 0,
    hits_context INTEGER NOT NULL DEFAULT 0,
    misses INTEGER NOT NULL DEFAULT 0,
    bypassed INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    cost_saved_usd REAL NOT NULL DEFAULT 0,
    ${L.map((c) => `${c} INTEGER NOT NULL DEFAULT 0`).join(",\n    ")},
    PRIMARY KEY (tenant_id, ${unit})
  ) WITHOUT ROWID;`;

/** The trigger's statement adding NEW to a rollup table. */
const upsert = (table: string, unit: string, chars: number) => `
    INSERT INTO ${table} (tenant_id, ${unit}, ${ROLLUP_COLUMNS})
    SELECT NEW.tenant_id, substr(NEW.created_at, 1, ${chars}), ${rowOf("NEW")}, ${L.map((_, i) => `b = ${i}`).join(", ")}
    FROM (SELECT ${bucketCase} AS b) WHERE true
    ON CONFLICT (tenant_id, ${unit}) DO UPDATE SET
      requests = requests + 1,
      hits_exact = hits_exact + excluded.hits_exact,
      hits_semantic = hits_semantic + excluded.hits_semantic,
      hits_context = hits_context + excluded.hits_context,
      misses = misses + excluded.misses,
      bypassed = bypassed + excluded.bypassed,
      input_tokens = input_tokens + excluded.input_tokens,
      output_tokens = output_tokens + excluded.output_tokens,
      cost_usd = cost_usd + excluded.cost_usd,
      cost_saved_usd = cost_saved_usd + excluded.cost_saved_usd,
      ${L.map((c) => `${c} = ${c} + excluded.${c}`).join(",\n      ")};`;

/** Records written before the rollups existed. */
const backfill = (table: string, unit: string, chars: number) => `
  INSERT INTO ${table} (tenant_id, ${unit}, ${ROLLUP_COLUMNS})
  SELECT tenant_id, substr(created_at, 1, ${chars}), COUNT(*),
    SUM(cache_status = 'HIT' AND cache_tier = 'exact'), SUM(cache_status = 'HIT' AND cache_tier = 'semantic'),
    SUM(cache_status = 'HIT' AND cache_tier = 'l2_context'), SUM(cache_status = 'MISS'), SUM(cache_status = 'BYPASS'),
    SUM(input_tokens), SUM(output_tokens), SUM(cost_usd), SUM(cost_saved_usd),
    ${L.map((_, i) => `SUM(${bucketCase.replaceAll("NEW.", "")} = ${i})`).join(", ")}
  FROM usage_records GROUP BY tenant_id, substr(created_at, 1, ${chars});`;

/** Per tenant and minute / hour: proxy answers that were errors (5xx) or rate limited (429) (OutcomeCounter). */
const outcomeTable = (table: string, unit: string) => `
  CREATE TABLE ${table} (
    tenant_id TEXT NOT NULL,
    ${unit} TEXT NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    rate_limited INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, ${unit})
  ) WITHOUT ROWID;`;

const SQLITE_0005 = `
      ${rollupTable("usage_rollup_minute", "minute")}
      ${rollupTable("usage_rollup_hour", "hour")}
      CREATE TRIGGER usage_rollups_insert AFTER INSERT ON usage_records BEGIN
        ${upsert("usage_rollup_minute", "minute", 16)}
        ${upsert("usage_rollup_hour", "hour", 13)}
      END;
      ${backfill("usage_rollup_minute", "minute", 16)}
      ${backfill("usage_rollup_hour", "hour", 13)}
    `;

// ---- PostgreSQL: the same tables (BIGINT counters, DOUBLE PRECISION money), a statement trigger

const pgRollupTable = (table: string, unit: string) =>
  rollupTable(table, unit).replace(") WITHOUT ROWID;", ");").replace(/ INTEGER NOT NULL/g, " BIGINT NOT NULL").replace(/ REAL NOT NULL/g, " DOUBLE PRECISION NOT NULL");

const pgBucket = `CASE ${LATENCY_BOUNDS.map((b, i) => `WHEN latency_ms <= ${b} THEN ${i}`).join(" ")} ELSE ${LATENCY_BOUNDS.length} END`;
const one = (cond: string) => `SUM(CASE WHEN ${cond} THEN 1 ELSE 0 END)`;

/** the statement's new rows (transition table `new_rows`) added to a rollup, one row per tenant and unit */
const pgUpsert = (table: string, unit: string, chars: number) => `
    INSERT INTO ${table} (tenant_id, ${unit}, ${ROLLUP_COLUMNS})
    SELECT tenant_id, substr(created_at, 1, ${chars}), COUNT(*),
      ${one("cache_status = 'HIT' AND cache_tier = 'exact'")}, ${one("cache_status = 'HIT' AND cache_tier = 'semantic'")},
      ${one("cache_status = 'HIT' AND cache_tier = 'l2_context'")}, ${one("cache_status = 'MISS'")}, ${one("cache_status = 'BYPASS'")},
      SUM(input_tokens), SUM(output_tokens), SUM(cost_usd), SUM(cost_saved_usd),
      ${L.map((_, i) => one(`b = ${i}`)).join(", ")}
    FROM (SELECT *, ${pgBucket} AS b FROM new_rows) r
    GROUP BY tenant_id, substr(created_at, 1, ${chars})
    ON CONFLICT (tenant_id, ${unit}) DO UPDATE SET
      ${["requests", "hits_exact", "hits_semantic", "hits_context", "misses", "bypassed", "input_tokens", "output_tokens", "cost_usd", "cost_saved_usd", ...L]
        .map((c) => `${c} = ${table}.${c} + excluded.${c}`)
        .join(",\n      ")};`;

const POSTGRES_0005 = `
  ${pgRollupTable("usage_rollup_minute", "minute")}
  ${pgRollupTable("usage_rollup_hour", "hour")}
  CREATE FUNCTION usage_rollups_insert() RETURNS trigger LANGUAGE plpgsql AS $rollups$
  BEGIN
    ${pgUpsert("usage_rollup_minute", "minute", 16)}
    ${pgUpsert("usage_rollup_hour", "hour", 13)}
    RETURN NULL;
  END
  $rollups$;
  CREATE TRIGGER usage_rollups_insert AFTER INSERT ON usage_records REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION usage_rollups_insert();
`;

const pgOutcomeTable = (table: string, unit: string) => outcomeTable(table, unit).replace(") WITHOUT ROWID;", ");").replace(/ INTEGER NOT NULL/g, " BIGINT NOT NULL");

export const OVERVIEW_MIGRATIONS: Migration[] = [
  {
    // per-minute rows serve the last hour, per-hour rows the last day and 30 days (at most 720 rows)
    id: "0005_usage_rollups",
    // PostgreSQL starts empty (a copied database gets its rollup rows from `storage copy`): no backfill
    up: { sqlite: SQLITE_0005, postgres: POSTGRES_0005 },
  },
  {
    // the requests page filters one tenant's records by time (usage_records_tenant_time) and, often, by cache status
    id: "0006_usage_records_status",
    up: `CREATE INDEX usage_records_tenant_status_time ON usage_records(tenant_id, cache_status, created_at);`,
  },
  {
    // per tenant and minute / hour: proxy answers that were errors (5xx) or rate limited (429)
    id: "0008_request_outcomes",
    up: {
      sqlite: `${outcomeTable("request_outcome_minute", "minute")}\n${outcomeTable("request_outcome_hour", "hour")}`,
      postgres: `${pgOutcomeTable("request_outcome_minute", "minute")}\n${pgOutcomeTable("request_outcome_hour", "hour")}`,
    },
  },
];
