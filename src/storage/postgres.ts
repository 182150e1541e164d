/**
 * The async storage interface over PostgreSQL, with Bun's built-in client (`SQL` from "bun": a
 * pool of `poolSize` connections, named prepared statements per connection). Stores' `$name`
 * texts become `$1…` once per text (named-params.ts); rows come back in the shapes bun:sqlite
 * gives (int8/numeric as numbers, bool as 1/0, json/jsonb as their text, dates as ISO text), so a
 * store reads the same values on both backends.
 *
 * Failure: a statement that cannot get an answer — server down, refused, connection dropped, auth
 * or database gone, or no answer within `queryTimeoutMs` (the statement is then cancelled) —
 * rejects with StorageUnavailableError, which the kernel maps to 503 + Retry-After. Nothing here
 * retries a statement on its own (a write's fate would be unknown); the pool opens new connections
 * by itself once the server is back. Transactions are SERIALIZABLE and re-run on a serialization
 * failure or deadlock (up to `txAttempts` times).
 *
 * Migrations run under a PostgreSQL advisory lock, so replicas starting together against an empty
 * database migrate once; the others wait, then find nothing pending.
 */
import { SQL } from "bun";
import { postgresDialect } from "./dialect";
import { SchemaTooNewError, StorageConstraintError, StorageUnavailableError, type ConstraintKind } from "./errors";
import { knownIds, orderedPostgresMigrations, type MigrationSet, type MigrationSql } from "./migrations";
import { toPositional } from "./named-params";
import { txOf, withTx, type Backend, type BatchWriter, type Changes, type Params, type Values } from "./async";
import { writeOnly } from "./write-batch";

export interface PostgresOptions {
  /** postgres://user:password@host:port/database[?sslmode=…] */
  url: string;
  /**
   * the schema svc's tables live in (search_path of every connection); default: the server's
   * (`public`). Lets several deployments, or test files, share one database.
   */
  schema?: string;
  /** connections in the pool (SVC_STORAGE__POOL_SIZE); default 10 */
  poolSize?: number;
  /** seconds to open a connection before giving up; default 5 */
  connectTimeoutSeconds?: number;
  /** a statement not answered in this many ms is cancelled and rejects StorageUnavailableError; default 10000 */
  queryTimeoutMs?: number;
  /** Retry-After the unavailable error carries; default 2 */
  retryAfterSeconds?: number;
  /**
   * attempts of a transaction that hits serialization failures/deadlocks; default 20 (backing off
   * exponentially, capped at 250 ms: a busy tenant's burst of writers gets through, ~3 s at worst). Each failed
   * attempt means another transaction committed, so N transactions contending on one row all
   * commit when N <= txAttempts.
   */
  txAttempts?: number;
}

interface Inflight {
  q: { cancel(): unknown };
  reject(e: unknown): void;
  deadline: number;
}

/** the (classid, objid) pair of the advisory lock migrations hold: "svc" and 1 */
const MIGRATION_LOCK = [0x737663, 1] as const;

const CONSTRAINT: Record<string, ConstraintKind> = { "23505": "unique", "23503": "foreign_key", "23502": "not_null", "23514": "check" };
/** SQLSTATEs that mean the database is not (fully) reachable now */
const UNAVAILABLE_STATE = /^(08|28|3D|53|57P0[1-4]|57014)/;
const UNAVAILABLE_CODE = /^ERR_POSTGRES_(CONNECTION|SOCKET|TLS|IDLE_TIMEOUT|LIFETIME_TIMEOUT|QUERY_CANCELLED|AUTHENTICATION|SASL|UNSUPPORTED_AUTHENTICATION)|^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)$/;
const RETRY_TX = new Set(["40001", "40P01"]);

/** the SQLSTATE of a driver error, also when a query already wrapped it (its cause) */
function sqlState(e: unknown): string | undefined {
  for (let x = e, depth = 0; x && depth < 3; x = (x as { cause?: unknown }).cause, depth++) {
    const errno = (x as { errno?: unknown }).errno;
    if (typeof errno === "string") return errno;
  }
  return undefined;
}

/** bun:sqlite's shapes for PostgreSQL's types (by type OID) */
const NORMALIZE: Record<number, (v: unknown) => unknown> = {
  20: Number, // int8 (COUNT, SUM of int, BIGINT)
  1700: Number, // numeric (SUM of bigint, AVG)
  16: (v) => (v ? 1 : 0), // bool
  114: (v) => (typeof v === "string" ? v : JSON.stringify(v)), // json
  3802: (v) => (typeof v === "string" ? v : JSON.stringify(v)), // jsonb
  1082: (v) => (v instanceof Date ? v.toISOString().slice(0, 10) : v), // date
  1114: (v) => (v instanceof Date ? v.toISOString() : v), // timestamp
  1184: (v) => (v instanceof Date ? v.toISOString() : v), // timestamptz
};
type Fix = Array<[string, (v: unknown) => unknown]>;
const fixes = new WeakMap<object, Fix | null>();

function normalize<T>(rows: unknown[] & { columns?: Array<{ name: string; type: number }> | null }): T[] {
  const cols = rows.columns;
  if (!cols || rows.length === 0) return rows as T[];
  let fix = fixes.get(cols);
  if (fix === undefined) {
    const f: Fix = [];
    for (const c of cols) {
      const conv = NORMALIZE[c.type];
      if (conv) f.push([c.name, conv]);
    }
    fix = f.length ? f : null;
    fixes.set(cols, fix);
  }
  if (fix) {
    for (const row of rows as Array<Record<string, unknown>>) {
      for (const [name, conv] of fix) {
        const v = row[name];
        if (v !== null && v !== undefined) row[name] = conv(v);
      }
    }
  }
  return rows as T[];
}

function toPg(v: unknown): unknown {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (v instanceof ArrayBuffer || (typeof SharedArrayBuffer !== "undefined" && v instanceof SharedArrayBuffer)) return new Uint8Array(v);
  if (ArrayBuffer.isView(v) && !(v instanceof Uint8Array)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return v;
}

export class PostgresBackend implements Backend {
  readonly dialect = postgresDialect;
  readonly description: string;
  readonly sql: SQL;
  private readonly queryTimeoutMs: number;
  private readonly retryAfter: number;
  private readonly txAttempts: number;
  private known: string[] = [];
  private readonly inflight = new Set<Inflight>();
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private readonly migrationSql: MigrationSql;
  private readonly schema: string | undefined;

  constructor(opts: PostgresOptions) {
    const u = new URL(opts.url);
    if (u.protocol !== "postgres:" && u.protocol !== "postgresql:") throw new Error(`not a postgres:// URL: ${u.protocol}`);
    const database = decodeURIComponent(u.pathname.replace(/^\//, "")) || decodeURIComponent(u.username) || "postgres";
    if (opts.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(opts.schema)) throw new Error(`storage schema must be a lower-case identifier: "${opts.schema}"`);
    this.schema = opts.schema;
    this.description = `postgres ${u.hostname}:${u.port || 5432}/${database}${opts.schema ? ` schema ${opts.schema}` : ""}`;
    this.queryTimeoutMs = opts.queryTimeoutMs ?? 10_000;
    this.retryAfter = opts.retryAfterSeconds ?? 2;
    this.txAttempts = opts.txAttempts ?? 20;
    this.sql = new SQL(opts.url, {
      adapter: "postgres",
      // explicit, so PGDATABASE in the environment cannot point the pool elsewhere
      database,
      max: opts.poolSize ?? 10,
      connectionTimeout: opts.connectTimeoutSeconds ?? 5,
      idleTimeout: 60,
      bigint: false,
      prepare: true,
      connection: opts.schema ? { application_name: "svc", search_path: opts.schema } : { application_name: "svc" },
    });
    this.migrationSql = { get: (s, p) => this.get(s, p as Params), all: (s, p) => this.all(s, p as Params), run: (s, p) => this.run(s, p as Params) };
  }

  /** a driver error as the storage error callers see (errors.ts), or as it is */
  mapError(e: unknown): unknown {
    if (e instanceof StorageUnavailableError || e instanceof StorageConstraintError) return e;
    const { code, errno } = (e ?? {}) as { code?: unknown; errno?: unknown };
    if (typeof errno === "string") {
      if (errno.startsWith("23")) return new StorageConstraintError(CONSTRAINT[errno] ?? "other", (e as Error).message, { cause: e });
      if (UNAVAILABLE_STATE.test(errno) || RETRY_TX.has(errno)) return this.unavailable((e as Error).message, e);
    }
    if (typeof code === "string" && UNAVAILABLE_CODE.test(code)) return this.unavailable((e as Error).message, e);
    return e;
  }

  private unavailable(why: string, cause?: unknown) {
    return new StorageUnavailableError(`database unavailable (${this.description}): ${why}`, this.retryAfter, { cause });
  }

  /** the connection of the flow's open transaction, else the pool */
  private client(): SQL {
    const f = txOf(this);
    return f ? (f.handle as SQL) : this.sql;
  }

  private query<T>(sql: string, params: Params | undefined, positional?: Values): Promise<T[] & { affectedRows?: number }> {
    let q: SQL.Query<T[]>;
    try {
      const { text, names } = toPositional(sql);
      const values = new Array<unknown>(names.length);
      for (let i = 0; i < names.length; i++) {
        const v = positional ? positional[i] : params?.[names[i]!];
        if (v === undefined) throw new Error(`Missing parameter "${names[i]}"`);
        values[i] = toPg(v);
      }
      q = this.client().unsafe<T[]>(text, values);
    } catch (e) {
      return Promise.reject(this.mapError(e));
    }
    return new Promise((resolve, reject) => {
      const entry: Inflight = { q, reject, deadline: performance.now() + this.queryTimeoutMs };
      this.track(entry);
      q.then(
        (rows) => {
          this.inflight.delete(entry);
          resolve(normalize<T>(rows as unknown as unknown[]) as T[] & { affectedRows?: number });
        },
        (e) => {
          this.inflight.delete(entry);
          reject(this.mapError(e));
        },
      );
    });
  }

  /**
   * Deadlines: one sweeper (while statements are in flight) instead of a timer per statement,
   * which costs more than the rest of the wrapper. A statement is failed within
   * queryTimeoutMs + one sweep interval.
   */
  private track(entry: Inflight) {
    this.inflight.add(entry);
    if (this.sweeper) return;
    const every = Math.max(10, Math.min(250, this.queryTimeoutMs / 4));
    this.sweeper = setInterval(() => {
      const now = performance.now();
      for (const e of this.inflight) {
        if (e.deadline > now) continue;
        this.inflight.delete(e);
        try {
          e.q.cancel();
        } catch {}
        e.reject(this.unavailable(`no answer within ${this.queryTimeoutMs} ms`));
      }
      if (this.inflight.size === 0) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
    }, every);
    (this.sweeper as { unref?: () => void }).unref?.();
  }

  async get<T>(sql: string, params?: Params): Promise<T | undefined> {
    return (await this.query<T>(sql, params))[0];
  }
  all<T>(sql: string, params?: Params): Promise<T[]> {
    return this.query<T>(sql, params);
  }
  async run(sql: string, params?: Params): Promise<Changes> {
    const r = await this.query<unknown>(sql, params);
    return { changes: r.affectedRows ?? 0 };
  }
  async runValues(sql: string, values: Values): Promise<Changes> {
    const r = await this.query<unknown>(sql, undefined, values);
    return { changes: r.affectedRows ?? 0 };
  }

  private here: BatchWriter | undefined;
  /** a write batch (AsyncStorage.writeBatch): one transaction on a pooled connection; the network round trips already leave the request thread free */
  writeBatch(fn: (w: BatchWriter) => Promise<void>): Promise<void> {
    return this.tx(() => fn((this.here ??= writeOnly(this))));
  }

  async tx<T>(fn: () => Promise<T>): Promise<T> {
    const open = txOf(this);
    if (open) {
      try {
        return await this.guarded((body) => (open.handle as Bun.TransactionSQL).savepoint(body), "SAVEPOINT", fn);
      } catch (e) {
        throw this.mapError(e);
      }
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.begin(fn);
      } catch (e) {
        if (RETRY_TX.has(sqlState(e) ?? "") && attempt < this.txAttempts) {
          // exponential backoff with full jitter (0-10 ms, 0-20, 0-40 … capped at 250): sixteen
          // writers of one tenant at once exhausted ten attempts of a linear 0-4·n ms backoff
          await Bun.sleep(Math.random() * Math.min(250, 5 * 2 ** attempt));
          continue;
        }
        throw this.mapError(e);
      }
    }
  }

  /**
   * sql.begin with the statements the driver sends itself (BEGIN, COMMIT/ROLLBACK) under the
   * statement deadline: a server that stops answering without closing the connection (frozen, a
   * network partition) fails the transaction with StorageUnavailableError instead of holding the
   * caller forever. A transaction abandoned before BEGIN answered never runs its body; one
   * abandoned at COMMIT has an unknown fate (it was never acknowledged).
   */
  private begin<T>(fn: () => Promise<T>): Promise<T> {
    return this.guarded((body) => this.sql.begin("ISOLATION LEVEL SERIALIZABLE", body), "BEGIN", fn);
  }

  /**
   * Runs `fn` inside what `open` starts (a transaction or a savepoint), with the statements the
   * driver sends around the body — BEGIN / SAVEPOINT before it, COMMIT / RELEASE / ROLLBACK after
   * it — under the statement deadline, as every statement of the body is.
   */
  private guarded<T>(open: (body: (handle: Bun.SQL) => Promise<T>) => Promise<unknown>, what: string, fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let abandoned = false;
      const watch = (): Inflight => {
        const entry: Inflight = { q: { cancel() {} }, reject: (e) => ((abandoned = true), reject(e)), deadline: performance.now() + this.queryTimeoutMs };
        this.track(entry);
        return entry;
      };
      let waiting = watch();
      open(async (tx) => {
        this.inflight.delete(waiting);
        if (abandoned) throw this.unavailable(`${what} answered after the transaction was abandoned`);
        try {
          return await withTx(this, tx, fn);
        } finally {
          waiting = watch();
        }
      })
        .then(
          (v) => (this.inflight.delete(waiting), abandoned || resolve(v as T)),
          (e) => (this.inflight.delete(waiting), abandoned || reject(e)),
        );
    });
  }

  async migrate(sets: readonly MigrationSet[]): Promise<void> {
    const ordered = orderedPostgresMigrations(sets);
    const known = knownIds(sets);
    let conn: Bun.ReservedSQL;
    try {
      conn = await this.sql.reserve();
    } catch (e) {
      throw this.mapError(e);
    }
    try {
      // session-level lock: held across the migrations' own transactions, released on disconnect
      await conn.unsafe("SELECT pg_advisory_lock($1, $2)", [...MIGRATION_LOCK]);
      try {
        // a configured schema (SVC_STORAGE__SCHEMA) is created by the first replica that starts
        if (this.schema) await conn.unsafe(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`);
        await conn.unsafe("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)");
        const applied = new Set(((await conn.unsafe("SELECT id FROM schema_migrations")) as Array<{ id: string }>).map((r) => r.id));
        const unknown = [...applied].filter((id) => !known.has(id)).sort();
        if (unknown.length) throw new SchemaTooNewError(unknown, this.description);
        for (const { id, migration: m } of ordered) {
          if (applied.has(id)) continue;
          await conn.begin(async (tx) => {
            if (!(m.legacyId && applied.has(m.legacyId))) {
              if (typeof m.up === "string") await tx.unsafe(m.up).simple();
              else {
                const up = m.up;
                await withTx(this, tx, () => up(this.migrationSql));
              }
            }
            await tx.unsafe("INSERT INTO schema_migrations (id, applied_at) VALUES ($1, $2)", [id, new Date().toISOString()]);
          });
        }
      } finally {
        await conn.unsafe("SELECT pg_advisory_unlock($1, $2)", [...MIGRATION_LOCK]).catch(() => {});
      }
    } catch (e) {
      throw this.mapError(e);
    } finally {
      await conn.release();
    }
    this.known = ordered.map((o) => o.id);
  }

  async pendingMigrations(): Promise<string[]> {
    const exists = await this.get<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
    if (!exists?.t) return [...this.known];
    const done = new Set((await this.all<{ id: string }>("SELECT id FROM schema_migrations")).map((r) => r.id));
    return this.known.filter((id) => !done.has(id));
  }

  async ping(): Promise<void> {
    await this.query("SELECT 1", undefined);
  }

  async close(): Promise<void> {
    await this.sql.close({ timeout: 5 });
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}
