/**
 * Authentication and permissions.
 * - Access tokens: JWT, HS256 with auth.jwt_secret, or RS256/ES256 from auth.jwks_url.
 *   Claims: tenant_id (required), sub, permissions (string[]), exp (required), iat.
 * - API keys: "svc_" + 32 random bytes (base64url); only their SHA-256 is stored.
 * - The gateway credential may arrive wherever a provider SDK puts its key
 *   (Authorization: Bearer, x-api-key, x-goog-api-key, ?key=).
 * Verified credentials are memoised (tokens until exp, API keys for a few seconds so a
 * revocation by another process takes effect quickly; in-process revocation is immediate).
 */
import { SignJWT, jwtVerify, createRemoteJWKSet, type JWTPayload } from "jose";
import { LRUCache } from "lru-cache";
import { existsSync, readFileSync, writeFileSync, mkdirSync, chmodSync } from "node:fs";
import { dirname, join } from "node:path";
import { ApiError, forbidden, unauthenticated, notFound } from "./errors";
import { uuid, now, randomToken } from "./ids";
import type { Db } from "../storage/db";
import type { Config } from "./config";

export const PERMISSIONS = ["ViewMetrics", "ManageConfig", "ManageKeys", "ViewKeys", "ViewLogs", "WorkspaceAdmin"] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface Principal {
  tenantId: string;
  sub: string;
  permissions: ReadonlySet<string>;
  via: "jwt" | "api_key";
  keyId?: string;
}

export function hasPermission(p: Principal, perm: Permission): boolean {
  return p.permissions.has("WorkspaceAdmin") || p.permissions.has(perm);
}

export function requirePermission(p: Principal, perm: Permission) {
  if (!hasPermission(p, perm)) throw forbidden(`missing permission ${perm}`);
}

export function parsePermissions(list: string | string[] | undefined): Permission[] {
  const arr = typeof list === "string" ? list.split(",").map((s) => s.trim()).filter(Boolean) : list ?? [];
  for (const p of arr) if (!PERMISSIONS.includes(p as Permission)) throw new Error(`unknown permission "${p}" (one of ${PERMISSIONS.join(", ")})`);
  return arr as Permission[];
}

/** The secret: configured, or generated once and kept beside the database (with a warning). */
export function resolveJwtSecret(cfg: Config, warn: (msg: string) => void): string {
  if (cfg.auth.jwt_secret) return cfg.auth.jwt_secret;
  if (cfg.storage.path === ":memory:") {
    warn("SVC_AUTH__JWT_SECRET is not set; using an ephemeral secret for the in-memory database");
    return randomToken(32);
  }
  const file = join(dirname(cfg.storage.path), "jwt-secret");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomToken(32);
  writeFileSync(file, secret + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  warn(`SVC_AUTH__JWT_SECRET is not set; generated one and stored it in ${file}`);
  return secret;
}

export class TokenService {
  private readonly key: Uint8Array;
  private readonly jwks?: ReturnType<typeof createRemoteJWKSet>;
  private readonly memo = new LRUCache<string, Principal>({ max: 10_000, ttlAutopurge: false });

  constructor(secret: string, jwksUrl?: string, readonly ttlSecs = 86_400) {
    this.key = new TextEncoder().encode(secret);
    if (jwksUrl) this.jwks = createRemoteJWKSet(new URL(jwksUrl));
  }

  async sign(claims: { tenantId: string; sub?: string; permissions?: string[] }, ttlSecs = this.ttlSecs): Promise<string> {
    return new SignJWT({ tenant_id: claims.tenantId, permissions: claims.permissions ?? [] })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(claims.sub ?? claims.tenantId)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSecs)
      .sign(this.key);
  }

  async verify(token: string): Promise<Principal> {
    const hit = this.memo.get(token);
    if (hit) return hit;
    let payload: JWTPayload;
    try {
      const header = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")) as { alg?: string };
      if (header.alg === "HS256") payload = (await jwtVerify(token, this.key, { algorithms: ["HS256"] })).payload;
      else if (this.jwks) payload = (await jwtVerify(token, this.jwks, { algorithms: ["RS256", "ES256"] })).payload;
      else throw new Error("unsupported algorithm");
    } catch (e) {
      const code = (e as { code?: string }).code;
      throw unauthenticated(code === "ERR_JWT_EXPIRED" ? "access token expired" : "invalid access token");
    }
    if (typeof payload.tenant_id !== "string" || payload.tenant_id.length === 0) throw unauthenticated("access token has no tenant_id");
    if (typeof payload.exp !== "number") throw unauthenticated("access token has no exp");
    const perms = Array.isArray(payload.permissions) ? payload.permissions.filter((p): p is string => typeof p === "string") : [];
    const principal: Principal = { tenantId: payload.tenant_id, sub: payload.sub ?? payload.tenant_id, permissions: new Set(perms), via: "jwt" };
    this.memo.set(token, principal, { ttl: Math.max(1, payload.exp * 1000 - Date.now()) });
    return principal;
  }
}

export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  prefix: string;
  permissions: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");
export const API_KEY_PREFIX = "svc_";

export class ApiKeyService {
  private readonly memo = new LRUCache<string, Principal>({ max: 10_000, ttl: 5_000 });
  constructor(private readonly db: Db) {}

  create(tenantId: string, name: string, permissions: string[] = []): { key: string; record: ApiKeyRecord } {
    const key = API_KEY_PREFIX + randomToken(32);
    const record: ApiKeyRecord = {
      id: uuid(),
      tenantId,
      name,
      prefix: key.slice(0, 12),
      permissions,
      createdAt: now(),
      lastUsedAt: null,
      revokedAt: null,
    };
    this.db.run(
      `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, permissions, created_at) VALUES ($id, $tenant, $name, $prefix, $hash, $perms, $at)`,
      { id: record.id, tenant: tenantId, name, prefix: record.prefix, hash: sha256(key), perms: JSON.stringify(permissions), at: record.createdAt },
    );
    return { key, record };
  }

  list(tenantId: string): ApiKeyRecord[] {
    return this.db
      .all<any>(`SELECT * FROM api_keys WHERE tenant_id = $tenant ORDER BY created_at`, { tenant: tenantId })
      .map(toRecord);
  }

  revoke(tenantId: string, id: string): void {
    const r = this.db.run(`UPDATE api_keys SET revoked_at = $at WHERE id = $id AND tenant_id = $tenant AND revoked_at IS NULL`, {
      at: now(),
      id,
      tenant: tenantId,
    });
    if (r.changes === 0) throw notFound("api key");
    this.memo.clear();
  }

  verify(key: string): Principal {
    const hit = this.memo.get(key);
    if (hit) return hit;
    const row = this.db.get<any>(`SELECT * FROM api_keys WHERE key_hash = $hash`, { hash: sha256(key) });
    if (!row || row.revoked_at) throw unauthenticated("invalid API key");
    this.db.run(`UPDATE api_keys SET last_used_at = $at WHERE id = $id`, { at: now(), id: row.id });
    const principal: Principal = {
      tenantId: row.tenant_id,
      sub: `key:${row.id}`,
      permissions: new Set(JSON.parse(row.permissions)),
      via: "api_key",
      keyId: row.id,
    };
    this.memo.set(key, principal);
    return principal;
  }
}

function toRecord(row: any): ApiKeyRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    prefix: row.prefix,
    permissions: JSON.parse(row.permissions),
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}

export const isApiKey = (cred: string) => cred.startsWith(API_KEY_PREFIX);
const looksLikeJwt = (cred: string) => cred.split(".").length === 3;
/** Whether a string is shaped like a gateway credential (not proof that it is valid). */
export const isGatewayCredential = (cred: string) => isApiKey(cred) || looksLikeJwt(cred);

/** Where SDKs put their key: Authorization: Bearer, x-api-key, x-goog-api-key, ?key= */
export function extractCredential(request: Request, url?: URL): string | undefined {
  const h = request.headers;
  const authz = h.get("authorization");
  if (authz) {
    const m = /^Bearer\s+(.+)$/i.exec(authz);
    if (m) return m[1]!.trim();
  }
  const candidates = [h.get("x-api-key"), h.get("x-goog-api-key")];
  for (const c of candidates) if (c && isGatewayCredential(c)) return c;
  const q = (url ?? new URL(request.url)).searchParams.get("key");
  if (q) return q;
  return candidates.find((c) => !!c) ?? undefined;
}

export class Authenticator {
  constructor(readonly tokens: TokenService, readonly apiKeys: ApiKeyService) {}

  async authenticateCredential(cred: string | undefined): Promise<Principal> {
    if (!cred) throw unauthenticated("missing credentials: send Authorization: Bearer <token>");
    if (isApiKey(cred)) return this.apiKeys.verify(cred);
    if (looksLikeJwt(cred)) return this.tokens.verify(cred);
    throw unauthenticated("invalid credentials");
  }

  authenticate(request: Request, url?: URL): Promise<Principal> {
    return this.authenticateCredential(extractCredential(request, url));
  }
}

export { ApiError };
