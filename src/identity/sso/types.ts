/** SSO records as the API shows them (doc3 §2.1, camelCase). */

export const PROTOCOLS = ["oidc", "saml"] as const;
export type Protocol = (typeof PROTOCOLS)[number];
export const CONNECTION_STATUSES = ["inactive", "testing", "active", "error"] as const;
export type ConnectionStatus = (typeof CONNECTION_STATUSES)[number];
export const DOMAIN_STATUSES = ["pending", "verified", "failed"] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];
export const VERIFICATION_METHODS = ["dns-txt", "https-file"] as const;
export type VerificationMethod = (typeof VERIFICATION_METHODS)[number];

export const SSO_LIMITS = { name: 128, url: 2_048, clientId: 512, clientSecret: 4_096, scopes: 32, scope: 128, entityId: 1_024, certificate: 16_384, claim: 512, domain: 253, role: 128 } as const;

/** oidcConfig as stored and shown (the secret is never part of it) */
export interface OidcConfig {
  issuerUrl: string;
  clientId: string;
  discoveryUrl: string | null;
  scopes: string[];
}

export interface SamlConfig {
  entityId: string;
  ssoUrl: string;
  certificate: string;
  signRequests: boolean;
  attributeMapping: { email?: string; name?: string };
}

export interface Domain {
  id: string;
  domain: string;
  status: DomainStatus;
  verificationMethod: VerificationMethod;
  verificationToken: string;
  isPrimary: boolean;
  verifiedAt: string | null;
  lastCheckedAt: string | null;
  lastError: string | null;
  createdAt: string;
}

export interface Connection {
  id: string;
  name: string;
  protocol: Protocol;
  /** with `clientSecretSet` and a masked `clientSecret` instead of the secret */
  oidcConfig: (OidcConfig & { clientSecretSet: boolean; clientSecret: string | null }) | null;
  samlConfig: SamlConfig | null;
  jitProvisioning: boolean;
  defaultRole: string;
  status: ConnectionStatus;
  statusReason: string | null;
  lastTestedAt: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
  domains: Domain[];
}
