/**
 * SCIM bearer tokens (doc3 §2.2, §3, §4.2): `scim_<43 random base64url characters>`, returned once
 * (`plainValue`) and stored as its SHA-256 only; `maskedValue` = `scim_` + the first four random
 * characters + a mask. Scopes are a subset of users:read, users:write, groups:read, groups:write
 * (default users:read + users:write). `expiresInDays` sets the expiry (null = never). Status is
 * `revoked` from revocation on (refused at once: every SCIM request looks the token up),
 * `expired` once the expiry passed, `active` otherwise. Delete removes the token and its activity.
 */
import { createHash, randomBytes } from "node:crypto";
import { badRequest, conflict, notFound, unauthenticated } from "../../core/errors";
import { uuid } from "../../core/ids";
import type { Listed } from "../../core/pagination";
import type { Principal } from "../../core/auth";
import type { ForTenant } from "../../storage/scoped";
import type { AsyncSql, AsyncTenantDb } from "../../storage/async";
import { likePattern } from "../../storage/dialect";
import { fold, iso, type WallClock } from "../types";

export const SCIM_SCOPES = ["users:read", "users:write", "groups:read", "groups:write"] as const;
export type ScimScope = (typeof SCIM_SCOPES)[number];
export const DEFAULT_SCOPES: ScimScope[] = ["users:read", "users:write"];
export const TOKEN_STATUSES = ["active", "revoked", "expired"] as const;
export type TokenStatus = (typeof TOKEN_STATUSES)[number];
export const SCIM_TOKEN_LIMITS = { name: 128, expiresInDays: 3_650 } as const;
const PREFIX = "scim_";

export interface ScimToken {
  id: string;
  name: string;
  maskedValue: string;
  status: TokenStatus;
  scopes: ScimScope[];
  createdAt: string;
  /** doc3 §2.2's name of the expiry time (null = never expires) */
  expiry: string | null;
  /** the same instant under the name the rest of the identity API uses (role assignments, invitations) */
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  createdBy: string | null;
}

interface Row {
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  hash: string;
  scopes: string;
  revoked_at: string | null;
  expires_at: string | null;
  last_used_at: string | null;
  created_by: string | null;
  created_at: string;
}

const hashOf = (plain: string) => createHash("sha256").update(plain).digest("hex");

export class ScimTokenStore {
  constructor(readonly db: AsyncTenantDb) {}
  async insert(r: Omit<Row, "tenant_id">) {
    await this.db.run(
      `INSERT INTO scim_tokens (id, tenant_id, name, prefix, hash, scopes, revoked_at, expires_at, last_used_at, created_by, created_at)
       VALUES ($id, $tenant, $name, $prefix, $hash, $scopes, NULL, $expires, NULL, $by, $created)`,
      { id: r.id, name: r.name, prefix: r.prefix, hash: r.hash, scopes: r.scopes, expires: r.expires_at, by: r.created_by, created: r.created_at },
    );
  }
  async get(id: string): Promise<Row | undefined> {
    return await this.db.get<Row>(`SELECT * FROM scim_tokens WHERE tenant_id = $tenant AND id = $id`, { id });
  }
  async list(f: { status?: TokenStatus; name?: string }, now: string, limit: number, offset: number): Promise<Listed<Row>> {
    const where = `tenant_id = $tenant AND (CAST($name AS TEXT) IS NULL OR lower(name) LIKE $name ESCAPE '\\') AND (
      CAST($status AS TEXT) IS NULL
      OR ($status = 'revoked' AND revoked_at IS NOT NULL)
      OR ($status = 'expired' AND revoked_at IS NULL AND expires_at IS NOT NULL AND expires_at <= $now)
      OR ($status = 'active' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $now)))`;
    const p = { status: f.status ?? null, name: f.name ? likePattern(fold(f.name)) : null, now };
    const total = (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM scim_tokens WHERE ${where}`, p))!.n;
    const items = await this.db.all<Row>(`SELECT * FROM scim_tokens WHERE ${where} ORDER BY created_at, rowid LIMIT $limit OFFSET $offset`, { ...p, limit, offset });
    return { items, total };
  }
  /** a usable (neither revoked nor expired) token with this name, case-insensitively */
  async activeByName(name: string, now: string): Promise<Row | undefined> {
    return await this.db.get<Row>(
      `SELECT * FROM scim_tokens WHERE tenant_id = $tenant AND lower(name) = $n AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $now)`,
      { n: fold(name), now },
    );
  }
  async revoke(id: string, at: string) {
    await this.db.run(`UPDATE scim_tokens SET revoked_at = $at WHERE tenant_id = $tenant AND id = $id AND revoked_at IS NULL`, { id, at });
  }
  async remove(id: string) {
    await this.db.run(`DELETE FROM scim_activities WHERE tenant_id = $tenant AND token_id = $id`, { id });
    await this.db.run(`DELETE FROM scim_tokens WHERE tenant_id = $tenant AND id = $id`, { id });
  }
  async used(id: string, at: string) {
    await this.db.run(`UPDATE scim_tokens SET last_used_at = $at WHERE tenant_id = $tenant AND id = $id`, { id, at });
  }
  async activeCount(now: string): Promise<number> {
    return (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM scim_tokens WHERE tenant_id = $tenant AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $now)`, { now }))!.n;
  }
}

export class ScimTokenService {
  constructor(
    private readonly store: ForTenant<ScimTokenStore>,
    /** the presented secret's owner: a cross-workspace lookup by hash */
    private readonly global: () => AsyncSql,
    private readonly clock: WallClock,
  ) {}

  async create(tenantId: string, input: { name: string; scopes?: string[]; expiresInDays?: number | null }, by?: string): Promise<{ token: ScimToken; plainValue: string }> {
    if (input.name.length < 1 || input.name.length > SCIM_TOKEN_LIMITS.name) throw badRequest(`name: 1 to ${SCIM_TOKEN_LIMITS.name} characters`);
    const scopes = [...new Set(input.scopes ?? DEFAULT_SCOPES)];
    const unknown = scopes.find((s) => !SCIM_SCOPES.includes(s as ScimScope));
    if (unknown !== undefined) throw badRequest(`scopes: unknown scope ${JSON.stringify(unknown)} (one of ${SCIM_SCOPES.join(", ")})`);
    if (scopes.length === 0) throw badRequest("scopes: at least one scope");
    const days = input.expiresInDays ?? null;
    if (days !== null && (!Number.isInteger(days) || days < 1 || days > SCIM_TOKEN_LIMITS.expiresInDays)) throw badRequest(`expiresInDays: an integer from 1 to ${SCIM_TOKEN_LIMITS.expiresInDays}, or null`);
    const random = randomBytes(32).toString("base64url");
    const plainValue = `${PREFIX}${random}`;
    const nowMs = this.clock();
    const row = {
      id: uuid(),
      name: input.name,
      prefix: random.slice(0, 4),
      hash: hashOf(plainValue),
      scopes: JSON.stringify(scopes),
      revoked_at: null,
      expires_at: days === null ? null : iso(nowMs + days * 86_400_000),
      last_used_at: null,
      created_by: by ?? null,
      created_at: iso(nowMs),
    };
    const s = this.store(tenantId);
    await s.db.tx(async () => {
      if (await s.activeByName(input.name, iso(nowMs))) throw conflict(`an active SCIM token named ${input.name} already exists (revoke or delete it first)`);
      await s.insert(row);
    });
    return { token: this.view(row), plainValue };
  }

  async list(tenantId: string, q: { status?: TokenStatus; name?: string; offset: number; limit: number }): Promise<Listed<ScimToken>> {
    const { items, total } = await this.store(tenantId).list(q, iso(this.clock()), q.limit, q.offset);
    return { items: items.map((r) => this.view(r)), total };
  }

  async get(tenantId: string, id: string): Promise<ScimToken> {
    const r = await this.store(tenantId).get(id);
    if (!r) throw notFound("SCIM token");
    return this.view(r);
  }

  /** revoke (idempotent: an already revoked token stays revoked at its first revocation time) */
  async revoke(tenantId: string, id: string): Promise<ScimToken> {
    const s = this.store(tenantId);
    return s.db.tx(async () => {
      if (!(await s.get(id))) throw notFound("SCIM token");
      await s.revoke(id, iso(this.clock()));
      return this.view((await s.get(id))!);
    });
  }

  /** delete the token and its activity log */
  async remove(tenantId: string, id: string): Promise<void> {
    const s = this.store(tenantId);
    await s.db.tx(async () => {
      if (!(await s.get(id))) throw notFound("SCIM token");
      await s.remove(id);
    });
  }

  async activeCount(tenantId: string): Promise<number> {
    return this.store(tenantId).activeCount(iso(this.clock()));
  }

  /** The principal of a presented SCIM bearer token (401 unless active). */
  async authenticate(request: Request): Promise<Principal> {
    const authz = request.headers.get("authorization") ?? "";
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authz);
    if (!m) throw unauthenticated("missing credentials: send Authorization: Bearer <SCIM token>");
    const plain = m[1]!;
    if (!plain.startsWith(PREFIX) || plain.length > 100) throw unauthenticated("invalid SCIM token");
    const row = await this.global().get<Row>(`SELECT * FROM scim_tokens WHERE hash = $h`, { h: hashOf(plain) });
    if (!row) throw unauthenticated("invalid SCIM token");
    const nowMs = this.clock();
    if (row.revoked_at) throw unauthenticated("the SCIM token was revoked");
    if (row.expires_at && Date.parse(row.expires_at) <= nowMs) throw unauthenticated("the SCIM token expired");
    await this.store(row.tenant_id).used(row.id, iso(nowMs));
    return { tenantId: row.tenant_id, sub: `scim:${row.id}`, permissions: new Set(JSON.parse(row.scopes) as string[]), via: "scim" };
  }

  private view(r: Omit<Row, "tenant_id">): ScimToken {
    const status: TokenStatus = r.revoked_at ? "revoked" : r.expires_at && Date.parse(r.expires_at) <= this.clock() ? "expired" : "active";
    return {
      id: r.id,
      name: r.name,
      maskedValue: `${PREFIX}${r.prefix}${"•".repeat(12)}`,
      status,
      scopes: JSON.parse(r.scopes),
      createdAt: r.created_at,
      expiry: r.expires_at,
      expiresAt: r.expires_at,
      lastUsedAt: r.last_used_at,
      revokedAt: r.revoked_at,
      createdBy: r.created_by,
    };
  }
}
