/**
 * Authentication and permissions (the mechanism; credentials come from domains).
 * - Access tokens: JWT, HS256 with auth.jwt_secret, or RS256/ES256 from auth.jwks_url.
 *   Claims: tenant_id (required), sub, permissions (string[]), exp (required), iat — each bounded
 *   (TokenService.verify; docs/security.md).
 * - API keys are verified by the keys domain (src/keys), handed in as a CredentialVerifier.
 * - Where the credential may be: `bearer` = Authorization: Bearer only (admin APIs); `sdk` = also
 *   wherever a provider SDK puts its key (x-api-key, x-goog-api-key, ?key=) — the proxies only.
 * - Domains may add per-request checks of a principal (e.g. identity refuses a suspended user's token).
 * Verified tokens are memoised until exp.
 */
import { SignJWT, jwtVerify, createRemoteJWKSet, type JWTPayload } from "jose";
import { existsSync, readFileSync, writeFileSync, mkdirSync, chmodSync } from "node:fs";
import { dirname, join } from "node:path";
import { forbidden, unauthenticated } from "./errors";
import { ExpiringMemo } from "./expiring-memo";
import { randomToken } from "./ids";
import { implies, type PermissionName } from "./permissions";

export const PERMISSIONS = ["ViewMetrics", "ManageConfig", "ManageKeys", "ViewKeys", "ViewLogs", "WorkspaceAdmin"] as const;
export type Permission = (typeof PERMISSIONS)[number];
/** the permission table (core/permissions.ts) names exactly these */
const _sameNames: [Permission, PermissionName] = ["" as PermissionName, "" as Permission];
void _sameNames;

export interface Principal {
  tenantId: string;
  sub: string;
  permissions: ReadonlySet<string>;
  via: "jwt" | "api_key" | (string & {});
  keyId?: string;
}

/** What the held permissions allow, by the one table of core/permissions.ts (the permission audit reads it too). */
export function hasPermission(p: Principal, perm: Permission): boolean {
  return implies(p.permissions, perm);
}

export function requirePermission(p: Principal, perm: Permission) {
  if (!hasPermission(p, perm)) throw forbidden(`missing permission ${perm}`);
}

export function parsePermissions(list: string | string[] | undefined): Permission[] {
  const arr = typeof list === "string" ? list.split(",").map((s) => s.trim()).filter(Boolean) : list ?? [];
  for (const p of arr) if (!PERMISSIONS.includes(p as Permission)) throw new Error(`unknown permission "${p}" (one of ${PERMISSIONS.join(", ")})`);
  return arr as Permission[];
}

/** tenant_id: 1-128 of letters, digits and . _ : @ - (usable in paths, logs and metrics labels) */
export const TENANT_ID_RE = /^[A-Za-z0-9._:@-]{1,128}$/;
/** accepted difference between a token's iat/nbf and this clock */
export const CLOCK_SKEW_SECS = 60;
const MAX_SUB = 256;
const MAX_PERMISSIONS = 64;
const printable = (s: string) => !/[\u0000-\u001f\u007f]/.test(s) && s.isWellFormed();

/** The secret: configured, or generated once and kept beside the database (with a warning). */
export function resolveJwtSecret(cfg: { jwtSecret?: string; dataPath: string }, warn: (msg: string) => void): string {
  if (cfg.jwtSecret) return cfg.jwtSecret;
  if (cfg.dataPath === ":memory:") {
    warn("SVC_AUTH__JWT_SECRET is not set; using an ephemeral secret for the in-memory database");
    return randomToken(32);
  }
  const file = join(dirname(cfg.dataPath), "jwt-secret");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomToken(32);
  writeFileSync(file, secret + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  warn(`SVC_AUTH__JWT_SECRET is not set; generated one and stored it in ${file}`);
  return secret;
}

export interface TokenSettings {
  /** lifetime of minted tokens */
  ttlSecs: number;
  /** longest accepted lifetime (exp - iat, or exp - now without iat) of an HS256 token */
  maxTtlSecs: number;
  jwksUrl?: string;
}

/** verified tokens remembered at most (TokenService.memo) */
const MEMO_MAX = 10_000;

export class TokenService {
  private readonly key: Uint8Array;
  private readonly jwks?: ReturnType<typeof createRemoteJWKSet>;
  /** verified tokens until their exp (ms since the epoch; a token forgotten is verified again) */
  private readonly memo = new ExpiringMemo<Principal>(MEMO_MAX);
  readonly ttlSecs: number;
  readonly maxTtlSecs: number;

  constructor(secret: string, settings: Partial<TokenSettings> = {}) {
    this.key = new TextEncoder().encode(secret);
    this.ttlSecs = settings.ttlSecs ?? 86_400;
    this.maxTtlSecs = settings.maxTtlSecs ?? 30 * 86_400;
    if (settings.jwksUrl) this.jwks = createRemoteJWKSet(new URL(settings.jwksUrl));
  }

  async sign(claims: { tenantId: string; sub?: string; permissions?: string[] }, ttlSecs = this.ttlSecs): Promise<string> {
    if (!TENANT_ID_RE.test(claims.tenantId)) throw new Error(`tenant id must be 1-128 letters, digits or . _ : @ - (got "${claims.tenantId.slice(0, 40)}")`);
    if (ttlSecs > this.maxTtlSecs) throw new Error(`token lifetime ${ttlSecs} s exceeds the maximum of ${this.maxTtlSecs} s (SVC_AUTH__MAX_TOKEN_TTL_SECS)`);
    // one clock reading for both claims: exp - iat is exactly the lifetime (two readings straddling a second said 86,401)
    const iat = Math.floor(Date.now() / 1000);
    return new SignJWT({ tenant_id: claims.tenantId, permissions: claims.permissions ?? [] })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(claims.sub ?? claims.tenantId)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttlSecs)
      .sign(this.key);
  }

  /** The principal of a token verified before and not yet expired (no await: the hot path). */
  memoised(token: string): Principal | undefined {
    return this.memo.get(token, Date.now());
  }

  async verify(token: string): Promise<Principal> {
    const hit = this.memoised(token);
    if (hit) return hit;
    let payload: JWTPayload;
    let alg: string | undefined;
    try {
      alg = (JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")) as { alg?: string }).alg;
      if (alg === "HS256") payload = (await jwtVerify(token, this.key, { algorithms: ["HS256"] })).payload;
      else if (this.jwks) payload = (await jwtVerify(token, this.jwks, { algorithms: ["RS256", "ES256"] })).payload;
      else throw new Error("unsupported algorithm");
    } catch (e) {
      const code = (e as { code?: string }).code;
      throw unauthenticated(code === "ERR_JWT_EXPIRED" ? "access token expired" : "invalid access token");
    }
    const principal = this.principalOf(payload, alg === "HS256");
    this.memo.set(token, principal, Math.max(Date.now() + 1, (payload.exp as number) * 1000));
    return principal;
  }

  /** The bounds every token's claims must meet (docs/security.md). */
  private principalOf(payload: JWTPayload, ownToken: boolean): Principal {
    const nowSecs = Math.floor(Date.now() / 1000);
    if (typeof payload.tenant_id !== "string" || payload.tenant_id.length === 0) throw unauthenticated("access token has no tenant_id");
    if (!TENANT_ID_RE.test(payload.tenant_id)) throw unauthenticated("access token tenant_id must be 1-128 letters, digits or . _ : @ -");
    if (typeof payload.exp !== "number") throw unauthenticated("access token has no exp");
    if (payload.iat !== undefined && (typeof payload.iat !== "number" || payload.iat > nowSecs + CLOCK_SKEW_SECS)) throw unauthenticated("access token issued in the future");
    if (ownToken && payload.exp - (typeof payload.iat === "number" ? payload.iat : nowSecs) > this.maxTtlSecs)
      throw unauthenticated(`access token lifetime exceeds ${this.maxTtlSecs} s`);
    const sub = payload.sub ?? payload.tenant_id;
    if (sub.length > MAX_SUB || !printable(sub)) throw unauthenticated("access token sub is not a printable string of at most 256 characters");
    const raw = payload.permissions;
    if (raw !== undefined && (!Array.isArray(raw) || raw.length > MAX_PERMISSIONS || raw.some((p) => typeof p !== "string" || p.length > 64)))
      throw unauthenticated("access token permissions must be a list of at most 64 names");
    return { tenantId: payload.tenant_id, sub, permissions: new Set((raw as string[] | undefined) ?? []), via: "jwt" };
  }
}

/** Verifies a credential that is not a JWT (the keys domain: `svc_…` API keys). */
export interface CredentialVerifier {
  /** whether this verifier owns the credential's format */
  accepts(credential: string): boolean;
  verify(credential: string): Principal | Promise<Principal>;
}

/**
 * A per-request check of an authenticated principal, run on every request after the credential
 * verified (verification itself is memoised; checks are not): throws ApiError (401/403) to refuse
 * it, or returns the principal to use instead (e.g. with the permissions of the user's current
 * role assignments), or nothing to keep it.
 */
export type PrincipalCheck = (principal: Principal) => Principal | void | Promise<Principal | void>;

/** three dot-separated parts (no split: this runs on every request) */
const looksLikeJwt = (cred: string) => {
  const a = cred.indexOf(".");
  const b = a < 0 ? -1 : cred.indexOf(".", a + 1);
  return b > 0 && cred.indexOf(".", b + 1) < 0;
};

export type CredentialPlaces = "bearer" | "sdk";

/** The credential of a request: Authorization: Bearer; with `sdk` also x-api-key, x-goog-api-key, ?key=. */
export function extractCredential(request: Request, places: CredentialPlaces, url?: URL, isGatewayCredential?: (c: string) => boolean): string | undefined {
  const h = request.headers;
  const authz = h.get("authorization");
  if (authz) {
    const m = /^Bearer\s+(.+)$/i.exec(authz);
    if (m) return m[1]!.trim();
  }
  if (places === "bearer") return undefined;
  const candidates = [h.get("x-api-key"), h.get("x-goog-api-key")];
  for (const c of candidates) if (c && isGatewayCredential?.(c)) return c;
  const q = (url ?? new URL(request.url)).searchParams.get("key");
  if (q) return q;
  return candidates.find((c) => !!c) ?? undefined;
}

export class Authenticator {
  private readonly checks: PrincipalCheck[] = [];
  constructor(readonly tokens: TokenService, private readonly verifiers: CredentialVerifier[] = []) {}

  /** Add a per-request check (run after every successful authentication, in order). */
  addCheck(check: PrincipalCheck) {
    this.checks.push(check);
  }

  /** Shaped like a gateway credential (a JWT or a credential a verifier owns); not proof of validity. */
  isGatewayCredential = (cred: string) => looksLikeJwt(cred) || this.verifiers.some((v) => v.accepts(cred));

  async authenticateCredential(cred: string | undefined): Promise<Principal> {
    if (!cred) throw unauthenticated("missing credentials: send Authorization: Bearer <token>");
    let principal: Principal;
    let verifier: CredentialVerifier | undefined;
    for (const v of this.verifiers)
      if (v.accepts(cred)) {
        verifier = v;
        break;
      }
    if (verifier) {
      const out = verifier.verify(cred);
      principal = out instanceof Promise ? await out : out;
    }
    else if (looksLikeJwt(cred)) principal = this.tokens.memoised(cred) ?? (await this.tokens.verify(cred));
    else throw unauthenticated("invalid credentials");
    for (const check of this.checks) {
      // most checks answer from memory: await only what is a promise (each await is a turn of the event loop)
      const out = check(principal);
      principal = (out instanceof Promise ? await out : out) ?? principal;
    }
    return principal;
  }

  authenticate(request: Request, places: CredentialPlaces, url?: URL): Promise<Principal> {
    return this.authenticateCredential(extractCredential(request, places, url, this.isGatewayCredential));
  }
}
