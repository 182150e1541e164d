/**
 * SSO connections and their domains (doc3 §2.1, §3, §4.1).
 *  - create: `inactive`; `oidcConfig` required for oidc, `samlConfig` for saml (the other one is
 *    refused); the client secret is sealed (AES-256-GCM, secrets.ts) and never shown again — a
 *    connection shows `clientSecretSet` and a masked `clientSecret`;
 *  - partial update: only fields present change; a nested config merges field by field (an
 *    oidcConfig with only clientSecret re-seals only the secret); a change to the identity-provider
 *    configuration voids the last test result, the status stays;
 *  - test: OIDC discovery document and JWKS fetched through the outbound URL policy and checked;
 *    SAML certificate parsed (validity, key) and the entity id / SSO URL checked. success ->
 *    `testing`, failure -> `error` with the reason;
 *  - activate: needs a verified domain and a successful test since the configuration last changed
 *    (409 otherwise); deactivate: only an active connection; soft delete frees its domains;
 *  - domains: `pending` with a `svc-verify=<random>` token; verified by a DNS TXT record at
 *    `_svc-verify.<domain>` (or a file at https://<domain>/.well-known/svc-verify.txt); a failed
 *    domain can be verified again; a domain verified in any workspace cannot be claimed by another
 *    connection (409); set-primary changes only the primary flags.
 */
import { randomBytes } from "node:crypto";
import { badRequest, conflict, notFound } from "../../core/errors";
import { uuid } from "../../core/ids";
import type { Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import { iso, uniqueOr409, type WallClock } from "../types";
import type { OutboundFetch } from "../ports";
import type { RoleService } from "../roles/service";
import type { SecretBox } from "./secrets";
import { checkOidc, checkSaml } from "./connection-check";
import { cleanOidc, cleanSaml, httpUrl, mergeMapping, normaliseDomain, type ConnectionInput, type OidcInput, type ConnectionPatch, type TestResult } from "./inputs";
export { normaliseDomain, type ConnectionInput, type ConnectionPatch, type OidcInput, type SamlInput, type TestResult } from "./inputs";
import type { TxtLookup } from "./dns";
import { oidcOf, samlOf, type ConnectionRow, type DomainRow, type SsoDirectory, type SsoStore } from "./store";
import {
  SSO_LIMITS,
  type Connection,
  type ConnectionStatus,
  type Domain,
  type OidcConfig,
  type Protocol,
  type SamlConfig,
  type VerificationMethod,
} from "./types";

export const VERIFY_PREFIX = "svc-verify";
export const VERIFY_LABEL = "_svc-verify";
export const VERIFY_FILE = "/.well-known/svc-verify.txt";

const duplicate = (name: string) => conflict(`an SSO connection named ${name} already exists in this workspace`);

const mask = (secret: string) => `${secret.slice(0, Math.min(4, Math.floor(secret.length / 4)))}${"•".repeat(8)}`;

export class SsoService {
  constructor(
    private readonly store: ForTenant<SsoStore>,
    private readonly directory: () => SsoDirectory,
    private readonly roles: RoleService,
    private readonly box: SecretBox,
    private readonly fetch: OutboundFetch,
    private readonly dns: TxtLookup,
    private readonly clock: WallClock,
    private readonly fileScheme: "https" | "http",
    /** http:// identity providers admitted (development, tests); sign-in refuses them otherwise */
    private readonly allowHttp: boolean,
    /** the outbound URL policy's registration-time check (throws for a private or metadata address) */
    private readonly checkUrl: (url: string) => Promise<unknown> = async () => {},
  ) {}

  /**
   * The identity-provider URLs svc will fetch (oidcConfig.issuerUrl, discoveryUrl) through the outbound
   * URL policy, before a create or update is stored: a private or metadata address is refused with 400
   * now, like an MCP server's or memory source's URL, not only when the connection is tested.
   */
  async checkUrls(input: { oidcConfig?: OidcInput }): Promise<void> {
    const o = input.oidcConfig;
    if (!o) return;
    for (const [field, url] of [["issuerUrl", o.issuerUrl], ["discoveryUrl", o.discoveryUrl]] as const) {
      if (!url) continue;
      httpUrl(`oidcConfig.${field}`, url);
      try {
        await this.checkUrl(url);
      } catch (e) {
        throw badRequest(`oidcConfig.${field}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  // ------------------------------------------------------------------ connections

  async create(tenantId: string, input: ConnectionInput, by?: string): Promise<Connection> {
    if (input.name.length < 1 || input.name.length > SSO_LIMITS.name) throw badRequest(`name: 1 to ${SSO_LIMITS.name} characters`);
    const defaultRole = await this.checkRole(tenantId, input.defaultRole ?? "viewer");
    const id = uuid();
    const at = iso(this.clock());
    const row: ConnectionRow = {
      id,
      name: input.name,
      protocol: input.protocol,
      oidc_config: null,
      client_secret_enc: null,
      saml_config: null,
      jit_provisioning: input.jitProvisioning ? 1 : 0,
      default_role: defaultRole,
      status: "inactive",
      status_reason: null,
      last_test: null,
      last_tested_at: null,
      created_by: by ?? null,
      created_at: at,
      updated_at: at,
      deleted_at: null,
    };
    this.applyProtocolConfig(row, input, true);
    const s = this.store(tenantId);
    return s.db.tx(async () => {
      if (await s.byName(input.name)) throw duplicate(input.name);
      await uniqueOr409(() => s.insert(row), () => duplicate(input.name));
      return this.view(row, []);
    });
  }

  async list(tenantId: string, q: { protocol?: Protocol; status?: ConnectionStatus; name?: string; offset: number; limit: number }): Promise<Listed<Connection>> {
    const s = this.store(tenantId);
    const { items, total } = await s.list(q, q.limit, q.offset);
    const out: Connection[] = [];
    for (const r of items) out.push(this.view(r, await s.domains(r.id)));
    return { items: out, total };
  }

  async get(tenantId: string, id: string): Promise<Connection> {
    const s = this.store(tenantId);
    return this.view(await this.row(s, id), await s.domains(id));
  }

  async update(tenantId: string, id: string, patch: ConnectionPatch): Promise<Connection> {
    if (patch.name !== undefined && (patch.name.length < 1 || patch.name.length > SSO_LIMITS.name)) throw badRequest(`name: 1 to ${SSO_LIMITS.name} characters`);
    const role = patch.defaultRole !== undefined ? await this.checkRole(tenantId, patch.defaultRole) : undefined;
    const s = this.store(tenantId);
    return s.db.tx(async () => {
      const cur = await this.row(s, id);
      const next: ConnectionRow = { ...cur, updated_at: iso(this.clock()) };
      if (patch.name !== undefined) {
        const other = await s.byName(patch.name);
        if (other && other.id !== id) throw duplicate(patch.name);
        next.name = patch.name;
      }
      if (patch.jitProvisioning !== undefined) next.jit_provisioning = patch.jitProvisioning ? 1 : 0;
      if (role !== undefined) next.default_role = role;
      if (patch.protocol !== undefined && patch.protocol !== cur.protocol) {
        next.protocol = patch.protocol;
        next.oidc_config = next.client_secret_enc = next.saml_config = null;
        this.applyProtocolConfig(next, patch, true);
      } else this.applyProtocolConfig(next, patch, false);
      if (next.oidc_config !== cur.oidc_config || next.saml_config !== cur.saml_config || next.client_secret_enc !== cur.client_secret_enc) next.last_test = null;
      await uniqueOr409(() => s.update(next), () => duplicate(next.name));
      return this.view(next, await s.domains(id));
    });
  }

  /** soft delete; its domains are released (another connection may claim and verify them) */
  async remove(tenantId: string, id: string): Promise<void> {
    const s = this.store(tenantId);
    await s.db.tx(async () => {
      const cur = await this.row(s, id);
      const at = iso(this.clock());
      await s.update({ ...cur, status: "inactive", updated_at: at, deleted_at: at });
      await s.deleteDomains(id);
    });
  }

  async activate(tenantId: string, id: string): Promise<Connection> {
    const s = this.store(tenantId);
    return s.db.tx(async () => {
      const cur = await this.row(s, id);
      const domains = await s.domains(id);
      if (!domains.some((d) => d.status === "verified")) throw conflict("a connection needs at least one verified domain before it can be activated");
      const test = cur.last_test ? (JSON.parse(cur.last_test) as { success: boolean }) : undefined;
      if (!test?.success) throw conflict("the connection must pass a test (POST …/test) since its configuration last changed before it can be activated");
      const next: ConnectionRow = { ...cur, status: "active", status_reason: null, updated_at: iso(this.clock()) };
      await s.update(next);
      return this.view(next, domains);
    });
  }

  async deactivate(tenantId: string, id: string): Promise<Connection> {
    const s = this.store(tenantId);
    return s.db.tx(async () => {
      const cur = await this.row(s, id);
      if (cur.status !== "active") throw conflict(`the connection is ${cur.status}; only an active connection can be deactivated`);
      const next: ConnectionRow = { ...cur, status: "inactive", updated_at: iso(this.clock()) };
      await s.update(next);
      return this.view(next, await s.domains(id));
    });
  }

  /** the live connection row (sign-in reads it) */
  requireRow(tenantId: string, id: string): Promise<ConnectionRow> {
    return this.row(this.store(tenantId), id);
  }

  /** the decrypted client secret of an OIDC connection (sign-in only) */
  clientSecretOf(row: ConnectionRow): string | undefined {
    return row.client_secret_enc ? this.box.open(row.client_secret_enc, row.id) : undefined;
  }

  // ------------------------------------------------------------------ test

  async test(tenantId: string, id: string): Promise<TestResult> {
    const s = this.store(tenantId);
    const row = await this.row(s, id);
    const started = performance.now();
    const outcome = row.protocol === "oidc" ? await checkOidc(oidcOf(row)!, this.fetch, this.allowHttp) : checkSaml(samlOf(row)!, this.clock());
    const latencyMs = Math.round((performance.now() - started) * 100) / 100;
    const details = { ...outcome.details, latencyMs };
    const testedAt = iso(this.clock());
    const status: ConnectionStatus = outcome.error ? "error" : "testing";
    const stored = JSON.stringify({ success: !outcome.error, error: outcome.error ?? null, testedAt });
    await s.db.tx(async () => {
      const cur = await this.row(s, id);
      // a concurrent configuration change makes this result stale: keep it out
      if (cur.updated_at !== row.updated_at) return;
      await s.update({ ...cur, status, status_reason: outcome.error ?? null, last_test: stored, last_tested_at: testedAt });
    });
    return { success: !outcome.error, details, ...(outcome.error ? { error: outcome.error } : {}), status, testedAt };
  }

  // ------------------------------------------------------------------ domains

  addDomain(tenantId: string, connectionId: string, input: { domain: string; verificationMethod?: VerificationMethod }) {
    const domain = normaliseDomain(input.domain);
    const s = this.store(tenantId);
    return s.db.tx(async () => {
      await this.row(s, connectionId);
      const method = input.verificationMethod ?? "dns-txt";
      // the TXT record's name must itself be a valid DNS name (253 chars), or the domain can never verify
      if (method === "dns-txt" && `${VERIFY_LABEL}.${domain}`.length > 253)
        throw badRequest(`domain: at most ${253 - VERIFY_LABEL.length - 1} characters for dns-txt verification (the record ${VERIFY_LABEL}.<domain> must fit in 253); use https-file`);
      if (await s.domainByName(connectionId, domain)) throw conflict(`the domain ${domain} is already added to this connection`);
      const owner = await this.directory().verifiedOwner(domain);
      if (owner) throw conflict(`the domain ${domain} is already verified for ${owner.tenantId === tenantId ? "another SSO connection of this workspace" : "another workspace"}`);
      const row: DomainRow = {
        id: uuid(),
        connection_id: connectionId,
        domain,
        verification_method: method,
        verification_token: `${VERIFY_PREFIX}=${randomBytes(24).toString("base64url")}`,
        status: "pending",
        is_primary: (await s.domains(connectionId)).length === 0 ? 1 : 0,
        verified_at: null,
        last_checked_at: null,
        last_error: null,
        created_at: iso(this.clock()),
      };
      await s.insertDomain(connectionId, row);
      const view = domainView(row);
      return {
        domain: view,
        dnsRecord: { recordType: "TXT" as const, name: `${VERIFY_LABEL}.${domain}`, value: row.verification_token },
        ...(row.verification_method === "https-file"
          ? { file: { url: `${this.fileScheme}://${domain}${VERIFY_FILE}`, content: row.verification_token } }
          : {}),
      };
    });
  }

  /** look the token up (DNS TXT or the https file); verified / failed; a verified domain stays verified */
  async verifyDomain(tenantId: string, connectionId: string, domainId: string): Promise<{ success: boolean; status: string; domain: Domain; message: string }> {
    const s = this.store(tenantId);
    await this.row(s, connectionId);
    const d = await s.domain(connectionId, domainId);
    if (!d) throw notFound("domain");
    if (d.status === "verified") return { success: true, status: "verified", domain: domainView(d), message: "already verified" };
    let found = false;
    let error: string | null = null;
    try {
      if (d.verification_method === "https-file") {
        const url = `${this.fileScheme}://${d.domain}${VERIFY_FILE}`;
        const r = await this.fetch(url, { signal: AbortSignal.timeout(10_000) });
        const text = r.ok ? (await r.text()).slice(0, 10_000) : "";
        if (!r.ok) await r.body?.cancel().catch(() => {});
        found = text.split(/\r?\n/).some((l) => l.trim() === d.verification_token);
        if (!found) error = r.ok ? `${url} does not contain the verification token` : `${url} answered HTTP ${r.status}`;
      } else {
        const name = `${VERIFY_LABEL}.${d.domain}`;
        const records = await this.dns.txt(name);
        found = records.some((t) => t.trim() === d.verification_token);
        if (!found) error = records.length ? `no TXT record at ${name} holds the verification token` : `no TXT record found at ${name}`;
      }
    } catch (e) {
      error = `lookup failed: ${errorText(e)}`;
    }
    const at = iso(this.clock());
    const next = await s.db.tx(async () => {
      const cur = await s.domain(connectionId, domainId);
      if (!cur) throw notFound("domain");
      if (found) {
        const owner = await this.directory().verifiedOwner(cur.domain);
        if (owner && !(owner.tenantId === tenantId && owner.connectionId === connectionId))
          throw conflict(`the domain ${cur.domain} was verified for another connection or workspace meanwhile`);
        await uniqueOr409(
          () => s.setDomainStatus(domainId, "verified", at, null),
          () => conflict(`the domain ${cur.domain} was verified for another connection or workspace meanwhile`),
        );
      } else await s.setDomainStatus(domainId, "failed", at, error);
      return (await s.domain(connectionId, domainId))!;
    });
    return { success: found, status: next.status, domain: domainView(next), message: found ? "verification token found" : error! };
  }

  async setPrimary(tenantId: string, connectionId: string, domainId: string): Promise<Domain> {
    const s = this.store(tenantId);
    return s.db.tx(async () => {
      await this.row(s, connectionId);
      const d = await s.domain(connectionId, domainId);
      if (!d) throw notFound("domain");
      if (d.status !== "verified") throw conflict(`the domain is ${d.status}; only a verified domain can be made primary`);
      await s.setPrimary(connectionId, domainId);
      return domainView((await s.domain(connectionId, domainId))!);
    });
  }

  async removeDomain(tenantId: string, connectionId: string, domainId: string): Promise<void> {
    const s = this.store(tenantId);
    await s.db.tx(async () => {
      await this.row(s, connectionId);
      if (!(await s.domain(connectionId, domainId))) throw notFound("domain");
      await s.deleteDomain(domainId);
    });
  }

  /** verified domains of a connection (sign-in: an identity's e-mail must be in one of them) */
  async verifiedDomains(tenantId: string, connectionId: string): Promise<string[]> {
    return (await this.store(tenantId).domains(connectionId))
      .filter((d) => d.status === "verified")
      .map((d) => d.domain);
  }

  // ------------------------------------------------------------------ internals

  private async row(s: SsoStore, id: string): Promise<ConnectionRow> {
    const r = await s.get(id);
    if (!r) throw notFound("SSO connection");
    return r;
  }

  private async checkRole(tenantId: string, name: string): Promise<string> {
    if (name.length < 1 || name.length > SSO_LIMITS.role) throw badRequest(`defaultRole: 1 to ${SSO_LIMITS.role} characters`);
    const role = await this.roles.findByName(tenantId, name);
    if (!role) throw badRequest(`defaultRole: no role named ${name} in this workspace`);
    return role.name;
  }

  /** fill the row's protocol configuration from the input (a full one on create/protocol change, merged otherwise) */
  private applyProtocolConfig(row: ConnectionRow, input: ConnectionPatch, full: boolean) {
    if (row.protocol === "oidc") {
      if (input.samlConfig !== undefined) throw badRequest("samlConfig: not allowed for an oidc connection");
      if (input.oidcConfig === undefined) {
        if (full) throw badRequest("oidcConfig: required for protocol oidc");
        return;
      }
      const cur = oidcOf(row);
      const o = input.oidcConfig;
      const merged = { issuerUrl: o.issuerUrl ?? cur?.issuerUrl, clientId: o.clientId ?? cur?.clientId, discoveryUrl: o.discoveryUrl !== undefined ? o.discoveryUrl : cur?.discoveryUrl ?? null, scopes: o.scopes ?? cur?.scopes ?? [] };
      if (!merged.issuerUrl) throw badRequest("oidcConfig.issuerUrl: required");
      if (!merged.clientId) throw badRequest("oidcConfig.clientId: required");
      if (o.clientSecret === undefined && !row.client_secret_enc) throw badRequest("oidcConfig.clientSecret: required");
      row.oidc_config = JSON.stringify(cleanOidc(merged as OidcInput & OidcConfig));
      if (o.clientSecret !== undefined) row.client_secret_enc = this.box.seal(o.clientSecret, row.id);
    } else {
      if (input.oidcConfig !== undefined) throw badRequest("oidcConfig: not allowed for a saml connection");
      if (input.samlConfig === undefined) {
        if (full) throw badRequest("samlConfig: required for protocol saml");
        return;
      }
      const cur = samlOf(row);
      const i = input.samlConfig;
      const merged = {
        entityId: i.entityId ?? cur?.entityId,
        ssoUrl: i.ssoUrl ?? cur?.ssoUrl,
        certificate: i.certificate ?? cur?.certificate,
        signRequests: i.signRequests ?? cur?.signRequests ?? false,
        attributeMapping: mergeMapping(cur?.attributeMapping, i.attributeMapping),
      };
      for (const k of ["entityId", "ssoUrl", "certificate"] as const) if (!merged[k]) throw badRequest(`samlConfig.${k}: required`);
      row.saml_config = JSON.stringify(cleanSaml(merged as SamlConfig));
    }
  }

  private view(r: ConnectionRow, domains: DomainRow[]): Connection {
    const oidc = oidcOf(r);
    let masked: string | null = null;
    if (r.client_secret_enc) {
      try {
        masked = mask(this.box.open(r.client_secret_enc, r.id));
      } catch {
        masked = "•".repeat(8);
      }
    }
    return {
      id: r.id,
      name: r.name,
      protocol: r.protocol,
      oidcConfig: oidc ? { ...oidc, clientSecret: masked, clientSecretSet: r.client_secret_enc !== null } : null,
      samlConfig: samlOf(r),
      jitProvisioning: r.jit_provisioning === 1,
      defaultRole: r.default_role,
      status: r.status,
      statusReason: r.status_reason,
      lastTestedAt: r.last_tested_at,
      createdBy: r.created_by,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      domains: domains.map(domainView),
    };
  }
}

export const domainView = (d: DomainRow): Domain => ({
  id: d.id,
  domain: d.domain,
  status: d.status,
  verificationMethod: d.verification_method,
  verificationToken: d.verification_token,
  isPrimary: d.is_primary === 1,
  verifiedAt: d.verified_at,
  lastCheckedAt: d.last_checked_at,
  lastError: d.last_error,
  createdAt: d.created_at,
});

const errorText = (e: unknown) => String((e as Error)?.message ?? e).slice(0, 300);
