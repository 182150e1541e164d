/**
 * Secrets replicas must agree on (issue 23). On a single node svc generates what is not configured
 * into its data directory (the JWT secret, the SSO secret key, the SAML SP key pair). Replicas on
 * one shared database cannot: each would generate its own, and a token minted by one would fail on
 * another. So on a shared database (docs/decisions.md, "Durable state on PostgreSQL"):
 *
 *   - the JWT secret and the SSO secret key are required from configuration (the composition root
 *     refuses to start without them), and the first replica records a fingerprint of each in
 *     `svc_secrets`; a replica configured with a different value refuses to start, naming the
 *     variable — two replicas never serve with different secrets;
 *   - key material svc generates itself (the SAML SP key pair) is created once, by whichever replica
 *     needs it first, and stored sealed (AES-256-GCM under the SSO secret key) in the same table;
 *     every replica reads that one.
 *
 * A fingerprint is scrypt(secret) with a per-name salt: it tells equal from different without being
 * a usable hash of a short secret.
 */
import { scrypt } from "node:crypto";
import type { AsyncStorage } from "../storage/async";
import type { Migration } from "../storage/migrations";
import { ConfigError } from "./config";

export const CORE_MIGRATIONS: readonly Migration[] = [
  {
    id: "0001_secrets",
    up: "CREATE TABLE IF NOT EXISTS svc_secrets (name TEXT PRIMARY KEY, fingerprint TEXT, sealed TEXT, created_at TEXT NOT NULL)",
  },
];

const REASON = "instance-wide secrets every replica must share (not tenant data)";

export function fingerprint(name: string, secret: string): Promise<string> {
  return new Promise((resolve, reject) =>
    scrypt(secret, `svc secret fingerprint/${name}`, 32, { N: 16384, r: 8, p: 1 }, (e, key) => (e ? reject(e) : resolve(key.toString("hex")))),
  );
}

/**
 * Record each configured secret's fingerprint (first replica), or check it against the recorded one.
 * `secrets`: variable name (as the operator sets it) → value. Throws ConfigError on a mismatch.
 */
export async function agreeOnSecrets(storage: AsyncStorage, secrets: Record<string, string>): Promise<void> {
  const db = storage.global(REASON);
  for (const [name, value] of Object.entries(secrets)) {
    const fp = await fingerprint(name, value);
    await db.run("INSERT INTO svc_secrets (name, fingerprint, created_at) VALUES ($name, $fp, $at) ON CONFLICT (name) DO NOTHING", { name, fp, at: new Date().toISOString() });
    const row = await db.get<{ fingerprint: string | null; created_at: string }>("SELECT fingerprint, created_at FROM svc_secrets WHERE name = $name", { name });
    if (row?.fingerprint !== fp)
      throw new ConfigError(
        `${name} differs from the value the replicas of this database use (recorded ${row?.created_at ?? "earlier"}): every replica must be given the same ${name}. ` +
          `To change it on purpose, stop every replica, DELETE FROM svc_secrets WHERE name = '${name}', and start them with the new value.`,
      );
  }
}

/** A value created once for all replicas and stored sealed (identity's SAML SP key pair). */
export interface SharedSecretStore {
  /** the stored value of `name`, or `create()`'s, stored by whichever replica comes first */
  getOrCreate(name: string, create: () => Promise<string>): Promise<string>;
}

/** what seals a stored value and opens it again (identity's SecretBox), the value's name bound in */
export interface Sealer {
  seal(plain: string, boundTo: string): string;
  open(sealed: string, boundTo: string): string;
}

export function sharedSecretStore(storage: AsyncStorage, box: Sealer): SharedSecretStore {
  const db = storage.global(REASON);
  const read = async (name: string) => (await db.get<{ sealed: string | null }>("SELECT sealed FROM svc_secrets WHERE name = $name", { name }))?.sealed ?? undefined;
  return {
    async getOrCreate(name, create) {
      const found = await read(name);
      if (found) return box.open(found, name);
      const sealed = box.seal(await create(), name);
      await db.run("INSERT INTO svc_secrets (name, sealed, created_at) VALUES ($name, $sealed, $at) ON CONFLICT (name) DO NOTHING", { name, sealed, at: new Date().toISOString() });
      // another replica may have won the race: everyone uses the stored one
      return box.open((await read(name))!, name);
    },
  };
}
