/**
 * API keys: "svc_" + 32 random bytes (base64url); only their SHA-256 is stored — a fast hash
 * suffices because the key has 256 bits of entropy. Verified keys are memoised for 5 s, so a
 * revocation by another process (replica) takes effect within 5 s (in this process: at once).
 *
 * The store is async (SQLite or PostgreSQL); `verify` stays synchronous for a memoised key — the
 * hot path of every request with an API key touches no database and makes no promise — and goes
 * to the database only for a key not seen in the last 5 s (one lookup per key at a time).
 */
import { notFound, unauthenticated } from "../core/errors";
import { ExpiringMemo } from "../core/expiring-memo";
import { uuid, now, randomToken } from "../core/ids";
import type { CredentialVerifier, Principal } from "../core/auth";
import type { keyStores, ApiKeyRecord } from "./store";

export type { ApiKeyRecord } from "./store";

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");
export const API_KEY_PREFIX = "svc_";
export const isApiKey = (cred: string) => cred.startsWith(API_KEY_PREFIX);

/** how long a verified key is believed (another process's revocation holds within it), and how many are remembered */
const MEMO_MS = 5_000;
const MEMO_MAX = 10_000;

export class ApiKeyService implements CredentialVerifier {
  /** verified keys for MEMO_MS (monotonic clock; a key forgotten is looked up again) */
  private readonly memo = new ExpiringMemo<Principal>(MEMO_MAX);
  /** lookups in flight, so a burst of requests with one unseen key makes one */
  private readonly pending = new Map<string, Promise<Principal>>();
  /** bumped by every revocation: a lookup that started before it does not memoise what it read */
  private generation = 0;
  constructor(private readonly stores: ReturnType<typeof keyStores>) {}

  accepts(credential: string): boolean {
    return isApiKey(credential);
  }

  async create(tenantId: string, name: string, permissions: string[] = []): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = API_KEY_PREFIX + randomToken(32);
    const record: ApiKeyRecord = { id: uuid(), tenantId, name, prefix: key.slice(0, 12), permissions, createdAt: now(), lastUsedAt: null, revokedAt: null };
    await this.stores.forTenant(tenantId).insert(record, sha256(key));
    return { key, record };
  }

  list(tenantId: string): Promise<ApiKeyRecord[]> {
    return this.stores.forTenant(tenantId).list();
  }

  get(tenantId: string, id: string): Promise<ApiKeyRecord | undefined> {
    return this.stores.forTenant(tenantId).get(id);
  }

  async revoke(tenantId: string, id: string): Promise<void> {
    const revoked = await this.stores.forTenant(tenantId).revoke(id, now());
    this.forgetVerified();
    if (!revoked) throw notFound("api key");
  }

  /** Forget every verified key (one was revoked, maybe by another replica), and what lookups in flight would memoise. */
  forgetVerified() {
    this.generation++;
    this.memo.clear();
    this.pending.clear();
  }

  /** A memoised key answers at once (no promise); any other is looked up. Throws/rejects 401. */
  verify(key: string): Principal | Promise<Principal> {
    const hit = this.memo.get(key, performance.now());
    if (hit !== undefined) return hit;
    let p = this.pending.get(key);
    if (!p) {
      p = this.lookup(key).finally(() => {
        if (this.pending.get(key) === p) this.pending.delete(key);
      });
      this.pending.set(key, p);
    }
    return p;
  }

  private async lookup(key: string): Promise<Principal> {
    const generation = this.generation;
    const row = await this.stores.byHash(sha256(key));
    if (!row || row.revokedAt) throw unauthenticated("invalid API key");
    await this.stores.forTenant(row.tenantId).touch(row.id, now());
    const principal: Principal = { tenantId: row.tenantId, sub: `key:${row.id}`, permissions: new Set(row.permissions), via: "api_key", keyId: row.id };
    if (generation === this.generation) this.memo.set(key, principal, performance.now() + MEMO_MS);
    return principal;
  }
}
