/**
 * Every difference between the two SQL dialects, in one place. A store writes one SQL text where
 * SQLite and PostgreSQL agree (most of it: SELECT/INSERT/UPDATE/DELETE, `ON CONFLICT … DO UPDATE
 * SET x = excluded.x`, `ON CONFLICT DO NOTHING`, `RETURNING`, `LIMIT/OFFSET`, `COALESCE`, `lower()`,
 * ISO-8601 text timestamps compared as text) and takes the rest from its storage's `dialect`, built
 * into the text once (in the store's constructor), never `if (postgres)` in a service.
 *
 * Portable DDL vocabulary (valid on both): TEXT, INTEGER (32-bit on PostgreSQL!), BIGINT (epoch
 * milliseconds and counters), DOUBLE PRECISION (PostgreSQL's REAL is 4 bytes), TEXT holding JSON
 * (rows read back the same string on both; query it through json* below). What differs:
 * `autoId`, `blob`, and full-text search tables (`fts`). Flags are INTEGER 0/1 (booleans bind as
 * 1/0 on both backends). PostgreSQL fragments cast JSON through `::text::jsonb`: a bare `$p::jsonb`
 * would make Bun send the string parameter as a JSON string scalar.
 */
export type DialectName = "sqlite" | "postgres";
export type TimeUnit = "minute" | "hour" | "day" | "month";

export interface FtsSpec {
  /** the search table's name (by convention `<table>_fts`; its `rowid` is the owning row's key) */
  table: string;
  /** text columns that are searched and ranked (the first ones of the table) */
  ranked: readonly string[];
  /** text columns stored beside them, not searched */
  unranked?: readonly string[];
}

export interface Dialect {
  readonly name: DialectName;

  // ---- DDL
  /** column definition of an auto-assigned integer primary key, e.g. `key ${d.autoId}` */
  readonly autoId: string;
  /** column type of raw bytes (vectors): BLOB | BYTEA */
  readonly blob: string;
  /** a BLOB / BYTEA value read comes in a buffer of its own (bun:sqlite copies each out), so a view of it needs no copy to outlive the row */
  readonly blobsOwned: boolean;
  /**
   * the process's writes commit through one connection, one commit after another (SQLite): commits made
   * in one event-loop turn are worth grouping into one transaction (each writes its pages to the WAL)
   */
  readonly oneWriter: boolean;
  /**
   * DDL of a full-text search table: columns `rowid` (the owner's key), the ranked and unranked
   * columns. Rows are written with portable SQL (`INSERT INTO t_fts (rowid, body, …) VALUES …`,
   * `DELETE FROM t_fts WHERE rowid = $k`). SQLite: an FTS5 table (unicode61, `_` inside words);
   * PostgreSQL: a table with a generated tsvector ('simple' configuration) and a GIN index.
   */
  ftsTable(spec: FtsSpec): string;

  // ---- case-insensitive matching (ASCII on SQLite)
  /** `expr` equals the parameter, ignoring case */
  ciEquals(expr: string, param: string): string;
  /** `expr LIKE` the parameter's pattern ignoring case, `\` escapes % and _ (see likePattern) */
  ciLike(expr: string, param: string): string;
  /** ORDER BY term sorting `expr` ignoring case */
  ciOrder(expr: string): string;

  // ---- JSON stored as TEXT
  /** the text at a path of a JSON text column: jsonText("metadata", ["scim", "userName"]) */
  jsonText(expr: string, path: readonly string[]): string;
  /** a FROM item of the elements (as text, column `value`) of a JSON array text; do not alias it */
  jsonEach(expr: string): string;
  /** `IN (…)` operand: the elements of a JSON array text parameter (bind JSON.stringify(ids)) */
  inJsonArray(param: string): string;
  /** aggregate of values into a JSON array text, `inner` may start with DISTINCT; add FILTER after it */
  jsonArrayAgg(inner: string): string;

  // ---- time (timestamps are ISO-8601 UTC text or epoch-millisecond BIGINT)
  /** the current time in epoch milliseconds */
  readonly nowMs: string;
  /** epoch milliseconds → ISO text `YYYY-MM-DDTHH:MM:SS.sssZ` */
  msToIso(msExpr: string): string;
  /** ISO text truncated to a bucket label: minute/hour `…THH:MM:00Z`/`…THH:00:00Z`, day `YYYY-MM-DD`, month `YYYY-MM` */
  isoBucket(isoExpr: string, unit: TimeUnit): string;
  /** ISO text plus a number of seconds (may be negative) → ISO text */
  isoAddSeconds(isoExpr: string, secondsExpr: string): string;

  // ---- full-text search over an ftsTable (see searchTerms for the parameter's value)
  /** WHERE condition: the fts table (as referenced in FROM) matches the query parameter */
  ftsMatch(ftsRef: string, ftsTable: string, param: string): string;
  /** relevance, higher is better, for ORDER BY … DESC */
  ftsRank(ftsRef: string, ftsTable: string, param: string): string;
  /** the query parameter's value for words: any word (OR) or all of them (AND) */
  ftsQuery(words: readonly string[], mode: "any" | "all"): string;
}

const ISO_MS_PG = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;
const BUCKET_SQLITE: Record<TimeUnit, string> = {
  minute: "%Y-%m-%dT%H:%M:00Z",
  hour: "%Y-%m-%dT%H:00:00Z",
  day: "%Y-%m-%d",
  month: "%Y-%m",
};
const BUCKET_PG: Record<TimeUnit, string> = {
  minute: `'YYYY-MM-DD"T"HH24:MI":00Z"'`,
  hour: `'YYYY-MM-DD"T"HH24":00:00Z"'`,
  day: `'YYYY-MM-DD'`,
  month: `'YYYY-MM'`,
};

const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`;
const jsonPathSqlite = (path: readonly string[]) => sqlString("$" + path.map((p) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(p) ? `.${p}` : `."${p.replace(/"/g, '\\"')}"`)).join(""));
const jsonPathPg = (path: readonly string[]) => sqlString(`{${path.map((p) => `"${p.replace(/(["\\])/g, "\\$1")}"`).join(",")}}`);

export const sqliteDialect: Dialect = {
  name: "sqlite",
  autoId: "INTEGER PRIMARY KEY AUTOINCREMENT",
  blob: "BLOB",
  blobsOwned: true,
  oneWriter: true,
  ftsTable: ({ table, ranked, unranked = [] }) => `CREATE VIRTUAL TABLE ${table} USING fts5(${[...ranked, ...unranked.map((c) => `${c} UNINDEXED`)].join(", ")}, tokenize = "unicode61 tokenchars '_'")`,
  ciEquals: (expr, param) => `${expr} = ${param} COLLATE NOCASE`,
  ciLike: (expr, param) => `${expr} LIKE ${param} ESCAPE '\\'`,
  ciOrder: (expr) => `${expr} COLLATE NOCASE`,
  jsonText: (expr, path) => `json_extract(${expr}, ${jsonPathSqlite(path)})`,
  jsonEach: (expr) => `json_each(${expr})`,
  inJsonArray: (param) => `(SELECT value FROM json_each(${param}))`,
  jsonArrayAgg: (inner) => `json_group_array(${inner})`,
  nowMs: "CAST(unixepoch('subsec') * 1000 AS INTEGER)",
  msToIso: (ms) => `strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`,
  isoBucket: (iso, unit) => `strftime('${BUCKET_SQLITE[unit]}', ${iso})`,
  isoAddSeconds: (iso, secs) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${iso}, (${secs}) || ' seconds')`,
  // FTS5 names the table itself (not its alias) in MATCH and in bm25(); bm25 is lower-is-better
  ftsMatch: (_ref, table, param) => `${table} MATCH ${param}`,
  ftsRank: (_ref, table) => `-bm25(${table})`,
  ftsQuery: (words, mode) => words.map((w) => `"${w.replace(/"/g, '""')}"`).join(mode === "any" ? " OR " : " AND "),
};

export const postgresDialect: Dialect = {
  name: "postgres",
  autoId: "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
  blob: "BYTEA",
  // the client's Buffers may be views of a larger one it reuses
  blobsOwned: false,
  // a pool of connections commits side by side
  oneWriter: false,
  ftsTable: ({ table, ranked, unranked = [] }) => {
    const doc = ranked.map((c) => `coalesce(${c}, '')`).join(` || ' ' || `);
    return `CREATE TABLE ${table} (rowid BIGINT PRIMARY KEY, ${[...ranked, ...unranked].map((c) => `${c} TEXT`).join(", ")}, tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', ${doc})) STORED);
CREATE INDEX ${table}_tsv ON ${table} USING GIN (tsv)`;
  },
  ciEquals: (expr, param) => `lower(${expr}) = lower(${param})`,
  ciLike: (expr, param) => `${expr} ILIKE ${param} ESCAPE '\\'`,
  ciOrder: (expr) => `lower(${expr})`,
  jsonText: (expr, path) => `((${expr})::text::jsonb #>> ${jsonPathPg(path)})`,
  jsonEach: (expr) => `jsonb_array_elements_text((${expr})::text::jsonb) AS value`,
  inJsonArray: (param) => `(SELECT jsonb_array_elements_text((${param})::text::jsonb))`,
  jsonArrayAgg: (inner) => `(json_agg(${inner}))::text`,
  nowMs: "(extract(epoch from clock_timestamp()) * 1000)::bigint",
  msToIso: (ms) => `to_char(to_timestamp((${ms}) / 1000.0) AT TIME ZONE 'UTC', ${ISO_MS_PG})`,
  isoBucket: (iso, unit) => `to_char((${iso})::timestamptz AT TIME ZONE 'UTC', ${BUCKET_PG[unit]})`,
  isoAddSeconds: (iso, secs) => `to_char(((${iso})::timestamptz + (${secs}) * interval '1 second') AT TIME ZONE 'UTC', ${ISO_MS_PG})`,
  ftsMatch: (ref, _table, param) => `${ref}.tsv @@ to_tsquery('simple', ${param})`,
  ftsRank: (ref, _table, param) => `ts_rank(${ref}.tsv, to_tsquery('simple', ${param}))`,
  ftsQuery: (words, mode) => words.map((w) => `'${w.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`).join(mode === "any" ? " | " : " & "),
};

export const dialects: Record<DialectName, Dialect> = { sqlite: sqliteDialect, postgres: postgresDialect };

/** A LIKE pattern matching `text` literally (with ciLike / `ESCAPE '\'`), wrapped as asked. */
export function likePattern(text: string, where: "contains" | "prefix" | "exact" = "contains"): string {
  const lit = text.replace(/[\\%_]/g, (c) => `\\${c}`);
  return where === "contains" ? `%${lit}%` : where === "prefix" ? `${lit}%` : lit;
}

/**
 * A portable upsert: `INSERT INTO table (cols) VALUES ($col…) ON CONFLICT (key) DO UPDATE SET …`
 * (or DO NOTHING when there is nothing to update) — one text that both dialects run. `update`
 * lists the columns taken from the new row (default: every non-key column), or maps a column to
 * an expression (`{ hits: "hits + excluded.hits" }`). Replaces SQLite's INSERT OR REPLACE / OR IGNORE.
 */
export function upsert(table: string, columns: readonly string[], key: readonly string[], update?: readonly string[] | Record<string, string>): string {
  const sets = Array.isArray(update) || update === undefined
    ? ((update as readonly string[] | undefined) ?? columns.filter((c) => !key.includes(c))).map((c) => `${c} = excluded.${c}`)
    : Object.entries(update).map(([c, e]) => `${c} = ${e}`);
  const action = sets.length ? `DO UPDATE SET ${sets.join(", ")}` : "DO NOTHING";
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `$${c}`).join(", ")}) ON CONFLICT (${key.join(", ")}) ${action}`;
}

/** A Float32 vector as the bytes a BLOB/BYTEA column stores (little-endian, no copy). */
export function vectorBytes(v: Float32Array): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** The Float32 vector a BLOB/BYTEA column holds (a view when aligned, else a copy). */
export function vectorOf(bytes: Uint8Array): Float32Array {
  if (bytes.byteLength % 4 !== 0) throw new Error(`vector column holds ${bytes.byteLength} bytes, not a multiple of 4`);
  if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  return new Float32Array(bytes.slice().buffer);
}
