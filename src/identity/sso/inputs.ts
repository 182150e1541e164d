/**
 * What SSO connection requests carry (doc3 §4.1) and how svc checks and normalises them before the
 * service stores anything: URLs, domain names, OIDC scopes, the SAML certificate, and the merge of a
 * partial attribute mapping. Every refusal is a 400 naming the field.
 */
import { X509Certificate } from "node:crypto";
import { badRequest } from "../../core/errors";
import { pemOf } from "./connection-check";
import { SSO_LIMITS, type ConnectionStatus, type OidcConfig, type Protocol, type SamlConfig } from "./types";

export interface OidcInput {
  issuerUrl?: string;
  clientId?: string;
  clientSecret?: string;
  discoveryUrl?: string | null;
  scopes?: string[];
}
export interface SamlInput {
  entityId?: string;
  ssoUrl?: string;
  certificate?: string;
  signRequests?: boolean;
  attributeMapping?: { email?: string | null; name?: string | null };
}
export interface ConnectionInput {
  name: string;
  protocol: Protocol;
  oidcConfig?: OidcInput;
  samlConfig?: SamlInput;
  jitProvisioning?: boolean;
  defaultRole?: string;
}
export type ConnectionPatch = Partial<ConnectionInput>;

export interface TestResult {
  success: boolean;
  details: Record<string, unknown>;
  error?: string;
  status: ConnectionStatus;
  testedAt: string;
}

export function httpUrl(field: string, value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw badRequest(`${field}: not a valid URL`);
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") throw badRequest(`${field}: must be an http(s) URL`);
  return value;
}

/** A domain name in lower-case ASCII (IDNs as punycode), without a trailing dot; 400 otherwise. */
export function normaliseDomain(raw: string): string {
  const trimmed = raw.trim().replace(/\.$/, "").toLowerCase();
  if (!trimmed || /[\s/:@?#\\%\[\]]/.test(trimmed)) throw badRequest("domain: a bare domain name, without scheme, port, path or user (e.g. example.com)");
  let host: string;
  try {
    host = new URL(`http://${trimmed}`).hostname;
  } catch {
    throw badRequest("domain: not a valid domain name");
  }
  const labels = host.split(".");
  if (host.length > SSO_LIMITS.domain || labels.length < 2 || labels.some((l) => !/^(?!-)[a-z0-9-]{1,63}(?<!-)$/.test(l)) || /^[0-9]+$/.test(labels.at(-1)!))
    throw badRequest("domain: not a valid domain name (e.g. example.com)");
  return host;
}

export function cleanOidc(o: OidcInput & OidcConfig): OidcConfig {
  httpUrl("oidcConfig.issuerUrl", o.issuerUrl);
  if (o.discoveryUrl) httpUrl("oidcConfig.discoveryUrl", o.discoveryUrl);
  const scopes = [...new Set(o.scopes.length ? o.scopes : ["openid", "email", "profile"])];
  if (!scopes.includes("openid")) scopes.unshift("openid");
  if (scopes.some((s) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))) throw badRequest("oidcConfig.scopes: scope names are printable ASCII without spaces, quotes or backslashes");
  return { issuerUrl: o.issuerUrl, clientId: o.clientId, discoveryUrl: o.discoveryUrl ?? null, scopes };
}

/**
 * `attributeMapping` on PUT: only the keys provided change (doc3 §4.1 "only provided fields change"
 * — fixing the e-mail claim must not drop the name claim); null removes a key.
 */
export function mergeMapping(cur: SamlConfig["attributeMapping"] | undefined, input: SamlInput["attributeMapping"]): SamlConfig["attributeMapping"] {
  const out: SamlConfig["attributeMapping"] = { ...cur };
  for (const k of ["email", "name"] as const) {
    const v = input?.[k];
    if (v === null) delete out[k];
    else if (v !== undefined) out[k] = v;
  }
  return out;
}

export function cleanSaml(s: SamlConfig): SamlConfig {
  httpUrl("samlConfig.ssoUrl", s.ssoUrl);
  if (!/BEGIN CERTIFICATE/.test(s.certificate) && !/^[A-Za-z0-9+/=\s]+$/.test(s.certificate)) throw badRequest("samlConfig.certificate: expected a PEM certificate");
  try {
    new X509Certificate(pemOf(s.certificate));
  } catch {
    throw badRequest("samlConfig.certificate: not a parseable X.509 certificate");
  }
  return { entityId: s.entityId, ssoUrl: s.ssoUrl, certificate: s.certificate.trim(), signRequests: s.signRequests, attributeMapping: { ...s.attributeMapping } };
}
