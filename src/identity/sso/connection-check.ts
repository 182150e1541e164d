/**
 * Checking an SSO connection's identity-provider configuration (POST …/test, doc3 §2.1): for OIDC the
 * discovery document and JWKS, fetched through the outbound URL policy; for SAML the certificate,
 * entity id and SSO URL. The outcome's details are answered to the caller; an error names what failed.
 */
import { X509Certificate } from "node:crypto";
import { createLocalJWKSet } from "jose";
import type { OutboundFetch } from "../ports";
import type { OidcConfig, SamlConfig } from "./types";

export interface CheckOutcome {
  details: Record<string, unknown>;
  error?: string;
}

const errorText = (e: unknown) => String((e as Error)?.message ?? e).slice(0, 300);

/** A PEM certificate from PEM or bare base64 (what IdP metadata holds). */
export function pemOf(cert: string): string {
  const t = cert.trim();
  if (t.includes("BEGIN CERTIFICATE")) return t;
  const b64 = t.replace(/\s+/g, "");
  return `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join("\n")}\n-----END CERTIFICATE-----`;
}

/** OIDC: the discovery document (issuer, endpoints, code flow, https) and the JWKS (parseable, signing keys). */
export async function checkOidc(cfg: OidcConfig, fetch: OutboundFetch, allowHttp: boolean): Promise<CheckOutcome> {
  const details: Record<string, unknown> = { discoveryValid: false, jwksValid: false };
  const discoveryUrl = cfg.discoveryUrl ?? `${cfg.issuerUrl.replace(/\/$/, "")}/.well-known/openid-configuration`;
  details.discoveryUrl = discoveryUrl;
  if (!allowHttp && [discoveryUrl, cfg.issuerUrl].some((u) => u.startsWith("http:"))) return { details, error: "discovery: the identity provider must be reached over https" };
  let doc: Record<string, unknown>;
  try {
    doc = await getJson(fetch, discoveryUrl);
  } catch (e) {
    return { details, error: `discovery: ${errorText(e)}` };
  }
  const trim = (u: unknown) => (typeof u === "string" ? u.replace(/\/$/, "") : u);
  const problems: string[] = [];
  if (trim(doc.issuer) !== trim(cfg.issuerUrl)) problems.push(`issuer ${JSON.stringify(doc.issuer)} does not match issuerUrl ${cfg.issuerUrl}`);
  for (const k of ["authorization_endpoint", "token_endpoint", "jwks_uri"]) {
    const v = doc[k];
    if (typeof v !== "string" || !/^https?:\/\//.test(v)) problems.push(`${k} missing or not an http(s) URL`);
  }
  const rt = doc.response_types_supported;
  if (Array.isArray(rt) && !rt.includes("code")) problems.push("response_types_supported lacks code");
  details.issuer = doc.issuer ?? null;
  details.authorizationEndpoint = doc.authorization_endpoint ?? null;
  details.tokenEndpoint = doc.token_endpoint ?? null;
  details.jwksUri = doc.jwks_uri ?? null;
  if (!allowHttp) for (const k of ["authorization_endpoint", "token_endpoint", "jwks_uri"]) if (String(doc[k]).startsWith("http:")) problems.push(`${k} is not https`);
  if (problems.length) return { details, error: `discovery: ${problems.join("; ")}` };
  details.discoveryValid = true;
  try {
    const jwks = await getJson(fetch, doc.jwks_uri as string);
    if (!Array.isArray(jwks.keys) || jwks.keys.length === 0) throw new Error("no keys");
    createLocalJWKSet(jwks as never);
    const signing = (jwks.keys as Array<{ use?: string; kty?: string }>).filter((k) => k.use === undefined || k.use === "sig");
    if (signing.length === 0) throw new Error("no signing keys");
    details.keyCount = jwks.keys.length;
    details.keyTypes = [...new Set(signing.map((k) => k.kty))];
  } catch (e) {
    return { details, error: `jwks: ${errorText(e)}` };
  }
  details.jwksValid = true;
  return { details };
}

/** SAML: the certificate (parseable, valid now, usable key), the entity id and the SSO URL. */
export function checkSaml(cfg: SamlConfig, now: number): CheckOutcome {
  const details: Record<string, unknown> = { certificateValid: false, entityIdValid: false, ssoUrlValid: false };
  const problems: string[] = [];
  try {
    const cert = new X509Certificate(pemOf(cfg.certificate));
          const from = Date.parse(cert.validFrom);
    const to = Date.parse(cert.validTo);
    const key = cert.publicKey;
    const kd = key.asymmetricKeyDetails ?? {};
    Object.assign(details, {
      certificateSubject: cert.subject,
      certificateNotBefore: new Date(from).toISOString(),
      certificateNotAfter: new Date(to).toISOString(),
      certificateKeyType: key.asymmetricKeyType ?? null,
      certificateKeyBits: kd.modulusLength ?? null,
      certificateCurve: kd.namedCurve ?? null,
      certificateFingerprint: cert.fingerprint256,
    });
    if (now < from) problems.push(`certificate not valid before ${details.certificateNotBefore}`);
    else if (now > to) problems.push(`certificate expired at ${details.certificateNotAfter}`);
    else if (key.asymmetricKeyType === "rsa" && (kd.modulusLength ?? 0) < 2048) problems.push("certificate RSA key shorter than 2048 bits");
    else if (!["rsa", "ec"].includes(key.asymmetricKeyType ?? "")) problems.push(`certificate key type ${key.asymmetricKeyType} is not usable for SAML signatures`);
    else details.certificateValid = true;
  } catch {
    problems.push("certificate is not a parseable X.509 certificate");
  }
  if (cfg.entityId.trim().length > 0 && !/\s/.test(cfg.entityId)) details.entityIdValid = true;
  else problems.push("entityId is empty or contains spaces");
  try {
    const u = new URL(cfg.ssoUrl);
    if (u.protocol === "https:" || u.protocol === "http:") details.ssoUrlValid = true;
    else problems.push("ssoUrl is not an http(s) URL");
  } catch {
    problems.push("ssoUrl is not a valid URL");
  }
  details.signRequests = cfg.signRequests;
  return problems.length ? { details, error: problems.join("; ") } : { details };
}

async function getJson(fetch: OutboundFetch, url: string): Promise<Record<string, unknown>> {
  const r = await fetch(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(10_000) });
  if (!r.ok) {
    await r.body?.cancel().catch(() => {});
    throw new Error(`${url} answered HTTP ${r.status}`);
  }
  const text = await r.text();
  if (text.length > 1_000_000) throw new Error(`${url} answered more than 1 MB`);
  const v = JSON.parse(text);
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error(`${url} did not answer a JSON object`);
  return v;
}
