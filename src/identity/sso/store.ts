/** sso_connections, sso_domains, sso_logins and sso_assertions rows, over the tenant-bound handle. */
import type { AsyncSql, AsyncTenantDb } from "../../storage/async";
import { likePattern } from "../../storage/dialect";
import type { Listed } from "../../core/pagination";
import { fold } from "../types";
import type { ConnectionStatus, DomainStatus, OidcConfig, Protocol, SamlConfig, VerificationMethod } from "./types";

export interface ConnectionRow {
  id: string;
  name: string;
  protocol: Protocol;
  oidc_config: string | null;
  client_secret_enc: string | null;
  saml_config: string | null;
  jit_provisioning: number;
  default_role: string;
  status: ConnectionStatus;
  status_reason: string | null;
  last_test: string | null;
  last_tested_at: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface DomainRow {
  id: string;
  connection_id: string;
  domain: string;
  verification_method: VerificationMethod;
  verification_token: string;
  status: DomainStatus;
  is_primary: number;
  verified_at: string | null;
  last_checked_at: string | null;
  last_error: string | null;
  created_at: string;
}

export interface LoginRow {
  id: string;
  tenant_id: string;
  connection_id: string;
  protocol: Protocol;
  nonce: string | null;
  code_verifier: string | null;
  request_id: string | null;
  redirect_uri: string;
  created_at: string;
  expires_at: string;
}

export const oidcOf = (r: ConnectionRow): OidcConfig | null => (r.oidc_config ? JSON.parse(r.oidc_config) : null);
export const samlOf = (r: ConnectionRow): SamlConfig | null => (r.saml_config ? JSON.parse(r.saml_config) : null);

const LIVE = `tenant_id = $tenant AND deleted_at IS NULL`;

export class SsoStore {
  constructor(readonly db: AsyncTenantDb) {}

  async insert(r: ConnectionRow) {
    await this.db.run(
      `INSERT INTO sso_connections (id, tenant_id, name, name_lower, protocol, oidc_config, client_secret_enc, saml_config, jit_provisioning, default_role, status, status_reason, last_test, last_tested_at, created_by, created_at, updated_at, deleted_at)
       VALUES ($id, $tenant, $name, $lower, $protocol, $oidc, $secret, $saml, $jit, $role, $status, $reason, $test, $tested, $by, $created, $updated, $deleted)`,
      this.params(r),
    );
  }

  async update(r: ConnectionRow) {
    await this.db.run(
      `UPDATE sso_connections SET name = $name, name_lower = $lower, protocol = $protocol, oidc_config = $oidc, client_secret_enc = $secret, saml_config = $saml,
         jit_provisioning = $jit, default_role = $role, status = $status, status_reason = $reason, last_test = $test, last_tested_at = $tested,
         created_by = $by, created_at = $created, updated_at = $updated, deleted_at = $deleted
       WHERE tenant_id = $tenant AND id = $id`,
      this.params(r),
    );
  }

  private params(r: ConnectionRow) {
    return {
      id: r.id,
      name: r.name,
      lower: fold(r.name),
      protocol: r.protocol,
      oidc: r.oidc_config,
      secret: r.client_secret_enc,
      saml: r.saml_config,
      jit: r.jit_provisioning,
      role: r.default_role,
      status: r.status,
      reason: r.status_reason,
      test: r.last_test,
      tested: r.last_tested_at,
      by: r.created_by,
      created: r.created_at,
      updated: r.updated_at,
      deleted: r.deleted_at,
    };
  }

  async get(id: string): Promise<ConnectionRow | undefined> {
    return await this.db.get<ConnectionRow>(`SELECT * FROM sso_connections WHERE ${LIVE} AND id = $id`, { id });
  }

  async byName(name: string): Promise<ConnectionRow | undefined> {
    return await this.db.get<ConnectionRow>(`SELECT * FROM sso_connections WHERE ${LIVE} AND name_lower = $n`, { n: fold(name) });
  }

  async list(f: { protocol?: Protocol; status?: ConnectionStatus; name?: string }, limit: number, offset: number): Promise<Listed<ConnectionRow>> {
    const where = `${LIVE} AND (CAST($protocol AS TEXT) IS NULL OR protocol = $protocol) AND (CAST($status AS TEXT) IS NULL OR status = $status) AND (CAST($name AS TEXT) IS NULL OR name_lower LIKE $name ESCAPE '\\')`;
    const p = { protocol: f.protocol ?? null, status: f.status ?? null, name: f.name ? likePattern(fold(f.name)) : null };
    const total = (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM sso_connections WHERE ${where}`, p))!.n;
    const items = await this.db.all<ConnectionRow>(`SELECT * FROM sso_connections WHERE ${where} ORDER BY created_at, rowid LIMIT $limit OFFSET $offset`, { ...p, limit, offset });
    return { items, total };
  }

  // ---- domains

  async domains(connectionId: string): Promise<DomainRow[]> {
    return await this.db.all<DomainRow>(`SELECT * FROM sso_domains WHERE tenant_id = $tenant AND connection_id = $c ORDER BY created_at, rowid`, { c: connectionId });
  }

  async domain(connectionId: string, id: string): Promise<DomainRow | undefined> {
    return await this.db.get<DomainRow>(`SELECT * FROM sso_domains WHERE tenant_id = $tenant AND connection_id = $c AND id = $id`, { c: connectionId, id });
  }

  async domainByName(connectionId: string, domain: string): Promise<DomainRow | undefined> {
    return await this.db.get<DomainRow>(`SELECT * FROM sso_domains WHERE tenant_id = $tenant AND connection_id = $c AND domain = $d`, { c: connectionId, d: domain });
  }

  /** this domain on another live connection of the workspace, verified */
  async verifiedElsewhereHere(connectionId: string, domain: string): Promise<DomainRow | undefined> {
    return await this.db.get<DomainRow>(
      `SELECT d.* FROM sso_domains d JOIN sso_connections c ON c.id = d.connection_id AND c.tenant_id = d.tenant_id AND c.deleted_at IS NULL
       WHERE d.tenant_id = $tenant AND d.domain = $d AND d.status = 'verified' AND d.connection_id <> $c`,
      { c: connectionId, d: domain },
    );
  }

  async insertDomain(connectionId: string, d: DomainRow) {
    await this.db.run(
      `INSERT INTO sso_domains (id, tenant_id, connection_id, domain, verification_method, verification_token, status, is_primary, verified_at, last_checked_at, last_error, created_at)
       VALUES ($id, $tenant, $c, $domain, $method, $token, $status, $primary, NULL, NULL, NULL, $created)`,
      { id: d.id, c: connectionId, domain: d.domain, method: d.verification_method, token: d.verification_token, status: d.status, primary: d.is_primary, created: d.created_at },
    );
  }

  async setDomainStatus(id: string, status: DomainStatus, at: string, error: string | null) {
    await this.db.run(
      `UPDATE sso_domains SET status = $status, last_checked_at = $at, last_error = $error, verified_at = CASE WHEN $status = 'verified' THEN $at ELSE verified_at END
       WHERE tenant_id = $tenant AND id = $id`,
      { id, status, at, error },
    );
  }

  /** exactly this domain primary among the connection's domains */
  async setPrimary(connectionId: string, id: string) {
    await this.db.run(`UPDATE sso_domains SET is_primary = CASE WHEN id = $id THEN 1 ELSE 0 END WHERE tenant_id = $tenant AND connection_id = $c`, { c: connectionId, id });
  }

  async deleteDomain(id: string) {
    await this.db.run(`DELETE FROM sso_domains WHERE tenant_id = $tenant AND id = $id`, { id });
  }

  async deleteDomains(connectionId: string) {
    await this.db.run(`DELETE FROM sso_domains WHERE tenant_id = $tenant AND connection_id = $c`, { c: connectionId });
  }

  // ---- sign-ins in progress and SAML assertions seen

  async insertLogin(l: Omit<LoginRow, "tenant_id">) {
    await this.db.run(
      `INSERT INTO sso_logins (id, tenant_id, connection_id, protocol, nonce, code_verifier, request_id, redirect_uri, created_at, expires_at)
       VALUES ($id, $tenant, $c, $protocol, $nonce, $verifier, $request, $redirect, $created, $expires)`,
      { id: l.id, c: l.connection_id, protocol: l.protocol, nonce: l.nonce, verifier: l.code_verifier, request: l.request_id, redirect: l.redirect_uri, created: l.created_at, expires: l.expires_at },
    );
  }

  /** sign-ins in progress in the workspace */
  async pendingLogins(): Promise<number> {
    return (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM sso_logins WHERE tenant_id = $tenant`))!.n;
  }

  /** remove a sign-in in progress; true when it was there (one answer consumes it) */
  async consumeLogin(id: string): Promise<boolean> {
    return (await this.db.run(`DELETE FROM sso_logins WHERE tenant_id = $tenant AND id = $id`, { id })).changes > 0;
  }

  async pruneLogins(now: string) {
    await this.db.run(`DELETE FROM sso_logins WHERE tenant_id = $tenant AND expires_at < $now`, { now });
    await this.db.run(`DELETE FROM sso_assertions WHERE tenant_id = $tenant AND expires_at < $now`, { now });
  }

  /** record an assertion id; false when it was seen before (a replay) */
  async rememberAssertion(connectionId: string, assertionId: string, expiresAt: string): Promise<boolean> {
    return (await this.db.run(`INSERT INTO sso_assertions (tenant_id, assertion_id, connection_id, expires_at) VALUES ($tenant, $a, $c, $e) ON CONFLICT DO NOTHING`, { a: assertionId, c: connectionId, e: expiresAt })).changes > 0;
  }
}

/** Cross-workspace lookups (verified domains are unique across workspaces; a sign-in's state names its workspace). */
export class SsoDirectory {
  constructor(private readonly db: AsyncSql) {}

  /** the workspace and connection a verified domain routes to (live connections only) */
  async routeOf(domain: string): Promise<{ tenantId: string; connectionId: string } | undefined> {
    const r = await this.db.get<{ tenant_id: string; connection_id: string }>(
      `SELECT d.tenant_id, d.connection_id FROM sso_domains d JOIN sso_connections c ON c.id = d.connection_id AND c.tenant_id = d.tenant_id AND c.deleted_at IS NULL
       WHERE d.domain = $d AND d.status = 'verified'`,
      { d: domain },
    );
    return r ? { tenantId: r.tenant_id, connectionId: r.connection_id } : undefined;
  }

  /** the workspace a verified domain belongs to, if any (a claim other workspaces cannot make) */
  async verifiedOwner(domain: string): Promise<{ tenantId: string; connectionId: string } | undefined> {
    const r = await this.db.get<{ tenant_id: string; connection_id: string }>(`SELECT tenant_id, connection_id FROM sso_domains WHERE domain = $d AND status = 'verified'`, { d: domain });
    return r ? { tenantId: r.tenant_id, connectionId: r.connection_id } : undefined;
  }

  async login(id: string): Promise<LoginRow | undefined> {
    return await this.db.get<LoginRow>(`SELECT * FROM sso_logins WHERE id = $id`, { id });
  }
}
