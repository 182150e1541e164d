/**
 * API keys: "svc_" + 32 random bytes (base64url); only their SHA-256 is stored — a fast hash
 * suffices because the key has 256 bits of entropy. Verified keys are memoised for 5 s, so a
 * revocation by another process takes effect within 5 s (in this process: at once).
 */
import { LRUCache } from "lru-cache";
import { notFound, unauthenticated } from "../core/errors";
import { uuid, now, randomToken } from "../core/ids";
import type { CredentialVerifier, Principal } from "../core/auth";
import type { keyStores, ApiKeyRecord } from "./store";

export type { ApiKeyRecord } from "./store";

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");
export const API_KEY_PREFIX = "svc_";
export const isApiKey = (cred: string) => cred.startsWith(API_KEY_PREFIX);

export class ApiKeyService implements CredentialVerifier {
  private readonly memo = new LRUCache<string, Principal>({ max: 10_000, ttl: 5_000 });
  constructor(private readonly stores: ReturnType<typeof keyStores>) {}

  accepts(credential: string): boolean {
    return isApiKey(credential);
  }

  create(tenantId: string, name: string, permissions: string[] = []): { key: string; record: ApiKeyRecord } {
    const key = API_KEY_PREFIX + randomToken(32);
    const record: ApiKeyRecord = { id: uuid(), tenantId, name, prefix: key.slice(0, 12), permissions, createdAt: now(), lastUsedAt: null, revokedAt: null };
    this.stores.forTenant(tenantId).insert(record, sha256(key));
    return { key, record };
  }

  list(tenantId: string): ApiKeyRecord[] {
    return this.stores.forTenant(tenantId).list();
  }

  get(tenantId: string, id: string): ApiKeyRecord | undefined {
    return this.stores.forTenant(tenantId).get(id);
  }

  /** Forget every verified key (one was revoked, maybe by another replica). */
  forgetVerified() {
    this.memo.clear();
  }

  revoke(tenantId: string, id: string): void {
    if (!this.stores.forTenant(tenantId).revoke(id, now())) throw notFound("api key");
    this.memo.clear();
  }

  verify(key: string): Principal {
    const hit = this.memo.get(key);
    if (hit) return hit;
    const row = this.stores.byHash(sha256(key));
    if (!row || row.revokedAt) throw unauthenticated("invalid API key");
    this.stores.forTenant(row.tenantId).touch(row.id, now());
    const principal: Principal = { tenantId: row.tenantId, sub: `key:${row.id}`, permissions: new Set(row.permissions), via: "api_key", keyId: row.id };
    this.memo.set(key, principal);
    return principal;
  }
}
