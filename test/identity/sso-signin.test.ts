/**
 * Sign-in through SSO end to end: a browser's path is followed by hand (redirect: "manual").
 * OIDC against a fake provider on loopback (discovery, JWKS, token endpoint, ID tokens signed with
 * a jose key): code + PKCE + state + nonce; wrong audience, another nonce, expired, foreign
 * signature, replayed state refused. SAML with assertions signed by a test key made at test time:
 * tampered, unsigned-injected, wrong audience, expired and replayed assertions refused. Both: JIT
 * provisioning with defaultRole, unknown users refused without it, SCIM-provisioned users linked,
 * inactive connections refuse new sign-ins while issued tokens keep working, suspension refuses.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, uuid, type IdentityEnv } from "./helpers";
import { DnsServer, FakeOidcProvider, SamlIdp, authnRequestOf } from "./sso-fakes";

let env: IdentityEnv;
let dns: DnsServer;
let idp: FakeOidcProvider;
let samlIdp: SamlIdp;
const C = "/api/v1/sso/connections";
const KEYS = "/api/v1/virtual-keys";

beforeAll(async () => {
  dns = await DnsServer.start();
  idp = await FakeOidcProvider.start();
  samlIdp = await SamlIdp.create();
  env = await startIdentity({ outbound: { allow_private: true }, identity: { sso: { dns_servers: dns.address, dns_timeout_ms: 1000 } } });
});
afterAll(async () => {
  await env.gw.stop();
  dns.stop();
  idp.stop();
});

/** an active connection with one verified domain; returns it and the domain */
async function activeConnection(protocol: "oidc" | "saml", over: Record<string, unknown> = {}, token = env.A) {
  const domain = `acme-${uuid().slice(0, 8)}.test`;
  const body =
    protocol === "oidc"
      ? { name: `o-${uuid()}`, protocol, oidcConfig: { issuerUrl: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }, ...over }
      : {
          name: `s-${uuid()}`,
          protocol,
          samlConfig: { entityId: samlIdp.entityId, ssoUrl: samlIdp.ssoUrl, certificate: samlIdp.certificate, signRequests: false, attributeMapping: { email: "email", name: "displayName" } },
          ...over,
        };
  const c = (await env.call("POST", C, token, body)).body;
  const d = (await env.call("POST", `${C}/${c.id}/domains`, token, { domain })).body.domain;
  dns.records.set(`_svc-verify.${domain}`, [d.verificationToken]);
  expect((await env.call("PUT", `${C}/${c.id}/domains/${d.id}/verify`, token)).body.success).toBe(true);
  expect((await env.call("POST", `${C}/${c.id}/test`, token)).body.success).toBe(true);
  expect((await env.call("POST", `${C}/${c.id}/activate`, token)).body.status).toBe("active");
  return { c, domain };
}

const start = (email: string) => fetch(`${env.gw.url}/api/v1/sso/login?email=${encodeURIComponent(email)}`, { redirect: "manual" });

/** the browser: start at svc, follow the provider's redirect, land on the callback */
async function oidcSignIn(email: string): Promise<{ status: number; body: any; callback: string }> {
  idp.email = email;
  const s = await start(email);
  expect(s.status).toBe(302);
  const atIdp = await fetch(s.headers.get("location")!, { redirect: "manual" });
  expect(atIdp.status).toBe(302);
  const callback = atIdp.headers.get("location")!;
  const r = await fetch(callback);
  const text = await r.text();
  return { status: r.status, body: JSON.parse(text), callback };
}

describe("OIDC sign-in", () => {
  test("authorization code with PKCE, state and nonce; JIT creates the user with defaultRole; the token carries the role's permissions", async () => {
    const { c, domain } = await activeConnection("oidc", { jitProvisioning: true, defaultRole: "viewer" });
    const email = `alice@${domain}`;
    idp.email = email;
    const s = await start(email);
    expect(s.status).toBe(302);
    const auth = new URL(s.headers.get("location")!);
    expect(`${auth.origin}${auth.pathname}`).toBe(`${idp.issuer}/authorize`);
    const q = auth.searchParams;
    expect(q.get("response_type")).toBe("code");
    expect(q.get("client_id")).toBe(idp.clientId);
    expect(q.get("redirect_uri")).toBe(`${env.gw.url}/api/v1/sso/oidc/callback`);
    expect(q.get("scope")).toBe("openid email profile");
    expect(q.get("code_challenge_method")).toBe("S256");
    expect(q.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get("state")).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(q.get("nonce")).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(q.get("login_hint")).toBe(email);
    // JSON instead of a redirect for programmatic clients
    const j = await fetch(`${env.gw.url}/api/v1/sso/login?email=${encodeURIComponent(email)}`, { headers: { accept: "application/json" } });
    expect(await j.json()).toEqual({ redirectUrl: expect.stringContaining(`${idp.issuer}/authorize?`), connectionId: c.id, protocol: "oidc", state: expect.any(String) });

    const before = idp.tokenRequests.length;
    const userInfoBefore = idp.userInfoRequests.length;
    const r = await oidcSignIn(email);
    expect(r.status).toBe(200);
    // the ID token had the email: no UserInfo round trip
    expect(idp.userInfoRequests.length).toBe(userInfoBefore);
    expect(r.body).toEqual({
      accessToken: expect.any(String),
      tokenType: "Bearer",
      expiresIn: 28_800,
      workspace: "tenant-a",
      connectionId: c.id,
      user: { id: expect.any(String), email, name: "Alice Liddell" },
      permissions: ["ViewMetrics", "ViewLogs", "ViewKeys"],
      created: true,
    });
    // the code was exchanged with the client secret and the PKCE verifier (the fake checks both)
    const tr = idp.tokenRequests.at(-1)!;
    expect(idp.tokenRequests.length).toBe(before + 1);
    expect(tr.get("grant_type")).toBe("authorization_code");
    expect(tr.get("code_verifier")).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    const user = (await env.call("GET", `/api/v1/users/${r.body.user.id}`, env.A)).body;
    expect(user).toMatchObject({ email, name: "Alice Liddell", external_id: "idp-user-1", identity_provider: "sso:oidc", status: "ACTIVE" });
    const roles = (await env.call("GET", `/api/v1/users/${user.id}/roles`, env.A)).body.assignments;
    expect(roles.map((a: any) => a.roleName)).toEqual(["viewer"]);
    // the svc token works with the role's permissions and nothing more
    expect((await env.call("GET", KEYS, r.body.accessToken)).status).toBe(200);
    expectError(await env.call("GET", "/api/v1/users", r.body.accessToken), 403, "authorization_error");
    // the state is single-use: replaying the callback is refused
    const again = await fetch(r.callback);
    expectError({ status: again.status, body: await again.json() }, 401, "authentication_error", "state");
    // a second sign-in finds the same user
    const second = await oidcSignIn(email);
    expect(second.body).toMatchObject({ created: false, user: { id: user.id } });
  });

  test("wrong audience, another nonce, an expired ID token, a foreign signature and another issuer are refused", async () => {
    const { domain } = await activeConnection("oidc", { jitProvisioning: true });
    const email = `bob@${domain}`;
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["wrong audience", { aud: "someone-else" }, "aud"],
      ["bad nonce", { nonce: "not-the-nonce" }, "nonce"],
      ["expired", { expSecs: -120 }, "exp"],
      ["foreign key", { foreignKey: true }, "signature"],
      ["other issuer", { iss: "https://evil.test" }, "iss"],
    ];
    for (const [, tweaks, hint] of cases) {
      idp.tweaks = tweaks;
      try {
        const r = await oidcSignIn(email);
        expectError(r, 401, "authentication_error");
        expect(r.body.error.message.toLowerCase()).toContain(hint);
      } finally {
        idp.tweaks = {};
      }
    }
    // nobody was created by the refused attempts
    expect((await env.call("GET", `/api/v1/users?search=${encodeURIComponent(email)}`, env.A)).body.total).toBe(0);
    // an unverified e-mail is refused; an e-mail outside the connection's verified domains too
    idp.tweaks = { emailVerified: false };
    try {
      expectError(await oidcSignIn(email), 401, "authentication_error", "not verified");
    } finally {
      idp.tweaks = {};
    }
    idp.tweaks = { email: "mallory@elsewhere.test" };
    try {
      expectError(await oidcSignIn(email), 403, "authorization_error", "verified domain");
    } finally {
      idp.tweaks = {};
    }
    expect((await oidcSignIn(email)).status).toBe(200);
  });

  test("profile claims only at UserInfo (OIDC Core 5.4): fetched with the access token; another subject, an unverified or missing email, an error and no endpoint are refused", async () => {
    const { domain } = await activeConnection("oidc", { jitProvisioning: true });
    const email = `erin@${domain}`;
    const signInWith = async (tweaks: Record<string, unknown>) => {
      idp.tweaks = { profileInUserInfoOnly: true, ...tweaks };
      try {
        return await oidcSignIn(email);
      } finally {
        idp.tweaks = {};
      }
    };
    const before = idp.userInfoRequests.length;
    const ok = await signInWith({});
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ created: true, user: { email, name: "Alice Liddell" } });
    expect(idp.userInfoRequests.length).toBe(before + 1);
    expect(idp.userInfoRequests.at(-1)).toMatch(/^Bearer [0-9a-f-]{36}$/);
    // UserInfo about someone else than the ID token's subject is refused (the library checks sub)
    expectError(await signInWith({ userinfo: { sub: "someone-else" } }), 401, "authentication_error", "UserInfo");
    expectError(await signInWith({ userinfo: { emailVerified: false } }), 401, "authentication_error", "not verified");
    expectError(await signInWith({ userinfo: { email: null } }), 401, "authentication_error", "email claim");
    expectError(await signInWith({ userinfo: { status: 500 } }), 401, "authentication_error", "UserInfo");
    // the provider's answer is still held to the connection's verified domains
    expectError(await signInWith({ userinfo: { email: "mallory@elsewhere.test" } }), 403, "authorization_error", "verified domain");
    // a provider without a UserInfo endpoint and no email in the ID token: refused, with the reason
    idp.tweaks = { noUserInfoEndpoint: true };
    const { domain: d2 } = await activeConnection("oidc", { jitProvisioning: true });
    idp.tweaks = {};
    idp.email = `frank@${d2}`;
    const n = idp.userInfoRequests.length;
    idp.tweaks = { profileInUserInfoOnly: true, noUserInfoEndpoint: true };
    try {
      expectError(await oidcSignIn(`frank@${d2}`), 401, "authentication_error", "email claim");
    } finally {
      idp.tweaks = {};
    }
    expect(idp.userInfoRequests.length).toBe(n);
  });

  test("without jitProvisioning unknown users are refused; a SCIM-provisioned user is linked on first sign-in", async () => {
    const { domain } = await activeConnection("oidc", { jitProvisioning: false });
    expectError(await oidcSignIn(`carol@${domain}`), 403, "authorization_error", "just-in-time");
    const scimUser = await env.gw.ctx.identity.users.create("tenant-a", { email: `Dave@${domain}`, name: "Dave", external_id: "entra-object-id", identity_provider: "scim" });
    const r = await oidcSignIn(`dave@${domain}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ created: false, user: { id: scimUser.id, email: `Dave@${domain}` } });
    // linking changes nothing on the SCIM-managed record
    expect(await env.gw.ctx.identity.users.get("tenant-a", scimUser.id)).toMatchObject({ external_id: "entra-object-id", identity_provider: "scim" });
  });

  test("an inactive connection refuses new sign-ins (also one already started); issued tokens keep working; a suspended user is refused", async () => {
    const { c, domain } = await activeConnection("oidc", { jitProvisioning: true });
    const email = `erin@${domain}`;
    const first = await oidcSignIn(email);
    expect(first.status).toBe(200);
    // started, then the connection is deactivated before the provider answers
    idp.email = email;
    const s = await start(email);
    const atIdp = await fetch(s.headers.get("location")!, { redirect: "manual" });
    await env.call("POST", `${C}/${c.id}/deactivate`, env.A);
    const late = await fetch(atIdp.headers.get("location")!);
    expectError({ status: late.status, body: await late.json() }, 403, "authorization_error", "inactive");
    const s2 = await start(email);
    expectError({ status: s2.status, body: await s2.json() }, 403, "authorization_error", "inactive");
    // the token issued earlier still works (doc3 §3: existing sessions kept)
    expect((await env.call("GET", KEYS, first.body.accessToken)).status).toBe(200);
    // suspension: the token is refused at once and a new sign-in is refused
    await env.call("POST", `${C}/${c.id}/test`, env.A);
    await env.call("POST", `${C}/${c.id}/activate`, env.A);
    await env.call("PUT", `/api/v1/users/${first.body.user.id}`, env.A, { status: "SUSPENDED" });
    expectError(await env.call("GET", KEYS, first.body.accessToken), 401, "authentication_error", "suspended");
    expectError(await oidcSignIn(email), 403, "authorization_error", "suspended");
  });

  test("start: unknown domain 404, bad e-mail 400; a pending (unverified) domain does not route", async () => {
    const r = await start(`x@nowhere-${uuid().slice(0, 6)}.test`);
    expectError({ status: r.status, body: await r.json() }, 404, "not_found");
    const bad = await start("not-an-email");
    expectError({ status: bad.status, body: await bad.json() }, 400, "validation_error", "email");
    const missing = await fetch(`${env.gw.url}/api/v1/sso/login`);
    expectError({ status: missing.status, body: await missing.json() }, 400, "validation_error", "email");
    const c = (await env.call("POST", C, env.A, { name: `p-${uuid()}`, protocol: "oidc", oidcConfig: { issuerUrl: idp.issuer, clientId: idp.clientId, clientSecret: "x" } })).body;
    const domain = `pending-${uuid().slice(0, 6)}.test`;
    await env.call("POST", `${C}/${c.id}/domains`, env.A, { domain });
    const p = await start(`x@${domain}`);
    expect(p.status).toBe(404);
    const cb = await fetch(`${env.gw.url}/api/v1/sso/oidc/callback?code=x&state=unknown`);
    expectError({ status: cb.status, body: await cb.json() }, 401, "authentication_error", "state");
  });
});

// ---------------------------------------------------------------- SAML

const ACS = () => `${env.gw.url}/api/v1/sso/saml/acs`;
const ENTITY = () => `${env.gw.url}/api/v1/sso/saml/metadata`;

async function samlStart(email: string) {
  const s = await start(email);
  expect(s.status).toBe(302);
  const location = s.headers.get("location")!;
  expect(location.startsWith(samlIdp.ssoUrl)).toBe(true);
  return { location, ...(await authnRequestOf(location)) };
}

async function post(samlResponse: string, relayState: string) {
  const r = await fetch(ACS(), { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: relayState }) });
  return { status: r.status, body: await r.json() };
}

describe("SAML sign-in", () => {
  test("AuthnRequest by HTTP-Redirect; a correctly signed assertion signs the user in (JIT with defaultRole)", async () => {
    const { c, domain } = await activeConnection("saml", { jitProvisioning: true, defaultRole: "editor" });
    const email = `alice@${domain}`;
    const req = await samlStart(email);
    expect(req.signed).toBe(false);
    expect(req.xml).toContain(`AssertionConsumerServiceURL="${ACS()}"`);
    expect(req.xml).toContain(`<saml:Issuer xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">${ENTITY()}</saml:Issuer>`);
    expect(req.xml).toContain(`Destination="${samlIdp.ssoUrl}"`);
    const r = await post(samlIdp.signedResponse({ inResponseTo: req.id, acsUrl: ACS(), audience: ENTITY(), email, name: "Alice SAML" }), req.relayState);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      accessToken: expect.any(String),
      tokenType: "Bearer",
      expiresIn: 28_800,
      workspace: "tenant-a",
      connectionId: c.id,
      user: { id: expect.any(String), email, name: "Alice SAML" },
      permissions: ["ManageKeys", "ManageConfig", "ViewKeys", "ViewLogs", "ViewMetrics"],
      created: true,
    });
    expect((await env.call("GET", KEYS, r.body.accessToken)).status).toBe(200);
    expect((await env.call("GET", `/api/v1/users/${r.body.user.id}`, env.A)).body).toMatchObject({ identity_provider: "sso:saml", external_id: email });
  });

  test("tampered, unsigned, unsigned-injected, wrong audience, wrong issuer, expired and replayed assertions are refused", async () => {
    const { domain } = await activeConnection("saml", { jitProvisioning: true });
    const email = `bob@${domain}`;
    const refused = async (make: (o: { id: string }) => string, hint?: string) => {
      const req = await samlStart(email);
      const r = await post(make({ id: req.id }), req.relayState);
      expectError(r, 401, "authentication_error");
      if (hint) expect(r.body.error.message.toLowerCase()).toContain(hint);
    };
    const opts = (id: string, over: Record<string, unknown> = {}) => ({ inResponseTo: id, acsUrl: ACS(), audience: ENTITY(), email, ...over });
    const b64 = (xml: string) => Buffer.from(xml).toString("base64");
    // tampered: signed for bob, then the subject changed
    await refused(({ id }) => {
      const signed = samlIdp.signAssertion(samlIdp.assertionXml(opts(id)));
      return b64(samlIdp.response(opts(id), signed.replaceAll(`bob@${domain}`, `admin@${domain}`)));
    }, "signature");
    // no signature at all
    await refused(({ id }) => b64(samlIdp.response(opts(id), samlIdp.assertionXml(opts(id)))));
    // an unsigned assertion injected next to a correctly signed one (signature wrapping)
    await refused(({ id }) => {
      const good = samlIdp.signAssertion(samlIdp.assertionXml(opts(id)));
      const evil = samlIdp.assertionXml(opts(id, { email: `admin@${domain}` }));
      return b64(samlIdp.response(opts(id), evil + good));
    });
    // signed by another key
    const other = await SamlIdp.create();
    await refused(({ id }) => b64(samlIdp.response(opts(id), other.signAssertion(samlIdp.assertionXml(opts(id))))), "signature");
    // for another service provider
    await refused(({ id }) => samlIdp.signedResponse(opts(id, { audience: "https://other-sp.test/metadata" })), "audience");
    // from another identity provider
    await refused(({ id }) => samlIdp.signedResponse(opts(id, { issuer: "https://evil-idp.test" })), "issuer");
    // expired: the assertion's conditions, and the bearer confirmation
    await refused(({ id }) => samlIdp.signedResponse(opts(id, { notBeforeSecs: -3600, notOnOrAfterSecs: -1800, confirmationNotOnOrAfterSecs: 300 })), "expired");
    await refused(({ id }) => samlIdp.signedResponse(opts(id, { notBeforeSecs: -3600, notOnOrAfterSecs: -1800 })), "subject confirmation");
    // not yet valid
    await refused(({ id }) => samlIdp.signedResponse(opts(id, { notBeforeSecs: 1800, notOnOrAfterSecs: 3600 })));
    // answering another AuthnRequest
    await refused(() => samlIdp.signedResponse(opts("_not-our-request")));
    // replayed: the same response twice
    const req = await samlStart(email);
    const response = samlIdp.signedResponse(opts(req.id));
    expect((await post(response, req.relayState)).status).toBe(200);
    expectError(await post(response, req.relayState), 401, "authentication_error", "state");
    // replayed assertion under a fresh sign-in: the assertion id was seen
    const req2 = await samlStart(email);
    const assertionId = `_replay${uuid().replace(/-/g, "")}`;
    expect((await post(samlIdp.signedResponse(opts(req2.id, { assertionId })), req2.relayState)).status).toBe(200);
    const req3 = await samlStart(email);
    expectError(await post(samlIdp.signedResponse(opts(req3.id, { assertionId })), req3.relayState), 401, "authentication_error", "replayed");
    // IdP-initiated (no RelayState) and malformed posts
    expectError(await post(samlIdp.signedResponse(opts(req3.id)), ""), 401, "authentication_error", "RelayState");
    const notForm = await fetch(ACS(), { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expectError({ status: notForm.status, body: await notForm.json() }, 400, "validation_error");
  });

  test("signRequests: the AuthnRequest is signed (SigAlg, Signature) with the SP key whose certificate the metadata publishes", async () => {
    const { domain } = await activeConnection("saml", {
      jitProvisioning: true,
      samlConfig: { entityId: samlIdp.entityId, ssoUrl: samlIdp.ssoUrl, certificate: samlIdp.certificate, signRequests: true },
    });
    const req = await samlStart(`sig@${domain}`);
    expect(req.signed).toBe(true);
    const u = new URL(req.location);
    expect(u.searchParams.get("SigAlg")).toBe("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
    // verify the redirect-binding signature with the certificate from the SP metadata
    const { createVerify, X509Certificate } = await import("node:crypto");
    const xml = (await env.call("GET", "/api/v1/sso/sp-metadata", env.A)).body.metadataXml as string;
    const certB64 = /<(?:ds:)?X509Certificate>([^<]+)</.exec(xml)![1]!.replace(/\s+/g, "");
    const cert = new X509Certificate(Buffer.from(certB64, "base64"));
    const raw = req.location.split("?")[1]!.split("&");
    const part = (k: string) => raw.find((p) => p.startsWith(`${k}=`))!;
    const signedText = [part("SAMLRequest"), part("RelayState"), part("SigAlg")].join("&");
    const ok = createVerify("RSA-SHA256").update(signedText).verify(cert.publicKey, Buffer.from(decodeURIComponent(part("Signature").slice(10)), "base64"));
    expect(ok).toBe(true);
    // the identity provider's answer still signs the user in
    const r = await post(samlIdp.signedResponse({ inResponseTo: req.id, acsUrl: ACS(), audience: ENTITY(), email: `sig@${domain}` }), req.relayState);
    expect(r.status).toBe(200);
  });

  test("the first SAML sign-in of a SCIM-provisioned user links to it; without JIT unknown users are refused", async () => {
    const { domain } = await activeConnection("saml", { jitProvisioning: false });
    const u = await env.gw.ctx.identity.users.create("tenant-a", { email: `frank@${domain}`, external_id: "okta-00u1", identity_provider: "scim" });
    const req = await samlStart(`frank@${domain}`);
    const r = await post(samlIdp.signedResponse({ inResponseTo: req.id, acsUrl: ACS(), audience: ENTITY(), email: `FRANK@${domain}` }), req.relayState);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ created: false, user: { id: u.id } });
    const req2 = await samlStart(`grace@${domain}`);
    expectError(await post(samlIdp.signedResponse({ inResponseTo: req2.id, acsUrl: ACS(), audience: ENTITY(), email: `grace@${domain}` }), req2.relayState), 403, "authorization_error");
  });
});

describe("SAML: Recipient, Destination and bounds before parsing", () => {
  test("a signed assertion whose Recipient or Response Destination names another SP's ACS is refused with the reason; a missing Recipient too; no Destination is accepted", async () => {
    const { domain } = await activeConnection("saml", { jitProvisioning: true });
    const email = `rec@${domain}`;
    const other = "https://other-sp.test/api/v1/sso/saml/acs";
    const opts = (id: string, over: Record<string, unknown> = {}) => ({ inResponseTo: id, acsUrl: ACS(), audience: ENTITY(), email, ...over });
    for (const [over, hint] of [
      [{ recipient: other }, "Recipient"],
      [{ destination: other }, "Destination"],
      [{ recipient: other, destination: other }, "Destination"],
      [{ recipient: null }, "no Recipient"],
    ] as const) {
      const req = await samlStart(email);
      const r = await post(samlIdp.signedResponse(opts(req.id, over)), req.relayState);
      expectError(r, 401, "authentication_error", hint);
    }
    // Destination is optional on a response that is not itself signed (profiles §4.1.4.2)
    const req = await samlStart(email);
    expect((await post(samlIdp.signedResponse(opts(req.id, { destination: null })), req.relayState)).status).toBe(200);
  }, 30_000);

  test("deep nesting, a DOCTYPE and an oversized SAMLResponse are refused with 400 before parsing; the sign-in state survives", async () => {
    const { domain } = await activeConnection("saml", { jitProvisioning: true });
    const email = `deep@${domain}`;
    const req = await samlStart(email);
    const b64 = (xml: string) => Buffer.from(xml).toString("base64");
    const good = samlIdp.response({ inResponseTo: req.id, acsUrl: ACS(), audience: ENTITY(), email }, samlIdp.signAssertion(samlIdp.assertionXml({ inResponseTo: req.id, acsUrl: ACS(), audience: ENTITY(), email })));
    const deep = good.replace("<samlp:Status>", "<x>".repeat(30_000) + "</x>".repeat(30_000) + "<samlp:Status>");
    const cases: Array<[string, string]> = [
      [b64(deep), "nested deeper than"],
      [b64(`<!DOCTYPE r [<!ENTITY a "aaaa">]>${good}`), "entity declarations"],
      [b64(good.replace("<samlp:Status>", `<pad>${"x".repeat(600_000)}</pad><samlp:Status>`)), "larger than"],
      [b64("<notSaml/>"), "not a SAML Response"],
      [b64("<samlp:Response"), "unterminated"],
    ];
    for (const [body, hint] of cases) expectError(await post(body, req.relayState), 400, "validation_error", hint);
    // the refused posts consumed nothing: the real answer still signs in
    expect((await post(b64(good), req.relayState)).status).toBe(200);
  }, 30_000);
});

describe("OIDC: iat", () => {
  test("an ID token issued a day in the future is refused; one within the clock skew is accepted", async () => {
    const { domain } = await activeConnection("oidc", { jitProvisioning: true });
    const email = `iat@${domain}`;
    idp.tweaks = { iatSecs: 86_400 };
    try {
      expectError(await oidcSignIn(email), 401, "authentication_error", "iat");
    } finally {
      idp.tweaks = {};
    }
    idp.tweaks = { iatSecs: 5 };
    try {
      expect((await oidcSignIn(email)).status).toBe(200);
    } finally {
      idp.tweaks = {};
    }
  }, 30_000);
});
