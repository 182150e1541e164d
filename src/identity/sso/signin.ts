/**
 * Sign-in through an SSO connection (the flow users need; doc3 lists only its administration).
 *
 *   start(email)  -> the e-mail's domain must be verified on a live, `active` connection (verified
 *                    domains are unique across workspaces, so the domain names the workspace);
 *                    a sign-in record (state, nonce, PKCE verifier / AuthnRequest id, expiry) is
 *                    stored and the browser is sent to the identity provider:
 *                    OIDC authorization code + PKCE (S256) + state + nonce (openid-client);
 *                    SAML AuthnRequest (HTTP-Redirect binding, signed when signRequests; node-saml)
 *   OIDC callback -> state looked up and consumed (one use), code exchanged at the token endpoint
 *                    (through the outbound URL policy), ID token checked by openid-client: signature
 *                    against the provider's JWKS, issuer, audience, exp, nonce, PKCE; iat not in
 *                    the future beyond the clock skew (checked here)
 *   SAML ACS      -> RelayState = the sign-in record (consumed), response validated by node-saml:
 *                    XML signature of the assertion with the configured certificate (signature
 *                    wrapping refused), issuer, audience = our entity id, NotBefore/NotOnOrAfter,
 *                    InResponseTo = our AuthnRequest; the assertion id is remembered until it
 *                    expires, so a replayed assertion is refused even with a fresh RelayState;
 *                    checked here: the XML is bounded before parsing (xml-bounds.ts), the Response's
 *                    Destination and the bearer confirmation's Recipient are this ACS URL
 *   finish        -> the connection must still be active, the asserted e-mail in one of its
 *                    verified domains; the live user with that e-mail (SCIM-provisioned users
 *                    included) is signed in; unknown users are created with defaultRole when
 *                    jitProvisioning, refused otherwise; suspended users are refused. The answer is
 *                    an svc access token for `user:<id>`: its permissions are those of the user's
 *                    roles, applied per request by the access check (a suspension or role change
 *                    takes effect at once).
 */
import { randomBytes } from "node:crypto";
import * as oidc from "openid-client";
// node-saml (and its XML and crypto stack, ~20 ms to load) is loaded by the first SAML request, not at start-up
import type { SAML, CacheProvider, Profile } from "@node-saml/node-saml";
import { ApiError, badRequest, forbidden, notFound, unauthenticated } from "../../core/errors";
import type { ForTenant } from "../../storage/scoped";
import { fold, iso, type WallClock } from "../types";
import type { OutboundFetch, TokenMinter } from "../ports";
import { validEmail, type UserService } from "../users/service";
import type { RoleService } from "../roles/service";
import type { SsoService } from "./service";
import { pemOf } from "./connection-check";
import type { SpKeys } from "./secrets";
import { SAML_XML_LIMITS, startTags, XmlRefused, type StartTag } from "./xml-bounds";
import { oidcOf, samlOf, type ConnectionRow, type LoginRow, type SsoDirectory, type SsoStore } from "./store";

export const SSO_PATHS = {
  login: "/api/v1/sso/login",
  oidcCallback: "/api/v1/sso/oidc/callback",
  acs: "/api/v1/sso/saml/acs",
  metadata: "/api/v1/sso/saml/metadata",
} as const;

export interface SignInSettings {
  publicUrl?: string;
  spEntityId?: string;
  loginTtlSecs: number;
  tokenTtlSecs: number;
  clockSkewSecs: number;
  /** http:// identity providers admitted (development and tests: the outbound policy admits private targets) */
  allowHttp: boolean;
}

export interface SignedIn {
  accessToken: string;
  tokenType: "Bearer";
  expiresIn: number;
  workspace: string;
  connectionId: string;
  user: { id: string; email: string; name: string | null };
  /** permissions the user's roles grant now (applied per request, not frozen in the token) */
  permissions: string[];
  /** the user was created by this sign-in (jitProvisioning) */
  created: boolean;
}

interface Identity {
  email: string;
  name: string | null;
  subject: string;
}

const refused = (why: string) => unauthenticated(`sign-in refused: ${why}`);

/** most sign-ins in progress per workspace (the start endpoint is public: a bound on what it can store) */
export const MAX_PENDING_LOGINS = 10_000;
/** how long a discovered OIDC configuration (metadata and JWKS cache) is reused */
const DISCOVERY_TTL_MS = 5 * 60_000;

export class SignInService {
  constructor(
    private readonly store: ForTenant<SsoStore>,
    private readonly directory: () => SsoDirectory,
    private readonly sso: SsoService,
    private readonly users: UserService,
    private readonly roles: RoleService,
    private readonly tokens: TokenMinter,
    private readonly fetch: OutboundFetch,
    private readonly spKeys: SpKeys,
    private readonly clock: WallClock,
    private readonly s: SignInSettings,
  ) {}

  base(origin: string): string {
    return (this.s.publicUrl ?? origin).replace(/\/$/, "");
  }

  spEntityId(origin: string): string {
    return this.s.spEntityId ?? `${this.base(origin)}${SSO_PATHS.metadata}`;
  }

  acsUrl(origin: string): string {
    return `${this.base(origin)}${SSO_PATHS.acs}`;
  }

  /** SP metadata: entity id, ACS URL and the XML (with the signing certificate when signed requests are in use or asked for). */
  async spMetadata(origin: string, withSigningCert: boolean): Promise<{ entityId: string; acsUrl: string; metadataXml: string; signingCertificate: string | null }> {
    const entityId = this.spEntityId(origin);
    const acsUrl = this.acsUrl(origin);
    const keys = withSigningCert ? await this.spKeys.get() : undefined;
    const cert = keys?.certificate ?? null;
    const { SAML } = await import("@node-saml/node-saml");
    const saml = new SAML({
      ...(keys ? { privateKey: keys.privateKey } : {}),
      issuer: entityId,
      callbackUrl: acsUrl,
      idpCert: "unused-for-metadata",
      wantAssertionsSigned: true,
      identifierFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
    });
    const metadataXml = saml.generateServiceProviderMetadata(null, cert ? [cert] : null);
    return { entityId, acsUrl, metadataXml, signingCertificate: cert };
  }

  // ------------------------------------------------------------------ start

  /** Where to send the browser for this e-mail address. */
  async start(email: string, origin: string): Promise<{ redirectUrl: string; connectionId: string; protocol: string; state: string }> {
    if (!validEmail(email)) throw badRequest("email: not a valid e-mail address");
    const domain = email.slice(email.lastIndexOf("@") + 1).toLowerCase();
    const route = await this.directory().routeOf(domain);
    if (!route) throw notFound(`SSO connection for the domain ${domain}`);
    const row = await this.sso.requireRow(route.tenantId, route.connectionId);
    if (row.status !== "active") throw forbidden(`the SSO connection for ${domain} is ${row.status}; new sign-ins are refused`);
    const s = this.store(route.tenantId);
    const nowMs = this.clock();
    await s.pruneLogins(iso(nowMs));
    if ((await s.pendingLogins()) >= MAX_PENDING_LOGINS)
      throw new ApiError("service_unavailable", "too many sign-ins in progress for this workspace; try again in a few minutes", undefined, { "retry-after": "60" });
    const state = oidc.randomState();
    const login: Omit<LoginRow, "tenant_id"> = {
      id: state,
      connection_id: row.id,
      protocol: row.protocol,
      nonce: null,
      code_verifier: null,
      request_id: null,
      redirect_uri: row.protocol === "oidc" ? `${this.base(origin)}${SSO_PATHS.oidcCallback}` : this.acsUrl(origin),
      created_at: iso(nowMs),
      expires_at: iso(nowMs + this.s.loginTtlSecs * 1000),
    };
    let redirectUrl: string;
    if (row.protocol === "oidc") {
      const config = await this.oidcConfig(row);
      login.nonce = oidc.randomNonce();
      login.code_verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: login.redirect_uri,
        scope: oidcOf(row)!.scopes.join(" "),
        response_type: "code",
        code_challenge: await oidc.calculatePKCECodeChallenge(login.code_verifier),
        code_challenge_method: "S256",
        state,
        nonce: login.nonce,
        login_hint: email,
      });
      redirectUrl = url.href;
    } else {
      login.request_id = `_${randomBytes(20).toString("hex")}`;
      const saml = await this.saml(row, origin, { requestId: login.request_id });
      redirectUrl = await saml.getAuthorizeUrlAsync(state, undefined, { additionalParams: {} });
    }
    await s.insertLogin(login);
    return { redirectUrl, connectionId: row.id, protocol: row.protocol, state };
  }

  // ------------------------------------------------------------------ OIDC callback

  async oidcCallback(url: URL): Promise<SignedIn> {
    const error = url.searchParams.get("error");
    const state = url.searchParams.get("state");
    if (!state) throw refused("state missing");
    const login = await this.takeLogin(state, "oidc");
    if (error) throw refused(`the identity provider answered ${error.slice(0, 100)}${url.searchParams.get("error_description") ? `: ${url.searchParams.get("error_description")!.slice(0, 300)}` : ""}`);
    const row = await this.activeRow(login);
    const config = await this.oidcConfig(row);
    const current = new URL(login.redirect_uri);
    current.search = url.search;
    let claims: oidc.IDToken | undefined;
    let accessToken: string | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: login.code_verifier!,
        expectedState: state,
        expectedNonce: login.nonce!,
        idTokenExpected: true,
      });
      claims = tokens.claims();
      accessToken = tokens.access_token;
    } catch (e) {
      throw refused(`ID token or code exchange rejected: ${oidcReason(e)}`);
    }
    if (!claims) throw refused("no ID token");
    // an ID token issued in the future (beyond the clock skew) is refused: openid-client bounds exp, not iat
    const nowSecs = Math.floor(this.clock() / 1000);
    if (typeof claims.iat !== "number" || claims.iat > nowSecs + this.s.clockSkewSecs)
      throw refused(`the ID token's iat ${claims.iat} is in the future (now ${nowSecs}, clock skew ${this.s.clockSkewSecs} s)`);
    let profile: Record<string, unknown> = claims;
    // OIDC Core §5.4: in the code flow the email and profile scopes' claims may be served only by the
    // UserInfo endpoint (Okta's default authorization server, Entra without optional claims ...)
    if (typeof claims.email !== "string") profile = await this.userInfo(config, accessToken, claims.sub);
    const email = typeof profile.email === "string" ? profile.email : undefined;
    if (!email) throw refused("neither the ID token nor the UserInfo endpoint gives an email claim (add the email scope)");
    if (profile.email_verified === false) throw refused("the identity provider says the e-mail address is not verified");
    const name = typeof profile.name === "string" ? profile.name : typeof claims.name === "string" ? claims.name : null;
    return this.finish(login.tenant_id, row, { email, name, subject: claims.sub });
  }

  /** the UserInfo endpoint's claims for the ID token's subject ({} when the provider has none) */
  private async userInfo(config: oidc.Configuration, accessToken: string | undefined, subject: string): Promise<Record<string, unknown>> {
    if (!config.serverMetadata().userinfo_endpoint || !accessToken) return {};
    try {
      // checks that the answer is about the ID token's subject (a mismatch is an error)
      return await oidc.fetchUserInfo(config, accessToken, subject);
    } catch (e) {
      throw refused(`UserInfo request rejected: ${oidcReason(e)}`);
    }
  }

  // ------------------------------------------------------------------ SAML ACS

  async samlAcs(form: URLSearchParams, origin: string): Promise<SignedIn> {
    const response = form.get("SAMLResponse");
    const relay = form.get("RelayState");
    if (!response) throw badRequest("SAMLResponse missing");
    if (!relay) throw refused("RelayState missing: only sign-ins started at svc are accepted (IdP-initiated sign-in is not)");
    // bounded before any XML parser (and before the sign-in state is consumed): size, depth, no DTD
    const root = boundedResponse(response);
    const acs = this.acsUrl(origin);
    // SAML profiles §4.1.4.3: the Destination, when present, is the ACS the response arrived at
    if (root.attrs.Destination !== undefined && !sameUrl(root.attrs.Destination, acs))
      throw refused(`the response's Destination ${JSON.stringify(root.attrs.Destination.slice(0, 300))} is not this service provider's ACS URL ${acs}`);
    const login = await this.takeLogin(relay, "saml");
    const row = await this.activeRow(login);
    const saml = await this.saml(row, origin, { inResponseTo: login.request_id!, since: Date.parse(login.created_at) });
    let profile: Profile | null;
    try {
      ({ profile } = await saml.validatePostResponseAsync({ SAMLResponse: response }));
    } catch (e) {
      throw refused(`SAML response rejected: ${String((e as Error)?.message ?? e).slice(0, 300)}`);
    }
    if (!profile) throw refused("the SAML response holds no assertion");
    // node-saml checks idpIssuer only on logout messages: the (signed) assertion's issuer is checked here
    if (profile.issuer !== samlOf(row)!.entityId) throw refused(`the assertion's issuer ${JSON.stringify(String(profile.issuer ?? "").slice(0, 200))} is not the connection's entityId`);
    const xml = profile.getAssertionXml?.() ?? "";
    const assertionId = /<(?:\w+:)?Assertion\b[^>]*?\sID="([^"]+)"/.exec(xml)?.[1];
    if (!assertionId) throw refused("the assertion has no ID");
    // SAML profiles §4.1.4.2/§4.1.4.3: the bearer confirmation names the ACS it is for (node-saml does not check it)
    const recipients = startTags(xml).filter((t) => t.local === "SubjectConfirmationData").map((t) => t.attrs.Recipient);
    if (recipients.length === 0 || recipients.some((r) => r === undefined)) throw refused("the assertion's SubjectConfirmationData has no Recipient");
    const foreign = recipients.find((r) => !sameUrl(r!, acs));
    if (foreign !== undefined) throw refused(`the assertion's Recipient ${JSON.stringify(foreign.slice(0, 300))} is not this service provider's ACS URL ${acs}`);
    const until = [...xml.matchAll(/NotOnOrAfter="([^"]+)"/g)].map((m) => Date.parse(m[1]!)).filter((n) => !Number.isNaN(n));
    const expires = until.length ? Math.max(...until) : this.clock() + 86_400_000;
    if (!(await this.store(login.tenant_id).rememberAssertion(row.id, assertionId, iso(expires + this.s.clockSkewSecs * 1000)))) throw refused("assertion replayed");
    const cfg = samlOf(row)!;
    const pick = (uri: string | undefined) => {
      if (!uri) return undefined;
      const v = profile![uri];
      return typeof v === "string" ? v : Array.isArray(v) && typeof v[0] === "string" ? v[0] : undefined;
    };
    const email =
      pick(cfg.attributeMapping.email) ??
      pick("email") ??
      pick("mail") ??
      pick("urn:oid:0.9.2342.19200300.100.1.3") ??
      pick("http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress") ??
      (validEmail(profile.nameID ?? "") ? profile.nameID : undefined);
    if (!email) throw refused("the assertion holds no e-mail address (set samlConfig.attributeMapping.email)");
    const name = pick(cfg.attributeMapping.name) ?? pick("displayName") ?? pick("http://schemas.microsoft.com/identity/claims/displayname") ?? null;
    return this.finish(login.tenant_id, row, { email, name, subject: profile.nameID });
  }

  // ------------------------------------------------------------------ shared

  private async takeLogin(state: string, protocol: "oidc" | "saml"): Promise<LoginRow> {
    if (state.length > 128) throw refused("unknown or already used sign-in state");
    const login = await this.directory().login(state);
    if (!login || login.protocol !== protocol) throw refused("unknown or already used sign-in state");
    if (!(await this.store(login.tenant_id).consumeLogin(login.id))) throw refused("unknown or already used sign-in state");
    if (Date.parse(login.expires_at) < this.clock()) throw refused("the sign-in took too long; start again");
    return login;
  }

  private async activeRow(login: LoginRow): Promise<ConnectionRow> {
    let row: ConnectionRow;
    try {
      row = await this.sso.requireRow(login.tenant_id, login.connection_id);
    } catch {
      throw refused("the SSO connection was deleted");
    }
    if (row.status !== "active") throw forbidden(`the SSO connection is ${row.status}; new sign-ins are refused`);
    return row;
  }

  private async finish(tenantId: string, row: ConnectionRow, who: Identity): Promise<SignedIn> {
    const email = who.email.trim();
    if (!validEmail(email)) throw refused("the asserted e-mail address is not valid");
    const domain = fold(email.slice(email.lastIndexOf("@") + 1));
    if (!(await this.sso.verifiedDomains(tenantId, row.id)).includes(domain)) throw forbidden(`the e-mail domain ${domain} is not a verified domain of this SSO connection`);
    let user = await this.users.findByEmail(tenantId, email);
    let created = false;
    if (!user) {
      if (!row.jit_provisioning) throw forbidden(`no user ${email} in this workspace and just-in-time provisioning is off for this connection`);
      try {
        user = await this.users.create(tenantId, { email, name: who.name, external_id: who.subject.slice(0, 256) || null, identity_provider: `sso:${row.protocol}` });
        created = true;
      } catch (e) {
        // created concurrently by another sign-in or SCIM: use that one
        user = await this.users.findByEmail(tenantId, email);
        if (!user) throw e;
      }
      if (created) {
        const role = await this.roles.findByName(tenantId, row.default_role);
        if (role) await this.roles.assign(tenantId, user.id, { roleId: role.id }, `sso:${row.id}`);
      }
    }
    if (user.status !== "ACTIVE") throw forbidden("the user is suspended");
    const ttl = Math.min(this.s.tokenTtlSecs, this.tokens.maxTtlSecs);
    const accessToken = await this.tokens.sign({ tenantId, sub: `user:${user.id}`, permissions: [] }, ttl);
    return {
      accessToken,
      tokenType: "Bearer",
      expiresIn: ttl,
      workspace: tenantId,
      connectionId: row.id,
      user: { id: user.id, email: user.email, name: user.name },
      permissions: await this.roles.permissionsOf(tenantId, user.id),
      created,
    };
  }

  private readonly discovered = new Map<string, { config: oidc.Configuration; until: number }>();

  /** the provider's configuration, discovered at most every 5 minutes per connection version */
  private async oidcConfig(row: ConnectionRow): Promise<oidc.Configuration> {
    const key = `${row.id}\u0000${row.updated_at}`;
    const hit = this.discovered.get(key);
    if (hit && hit.until > Date.now()) return hit.config;
    const config = await this.discover(row);
    if (this.discovered.size >= 1_000) this.discovered.clear();
    this.discovered.set(key, { config, until: Date.now() + DISCOVERY_TTL_MS });
    return config;
  }

  private async discover(row: ConnectionRow): Promise<oidc.Configuration> {
    const cfg = oidcOf(row)!;
    const secret = this.sso.clientSecretOf(row);
    const server = new URL(cfg.discoveryUrl ?? cfg.issuerUrl);
    if (server.protocol === "http:" && !this.s.allowHttp) throw new ApiError("validation_error", "the identity provider must be reached over https");
    let config: oidc.Configuration;
    try {
      config = await oidc.discovery(server, cfg.clientId, { client_secret: secret }, oidc.ClientSecretPost(secret), {
        [oidc.customFetch]: (url, options) => this.fetch(url, { ...(options as RequestInit), signal: AbortSignal.timeout(10_000) }),
        execute: this.s.allowHttp ? [oidc.allowInsecureRequests] : [],
      });
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw new ApiError("proxy_error", `OIDC discovery failed: ${oidcReason(e)}`);
    }
    const trim = (u: string) => u.replace(/\/$/, "");
    if (trim(config.serverMetadata().issuer) !== trim(cfg.issuerUrl)) throw new ApiError("proxy_error", "OIDC discovery: the issuer does not match issuerUrl");
    oidc.enableNonRepudiationChecks(config);
    return config;
  }

  private async saml(row: ConnectionRow, origin: string, o: { requestId?: string; inResponseTo?: string; since?: number }): Promise<SAML> {
    const cfg = samlOf(row)!;
    const entityId = this.spEntityId(origin);
    const keys = cfg.signRequests ? await this.spKeys.get() : undefined;
    const cache: CacheProvider = {
      saveAsync: async (key, value) => ({ value, createdAt: Date.now() }),
      getAsync: async (key) => (o.inResponseTo !== undefined && key === o.inResponseTo ? new Date(o.since ?? Date.now()).toISOString() : null),
      removeAsync: async (key) => key,
    };
    const { SAML, ValidateInResponseTo } = await import("@node-saml/node-saml");
    return new SAML({
      entryPoint: cfg.ssoUrl,
      issuer: entityId,
      callbackUrl: this.acsUrl(origin),
      idpCert: pemOf(cfg.certificate),
      idpIssuer: cfg.entityId,
      audience: entityId,
      wantAssertionsSigned: true,
      wantAuthnResponseSigned: false,
      validateInResponseTo: ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: this.s.loginTtlSecs * 1000,
      cacheProvider: cache,
      acceptedClockSkewMs: this.s.clockSkewSecs * 1000,
      identifierFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
      disableRequestedAuthnContext: true,
      signatureAlgorithm: "sha256",
      digestAlgorithm: "sha256",
      ...(keys ? { privateKey: keys.privateKey } : {}),
      ...(o.requestId ? { generateUniqueId: () => o.requestId! } : {}),
    });
  }
}

/** the Response's root element, once the decoded XML passed the bounds (400 with the reason otherwise) */
function boundedResponse(b64: string): StartTag {
  if (b64.length > Math.ceil((SAML_XML_LIMITS.maxChars * 4) / 3) + 4096) throw badRequest(`SAMLResponse refused before parsing: larger than ${SAML_XML_LIMITS.maxChars} characters`);
  let tags: StartTag[];
  try {
    tags = startTags(Buffer.from(b64, "base64").toString("utf8"));
  } catch (e) {
    if (e instanceof XmlRefused) throw badRequest(`SAMLResponse refused before parsing: ${e.message}`);
    throw e;
  }
  const root = tags[0]!;
  if (root.local !== "Response") throw badRequest(`SAMLResponse: the root element is ${root.name.slice(0, 100)}, not a SAML Response`);
  return root;
}

/** two URLs equal once normalised (scheme and host case, default port); unparsable ones compared as text */
function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return a === b;
  }
}

function oidcReason(e: unknown): string {
  const err = e as { message?: string; code?: string; cause?: unknown; error?: string; error_description?: string };
  const parts = [err.message ?? String(e)];
  if (err.error) parts.push(`${err.error}${err.error_description ? `: ${err.error_description}` : ""}`);
  const cause = err.cause as { message?: string; claim?: string } | undefined;
  if (cause && typeof cause === "object" && cause.message && cause.message !== err.message) parts.push(cause.message);
  return parts.join(" — ").slice(0, 400);
}
