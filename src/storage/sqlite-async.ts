/**
 * The async storage interface over today's bun:sqlite Db (db.ts): the same connection the sync
 * TenantDb uses, so converted and not-yet-converted domains share one file. Statements run
 * synchronously and return resolved promises — no extra work on the hot paths.
 *
 * A transaction (BEGIN IMMEDIATE … COMMIT) stays open across the awaits of its callback. SQLite
 * has one writer, so while it is open, statements from other async flows wait for it to end (on
 * the same connection they would land inside it; on another connection to the same file in this
 * process a write would block the event loop for busy_timeout, holding up the very transaction it
 * waits for): the open transaction is tracked per file, for every backend of the process.
 * Statements of the transaction's own flow run at once.
 * Nested transactions are savepoints. Caveat while domains are half converted: a SYNC statement
 * (scoped.ts) that runs while an async transaction is open joins that transaction.
 */
import { resolve } from "node:path";
import type { Db, Params } from "./db";
import { sqliteDialect } from "./dialect";
import { SchemaTooNewError, sqliteStorageError } from "./errors";
import { knownIds, orderedMigrations, type MigrationSet } from "./migrations";
import { txOf, withTx, type Backend, type BatchWriter, type Changes, type Values } from "./async";
import { WriterThread, type WriterThreadOptions } from "./sqlite-writer-client";
import { BatchRecorder, writeOnly } from "./write-batch";

interface Open {
  /** resolves when the transaction has ended */
  done: Promise<void>;
}

/** The open transaction of one database file, shared by every backend of this process on that file. */
interface Gate {
  open: Open | undefined;
}
const gates = new Map<string, Gate>();

function gateOf(path: string): Gate {
  if (path === ":memory:" || path === "") return { open: undefined };
  const key = resolve(path);
  let g = gates.get(key);
  if (!g) gates.set(key, (g = { open: undefined }));
  return g;
}

function mapError(e: unknown): unknown {
  return sqliteStorageError((e as { code?: unknown }).code, (e as Error).message, e) ?? e;
}

export class SqliteBackend implements Backend {
  readonly dialect = sqliteDialect;
  readonly description: string;
  /** shared with other backends on the same file: a second connection's write would otherwise block the event loop for busy_timeout while a transaction holds the lock across awaits */
  private readonly gate: Gate;
  private savepoints = 0;
  private known = new Set<string>();

  /** the write batches' thread (a database file; none for ":memory:" or when turned off) */
  private readonly writer: WriterThread | undefined;
  /** write batches begun and not yet committed (close waits for them) */
  private readonly batches = new Set<Promise<void>>();
  /** the handles of a write batch run on this connection */
  private readonly here: BatchWriter;

  /**
   * @param owned close() closes the Db (false: the caller opened it and closes it)
   * @param writerThread write batches (the write-behinds' rows) run on a writer thread with its own connection (default: on for a file)
   */
  constructor(
    readonly db: Db,
    private readonly owned = true,
    writerThread: boolean | WriterThreadOptions = true,
  ) {
    this.description = `sqlite ${db.path}`;
    this.gate = gateOf(db.path);
    const file = db.path !== ":memory:" && db.path !== "";
    this.writer = file && writerThread !== false ? new WriterThread(resolve(db.path), writerThread === true ? {} : writerThread) : undefined;
    this.here = writeOnly(this);
  }

  /**
   * A write-only batch (AsyncStorage.writeBatch) on the writer thread: recorded here (no SQLite
   * work on this thread), committed there. Inside an open transaction of this flow, or without a
   * writer thread (or one that could not start), it runs here (in that transaction); so does a
   * batch whose parameters cannot travel as JSON.
   */
  writeBatch(fn: (w: BatchWriter) => Promise<void>): Promise<void> {
    if (!this.writer || this.writer.broken || txOf(this.gate)) return this.tx(() => fn(this.here));
    // close() waits for it, from its first statement on
    const done = this.recordAndWrite(this.writer, fn);
    this.batches.add(done);
    const forget = () => void this.batches.delete(done);
    done.then(forget, forget);
    return done;
  }

  private async recordAndWrite(writer: WriterThread, fn: (w: BatchWriter) => Promise<void>): Promise<void> {
    const batch = new BatchRecorder(this.dialect);
    await fn(batch.writer);
    if (batch.empty) return;
    const text = batch.text();
    if (text !== undefined) return writer.write(text);
    await this.tx(async () => {
      for (const [sql, params] of batch.local()) await this.run(sql, params);
    });
  }

  /** true when the caller must wait: a transaction of another flow is open */
  private blocked(): boolean {
    return this.gate.open !== undefined && txOf(this.gate) === undefined;
  }

  private async afterOpen<T>(fn: () => T): Promise<T> {
    while (this.blocked()) await this.gate.open!.done;
    try {
      return fn();
    } catch (e) {
      throw mapError(e);
    }
  }

  get<T>(sql: string, params?: Params): Promise<T | undefined> {
    if (this.blocked()) return this.afterOpen(() => this.db.get<T>(sql, params));
    try {
      return Promise.resolve(this.db.get<T>(sql, params));
    } catch (e) {
      return Promise.reject(mapError(e));
    }
  }
  all<T>(sql: string, params?: Params): Promise<T[]> {
    if (this.blocked()) return this.afterOpen(() => this.db.all<T>(sql, params));
    try {
      return Promise.resolve(this.db.all<T>(sql, params));
    } catch (e) {
      return Promise.reject(mapError(e));
    }
  }
  runValues(sql: string, values: Values): Promise<Changes> {
    // an array binds by position (no spread of 1,500 arguments)
    const run = () => ({ changes: (this.db.stmt(sql) as unknown as { run(v: Values): { changes: number } }).run(values).changes });
    if (this.blocked()) return this.afterOpen(run);
    try {
      return Promise.resolve(run());
    } catch (e) {
      return Promise.reject(mapError(e));
    }
  }
  run(sql: string, params?: Params): Promise<Changes> {
    if (this.blocked()) return this.afterOpen(() => ({ changes: this.db.run(sql, params).changes }));
    try {
      return Promise.resolve({ changes: this.db.run(sql, params).changes });
    } catch (e) {
      return Promise.reject(mapError(e));
    }
  }

  async tx<T>(fn: () => Promise<T>): Promise<T> {
    if (txOf(this.gate)) return this.savepoint(fn);
    while (this.gate.open) await this.gate.open.done;
    let end!: () => void;
    this.gate.open = { done: new Promise<void>((r) => (end = r)) };
    try {
      try {
        this.db.sqlite.run("BEGIN IMMEDIATE");
      } catch (e) {
        throw mapError(e);
      }
      let value: T;
      try {
        value = await withTx(this.gate, null, fn);
      } catch (e) {
        if (this.db.sqlite.inTransaction) this.db.sqlite.run("ROLLBACK");
        throw mapError(e);
      }
      try {
        this.db.sqlite.run("COMMIT");
      } catch (e) {
        // e.g. a deferred foreign key: the transaction is still open and must not stay so
        if (this.db.sqlite.inTransaction) this.db.sqlite.run("ROLLBACK");
        throw mapError(e);
      }
      return value;
    } finally {
      this.gate.open = undefined;
      end();
    }
  }

  private async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    const name = `sp${++this.savepoints}`;
    this.db.sqlite.run(`SAVEPOINT ${name}`);
    try {
      const value = await withTx(this.gate, name, fn);
      this.db.sqlite.run(`RELEASE ${name}`);
      return value;
    } catch (e) {
      this.db.sqlite.run(`ROLLBACK TO ${name}`);
      this.db.sqlite.run(`RELEASE ${name}`);
      throw mapError(e);
    }
  }

  async migrate(sets: readonly MigrationSet[]): Promise<void> {
    const known = knownIds(sets);
    const hasTable = this.db.get("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'");
    if (hasTable) {
      const unknown = this.db.appliedMigrations().filter((id) => !known.has(id));
      if (unknown.length) throw new SchemaTooNewError(unknown, this.description);
    }
    await this.afterOpen(() => this.db.migrate(sets));
    this.known = new Set(orderedMigrations(sets).map((m) => m.id));
  }

  async pendingMigrations(): Promise<string[]> {
    const done = new Set(this.db.appliedMigrations());
    return [...this.known].filter((id) => !done.has(id));
  }

  async ping(): Promise<void> {
    this.db.get("SELECT 1");
  }

  async close(): Promise<void> {
    while (this.batches.size > 0) await Promise.allSettled([...this.batches]);
    await this.writer?.close();
    while (this.blocked()) await this.gate.open!.done;
    if (this.owned) this.db.close();
  }
}
