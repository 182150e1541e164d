/**
 * `svc storage copy --to postgres://…`: move a single-node deployment's SQLite database
 * (SVC_STORAGE__PATH) into PostgreSQL (issue 23). The source is first brought to this build's
 * schema, the target is migrated by this build (under the advisory lock, so it is safe beside
 * running replicas), then every table is copied (src/storage/copy.ts: batches of
 * `INSERT … ON CONFLICT DO NOTHING`, so a second run adds nothing) and Memory's full-text rows are
 * rewritten into PostgreSQL's words. Prints `table source target` per table and a total; fails
 * (exit 1) when any count differs. The URL's password is never printed.
 *
 * Loaded only by this command (main.ts keeps --help and --version cheap).
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError, type Config } from "./config";
import { Db } from "./storage/db";
import { openStorage, isPostgresUrl } from "./storage/open";
import { copyDatabase, CopyMismatchError, type TableCount } from "./storage/copy";
import { StorageUnavailableError, SchemaTooNewError } from "./storage/errors";
import type { AsyncStorage } from "./storage/async";
import { migrationSets } from "./schema";
import { normalizeCopiedText } from "./memory";

/** An error that names the process's exit status (sysexits.h); main.ts exits with it. */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** 66 EX_NOINPUT, 69 EX_UNAVAILABLE */
const NO_INPUT = 66;
const UNAVAILABLE = 69;

export interface CopyOptions {
  to?: string;
  toSchema?: string;
  /** where the lines go (stdout) and the diagnostics (stderr) */
  out: (line: string) => void;
  err: (line: string) => void;
}

/** The URL with its password replaced (never printed as given). */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, "$1:***@");
}

/** Every way a message could carry the URL's password, replaced. */
function scrubber(url: string): (s: string) => string {
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {}
  const raw = /^[a-z][a-z0-9+.-]*:\/\/[^:/@]*:([^@/]*)@/i.exec(url)?.[1] ?? "";
  const secrets = [...new Set([password, raw].filter((s) => s.length > 0))];
  return (s) => {
    let out = s.split(url).join(redactUrl(url));
    for (const p of secrets) out = out.split(p).join("***");
    return out;
  };
}

const row = (table: string, source: number | string, target: number | string) => `${table.padEnd(26)}  ${String(source).padStart(9)}  ${String(target).padStart(9)}`;

/** `svc storage copy`: returns normally when every count is equal, throws otherwise (ExitError/ConfigError carry the status). */
export async function storageCopy(config: Config, opts: CopyOptions): Promise<TableCount[]> {
  const url = opts.to ?? config.storage.url;
  if (!url) throw new ConfigError(`storage copy: --to postgres://USER:PASSWORD@HOST:PORT/DATABASE is required (or SVC_STORAGE__URL): svc storage --help`);
  const scrub = scrubber(url);
  try {
    return await copy(config, url, opts);
  } catch (e) {
    const message = scrub(e instanceof Error ? e.message : String(e));
    if (e instanceof ConfigError) throw new ConfigError(message);
    throw new ExitError(message, e instanceof ExitError ? e.exitCode : 1);
  }
}

async function copy(config: Config, url: string, opts: CopyOptions): Promise<TableCount[]> {
  if (!isPostgresUrl(url)) throw new ConfigError(`storage copy: --to must be a postgres:// or postgresql:// URL (got "${redactUrl(url)}")`);
  try {
    new URL(url);
  } catch {
    throw new ConfigError(`storage copy: --to is not a valid URL ("${redactUrl(url)}")`);
  }
  const schema = opts.toSchema ?? (config.storage as { schema?: string }).schema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new ConfigError(`storage copy: --to-schema must be a lower-case identifier (letters, digits, _), got "${schema}"`);

  const path = config.storage.path;
  const database = path === ":memory:" ? path : resolve(path);
  if (database === ":memory:" || !existsSync(database))
    throw new ExitError(
      `storage copy: no svc database at ${database} (SVC_STORAGE__PATH=${path}, resolved against ${process.cwd()}).\n` +
        `Set SVC_STORAGE__PATH to the gateway's SQLite database (an absolute path); nothing was copied.`,
      NO_INPUT,
    );

  const sets = migrationSets();
  const source = new Db(database);
  let target: AsyncStorage | undefined;
  try {
    // the source as this build reads it: an older file gets this build's tables and columns first
    source.migrate(sets);
    target = openStorage({ url, schema, path: "", poolSize: 2 });
    const where = target.description;
    try {
      await target.ping();
      await target.migrate(sets);
    } catch (e) {
      if (e instanceof StorageUnavailableError) throw new ExitError(`storage copy: cannot use the target database: ${e.message}`, UNAVAILABLE);
      if (e instanceof SchemaTooNewError) throw new ExitError(`storage copy: ${e.message}`, 1);
      throw e;
    }
    opts.err(`copying ${database} into ${where}`);
    opts.out(row("table", "source", "target"));
    let counts: TableCount[];
    try {
      counts = await copyDatabase(source, target, (c) => opts.out(row(c.table, c.source, c.target)));
    } catch (e) {
      if (e instanceof CopyMismatchError) {
        total(e.counts, opts);
        const differ = e.counts.filter((c) => c.source !== c.target);
        throw new ExitError(
          `storage copy: row counts differ in ${differ.length} table(s): ${differ.map((c) => `${c.table} (source ${c.source}, target ${c.target})`).join(", ")}.\n` +
            `Rows written to the SQLite database during the copy are copied by running it again; a target with more rows already held them.`,
          1,
        );
      }
      if (e instanceof StorageUnavailableError) throw new ExitError(`storage copy: the target database failed during the copy (run it again: rows already copied are kept): ${e.message}`, UNAVAILABLE);
      throw e;
    }
    total(counts, opts);
    // Memory's copied full-text rows hold FTS5's words: rewrite them into PostgreSQL's (idempotent)
    const rewritten = await normalizeCopiedText(target);
    opts.err(`every table's rows are in ${where}${rewritten ? ` (${rewritten} memory search row(s) rewritten for PostgreSQL)` : ""}`);
    return counts;
  } finally {
    await target?.close().catch(() => {});
    source.close();
  }
}

function total(counts: TableCount[], opts: CopyOptions) {
  opts.out(row("total", counts.reduce((n, c) => n + c.source, 0), counts.reduce((n, c) => n + c.target, 0)));
}
