/**
 * `svc storage copy --to postgres://…`: move a single-node deployment's SQLite database
 * (SVC_STORAGE__PATH) into PostgreSQL (issue 23). The source is first brought to this build's
 * schema, the target is migrated by this build (under the advisory lock, so it is safe beside
 * running replicas), then every table is copied (src/storage/copy.ts: batches of
 * `INSERT … ON CONFLICT DO NOTHING`, so a second run adds nothing) and Memory's full-text rows are
 * rewritten into PostgreSQL's words. Prints `table source target` per table and a total; fails
 * (exit 1) when any count differs. The URL's password is never printed.
 *
 * The single node's secrets go with its data: sealed SSO client secrets open only with its SSO
 * secret key, pending invitation links are derived from its JWT secret. So the copy records their
 * fingerprints in the target's svc_secrets (core/secrets.ts: replicas given other values refuse to
 * start, naming the variable), and refuses before copying when the target's replicas already use
 * other ones. Its generated SAML service-provider key pair is stored there sealed, so the replicas
 * keep the certificate identity providers were given.
 *
 * Loaded only by this command (main.ts keeps --help and --version cheap).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ConfigError, type Config } from "./config";
import { Db } from "./storage/db";
import { openStorage, isPostgresUrl } from "./storage/open";
import { copyDatabase, CopyMismatchError, type TableCount } from "./storage/copy";
import { StorageUnavailableError, SchemaTooNewError } from "./storage/errors";
import type { AsyncStorage } from "./storage/async";
import { migrationSets } from "./schema";
import { normalizeCopiedText } from "./memory";
import { agreeOnSecrets, sharedSecretStore } from "./core/secrets";
import { SecretBox, canonicalSecretKey, resolveSecretKey } from "./identity/sso/secrets";
import { ExitError, NO_INPUT, UNAVAILABLE, redactUrl, scrubber } from "./cli-postgres";

export interface CopyOptions {
  to?: string;
  toSchema?: string;
  /** where the lines go (stdout) and the diagnostics (stderr) */
  out: (line: string) => void;
  err: (line: string) => void;
}

/**
 * svc_secrets belongs to the PostgreSQL deployment (fingerprints its replicas and this copy record);
 * a SQLite node keeps its secrets in files, so its table is empty and a count there cannot match.
 */
const TARGET_OWNED = new Set(["svc_secrets"]);

/** The secrets the single node runs with: configured, else the files it generated beside its database. */
function nodeSecrets(config: Config, database: string): { jwt?: string; ssoKey?: string; sp?: { privateKey: string; certificate: string } } {
  const dir = dirname(database);
  const file = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), "utf8") : undefined);
  const sso = config.identity.sso;
  const keyPem = file("sso-sp-key.pem");
  const certPem = file("sso-sp-cert.pem");
  return {
    jwt: config.auth.jwt_secret ?? file("jwt-secret")?.trim(),
    ssoKey: sso.secret_key ?? file("sso-secret-key")?.trim(),
    sp: !sso.sp_private_key && keyPem && certPem ? { privateKey: keyPem, certificate: certPem } : undefined,
  };
}

/** Pin the node's secrets on the target (refuses, ConfigError, when its replicas use others); carry its SAML SP key pair. */
async function carrySecrets(target: AsyncStorage, config: Config, database: string, err: (l: string) => void) {
  const node = nodeSecrets(config, database);
  const pinned: Record<string, string> = {};
  if (node.jwt) pinned.SVC_AUTH__JWT_SECRET = node.jwt;
  if (node.ssoKey) pinned.SVC_IDENTITY__SSO__SECRET_KEY = canonicalSecretKey(node.ssoKey);
  try {
    await agreeOnSecrets(target, pinned);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new ConfigError(
      `storage copy: the SQLite node's secret differs from the one the replicas of the target database use, and the copied data depends on it (SSO client secrets are sealed with SVC_IDENTITY__SSO__SECRET_KEY, invitation links derive from SVC_AUTH__JWT_SECRET); nothing was copied.\n${e.message}`,
    );
  }
  if (node.sp && node.ssoKey) {
    const box = new SecretBox(resolveSecretKey(node.ssoKey, database, () => {}));
    const stored = await sharedSecretStore(target, box).getOrCreate("saml_sp_key_pair", async () => JSON.stringify(node.sp));
    if ((JSON.parse(stored) as { certificate: string }).certificate !== node.sp.certificate)
      err("note: the target's replicas already sign SAML requests with another service-provider key pair; identity providers given this node's certificate need theirs (SP metadata)");
  }
  if (!node.jwt) err("note: this node has no JWT secret to carry (SVC_AUTH__JWT_SECRET is not set and there is no jwt-secret file beside its database): run the copy with the node's settings, or the replicas' secret will not match its tokens and invitation links");
  if (!node.ssoKey) err("note: this node has no SSO secret key to carry (SVC_IDENTITY__SSO__SECRET_KEY is not set and there is no sso-secret-key file beside its database)");
  const names = Object.keys(pinned);
  if (names.length) err(`the target's replicas must be started with this node's ${names.join(" and ")} (recorded as fingerprints; the values are not stored)`);
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
    // the target went away mid-way: rows already copied are kept, a new run copies the rest
    if (e instanceof StorageUnavailableError) throw new ExitError(`storage copy: the target database failed (run the copy again once it answers): ${message}`, UNAVAILABLE);
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
  const schema = opts.toSchema ?? config.storage.schema;
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
    // an offline bulk copy: a batch may take longer than a request should wait
    target = openStorage({ url, schema, path: "", poolSize: 2, queryTimeoutMs: 120_000 });
    const where = target.description;
    try {
      await target.ping();
      await target.migrate(sets);
    } catch (e) {
      if (e instanceof StorageUnavailableError) throw new ExitError(`storage copy: cannot use the target database: ${e.message}`, UNAVAILABLE);
      if (e instanceof SchemaTooNewError) throw new ExitError(`storage copy: ${e.message}`, 1);
      throw e;
    }
    await carrySecrets(target, config, database, opts.err);
    opts.err(`copying ${database} into ${where}`);
    opts.out(row("table", "source", "target"));
    let counts: TableCount[];
    try {
      counts = await copyDatabase(source, target, (c) => opts.out(row(c.table, c.source, c.target) + (TARGET_OWNED.has(c.table) ? "  (the target's own)" : "")));
    } catch (e) {
      if (!(e instanceof CopyMismatchError)) throw e;
      counts = e.counts;
      const differ = e.counts.filter((c) => c.source !== c.target && !(TARGET_OWNED.has(c.table) && c.source === 0));
      if (differ.length) {
        total(e.counts, opts);
        throw new ExitError(
          `storage copy: row counts differ in ${differ.length} table(s): ${differ.map((c) => `${c.table} (source ${c.source}, target ${c.target})`).join(", ")}.\n` +
            `Rows written to the SQLite database during the copy are copied by running it again; a target with more rows already held them.`,
          1,
        );
      }
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

/** the total over the copied tables (not the target's own) */
function total(counts: TableCount[], opts: CopyOptions) {
  const copied = counts.filter((c) => !TARGET_OWNED.has(c.table));
  opts.out(row("total", copied.reduce((n, c) => n + c.source, 0), copied.reduce((n, c) => n + c.target, 0)));
}
