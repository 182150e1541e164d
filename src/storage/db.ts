/**
 * The SQLite database (bun:sqlite, WAL). Opening applies pragmas (busy_timeout first) and every
 * pending migration. Domains never get this object: they get a TenantDb (see scoped.ts) whose
 * statements must mention $tenant, so a query without tenant scoping cannot be written.
 */
import { Database, type Statement } from "bun:sqlite";
import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { MIGRATIONS, type Migration } from "./migrations";

/** Named parameters of a statement (bun:sqlite binds $name). */
export type Params = Record<string, string | bigint | number | boolean | null | NodeJS.TypedArray | ArrayBufferLike>;

export class Db {
  readonly sqlite: Database;
  private stmts = new Map<string, Statement<unknown, [Params]>>();
  closed = false;

  constructor(readonly path: string, private readonly migrations: Migration[] = MIGRATIONS) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    // A new file gets its schema with synchronous=OFF, then NORMAL: creating it (journal, WAL
    // switch, migrations) otherwise costs ~6 fsyncs, ~10 ms of the first start. OFF loses nothing
    // if the process crashes; only an OS crash in those milliseconds could leave a broken, still
    // empty, database file.
    const created = path !== ":memory:" && !existsSync(path);
    this.sqlite = new Database(path, { create: true, strict: true });
    this.sqlite.run("PRAGMA busy_timeout = 5000");
    this.sqlite.run(`PRAGMA synchronous = ${created ? "OFF" : "NORMAL"}`);
    this.sqlite.run("PRAGMA journal_mode = WAL");
    this.sqlite.run("PRAGMA foreign_keys = ON");
    this.migrate(migrations);
    if (created) this.sqlite.run("PRAGMA synchronous = NORMAL");
  }

  /** Cached prepared statement. */
  stmt(sql: string) {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.sqlite.query<unknown, [Params]>(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  get<T>(sql: string, params: Params = {}): T | undefined {
    return (this.stmt(sql).get(params) as T | null) ?? undefined;
  }
  all<T>(sql: string, params: Params = {}): T[] {
    return this.stmt(sql).all(params) as T[];
  }
  run(sql: string, params: Params = {}): { changes: number; lastInsertRowid: number | bigint } {
    return this.stmt(sql).run(params);
  }

  /** Read-then-write work runs in an IMMEDIATE transaction (takes the write lock up front). */
  tx<T>(fn: () => T): T {
    return this.sqlite.transaction(fn).immediate();
  }

  migrate(migrations: Migration[]) {
    this.sqlite.run("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)");
    const done = new Set(this.sqlite.query("SELECT id FROM schema_migrations").all().map((r: any) => r.id as string));
    for (const m of [...migrations].sort((a, b) => a.id.localeCompare(b.id))) {
      if (done.has(m.id)) continue;
      this.sqlite.transaction(() => {
        if (typeof m.up === "string") this.sqlite.run(m.up);
        else m.up(this.sqlite);
        this.sqlite.query("INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)").run(m.id, new Date().toISOString());
      }).immediate();
    }
  }

  /** Ids of this build's migrations not recorded as applied (readiness: must be empty). */
  pendingMigrations(): string[] {
    const done = new Set(this.appliedMigrations());
    return this.migrations.map((m) => m.id).filter((id) => !done.has(id));
  }

  appliedMigrations(): string[] {
    return this.sqlite.query("SELECT id FROM schema_migrations ORDER BY id").all().map((r: any) => r.id);
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.stmts.values()) s.finalize();
    this.stmts.clear();
    try {
      this.sqlite.run("PRAGMA optimize");
      this.sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {}
    this.sqlite.close();
  }
}
