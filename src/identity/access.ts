/**
 * The per-request check of principals (registered with core's Authenticator.addCheck):
 *  - `sub = "user:<id>"` (tokens that act for a user, e.g. minted by SSO sign-in): the user is
 *    loaded (cached for `user_cache_ms`, forgotten in-process on every change to the user, its
 *    assignments or roles, and never past the earliest expiry of its assignments); unknown,
 *    soft-deleted or SUSPENDED → 401 `authentication_error`; otherwise the principal carries the
 *    token's permissions ∪ those of the user's unexpired workspace-wide role assignments. A cached
 *    user is answered synchronously (no database, no promise); only a miss awaits the storage, and a
 *    load that a `forget` overtook is used for its own request but not cached.
 *  - `sub = "key:<id>"` on an access token exchanged for an API key: the key must still exist and
 *    be unrevoked (401 otherwise, like a suspended user's token); the key id is attached (`keyId`),
 *    so the key's team budget and analytics apply to the token like to the key. The answer is
 *    cached per key for `KEY_CACHE_MS` (5 s, as long as the API key memo of src/keys): a revocation
 *    in this process is forgotten at once (`forgetKey`), one by another process (the CLI) holds
 *    within 5 s.
 * Everything else passes untouched at the cost of two string prefix tests.
 */
import { LRUCache } from "lru-cache";
import { unauthenticated } from "../core/errors";
import type { Principal } from "../core/auth";
import type { ForTenant } from "../storage/scoped";
import type { KeyRegistry } from "./ports";
import type { RoleService } from "./roles/service";
import type { UserStore } from "./users/store";
import type { WallClock } from "./types";

export const USER_SUB = "user:";
const KEY_SUB = "key:";
/** how long a key's "still active" answer is believed (another process's revocation holds within it) */
export const KEY_CACHE_MS = 5_000;

interface Entry {
  /** wall-clock ms until which this answer holds */
  until: number;
  /** why the user is refused, or undefined */
  refuse?: string;
  permissions: readonly string[];
}

export class AccessCheck {
  private readonly users = new LRUCache<string, Entry>({ max: 50_000 });
  private readonly keys = new LRUCache<string, boolean>({ max: 50_000, ttl: KEY_CACHE_MS });
  /** the enriched principal per verified principal (those are memoised), rebuilt when its entry changes */
  private readonly merged = new WeakMap<Principal, { entry: Entry; principal: Principal }>();
  /** the principal with its keyId, per verified principal */
  private readonly withKey = new WeakMap<Principal, Principal>();
  /** bumped by every forget: a load that started before one is not cached */
  private generation = 0;

  constructor(
    private readonly userStore: ForTenant<UserStore>,
    private readonly roles: RoleService,
    private readonly keyRegistry: KeyRegistry,
    private readonly clock: WallClock,
    private readonly ttlMs: number,
  ) {}

  check = (p: Principal): Principal | void | Promise<Principal> => {
    const sub = p.sub;
    if (sub.startsWith(USER_SUB)) return this.user(p, sub.slice(USER_SUB.length));
    if (p.via === "jwt" && p.keyId === undefined && sub.startsWith(KEY_SUB)) return this.key(p, sub.slice(KEY_SUB.length));
  };

  /** Forget what is cached about one user, or about every user (a role changed). */
  forget(tenantId?: string, userId?: string) {
    this.generation++;
    if (tenantId !== undefined && userId !== undefined) this.users.delete(`${tenantId}\u0000${userId}`);
    else this.users.clear();
  }

  /** Forget the cached state of one key (it was revoked), or of every key (none given). */
  forgetKey(tenantId?: string, keyId?: string) {
    if (tenantId !== undefined && keyId !== undefined) this.keys.delete(`${tenantId}\u0000${keyId}`);
    else this.keys.clear();
  }

  private user(p: Principal, userId: string): Principal | Promise<Principal> {
    const cacheKey = `${p.tenantId}\u0000${userId}`;
    const nowMs = this.clock();
    const e = this.users.get(cacheKey);
    if (e && nowMs < e.until) return this.apply(p, e);
    const generation = this.generation;
    return this.load(p.tenantId, userId, nowMs).then((loaded) => {
      if (generation === this.generation) this.users.set(cacheKey, loaded);
      return this.apply(p, loaded);
    });
  }

  private apply(p: Principal, e: Entry): Principal {
    if (e.refuse) throw unauthenticated(e.refuse);
    const m = this.merged.get(p);
    if (m && m.entry === e) return m.principal;
    const principal: Principal = { ...p, permissions: new Set([...p.permissions, ...e.permissions]) };
    this.merged.set(p, { entry: e, principal });
    return principal;
  }

  private async load(tenantId: string, userId: string, nowMs: number): Promise<Entry> {
    const until = nowMs + this.ttlMs;
    const status = await this.userStore(tenantId).statusOf(userId);
    if (!status) return { until, refuse: "the token's user does not exist in this workspace", permissions: [] };
    if (status.deleted) return { until, refuse: "the token's user was deleted", permissions: [] };
    if (status.status !== "ACTIVE") return { until, refuse: "the token's user is suspended", permissions: [] };
    const eff = await this.roles.effective(tenantId, userId);
    return { until: Math.min(until, eff.validUntil), permissions: eff.permissions };
  }

  private key(p: Principal, keyId: string): Principal {
    const cacheKey = `${p.tenantId}\u0000${keyId}`;
    let active = this.keys.get(cacheKey);
    if (active === undefined) {
      const record = this.keyRegistry.get(p.tenantId, keyId);
      active = record !== undefined && record.revokedAt === null;
      this.keys.set(cacheKey, active);
    }
    if (!active) throw unauthenticated("the token's API key was revoked or does not exist");
    let out = this.withKey.get(p);
    if (!out) this.withKey.set(p, (out = { ...p, keyId }));
    return out;
  }
}
