/**
 * Copy a SQLite database into PostgreSQL — the engine of `svc storage copy --to postgres://…`. The
 * target must already be migrated by the same build (`target.migrate(allSets)`): this moves rows,
 * not schema. Every table of the source is copied (FTS5 tables by their rowid and columns; their
 * shadow tables, `sqlite_*` and `schema_migrations` are not), parents before children (foreign
 * keys), in batches, each batch one transaction of `INSERT … ON CONFLICT DO NOTHING`, so running it
 * again is safe. Identity sequences are moved past the copied keys. The result lists, per table,
 * the rows in the source and in the target; `copyDatabase` throws if any differ, or if a source
 * table or column has no place in the target (a row would be lost).
 */
import type { Db } from "./db";
import type { AsyncStorage } from "./async";

export interface TableCount {
  table: string;
  source: number;
  target: number;
}

/** PostgreSQL's limit is 65535 parameters per statement; stay well below */
const MAX_PARAMS = 30_000;
const MAX_ROWS = 500;

export class CopyMismatchError extends Error {
  override readonly name = "CopyMismatchError";
  constructor(readonly counts: TableCount[]) {
    super(`row counts differ after the copy: ${counts.filter((c) => c.source !== c.target).map((c) => `${c.table} ${c.source} → ${c.target}`).join(", ")}`);
  }
}

interface SourceTable {
  name: string;
  columns: string[];
  fts: boolean;
  parents: string[];
}

const quote = (id: string) => `"${id.replace(/"/g, '""')}"`;

function sourceTables(db: Db): SourceTable[] {
  const rows = db.all<{ name: string; sql: string | null }>("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name");
  const fts = rows.filter((r) => /^CREATE VIRTUAL TABLE/i.test(r.sql ?? "") && /USING\s+fts5/i.test(r.sql ?? "")).map((r) => r.name);
  const shadow = new Set(fts.flatMap((t) => ["data", "idx", "content", "docsize", "config"].map((s) => `${t}_${s}`)));
  const tables: SourceTable[] = [];
  for (const { name } of rows) {
    if (name === "schema_migrations" || shadow.has(name)) continue;
    const isFts = fts.includes(name);
    const columns = db.all<{ name: string }>(`SELECT name FROM pragma_table_info(${`'${name.replace(/'/g, "''")}'`})`).map((c) => c.name);
    const parents = isFts ? [] : db.all<{ table: string }>(`SELECT "table" FROM pragma_foreign_key_list('${name.replace(/'/g, "''")}')`).map((f) => f.table);
    tables.push({ name, columns: isFts ? ["rowid", ...columns] : columns, fts: isFts, parents: [...new Set(parents)].filter((p) => p !== name) });
  }
  // parents first (a cycle keeps the remaining tables in name order)
  const ordered: SourceTable[] = [];
  const placed = new Set<string>();
  let left = tables;
  while (left.length) {
    const ready = left.filter((t) => t.parents.every((p) => placed.has(p) || !tables.some((x) => x.name === p)));
    const next = ready.length ? ready : [left[0]!];
    for (const t of next) {
      ordered.push(t);
      placed.add(t.name);
    }
    left = left.filter((t) => !placed.has(t.name));
  }
  return ordered;
}

/** Copy every table of `source` into the migrated PostgreSQL `target`; per-table counts (throws CopyMismatchError if any differ). */
export async function copyDatabase(source: Db, target: AsyncStorage, onTable?: (c: TableCount) => void): Promise<TableCount[]> {
  if (target.dialect.name !== "postgres") throw new Error("storage copy writes to PostgreSQL only");
  const g = target.global("storage copy: every tenant's rows");
  const counts: TableCount[] = [];
  for (const t of sourceTables(source)) {
    const targetCols = await g.all<{ name: string; identity: string }>(
      "SELECT column_name AS name, is_identity AS identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $t AND is_generated = 'NEVER'",
      { t: t.name },
    );
    if (targetCols.length === 0) throw new Error(`table ${t.name} is not in the target database: migrate it with this build first`);
    const have = new Set(targetCols.map((c) => c.name));
    const missing = t.columns.filter((c) => !have.has(c));
    if (missing.length) throw new Error(`table ${t.name}: the target has no column ${missing.join(", ")}`);

    const cols = t.columns;
    const perBatch = Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMS / cols.length)));
    const insertText = (n: number) =>
      `INSERT INTO ${quote(t.name)} (${cols.map(quote).join(", ")}) VALUES ${Array.from({ length: n }, (_, i) => `(${cols.map((_c, j) => `$p${i}_${j}`).join(", ")})`).join(", ")} ON CONFLICT DO NOTHING`;
    const full = insertText(perBatch);
    const select = `SELECT ${cols.map(quote).join(", ")} FROM ${quote(t.name)}${t.fts ? " ORDER BY rowid" : ""}`;
    let batch: Record<string, unknown> = {};
    let n = 0;
    const flush = async () => {
      if (n === 0) return;
      const text = n === perBatch ? full : insertText(n);
      const params = batch;
      await g.tx(() => g.run(text, params as never));
      batch = {};
      n = 0;
    };
    for (const row of source.sqlite.query<Record<string, unknown>, []>(select).iterate()) {
      for (let j = 0; j < cols.length; j++) batch[`p${n}_${j}`] = row[cols[j]!] ?? null;
      if (++n === perBatch) await flush();
    }
    await flush();

    for (const c of targetCols.filter((x) => x.identity === "YES")) {
      await g.get(`SELECT setval(pg_get_serial_sequence($t, $c), COALESCE(MAX(${quote(c.name)}), 0) + 1, false) AS v FROM ${quote(t.name)}`, { t: quote(t.name), c: c.name });
    }
    const count: TableCount = {
      table: t.name,
      source: source.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${quote(t.name)}`)!.n,
      target: (await g.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${quote(t.name)}`))!.n,
    };
    counts.push(count);
    onTable?.(count);
  }
  if (counts.some((c) => c.source !== c.target)) throw new CopyMismatchError(counts);
  return counts;
}
