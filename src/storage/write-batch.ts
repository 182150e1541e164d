/**
 * Recording a write batch (AsyncStorage.writeBatch) to run elsewhere: the handles given to the
 * batch's function record each `run` (tenant scoping checked by AsyncTenantDb as always) as JSON
 * text of its values at the moment it is called, so a params object the caller reuses afterwards does not change
 * what was recorded. Reads and transactions reject: a batch may run on another connection, where
 * nothing it could read would be current.
 */
import type { AsyncSql, Backend, BatchWriter, Changes, Params, Values } from "./async";
import { AsyncTenantDb } from "./async";
import type { Dialect } from "./dialect";
import { toPositional } from "./named-params";

const NO_CHANGES: Changes = { changes: 0 };

/** only these survive JSON unchanged (NaN, ±Infinity, -0, bigint and byte arrays do not) */
const jsonSafe = (v: unknown) => v === null || typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v) && !Object.is(v, -0));

const noRead = (): Promise<never> => Promise.reject(new Error("a write batch only writes: get, all and tx are not available inside it (storage/async.ts writeBatch)"));

/** the global handle of a write batch: `run` only */
const writeOnlySql = (run: AsyncSql["run"]): AsyncSql => ({ get: noRead, all: noRead, run, tx: noRead });

/** a statement's values (in its parameter order) as named parameters */
function named(sql: string, values: readonly unknown[]): Params {
  const names = toPositional(sql).names;
  const params: Params = {};
  for (let i = 0; i < names.length; i++) params[names[i]!] = values[i] as Params[string];
  return params;
}

/**
 * The handles of a write batch run directly on `backend` (inside a transaction the caller opened):
 * `run` goes through, reads reject, as they do in a recorded batch (the same contract on every backend).
 */
export function writeOnly(backend: Backend): BatchWriter {
  const through: Backend = {
    dialect: backend.dialect,
    description: backend.description,
    run: (s, p) => backend.run(s, p),
    runValues: (s, v) => backend.runValues(s, v),
    get: noRead,
    all: noRead,
    tx: noRead,
    writeBatch: noRead,
    migrate: noRead,
    pendingMigrations: noRead,
    ping: () => backend.ping(),
    close: () => Promise.resolve(),
  };
  const global = writeOnlySql((s, p) => backend.run(s, p));
  return { tenant: (tenantId) => new AsyncTenantDb(through, tenantId), global: () => global };
}

export class BatchRecorder implements Backend {
  readonly description = "write batch";
  /**
   * `[[k, [value, …]], …` (text() closes it and adds the texts): statement k of `texts` with its values
   * in the order its `$name`s first appear, which is the order SQLite numbers them — a few bytes per
   * value instead of the names of a many-row INSERT's 1,500 parameters, and each text sent once
   */
  private json = "[";
  private count = 0;
  private readonly texts = new Map<string, number>();
  /** set once a statement's parameters cannot travel as JSON: the batch then runs on this thread */
  private copies: [string, Params][] | undefined;
  readonly writer: BatchWriter;

  constructor(readonly dialect: Dialect) {
    const global = writeOnlySql((s, p) => this.run(s, p));
    this.writer = { tenant: (tenantId) => new AsyncTenantDb(this, tenantId), global: () => global };
  }

  get empty(): boolean {
    return this.count === 0;
  }

  /** the batch as `{"texts": [sql, …], "stmts": [[k, [value, …]], …]}`, or undefined when it must run on this thread (local()) */
  text(): string | undefined {
    return this.copies ? undefined : `{"texts":${JSON.stringify([...this.texts.keys()])},"stmts":${this.json}]}`;
  }

  /** the statements with their named parameters, to run here */
  local(): [string, Params][] {
    if (this.copies) return this.copies;
    const texts = [...this.texts.keys()];
    return (JSON.parse(`${this.json}]`) as [number, (string | number | boolean | null)[]][]).map(([k, values]) => [texts[k]!, named(texts[k]!, values)]);
  }

  run(sql: string, params?: Params): Promise<Changes> {
    const p = params ?? {};
    let values: unknown[] | undefined;
    if (!this.copies) {
      const names = toPositional(sql).names;
      values = new Array(names.length);
      for (let i = 0; i < names.length; i++) {
        const v = p[names[i]!];
        if (!jsonSafe(v)) {
          // (a missing parameter too: here it fails as it would have, on this thread)
          this.copies = this.local();
          break;
        }
        values[i] = v;
      }
    }
    if (this.copies) {
      this.copies.push([sql, { ...p }]);
      this.count++;
    } else this.record(sql, values!);
    return Promise.resolve(NO_CHANGES);
  }

  runValues(sql: string, values: Values): Promise<Changes> {
    if (!this.copies) {
      for (let i = 0; i < values.length; i++) {
        if (jsonSafe(values[i])) continue;
        this.copies = this.local();
        break;
      }
    }
    if (this.copies) {
      this.copies.push([sql, named(sql, values)]);
      this.count++;
    } else this.record(sql, values);
    return Promise.resolve(NO_CHANGES);
  }

  /** a statement whose values travel as JSON */
  private record(sql: string, values: readonly unknown[]) {
    let k = this.texts.get(sql);
    if (k === undefined) this.texts.set(sql, (k = this.texts.size));
    this.json += `${this.count === 0 ? "" : ","}[${k},${JSON.stringify(values)}]`;
    this.count++;
  }

  get<T>(): Promise<T | undefined> {
    return noRead();
  }
  all<T>(): Promise<T[]> {
    return noRead();
  }
  tx<T>(): Promise<T> {
    return noRead();
  }
  migrate(): Promise<void> {
    return noRead();
  }
  pendingMigrations(): Promise<string[]> {
    return noRead();
  }
  writeBatch(): Promise<void> {
    return noRead();
  }
  ping(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}
