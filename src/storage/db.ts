/**
 * The SQLite database (bun:sqlite, WAL). Opening applies pragmas (busy_timeout first); the
 * composition root then applies every domain's migrations (Db.migrate). Domains never get this
 * object: they get a Storage (scoped.ts), whose tenant handles bind $tenant to every statement.
 */
import { Database, type Statement } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { orderedMigrations, type MigrationSet } from "./migrations";

/** Named parameters of a statement (bun:sqlite binds $name). */
export type Params = Record<string, string | bigint | number | boolean | null | NodeJS.TypedArray | ArrayBufferLike>;

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/**
 * The database holds every tenant's data and the sealed secrets: only its owner may read it. A new
 * file is created 0600 before SQLite opens it (an empty file is a new database), and SQLite gives
 * its -wal and -shm files the database file's mode; an existing file (and its -wal/-shm, from an
 * older build that left them 0644) is narrowed to 0600 — where the process may not (another
 * owner, a read-only mount), it is left as it is.
 */
function ownerOnly(path: string, create: boolean) {
  if (create) closeSync(openSync(path, "a", 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if (existsSync(file)) chmodSync(file, 0o600);
    } catch {}
  }
}

export class Db {
  readonly sqlite: Database;
  private stmts = new Map<string, Statement<unknown, [Params]>>();
  /** every migration id the running build knows (set by migrate) */
  private known: string[] = [];
  private readonly created: boolean;
  closed = false;

  constructor(readonly path: string, sets?: readonly MigrationSet[]) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // A new file gets its schema with synchronous=OFF, then NORMAL: creating it (journal, WAL
    // switch, migrations) otherwise costs ~6 fsyncs, ~10 ms of the first start. OFF loses nothing
    // if the process crashes; only an OS crash in those milliseconds could leave a broken, still
    // empty, database file.
    this.created = path !== ":memory:" && !existsSync(path);
    if (path !== ":memory:") ownerOnly(path, this.created);
    this.sqlite = new Database(path, { create: true, strict: true });
    this.sqlite.run("PRAGMA busy_timeout = 5000");
    this.sqlite.run(`PRAGMA synchronous = ${this.created ? "OFF" : "NORMAL"}`);
    this.sqlite.run("PRAGMA journal_mode = WAL");
    this.sqlite.run("PRAGMA foreign_keys = ON");
    if (sets) this.migrate(sets);
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
  run(sql: string, params: Params = {}): RunResult {
    return this.stmt(sql).run(params);
  }

  /** Read-then-write work runs in an IMMEDIATE transaction (takes the write lock up front). */
  tx<T>(fn: () => T): T {
    return this.sqlite.transaction(fn).immediate();
  }

  /**
   * Apply every pending migration of the given domains (storage/migrations.ts), each in a transaction.
   * A migration whose legacyId an older build recorded is marked applied without running.
   */
  migrate(sets: readonly MigrationSet[]) {
    this.sqlite.run("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)");
    const done = new Set(this.appliedMigrations());
    const record = this.sqlite.query("INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)");
    const ordered = orderedMigrations(sets);
    for (const { id, migration: m } of ordered) {
      if (done.has(id)) continue;
      this.sqlite.transaction(() => {
        if (!(m.legacyId && done.has(m.legacyId))) {
          if (typeof m.up === "string") this.sqlite.run(m.up);
          else m.up(this.sqlite);
        }
        record.run(id, new Date().toISOString());
      }).immediate();
    }
    this.known = [...new Set([...this.known, ...ordered.map((o) => o.id)])];
    if (this.created) this.sqlite.run("PRAGMA synchronous = NORMAL");
  }

  /** Ids of this build's migrations not recorded as applied (readiness: must be empty). */
  pendingMigrations(): string[] {
    const done = new Set(this.appliedMigrations());
    return this.known.filter((id) => !done.has(id));
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
