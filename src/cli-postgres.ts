/**
 * What the command line needs on a PostgreSQL database (SVC_STORAGE__URL): its exit statuses, the
 * URL with its password hidden, and `svc token`'s check that SVC_AUTH__JWT_SECRET is the secret the
 * replicas of that database run with (the fingerprint they recorded in svc_secrets, core/secrets.ts).
 * Small on purpose: `svc token` loads this and the storage layer, not the gateway.
 */
import type { Config } from "./config";
import { ConfigError } from "./core/config";
import { fingerprint } from "./core/secrets";
import { openStorage } from "./storage/open";

/** An error that names the process's exit status (sysexits.h); main.ts exits with it. */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** 66 EX_NOINPUT: the state the command needs is not where the settings point */
export const NO_INPUT = 66;
/** 69 EX_UNAVAILABLE: the database cannot be reached or refuses the login */
export const UNAVAILABLE = 69;

/** The URL with its password replaced (never printed as given). */
export function redactUrl(url: string): string {
  // up to the LAST @ of the authority: a password with a raw @ in it is hidden whole
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^/]*@/i, "$1:***@");
}

/** A function that replaces every way a message could carry the URL's password. */
export function scrubber(url: string): (s: string) => string {
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {}
  const raw = /^[a-z][a-z0-9+.-]*:\/\/[^:/@]*:([^/]*)@/i.exec(url)?.[1] ?? "";
  const secrets = [...new Set([password, raw].filter((s) => s.length > 0))];
  return (s) => {
    let out = s.split(url).join(redactUrl(url));
    for (const p of secrets) out = out.split(p).join("***");
    return out;
  };
}

/**
 * `svc token` on PostgreSQL: the JWT secret comes from configuration only (no data directory is
 * shared by replicas), and must be the one the replicas recorded — a token signed with another
 * would be refused by every replica. A database no replica has started on yet has nothing to
 * compare with: the replicas will record (or refuse) the value they are given.
 */
export async function checkSharedJwtSecret(config: Config): Promise<void> {
  const name = "SVC_AUTH__JWT_SECRET";
  const secret = config.auth.jwt_secret;
  if (!secret)
    throw new ConfigError(
      `token: SVC_STORAGE__URL is set, and replicas on a shared database take the JWT secret from configuration only: set ${name} to the value the gateway's replicas run with; nothing was signed.`,
    );
  const storage = openStorage({ url: config.storage.url, schema: config.storage.schema, path: "", poolSize: 1 });
  try {
    const db = storage.global("svc token: the JWT secret's fingerprint the replicas recorded");
    const table = await db.get<{ t: string | null }>("SELECT to_regclass('svc_secrets')::text AS t");
    if (!table?.t) return;
    const row = await db.get<{ fingerprint: string | null }>("SELECT fingerprint FROM svc_secrets WHERE name = $name", { name });
    if (row?.fingerprint && row.fingerprint !== (await fingerprint(name, secret)))
      throw new ConfigError(`token: ${name} differs from the secret the replicas of ${storage.description} run with: they would refuse this token; nothing was signed.`);
  } catch (e) {
    const { StorageUnavailableError } = await import("./storage/errors");
    if (e instanceof StorageUnavailableError) throw new ExitError(`token: cannot check ${name} against the database: ${scrubber(config.storage.url!)(e.message)}`, UNAVAILABLE);
    throw e;
  } finally {
    await storage.close().catch(() => {});
  }
}
