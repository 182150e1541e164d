/**
 * Opening the async storage from configuration: `SVC_STORAGE__URL=postgres://…` selects
 * PostgreSQL (pool of `SVC_STORAGE__POOL_SIZE`); unset, bun:sqlite at `SVC_STORAGE__PATH` — the
 * zero-setup default, no extra process. While domains are being converted, the composition root
 * passes the Db it already opened (`db`), so sync and async handles share one SQLite connection.
 */
import { Db } from "./db";
import { asyncStorageOver, type AsyncStorage } from "./async";
import { PostgresBackend, type PostgresOptions } from "./postgres";
import { SqliteBackend } from "./sqlite-async";

export interface StorageSettings extends Partial<Omit<PostgresOptions, "url">> {
  /** postgres:// URL; unset → SQLite */
  url?: string;
  /** SQLite file (or ":memory:") when no url */
  path: string;
  /** an already open SQLite Db to wrap instead of opening path (its opener closes it, not close()) */
  db?: Db;
}

export function isPostgresUrl(url: string | undefined): boolean {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}

export function openStorage(s: StorageSettings): AsyncStorage {
  if (s.url !== undefined && s.url !== "") {
    if (!isPostgresUrl(s.url)) throw new Error(`storage url must be postgres://… or postgresql://… (got "${s.url.replace(/\/\/[^@/]*@/, "//…@")}")`);
    return asyncStorageOver(new PostgresBackend({ ...s, url: s.url }));
  }
  return s.db ? asyncStorageOver(new SqliteBackend(s.db, false)) : asyncStorageOver(new SqliteBackend(new Db(s.path)));
}
