/** TypeBox schemas of the SSO endpoints (doc3 §2.1, §4.1; camelCase; limits of §8). */
import { t } from "elysia";
import { pageQuery } from "../../core/pagination";
import { CONNECTION_STATUSES, PROTOCOLS, SSO_LIMITS, VERIFICATION_METHODS } from "./types";

const OneOf = <V extends string>(values: readonly V[]) => t.Union(values.map((v) => t.Literal(v)));
const Url = t.String({ minLength: 1, maxLength: SSO_LIMITS.url });
const Claim = t.String({ minLength: 1, maxLength: SSO_LIMITS.claim });

const Oidc = t.Object(
  {
    issuerUrl: t.Optional(Url),
    clientId: t.Optional(t.String({ minLength: 1, maxLength: SSO_LIMITS.clientId })),
    clientSecret: t.Optional(t.String({ minLength: 1, maxLength: SSO_LIMITS.clientSecret })),
    discoveryUrl: t.Optional(t.Nullable(Url)),
    scopes: t.Optional(t.Array(t.String({ minLength: 1, maxLength: SSO_LIMITS.scope }), { maxItems: SSO_LIMITS.scopes })),
  },
  { additionalProperties: false },
);
const Saml = t.Object(
  {
    entityId: t.Optional(t.String({ minLength: 1, maxLength: SSO_LIMITS.entityId })),
    ssoUrl: t.Optional(Url),
    certificate: t.Optional(t.String({ minLength: 1, maxLength: SSO_LIMITS.certificate })),
    signRequests: t.Optional(t.Boolean()),
    // merged key by key on PUT; null removes a mapping (the built-in claim names apply again)
    attributeMapping: t.Optional(t.Object({ email: t.Optional(t.Nullable(Claim)), name: t.Optional(t.Nullable(Claim)) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

const Name = t.String({ minLength: 1, maxLength: SSO_LIMITS.name });
export const ConnectionCreate = t.Object({
  name: Name,
  protocol: OneOf(PROTOCOLS),
  oidcConfig: t.Optional(Oidc),
  samlConfig: t.Optional(Saml),
  jitProvisioning: t.Optional(t.Boolean()),
  defaultRole: t.Optional(t.String({ minLength: 1, maxLength: SSO_LIMITS.role })),
});
export const ConnectionUpdate = t.Object({
  name: t.Optional(Name),
  protocol: t.Optional(OneOf(PROTOCOLS)),
  oidcConfig: t.Optional(Oidc),
  samlConfig: t.Optional(Saml),
  jitProvisioning: t.Optional(t.Boolean()),
  defaultRole: t.Optional(t.String({ minLength: 1, maxLength: SSO_LIMITS.role })),
});
export const ConnectionListQuery = t.Object({
  ...pageQuery(),
  protocol: t.Optional(OneOf(PROTOCOLS)),
  status: t.Optional(OneOf(CONNECTION_STATUSES)),
  name: t.Optional(t.String({ minLength: 1, maxLength: SSO_LIMITS.name })),
});
export const DomainCreate = t.Object({
  domain: t.String({ minLength: 1, maxLength: SSO_LIMITS.domain + 1 }),
  verificationMethod: t.Optional(OneOf(VERIFICATION_METHODS)),
});
const Uuid = t.String({ format: "uuid" });
export const ConnParams = t.Object({ id: Uuid });
export const DomainParams = t.Object({ id: Uuid, domain_id: Uuid });
export const LoginQuery = t.Object({ email: t.String({ minLength: 3, maxLength: 320 }) });
