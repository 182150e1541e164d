/**
 * Fakes on loopback speaking the real wire formats, for SSO tests:
 *  - DnsServer: a UDP DNS server (dns-packet) answering TXT queries from a table, NXDOMAIN otherwise;
 *  - FakeOidcProvider: discovery document, JWKS, an authorization endpoint that redirects back with
 *    a code (as a browser would after the user signed in), a token endpoint that checks the client
 *    secret and the PKCE verifier and issues an ID token signed with a jose-generated RS256 key —
 *    with knobs to break it (wrong audience, another nonce, expired, signed by a foreign key) — and
 *    a UserInfo endpoint for the access token it issued (knobs: profile claims only there, another
 *    subject, an error status, none advertised);
 *  - SamlIdp: a key pair and self-signed certificate made at test time (selfsigned) and SAML
 *    Responses with an assertion signed by it (xml-crypto), with knobs for audience, validity,
 *    InResponseTo and the subject.
 */
import dgram from "node:dgram";
import { randomUUID, createHash } from "node:crypto";
import * as dnsPacket from "dns-packet";
import { SignJWT, exportJWK, generateKeyPair, type JWK } from "jose";
import { SignedXml } from "xml-crypto";
import { generate } from "selfsigned";

// ---------------------------------------------------------------- DNS

export class DnsServer {
  readonly records = new Map<string, string[]>();
  queries = 0;
  private constructor(private readonly sock: dgram.Socket, readonly port: number) {}

  static async start(): Promise<DnsServer> {
    const sock = dgram.createSocket("udp4");
    await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
    const server = new DnsServer(sock, sock.address().port);
    sock.on("message", (msg, rinfo) => {
      server.queries++;
      let q: dnsPacket.Packet;
      try {
        q = dnsPacket.decode(msg);
      } catch {
        return;
      }
      const question = q.questions?.[0];
      const name = question?.name.toLowerCase() ?? "";
      const values = question?.type === "TXT" ? server.records.get(name) : undefined;
      const known = server.records.has(name);
      const answer = dnsPacket.encode({
        type: "response",
        id: q.id,
        // authoritative answer; rcode NXDOMAIN (3) for unknown names
        flags: dnsPacket.AUTHORITATIVE_ANSWER | (known ? 0 : 3),
        questions: q.questions,
        answers: (values ?? []).map((v) => ({ type: "TXT" as const, name: question!.name, class: "IN" as const, ttl: 1, data: v.length > 255 ? [v.slice(0, 255), v.slice(255)] : v })),
      });
      sock.send(answer, rinfo.port, rinfo.address);
    });
    return server;
  }

  get address() {
    return `127.0.0.1:${this.port}`;
  }

  stop() {
    this.sock.close();
  }
}

// ---------------------------------------------------------------- OIDC

export interface IdTokenTweaks {
  aud?: string;
  nonce?: string;
  expSecs?: number;
  /** iat relative to now, seconds (default: now, or before exp for an expired token) */
  iatSecs?: number;
  iss?: string;
  email?: string;
  emailVerified?: boolean;
  foreignKey?: boolean;
  sub?: string;
  /** the ID token carries no email, email_verified or name (they come from UserInfo only) */
  profileInUserInfoOnly?: boolean;
  /** what the UserInfo endpoint says differently from the signed-in user */
  userinfo?: { sub?: string; email?: string | null; emailVerified?: boolean; status?: number };
  /** the discovery document names no userinfo_endpoint */
  noUserInfoEndpoint?: boolean;
}

export class FakeOidcProvider {
  readonly clientId = "svc-client";
  readonly clientSecret = "s3cret-" + randomUUID();
  /** what the next ID token looks like */
  tweaks: IdTokenTweaks = {};
  /** the user who "signs in" at the authorization endpoint */
  email = "alice@acme.test";
  name = "Alice Liddell";
  tokenRequests: URLSearchParams[] = [];
  discoveryHits = 0;
  /** Authorization headers the UserInfo endpoint received */
  userInfoRequests: string[] = [];
  private accessTokens = new Map<string, string>(); // access token -> subject
  private codes = new Map<string, { challenge: string; nonce: string; redirectUri: string; clientId: string }>();
  private server!: ReturnType<typeof Bun.serve>;
  private key!: CryptoKey;
  private foreign!: CryptoKey;
  private jwk!: JWK;
  /** break the discovery document (test: error status) */
  brokenDiscovery = false;

  get issuer() {
    return `http://127.0.0.1:${this.server.port}`;
  }

  static async start(): Promise<FakeOidcProvider> {
    const p = new FakeOidcProvider();
    const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
    p.key = privateKey as CryptoKey;
    p.jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    p.foreign = (await generateKeyPair("RS256")).privateKey as CryptoKey;
    p.server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (r) => p.handle(r) });
    return p;
  }

  private async handle(r: Request): Promise<Response> {
    const url = new URL(r.url);
    if (url.pathname === "/.well-known/openid-configuration") {
      this.discoveryHits++;
      if (this.brokenDiscovery) return Response.json({ issuer: "https://someone-else.test" });
      return Response.json({
        issuer: this.issuer,
        authorization_endpoint: `${this.issuer}/authorize`,
        token_endpoint: `${this.issuer}/token`,
        jwks_uri: `${this.issuer}/jwks`,
        ...(this.tweaks.noUserInfoEndpoint ? {} : { userinfo_endpoint: `${this.issuer}/userinfo` }),
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["client_secret_post", "client_secret_basic"],
      });
    }
    if (url.pathname === "/jwks") return Response.json({ keys: [this.jwk] });
    if (url.pathname === "/userinfo") {
      const auth = r.headers.get("authorization") ?? "";
      this.userInfoRequests.push(auth);
      const subject = this.accessTokens.get(auth.replace(/^Bearer /, ""));
      if (!subject) return new Response(null, { status: 401, headers: { "www-authenticate": 'Bearer error="invalid_token"' } });
      const u = this.tweaks.userinfo ?? {};
      if (u.status) return Response.json({ error: "server_error" }, { status: u.status });
      const email = u.email === undefined ? this.email : u.email;
      return Response.json({ sub: u.sub ?? subject, ...(email === null ? {} : { email, email_verified: u.emailVerified ?? true }), name: this.name });
    }
    if (url.pathname === "/authorize") {
      const q = url.searchParams;
      if (q.get("response_type") !== "code" || q.get("code_challenge_method") !== "S256" || !q.get("code_challenge") || !q.get("state") || !q.get("nonce"))
        return new Response("bad authorization request", { status: 400 });
      const code = randomUUID();
      this.codes.set(code, { challenge: q.get("code_challenge")!, nonce: q.get("nonce")!, redirectUri: q.get("redirect_uri")!, clientId: q.get("client_id")! });
      const back = new URL(q.get("redirect_uri")!);
      back.searchParams.set("code", code);
      back.searchParams.set("state", q.get("state")!);
      return new Response(null, { status: 302, headers: { location: back.href } });
    }
    if (url.pathname === "/token" && r.method === "POST") {
      const body = new URLSearchParams(await r.text());
      this.tokenRequests.push(body);
      const c = this.codes.get(body.get("code") ?? "");
      if (!c) return Response.json({ error: "invalid_grant" }, { status: 400 });
      this.codes.delete(body.get("code")!);
      if (body.get("client_id") !== this.clientId || body.get("client_secret") !== this.clientSecret) return Response.json({ error: "invalid_client" }, { status: 401 });
      const verifier = body.get("code_verifier") ?? "";
      if (createHash("sha256").update(verifier).digest("base64url") !== c.challenge) return Response.json({ error: "invalid_grant", error_description: "PKCE" }, { status: 400 });
      if (body.get("redirect_uri") !== c.redirectUri) return Response.json({ error: "invalid_grant", error_description: "redirect_uri" }, { status: 400 });
      const t = this.tweaks;
      const now = Math.floor(Date.now() / 1000);
      const profile = t.profileInUserInfoOnly ? {} : { email: t.email ?? this.email, email_verified: t.emailVerified ?? true, name: this.name };
      const idToken = await new SignJWT({ nonce: t.nonce ?? c.nonce, ...profile })
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setIssuer(t.iss ?? this.issuer)
        .setAudience(t.aud ?? this.clientId)
        .setSubject(t.sub ?? "idp-user-1")
        .setIssuedAt(t.iatSecs !== undefined ? now + t.iatSecs : t.expSecs !== undefined && t.expSecs < 0 ? now + t.expSecs - 600 : now)
        .setExpirationTime(now + (t.expSecs ?? 300))
        .sign(t.foreignKey ? this.foreign : this.key);
      const accessToken = randomUUID();
      this.accessTokens.set(accessToken, t.sub ?? "idp-user-1");
      return Response.json({ access_token: accessToken, token_type: "Bearer", expires_in: 300, id_token: idToken });
    }
    return new Response("not found", { status: 404 });
  }

  stop() {
    this.server.stop(true);
  }
}

// ---------------------------------------------------------------- SAML

export interface AssertionOptions {
  inResponseTo: string;
  acsUrl: string;
  audience: string;
  email?: string;
  name?: string;
  issuer?: string;
  /** validity window relative to now, seconds */
  notBeforeSecs?: number;
  notOnOrAfterSecs?: number;
  /** the bearer confirmation's own NotOnOrAfter (default: notOnOrAfterSecs) */
  confirmationNotOnOrAfterSecs?: number;
  assertionId?: string;
  /** SubjectConfirmationData/@Recipient (default acsUrl; null: left out) */
  recipient?: string | null;
  /** Response/@Destination (default acsUrl; null: left out) */
  destination?: string | null;
}

const xmlEscape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export class SamlIdp {
  readonly entityId = "https://idp.acme.test/saml";
  readonly ssoUrl = "https://idp.acme.test/sso";
  private constructor(readonly privateKey: string, readonly certificate: string) {}

  static async create(opts: { notAfterDate?: Date; notBeforeDate?: Date; keySize?: number } = {}): Promise<SamlIdp> {
    const pems = await generate([{ name: "commonName", value: "Test IdP" }], { keySize: opts.keySize ?? 2048, algorithm: "sha256", notAfterDate: opts.notAfterDate, notBeforeDate: opts.notBeforeDate });
    return new SamlIdp(pems.private, pems.cert);
  }

  /** an unsigned Response around an assertion (XML text) */
  assertionXml(o: AssertionOptions): string {
    const now = Date.now();
    const t = (s: number) => new Date(now + s * 1000).toISOString();
    const id = o.assertionId ?? `_a${randomUUID().replace(/-/g, "")}`;
    const email = o.email ?? "alice@acme.test";
    return (
      `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ID="${id}" Version="2.0" IssueInstant="${t(0)}">` +
      `<saml:Issuer>${xmlEscape(o.issuer ?? this.entityId)}</saml:Issuer>` +
      `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${xmlEscape(email)}</saml:NameID>` +
      `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData InResponseTo="${o.inResponseTo}" NotOnOrAfter="${t(o.confirmationNotOnOrAfterSecs ?? o.notOnOrAfterSecs ?? 300)}" ${o.recipient === null ? "" : ` Recipient="${xmlEscape(o.recipient ?? o.acsUrl)}"`}/></saml:SubjectConfirmation></saml:Subject>` +
      `<saml:Conditions NotBefore="${t(o.notBeforeSecs ?? -60)}" NotOnOrAfter="${t(o.notOnOrAfterSecs ?? 300)}"><saml:AudienceRestriction><saml:Audience>${xmlEscape(o.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
      `<saml:AuthnStatement AuthnInstant="${t(0)}" SessionIndex="_s1"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
      `<saml:AttributeStatement>` +
      `<saml:Attribute Name="email"><saml:AttributeValue xsi:type="xs:string">${xmlEscape(email)}</saml:AttributeValue></saml:Attribute>` +
      `<saml:Attribute Name="displayName"><saml:AttributeValue xsi:type="xs:string">${xmlEscape(o.name ?? "Alice Liddell")}</saml:AttributeValue></saml:Attribute>` +
      `</saml:AttributeStatement></saml:Assertion>`
    );
  }

  /** sign the assertion (enveloped signature right after its Issuer) */
  signAssertion(assertion: string, key = this.privateKey, cert = this.certificate): string {
    const sig = new SignedXml({ privateKey: key, publicCert: cert, signatureAlgorithm: "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256", canonicalizationAlgorithm: "http://www.w3.org/2001/10/xml-exc-c14n#" });
    sig.addReference({
      xpath: "//*[local-name(.)='Assertion']",
      transforms: ["http://www.w3.org/2000/09/xmldsig#enveloped-signature", "http://www.w3.org/2001/10/xml-exc-c14n#"],
      digestAlgorithm: "http://www.w3.org/2001/04/xmlenc#sha256",
    });
    sig.computeSignature(assertion, { location: { reference: "//*[local-name(.)='Issuer']", action: "after" } });
    return sig.getSignedXml();
  }

  response(o: AssertionOptions, assertion: string): string {
    const now = new Date().toISOString();
    return (
      `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_r${randomUUID().replace(/-/g, "")}" Version="2.0" IssueInstant="${now}" ${o.destination === null ? "" : `Destination="${xmlEscape(o.destination ?? o.acsUrl)}" `}InResponseTo="${o.inResponseTo}">` +
      `<saml:Issuer>${xmlEscape(o.issuer ?? this.entityId)}</saml:Issuer>` +
      `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
      assertion +
      `</samlp:Response>`
    );
  }

  /** a base64 SAMLResponse with a signed assertion */
  signedResponse(o: AssertionOptions): string {
    return Buffer.from(this.response(o, this.signAssertion(this.assertionXml(o)))).toString("base64");
  }
}

/** The AuthnRequest inside a SAML HTTP-Redirect URL (deflated, base64). */
export async function authnRequestOf(redirectUrl: string): Promise<{ id: string; xml: string; relayState: string; signed: boolean }> {
  const u = new URL(redirectUrl);
  const raw = Buffer.from(u.searchParams.get("SAMLRequest")!, "base64");
  const { inflateRawSync } = await import("node:zlib");
  const xml = inflateRawSync(raw).toString("utf8");
  return { id: /\sID="([^"]+)"/.exec(xml)![1]!, xml, relayState: u.searchParams.get("RelayState") ?? "", signed: u.searchParams.has("Signature") };
}
