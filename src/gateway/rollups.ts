/**
 * The overview's tables (overview-api.ts): the usage rollups per tenant and minute / hour, and the
 * request-outcome counts (OutcomeCounter).
 *
 * The usage writer adds each batch to both rollups itself (`addToRollups`, in the batch's
 * transaction: a rollback drops both), one upsert per tenant and minute / hour the batch touches,
 * on both backends. SQLite first kept them with a row trigger (0005: AFTER INSERT … FOR EACH ROW,
 * two 53-column upserts per record); 0009 drops it: it was most of the largest per-request cost of
 * the proxy path under load (the usage write fell from ~57 to ~38 µs of gateway CPU per proxied
 * request at 64 connections, BENCHMARKS.md "Regression guard"). On PostgreSQL a plpgsql statement trigger over a transition
 * table was measured first: ~1.4 ms per INSERT statement it fired on (its 53-column aggregate is
 * planned again on every firing), 4× the cost of the batch without it; the explicit upserts are
 * prepared once. Copying a SQLite database (`storage copy`) brings the rollup rows along and, with
 * no trigger, nothing counts them twice.
 */
import type { Migration } from "../storage/migrations";
import type { AsyncTenantDb } from "../storage/async";

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

// ---- the writer adds its batch to the rollups (no trigger; see the header)

/** what the rollups count of one usage record */
export interface RollupRecord {
  createdAt: string;
  cacheStatus: string;
  cacheTier?: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  costSavedUsd: number;
  latencyMs: number;
}

const ADDED = ["requests", "hits_exact", "hits_semantic", "hits_context", "misses", "bypassed", "input_tokens", "output_tokens", "cost_usd", "cost_saved_usd", ...L];
const addText = (table: string, unit: string) =>
  `INSERT INTO ${table} (tenant_id, ${unit}, ${ADDED.join(", ")}) VALUES ($tenant, $at, ${ADDED.map((c) => `$${c}`).join(", ")})
   ON CONFLICT (tenant_id, ${unit}) DO UPDATE SET ${ADDED.map((c) => `${c} = ${table}.${c} + excluded.${c}`).join(", ")}`;
const ADD = [
  { sql: addText("usage_rollup_minute", "minute"), chars: 16 },
  { sql: addText("usage_rollup_hour", "hour"), chars: 13 },
];

/** the latency bucket of a record, as 0005's trigger computes it */
export function latencyBucket(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS.length; i++) if (ms <= LATENCY_BOUNDS[i]!) return i;
  return LATENCY_BOUNDS.length;
}

/**
 * Add one tenant's records to both rollups, in the writer's transaction: one upsert per minute and
 * per hour the records fall in (a 200 ms batch: usually one of each), what 0005's SQLite trigger
 * adds row by row.
 */
export async function addToRollups(db: AsyncTenantDb, rows: readonly RollupRecord[]): Promise<void> {
  for (const { sql, chars } of ADD) {
    const groups = new Map<string, Record<string, number | string>>();
    for (const r of rows) {
      const at = r.createdAt.slice(0, chars);
      let g = groups.get(at) as Record<string, number> | undefined;
      if (!g) {
        g = {};
        for (const c of ADDED) g[c] = 0;
        groups.set(at, g);
      }
      g.requests! += 1;
      const hit = r.cacheStatus === "HIT";
      if (hit && r.cacheTier === "exact") g.hits_exact! += 1;
      if (hit && r.cacheTier === "semantic") g.hits_semantic! += 1;
      if (hit && r.cacheTier === "l2_context") g.hits_context! += 1;
      if (r.cacheStatus === "MISS") g.misses! += 1;
      if (r.cacheStatus === "BYPASS") g.bypassed! += 1;
      g.input_tokens! += r.inputTokens;
      g.output_tokens! += r.outputTokens;
      g.cost_usd! += r.costUsd;
      g.cost_saved_usd! += r.costSavedUsd;
      g[L[latencyBucket(r.latencyMs)]!]! += 1;
    }
    for (const [at, g] of groups) await db.run(sql, { ...(g as Record<string, number>), at });
  }
}

const POSTGRES_0005 = `
  ${pgRollupTable("usage_rollup_minute", "minute")}
  ${pgRollupTable("usage_rollup_hour", "hour")}
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
  {
    // the usage writer adds its batches to the rollups (addToRollups), as on PostgreSQL: the row trigger goes
    id: "0009_usage_rollups_by_writer",
    up: { sqlite: "DROP TRIGGER IF EXISTS usage_rollups_insert;", postgres: "SELECT 1;" },
  },
];
