/**
 * /api/v1/sso administration over HTTP (doc3 §2.1, §3, §4.1): connections (create, list with
 * filters, get with domains, partial PUT, soft delete), test against a fake OIDC provider on
 * loopback and a SAML certificate made at test time, activate/deactivate rules, domains verified
 * by a real DNS TXT lookup against a loopback DNS server, set-primary, SP metadata, limits, 401,
 * 403 and workspace isolation.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, uuid, type IdentityEnv } from "./helpers";
import { DnsServer, FakeOidcProvider, SamlIdp } from "./sso-fakes";
import { identityServices } from "../../src/identity";

let env: IdentityEnv;
let dns: DnsServer;
let idp: FakeOidcProvider;
let saml: SamlIdp;
const C = "/api/v1/sso/connections";

beforeAll(async () => {
  dns = await DnsServer.start();
  idp = await FakeOidcProvider.start();
  saml = await SamlIdp.create();
  env = await startIdentity({ outbound: { allow_private: true }, identity: { sso: { dns_servers: dns.address, dns_timeout_ms: 1000 } } });
});
afterAll(async () => {
  await env.gw.stop();
  dns.stop();
  idp.stop();
});

const oidcBody = (over: Record<string, unknown> = {}) => ({
  name: `oidc-${uuid().slice(0, 8)}`,
  protocol: "oidc",
  oidcConfig: { issuerUrl: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret, scopes: ["openid", "email", "profile"] },
  ...over,
});
const samlBody = (over: Record<string, unknown> = {}) => ({
  name: `saml-${uuid().slice(0, 8)}`,
  protocol: "saml",
  samlConfig: { entityId: saml.entityId, ssoUrl: saml.ssoUrl, certificate: saml.certificate, signRequests: false, attributeMapping: { email: "email", name: "displayName" } },
  ...over,
});
const create = async (body: Record<string, unknown>, token = env.A) => {
  const r = await env.call("POST", C, token, body);
  expect(r.status).toBe(201);
  return r.body;
};
const uniqueDomain = () => `d${uuid().slice(0, 8)}.example.test`;

describe("connections", () => {
  test("create (inactive, every field), the client secret encrypted at rest and never shown in clear", async () => {
    const c = await create(oidcBody({ name: "Okta main", jitProvisioning: true, defaultRole: "editor" }));
    expect(c).toEqual({
      id: expect.any(String),
      name: "Okta main",
      protocol: "oidc",
      oidcConfig: {
        issuerUrl: idp.issuer,
        clientId: idp.clientId,
        discoveryUrl: null,
        scopes: ["openid", "email", "profile"],
        clientSecret: expect.stringMatching(/^.{0,4}•{8}$/),
        clientSecretSet: true,
      },
      samlConfig: null,
      jitProvisioning: true,
      defaultRole: "editor",
      status: "inactive",
      statusReason: null,
      lastTestedAt: null,
      createdBy: "admin-a",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      domains: [],
    });
    expect(JSON.stringify(c)).not.toContain(idp.clientSecret);
    const row = (await env.gw.ctx.data.tenant("tenant-a").get<{ client_secret_enc: string; oidc_config: string }>(`SELECT client_secret_enc, oidc_config FROM sso_connections WHERE id = $id AND tenant_id = $tenant`, { id: c.id }))!;
    expect(row.client_secret_enc).toMatch(/^v1\./);
    expect(row.client_secret_enc + row.oidc_config).not.toContain(idp.clientSecret);
    // it decrypts (only) for its own connection
    const svc = env.gw.ctx.identity.sso;
    expect(svc.clientSecretOf(await svc.requireRow("tenant-a", c.id))).toBe(idp.clientSecret);
    const other = await create(oidcBody());
    const otherRow = await svc.requireRow("tenant-a", other.id);
    expect(() => svc.clientSecretOf({ ...otherRow, client_secret_enc: row.client_secret_enc })).toThrow();
    // defaults; SAML
    const s = await create(samlBody({ name: "Entra" }));
    expect(s).toMatchObject({ protocol: "saml", oidcConfig: null, jitProvisioning: false, defaultRole: "viewer", status: "inactive" });
    expect(s.samlConfig).toEqual({ entityId: saml.entityId, ssoUrl: saml.ssoUrl, certificate: saml.certificate.trim(), signRequests: false, attributeMapping: { email: "email", name: "displayName" } });
  });

  test("validation: config required by protocol, the other refused, name 128, duplicate name 409, unknown role, bad URLs", async () => {
    const { call, A } = env;
    expectError(await call("POST", C, A, { name: "x", protocol: "oidc" }), 400, "validation_error", "oidcConfig");
    expectError(await call("POST", C, A, { name: "x", protocol: "saml" }), 400, "validation_error", "samlConfig");
    expectError(await call("POST", C, A, { ...samlBody(), oidcConfig: oidcBody().oidcConfig }), 400, "validation_error", "oidcConfig");
    expectError(await call("POST", C, A, { name: "x", protocol: "ldap", oidcConfig: {} }), 400, "validation_error", "protocol");
    expectError(await call("POST", C, A, oidcBody({ oidcConfig: { issuerUrl: idp.issuer, clientId: "c" } })), 400, "validation_error", "clientSecret");
    expectError(await call("POST", C, A, oidcBody({ oidcConfig: { issuerUrl: "ftp://x", clientId: "c", clientSecret: "s" } })), 400, "validation_error", "issuerUrl");
    expectError(await call("POST", C, A, samlBody({ samlConfig: { entityId: "e", ssoUrl: "https://x", certificate: "not a cert" } })), 400, "validation_error", "certificate");
    expectError(await call("POST", C, A, oidcBody({ defaultRole: "no-such-role" })), 400, "validation_error", "defaultRole");
    expect((await call("POST", C, A, oidcBody({ name: "n".repeat(128) }))).status).toBe(201);
    expectError(await call("POST", C, A, oidcBody({ name: "n".repeat(129) })), 400, "validation_error", "name");
    expectError(await call("POST", C, A, oidcBody({ name: "" })), 400, "validation_error", "name");
    await create(oidcBody({ name: "Dup" }));
    expectError(await call("POST", C, A, oidcBody({ name: "dup" })), 409, "conflict");
    expectError(await call("POST", C, A, []), 400, "validation_error");
  });

  test("list: filters protocol, status, partial name; page/pageSize up to 100", async () => {
    const t = await env.gw.token("tenant-sso-list", ["WorkspaceAdmin"]);
    const a = await create(oidcBody({ name: "Alpha OIDC" }), t);
    await create(samlBody({ name: "Beta SAML" }), t);
    await create(samlBody({ name: "Gamma SAML" }), t);
    const all = (await env.call("GET", C, t)).body;
    expect(all).toMatchObject({ total: 3, page: 1, pageSize: 20, totalPages: 1 });
    expect(all.connections.map((c: any) => c.name)).toEqual(["Alpha OIDC", "Beta SAML", "Gamma SAML"]);
    expect((await env.call("GET", `${C}?protocol=saml`, t)).body.connections.map((c: any) => c.name)).toEqual(["Beta SAML", "Gamma SAML"]);
    expect((await env.call("GET", `${C}?name=saml`, t)).body.total).toBe(2);
    expect((await env.call("GET", `${C}?name=alp`, t)).body.connections[0].id).toBe(a.id);
    expect((await env.call("GET", `${C}?status=active`, t)).body.total).toBe(0);
    expect((await env.call("GET", `${C}?status=inactive`, t)).body.total).toBe(3);
    const p2 = (await env.call("GET", `${C}?page=2&pageSize=2`, t)).body;
    expect(p2).toMatchObject({ total: 3, page: 2, pageSize: 2, totalPages: 2 });
    expect(p2.connections.map((c: any) => c.name)).toEqual(["Gamma SAML"]);
    expect((await env.call("GET", `${C}?pageSize=100`, t)).status).toBe(200);
    expectError(await env.call("GET", `${C}?pageSize=101`, t), 400, "validation_error", "pageSize");
    expectError(await env.call("GET", `${C}?status=deleted`, t), 400, "validation_error");
    expectError(await env.call("GET", `${C}?protocol=ldap`, t), 400, "validation_error");
  });

  test("get, partial PUT (a nested oidcConfig with only clientSecret changes only that), soft delete", async () => {
    const { call, A } = env;
    const c = await create(oidcBody({ name: "Partial" }));
    expect((await call("GET", `${C}/${c.id}`, A)).body).toEqual(c);
    const svc = env.gw.ctx.identity.sso;
    const up = await call("PUT", `${C}/${c.id}`, A, { oidcConfig: { clientSecret: "rotated-secret-value" } });
    expect(up.status).toBe(200);
    expect(up.body.oidcConfig).toEqual({ ...c.oidcConfig, clientSecret: expect.stringMatching(/•{8}$/) });
    expect(up.body).toMatchObject({ name: "Partial", jitProvisioning: false, defaultRole: "viewer", status: "inactive" });
    expect(svc.clientSecretOf(await svc.requireRow("tenant-a", c.id))).toBe("rotated-secret-value");
    const up2 = (await call("PUT", `${C}/${c.id}`, A, { name: "Renamed", jitProvisioning: true, oidcConfig: { scopes: ["email"] } })).body;
    expect(up2).toMatchObject({ name: "Renamed", jitProvisioning: true, oidcConfig: { issuerUrl: idp.issuer, clientId: idp.clientId, scopes: ["openid", "email"] } });
    expect(svc.clientSecretOf(await svc.requireRow("tenant-a", c.id))).toBe("rotated-secret-value");
    // a nested samlConfig.attributeMapping with only `email` changes only that claim; null removes one
    const sm = await create(samlBody());
    const m1 = await call("PUT", `${C}/${sm.id}`, A, { samlConfig: { attributeMapping: { email: "mail" } } });
    expect(m1.status).toBe(200);
    expect(m1.body.samlConfig).toEqual({ ...sm.samlConfig, attributeMapping: { email: "mail", name: "displayName" } });
    const m2 = await call("PUT", `${C}/${sm.id}`, A, { samlConfig: { attributeMapping: { name: null } } });
    expect(m2.body.samlConfig.attributeMapping).toEqual({ email: "mail" });
    expect((await call("GET", `${C}/${sm.id}`, A)).body.samlConfig.attributeMapping).toEqual({ email: "mail" });
    expectError(await call("PUT", `${C}/${sm.id}`, A, { samlConfig: { attributeMapping: { email: "" } } }), 400, "validation_error", "email");
    // PUT validation and conflicts
    await create(oidcBody({ name: "Taken" }));
    expectError(await call("PUT", `${C}/${c.id}`, A, { name: "TAKEN" }), 409, "conflict");
    expectError(await call("PUT", `${C}/${c.id}`, A, { name: "x".repeat(129) }), 400, "validation_error", "name");
    expectError(await call("PUT", `${C}/${c.id}`, A, { samlConfig: { signRequests: true } }), 400, "validation_error", "samlConfig");
    expectError(await call("PUT", `${C}/${c.id}`, A, { protocol: "saml" }), 400, "validation_error", "samlConfig");
    expectError(await call("PUT", `${C}/${uuid()}`, A, { name: "y" }), 404, "not_found");
    expectError(await call("GET", `${C}/${uuid()}`, A), 404, "not_found");
    expectError(await call("GET", `${C}/not-a-uuid`, A), 400, "validation_error");
    // soft delete
    expect((await call("DELETE", `${C}/${c.id}`, A)).body).toEqual({ deleted: true, id: c.id });
    expectError(await call("GET", `${C}/${c.id}`, A), 404, "not_found");
    expectError(await call("DELETE", `${C}/${c.id}`, A), 404, "not_found");
    expect((await env.gw.ctx.data.tenant("tenant-a").get<{ deleted_at: string }>(`SELECT deleted_at FROM sso_connections WHERE id = $id AND tenant_id = $tenant`, { id: c.id }))!.deleted_at).toEqual(expect.any(String));
    // the name is free again
    expect((await call("POST", C, A, oidcBody({ name: "Renamed" }))).status).toBe(201);
  });
});

describe("test", () => {
  test("OIDC: discovery and JWKS fetched from the provider -> testing with details; a broken provider -> error with the reason", async () => {
    const { call, A } = env;
    const c = await create(oidcBody());
    const r = await call("POST", `${C}/${c.id}/test`, A);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      details: {
        discoveryValid: true,
        jwksValid: true,
        latencyMs: expect.any(Number),
        discoveryUrl: `${idp.issuer}/.well-known/openid-configuration`,
        issuer: idp.issuer,
        authorizationEndpoint: `${idp.issuer}/authorize`,
        tokenEndpoint: `${idp.issuer}/token`,
        jwksUri: `${idp.issuer}/jwks`,
        keyCount: 1,
        keyTypes: ["RSA"],
      },
      status: "testing",
      testedAt: expect.any(String),
    });
    expect((await call("GET", `${C}/${c.id}`, A)).body).toMatchObject({ status: "testing", statusReason: null, lastTestedAt: r.body.testedAt });
    idp.brokenDiscovery = true;
    try {
      const bad = (await call("POST", `${C}/${c.id}/test`, A)).body;
      expect(bad).toMatchObject({ success: false, status: "error", details: { discoveryValid: false, jwksValid: false } });
      expect(bad.error).toContain("issuer");
      expect((await call("GET", `${C}/${c.id}`, A)).body).toMatchObject({ status: "error", statusReason: expect.stringContaining("issuer") });
    } finally {
      idp.brokenDiscovery = false;
    }
    // nothing listens there
    const dead = await create(oidcBody({ oidcConfig: { issuerUrl: "http://127.0.0.1:1", clientId: "c", clientSecret: "s" } }));
    const d = (await call("POST", `${C}/${dead.id}/test`, A)).body;
    expect(d).toMatchObject({ success: false, status: "error", details: { discoveryValid: false } });
    expectError(await call("POST", `${C}/${uuid()}/test`, A), 404, "not_found");
  });

  test("OIDC test obeys the outbound URL policy (private addresses refused when not allowed)", async () => {
    const strict = await startIdentity({ outbound: { allow_private: false } });
    try {
      // a metadata address is refused when the connection is created (not only when it is tested)
      expectError(await strict.call("POST", C, strict.A, oidcBody({ oidcConfig: { issuerUrl: "https://169.254.169.254", clientId: "c", clientSecret: "s" } })), 400, "validation_error", "not allowed");
      // an http:// provider is refused when private targets are not admitted (production)
      const h = await strict.call("POST", C, strict.A, oidcBody({ oidcConfig: { issuerUrl: "http://idp.example.test", clientId: "c", clientSecret: "s" } }));
      const ht = (await strict.call("POST", `${C}/${h.body.id}/test`, strict.A)).body;
      expect(ht).toMatchObject({ success: false, status: "error" });
      expect(ht.error).toContain("https");
    } finally {
      await strict.gw.stop();
    }
  });

  test("SAML: the certificate parsed (dates, key) and entityId/ssoUrl checked; an expired certificate -> error", async () => {
    const { call, A } = env;
    const c = await create(samlBody());
    const r = (await call("POST", `${C}/${c.id}/test`, A)).body;
    expect(r).toEqual({
      success: true,
      details: {
        certificateValid: true,
        entityIdValid: true,
        ssoUrlValid: true,
        certificateSubject: "CN=Test IdP",
        certificateNotBefore: expect.any(String),
        certificateNotAfter: expect.any(String),
        certificateKeyType: "rsa",
        certificateKeyBits: 2048,
        certificateCurve: null,
        certificateFingerprint: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/),
        signRequests: false,
        latencyMs: expect.any(Number),
      },
      status: "testing",
      testedAt: expect.any(String),
    });
    const old = await SamlIdp.create({ notBeforeDate: new Date(Date.now() - 3 * 86_400_000), notAfterDate: new Date(Date.now() - 86_400_000) });
    const e = await create(samlBody({ samlConfig: { entityId: old.entityId, ssoUrl: old.ssoUrl, certificate: old.certificate } }));
    const bad = (await call("POST", `${C}/${e.id}/test`, A)).body;
    expect(bad).toMatchObject({ success: false, status: "error", details: { certificateValid: false, entityIdValid: true, ssoUrlValid: true } });
    expect(bad.error).toContain("expired");
  });
});

describe("domains and activation", () => {
  test("add (pending, token, TXT record), verify by DNS: failed, then verified once the record exists; another workspace cannot claim it", async () => {
    const { call, A, B } = env;
    const c = await create(oidcBody());
    const domain = uniqueDomain();
    const r = await call("POST", `${C}/${c.id}/domains`, A, { domain: domain.toUpperCase() + ".", verificationMethod: "dns-txt" });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      domain: {
        id: expect.any(String),
        domain,
        status: "pending",
        verificationMethod: "dns-txt",
        verificationToken: expect.stringMatching(/^svc-verify=[A-Za-z0-9_-]{32}$/),
        isPrimary: true,
        verifiedAt: null,
        lastCheckedAt: null,
        lastError: null,
        createdAt: expect.any(String),
      },
      dnsRecord: { recordType: "TXT", name: `_svc-verify.${domain}`, value: r.body.domain.verificationToken },
    });
    const id = r.body.domain.id;
    const before = dns.queries;
    const miss = (await call("PUT", `${C}/${c.id}/domains/${id}/verify`, A)).body;
    expect(miss).toMatchObject({ success: false, status: "failed", domain: { status: "failed", lastError: expect.stringContaining("no TXT record") } });
    expect(dns.queries).toBeGreaterThan(before);
    // a wrong value is not enough
    dns.records.set(`_svc-verify.${domain}`, ["svc-verify=someone-elses-token", "v=spf1 -all"]);
    expect((await call("PUT", `${C}/${c.id}/domains/${id}/verify`, A)).body).toMatchObject({ success: false, status: "failed" });
    // a failed domain can be verified again
    dns.records.set(`_svc-verify.${domain}`, ["v=spf1 -all", r.body.domain.verificationToken]);
    const ok = (await call("PUT", `${C}/${c.id}/domains/${id}/verify`, A)).body;
    expect(ok).toMatchObject({ success: true, status: "verified", domain: { status: "verified", verifiedAt: expect.any(String), lastError: null } });
    expect((await call("GET", `${C}/${c.id}`, A)).body.domains).toEqual([ok.domain]);
    // claimed: another workspace and another connection of this one are refused
    const cb = await create(oidcBody(), B);
    expectError(await call("POST", `${C}/${cb.id}/domains`, B, { domain }), 409, "conflict", "another workspace");
    const c2 = await create(oidcBody());
    expectError(await call("POST", `${C}/${c2.id}/domains`, A, { domain }), 409, "conflict");
    expectError(await call("POST", `${C}/${c.id}/domains`, A, { domain }), 409, "conflict", "already added");
  });

  test("a pending domain in two workspaces: the first to verify wins, the other gets 409 at verify", async () => {
    const { call, A, B } = env;
    const domain = uniqueDomain();
    const ca = await create(oidcBody());
    const cb = await create(oidcBody(), B);
    const da = (await call("POST", `${C}/${ca.id}/domains`, A, { domain })).body;
    const db = (await call("POST", `${C}/${cb.id}/domains`, B, { domain })).body;
    dns.records.set(`_svc-verify.${domain}`, [da.domain.verificationToken, db.domain.verificationToken]);
    expect((await call("PUT", `${C}/${ca.id}/domains/${da.domain.id}/verify`, A)).body.success).toBe(true);
    expectError(await call("PUT", `${C}/${cb.id}/domains/${db.domain.id}/verify`, B), 409, "conflict");
  });

  test("adding a domain leaves the others untouched; set-primary moves only the primary flag; delete", async () => {
    const { call, A } = env;
    const c = await create(oidcBody());
    const d1 = uniqueDomain();
    const d2 = uniqueDomain();
    const first = (await call("POST", `${C}/${c.id}/domains`, A, { domain: d1 })).body.domain;
    dns.records.set(`_svc-verify.${d1}`, [first.verificationToken]);
    await call("PUT", `${C}/${c.id}/domains/${first.id}/verify`, A);
    const second = (await call("POST", `${C}/${c.id}/domains`, A, { domain: d2, verificationMethod: "https-file" })).body;
    expect(second.domain).toMatchObject({ isPrimary: false, status: "pending", verificationMethod: "https-file" });
    expect(second.file).toEqual({ url: `https://${d2}/.well-known/svc-verify.txt`, content: second.domain.verificationToken });
    let got = (await call("GET", `${C}/${c.id}`, A)).body.domains;
    expect(got.map((d: any) => [d.domain, d.status, d.isPrimary])).toEqual([
      [d1, "verified", true],
      [d2, "pending", false],
    ]);
    expectError(await call("POST", `${C}/${c.id}/domains/${second.domain.id}/set-primary`, A), 409, "conflict", "verified");
    dns.records.set(`_svc-verify.${d2}`, [second.domain.verificationToken]);
    // https-file verification is asked of the file, not DNS: the file does not exist -> failed
    expect((await call("PUT", `${C}/${c.id}/domains/${second.domain.id}/verify`, A)).body).toMatchObject({ success: false, status: "failed" });
    const third = (await call("POST", `${C}/${c.id}/domains`, A, { domain: uniqueDomain() })).body.domain;
    dns.records.set(`_svc-verify.${third.domain}`, [third.verificationToken]);
    await call("PUT", `${C}/${c.id}/domains/${third.id}/verify`, A);
    const p = await call("POST", `${C}/${c.id}/domains/${third.id}/set-primary`, A);
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ id: third.id, isPrimary: true, status: "verified" });
    got = (await call("GET", `${C}/${c.id}`, A)).body.domains;
    expect(got.map((d: any) => [d.status, d.isPrimary])).toEqual([
      ["verified", false],
      ["failed", false],
      ["verified", true],
    ]);
    expect((await call("DELETE", `${C}/${c.id}/domains/${second.domain.id}`, A)).body).toEqual({ deleted: true, id: second.domain.id });
    expect((await call("GET", `${C}/${c.id}`, A)).body.domains.map((d: any) => d.id)).toEqual([first.id, third.id]);
    expectError(await call("DELETE", `${C}/${c.id}/domains/${second.domain.id}`, A), 404, "not_found");
    expectError(await call("PUT", `${C}/${c.id}/domains/${uuid()}/verify`, A), 404, "not_found");
    expectError(await call("POST", `${C}/${uuid()}/domains`, A, { domain: uniqueDomain() }), 404, "not_found");
    // domain validation
    for (const bad of ["localhost", "no spaces.com", "-x.com", "a..b.com", "1.2.3.4", `${"a".repeat(64)}.com`, "https://x.com", "x.com/path", "me@x.com", "x.com:8080", ""])
      expectError(await call("POST", `${C}/${c.id}/domains`, A, { domain: bad }), 400, "validation_error", "domain");
    expectError(await call("POST", `${C}/${c.id}/domains`, A, { domain: uniqueDomain(), verificationMethod: "email" }), 400, "validation_error");
    // the TXT record name _svc-verify.<domain> must fit in 253 characters: a 241-char domain is the longest one dns-txt can verify
    const long = (n: number) => `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(n - 192)}`.slice(0, n);
    const at = await call("POST", `${C}/${c.id}/domains`, A, { domain: long(241) });
    expect(at.status).toBe(201);
    expect(at.body.dnsRecord.name.length).toBe(253);
    expectError(await call("POST", `${C}/${c.id}/domains`, A, { domain: long(242) }), 400, "validation_error", "https-file");
    expect((await call("POST", `${C}/${c.id}/domains`, A, { domain: long(242), verificationMethod: "https-file" })).status).toBe(201);
    // an IDN is stored as punycode
    expect((await call("POST", `${C}/${c.id}/domains`, A, { domain: `bücher-${uuid().slice(0, 6)}.example` })).body.domain.domain).toMatch(/^xn--/);
  });

  test("https-file: the token found as a line of /.well-known/svc-verify.txt verifies the domain (service over a loopback web server)", async () => {
    // the domain's web server, reached by a fetch that sends the domain's URL to loopback
    let served = "";
    const web = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (r) => (new URL(r.url).pathname === "/.well-known/svc-verify.txt" && served ? new Response(served) : new Response("no", { status: 404 })) });
    const seen: string[] = [];
    const app = env.gw.ctx;
    const s = identityServices({
      config: app.config.identity,
      storage: app.data,
      keys: app.apiKeys,
      usage: { flush() {}, spendUsd: () => 0, hourly: () => [], modelsBefore: () => [] },
      secret: "x",
      clock: Date.now,
      outbound: (input, init) => {
        const u = new URL(String(input));
        seen.push(u.href);
        return fetch(`http://127.0.0.1:${web.port}${u.pathname}`, init);
      },
      allowInsecureIdp: true,
      tokens: app.tokens,
      dataPath: app.config.storage.path,
      warn: () => {},
    }).sso;
    try {
      const t = "tenant-https-file";
      const c = await s.create(t, { name: "web", protocol: "oidc", oidcConfig: { issuerUrl: idp.issuer, clientId: "c", clientSecret: "s" } });
      const added = await s.addDomain(t, c.id, { domain: uniqueDomain(), verificationMethod: "https-file" });
      expect((await s.verifyDomain(t, c.id, added.domain.id)).status).toBe("failed");
      served = "other-token\n";
      expect((await s.verifyDomain(t, c.id, added.domain.id)).success).toBe(false);
      served = `# svc\n${added.domain.verificationToken}\n`;
      const ok = await s.verifyDomain(t, c.id, added.domain.id);
      expect(ok).toMatchObject({ success: true, status: "verified" });
      expect(seen.at(-1)).toBe(`https://${added.domain.domain}/.well-known/svc-verify.txt`);
    } finally {
      web.stop(true);
    }
  });

  test("a deleted connection releases its verified domains", async () => {
    const { call, A, B } = env;
    const c = await create(oidcBody());
    const domain = uniqueDomain();
    const d = (await call("POST", `${C}/${c.id}/domains`, A, { domain })).body.domain;
    dns.records.set(`_svc-verify.${domain}`, [d.verificationToken]);
    expect((await call("PUT", `${C}/${c.id}/domains/${d.id}/verify`, A)).body.success).toBe(true);
    await call("DELETE", `${C}/${c.id}`, A);
    const cb = await create(oidcBody(), B);
    expect((await call("POST", `${C}/${cb.id}/domains`, B, { domain })).status).toBe(201);
  });

  test("activate needs a verified domain and a passed test (409 otherwise); deactivate only when active", async () => {
    const { call, A } = env;
    const c = await create(oidcBody());
    expectError(await call("POST", `${C}/${c.id}/activate`, A), 409, "conflict", "verified domain");
    const domain = uniqueDomain();
    const d = (await call("POST", `${C}/${c.id}/domains`, A, { domain })).body.domain;
    dns.records.set(`_svc-verify.${domain}`, [d.verificationToken]);
    await call("PUT", `${C}/${c.id}/domains/${d.id}/verify`, A);
    expectError(await call("POST", `${C}/${c.id}/activate`, A), 409, "conflict", "test");
    expect((await call("POST", `${C}/${c.id}/test`, A)).body.success).toBe(true);
    const a = await call("POST", `${C}/${c.id}/activate`, A);
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ id: c.id, status: "active" });
    // a configuration change voids the test result, the status stays
    expect((await call("PUT", `${C}/${c.id}`, A, { oidcConfig: { clientSecret: "new" } })).body.status).toBe("active");
    const de = await call("POST", `${C}/${c.id}/deactivate`, A);
    expect(de.body.status).toBe("inactive");
    expectError(await call("POST", `${C}/${c.id}/deactivate`, A), 409, "conflict");
    expectError(await call("POST", `${C}/${c.id}/activate`, A), 409, "conflict", "test");
    await call("PUT", `${C}/${c.id}`, A, { oidcConfig: { clientSecret: idp.clientSecret } });
    await call("POST", `${C}/${c.id}/test`, A);
    expect((await call("POST", `${C}/${c.id}/activate`, A)).body.status).toBe("active");
    expect((await call("GET", `${C}?status=active`, A)).body.connections.map((x: any) => x.id)).toContain(c.id);
    expectError(await call("POST", `${C}/${uuid()}/activate`, A), 404, "not_found");
    expectError(await call("POST", `${C}/${uuid()}/deactivate`, A), 404, "not_found");
  });
});

describe("SP metadata", () => {
  test("entityId, acsUrl and SAML metadata XML; the signing certificate once a connection signs requests", async () => {
    const t = await env.gw.token("tenant-sp", ["WorkspaceAdmin"]);
    const r = await env.call("GET", "/api/v1/sso/sp-metadata", t);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ entityId: `${env.gw.url}/api/v1/sso/saml/metadata`, acsUrl: `${env.gw.url}/api/v1/sso/saml/acs`, metadataXml: expect.any(String) });
    const xml: string = r.body.metadataXml;
    expect(xml).toContain(`entityID="${r.body.entityId}"`);
    expect(xml).toContain("SPSSODescriptor");
    expect(xml).toContain(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${r.body.acsUrl}"`);
    expect(xml).not.toContain("X509Certificate");
    await create(samlBody({ samlConfig: { entityId: saml.entityId, ssoUrl: saml.ssoUrl, certificate: saml.certificate, signRequests: true } }), t);
    const signed = (await env.call("GET", "/api/v1/sso/sp-metadata", t)).body.metadataXml as string;
    expect(signed).toContain("X509Certificate");
    expect(signed).toContain('use="signing"');
    // the public metadata document identity providers fetch
    const pub = await fetch(`${env.gw.url}/api/v1/sso/saml/metadata`);
    expect(pub.status).toBe(200);
    expect(pub.headers.get("content-type")).toContain("application/samlmetadata+xml");
    expect(await pub.text()).toContain("X509Certificate");
  });
});

describe("authentication and isolation", () => {
  test("401 without a token, 403 without WorkspaceAdmin (before validation), workspaces never see each other's connections", async () => {
    const { call, A, B, none } = env;
    const c = await create(oidcBody());
    expectError(await call("GET", C, undefined), 401, "authentication_error");
    expectError(await call("GET", "/api/v1/sso/sp-metadata", undefined), 401, "authentication_error");
    expectError(await call("GET", C, none), 403, "authorization_error");
    expectError(await call("POST", C, none, { name: "" }), 403, "authorization_error");
    expectError(await call("POST", `${C}/${c.id}/test`, none), 403, "authorization_error");
    expectError(await call("POST", `${C}/${c.id}/domains`, none, { domain: "x.com" }), 403, "authorization_error");
    expectError(await call("GET", "/api/v1/sso/sp-metadata", none), 403, "authorization_error");
    const viewer = await env.gw.token("tenant-a", ["ViewMetrics", "ManageKeys"]);
    expectError(await call("DELETE", `${C}/${c.id}`, viewer), 403, "authorization_error");
    expectError(await call("GET", `${C}/${c.id}`, B), 404, "not_found");
    expectError(await call("PUT", `${C}/${c.id}`, B, { name: "mine" }), 404, "not_found");
    expectError(await call("DELETE", `${C}/${c.id}`, B), 404, "not_found");
    expectError(await call("POST", `${C}/${c.id}/test`, B), 404, "not_found");
    expectError(await call("POST", `${C}/${c.id}/activate`, B), 404, "not_found");
    expectError(await call("POST", `${C}/${c.id}/domains`, B, { domain: uniqueDomain() }), 404, "not_found");
    expect((await call("GET", C, B)).body.connections.map((x: any) => x.id)).not.toContain(c.id);
    // the same name in another workspace is fine
    expect((await call("POST", C, B, oidcBody({ name: c.name }))).status).toBe(201);
  });
});
