/**
 * The asynchronous storage interface: what domains use once converted (docs/notes/postgres-plan.md),
 * the same on both backends — bun:sqlite (sqlite-async.ts) and PostgreSQL (postgres.ts); pick one
 * with open.ts. It keeps today's rules (scoped.ts):
 *
 * - every domain query goes through `storage.tenant(id)`: an AsyncTenantDb binds `$tenant` itself
 *   and refuses SQL that does not use it as a parameter (a `'$tenant'` literal, a comment or
 *   `$tenant_id` does not count: the text is parsed once, cached), so a query without tenant
 *   scoping cannot be written;
 * - the few cross-tenant lookups use `storage.global(reason)`, which says why at the call site;
 * - stores are the only code that speaks SQL; they write `$name` parameters (translated for
 *   PostgreSQL once per text) and take dialect differences from `storage.dialect` (dialect.ts).
 *
 * Transactions: `storage.tx(fn)` (or `db.tx(fn)` on any handle) runs `fn` in one transaction, and
 * every query any handle of this storage issues inside `fn` — awaited in its async flow — runs in
 * it (the transaction is carried by AsyncLocalStorage, so a store method needs no extra argument).
 * On PostgreSQL the transaction holds one pooled connection and is SERIALIZABLE, retried on a
 * serialization failure; on SQLite it is BEGIN IMMEDIATE and other work waits for it. So `fn` must
 * touch only the database (no effects outside it: it may run more than once), and must await every
 * query it starts. A tx inside a tx is a savepoint; run nested ones one after the other, not in
 * parallel. Work the body schedules to run later (a timer, a write-behind flush) runs outside the
 * transaction once it has ended.
 *
 * Errors (errors.ts): StorageUnavailableError (→ 503 with Retry-After), StorageConstraintError,
 * SchemaTooNewError, UnscopedQueryError. `run` reports `changes`; a generated key is read with
 * `INSERT … RETURNING key` through `get` (PostgreSQL has no last-insert rowid).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Params } from "./db";
import type { Dialect } from "./dialect";
import { UnscopedQueryError } from "./errors";
import { toPositional } from "./named-params";
import type { MigrationSet } from "./migrations";

export type { Params };

export interface Changes {
  changes: number;
}

/** The statements a store runs. */
export interface AsyncSql {
  get<T>(sql: string, params?: Params): Promise<T | undefined>;
  all<T>(sql: string, params?: Params): Promise<T[]>;
  run(sql: string, params?: Params): Promise<Changes>;
  /** fn in one transaction (see the header) */
  tx<T>(fn: () => Promise<T>): Promise<T>;
}

/** The order runValues takes a statement's values in: its `$name`s as they first appear (a name used twice is one value). */
export function parameterOrder(sql: string): readonly string[] {
  return toPositional(sql).names;
}

/** A statement's values in parameterOrder. */
export type Values = Array<string | number | bigint | boolean | null | NodeJS.TypedArray | ArrayBufferLike>;

/** What a backend implements; AsyncStorage is built over it. */
export interface Backend extends AsyncSql {
  /** run with positional values (AsyncTenantDb.runValues) */
  runValues(sql: string, values: Values): Promise<Changes>;
  readonly dialect: Dialect;
  /** `sqlite <path>` / `postgres <host>:<port>/<database>`: names the database in logs and /ready (no secrets) */
  readonly description: string;
  /** apply every pending migration of ALL the domains' sets; refuses an older build (SchemaTooNewError) */
  migrate(sets: readonly MigrationSet[]): Promise<void>;
  /** this build's migrations not recorded as applied (readiness: must be empty) */
  pendingMigrations(): Promise<string[]>;
  /** resolves when the database answers, rejects with StorageUnavailableError otherwise */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** see AsyncStorage.writeBatch (a backend without another thread to run it on: fn in a transaction, over writeOnly handles) */
  writeBatch(fn: (w: BatchWriter) => Promise<void>): Promise<void>;
}

/** The handles of a write batch (AsyncStorage.writeBatch): statements only, no reads. */
export interface BatchWriter {
  tenant(tenantId: string): AsyncTenantDb;
  global(reason: string): AsyncSql;
}

export class AsyncTenantDb implements AsyncSql {
  constructor(
    private readonly backend: Backend,
    readonly tenantId: string,
  ) {}

  private bind(sql: string, params: Params | undefined): Params {
    if (!toPositional(sql).names.includes("tenant")) throw new UnscopedQueryError(sql);
    // params that already bind this tenant are used as they are (a large batch is not copied)
    if (params?.tenant === this.tenantId) return params;
    return params ? { ...params, tenant: this.tenantId } : { tenant: this.tenantId };
  }
  get<T>(sql: string, params?: Params): Promise<T | undefined> {
    try {
      return this.backend.get<T>(sql, this.bind(sql, params));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  all<T>(sql: string, params?: Params): Promise<T[]> {
    try {
      return this.backend.all<T>(sql, this.bind(sql, params));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  run(sql: string, params?: Params): Promise<Changes> {
    try {
      return this.backend.run(sql, this.bind(sql, params));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  /**
   * `run` with the values given by position — in the order the statement's `$name`s first appear
   * (named-params.ts), no object of names: for a statement of many rows (a write-behind's multi-row
   * INSERT of 1,500 parameters), where building and reading back an object of names costs more than
   * the values. The `$tenant` position is this handle's to fill: whatever the caller put there is
   * replaced by this handle's tenant (the array is changed in place).
   */
  runValues(sql: string, values: Values): Promise<Changes> {
    try {
      const names = toPositional(sql).names;
      const at = names.indexOf("tenant");
      if (at < 0) throw new UnscopedQueryError(sql);
      if (values.length !== names.length) throw new Error(`${names.length} parameters in the statement, ${values.length} values given: ${sql.slice(0, 120)}`);
      values[at] = this.tenantId;
      return this.backend.runValues(sql, values);
    } catch (e) {
      return Promise.reject(e);
    }
  }
  tx<T>(fn: () => Promise<T>): Promise<T> {
    return this.backend.tx(fn);
  }
}

export interface AsyncStorage {
  readonly dialect: Dialect;
  readonly description: string;
  /** the tenant-bound handle every domain query goes through */
  tenant(tenantId: string): AsyncTenantDb;
  /** cross-tenant statements, each with the reason it must cross */
  global(reason: string): AsyncSql;
  /** fn in one transaction spanning every handle used inside it */
  tx<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * A write-only batch (the write-behinds' rows): the statements fn runs through `w`'s handles are
   * committed as one transaction, every one or none, and the promise resolves once they are. They
   * may run on another connection and thread (a SQLite file: the writer thread, sqlite-writer.ts),
   * so fn may only `run` (get, all and tx reject), every `run` reports 0 changes, and parameters are
   * strings, numbers, booleans or null (anything else runs the batch on this thread). Inside an open
   * transaction of this storage the batch joins it.
   */
  writeBatch(fn: (w: BatchWriter) => Promise<void>): Promise<void>;
  migrate(sets: readonly MigrationSet[]): Promise<void>;
  pendingMigrations(): Promise<string[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function asyncStorageOver(backend: Backend): AsyncStorage {
  const global: AsyncSql = {
    get: (s, p) => backend.get(s, p),
    all: (s, p) => backend.all(s, p),
    run: (s, p) => backend.run(s, p),
    tx: (fn) => backend.tx(fn),
  };
  const tenant = (tenantId: string) => new AsyncTenantDb(backend, tenantId);
  return {
    dialect: backend.dialect,
    description: backend.description,
    tenant,
    global: () => global,
    tx: (fn) => backend.tx(fn),
    writeBatch: (fn) => backend.writeBatch(fn),
    migrate: (sets) => backend.migrate(sets),
    pendingMigrations: () => backend.pendingMigrations(),
    ping: () => backend.ping(),
    close: () => backend.close(),
  };
}

/** A transaction open in the current async flow: its backend, the backend's handle on it, the one it is nested in. */
export interface TxFrame {
  owner: object;
  handle: unknown;
  parent: TxFrame | undefined;
  /** false once the transaction ended: work it scheduled (a timer, a queued flush) runs outside it */
  open: boolean;
}

/** The transactions the current async flow runs in (set by the backends' tx). */
export const txContext = new AsyncLocalStorage<TxFrame>();

/** The innermost transaction of `owner` (any owner when omitted) open in the current async flow, if any. */
export function txOf(owner?: object): TxFrame | undefined {
  for (let f = txContext.getStore(); f; f = f.parent) if ((owner === undefined || f.owner === owner) && f.open) return f;
  return undefined;
}

/** Run fn with a transaction of `owner` open (nested in whatever the flow already has). */
export async function withTx<T>(owner: object, handle: unknown, fn: () => Promise<T>): Promise<T> {
  const frame: TxFrame = { owner, handle, parent: txContext.getStore(), open: true };
  try {
    return await txContext.run(frame, fn);
  } finally {
    frame.open = false;
  }
}
