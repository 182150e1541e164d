/** The identity domain's settings: `SVC_IDENTITY__*` (invitations, SMTP delivery, the user-status cache, password sign-in, SSO). */
import { Type as T, type Static } from "@sinclair/typebox";
import { Section } from "../core/config";

export const IDENTITY_SECTIONS = {
  identity: Section({
    /** origin users reach the gateway at, for invitation links (e.g. https://svc.example.com); unset = the origin of the request that created or resent the invitation */
    public_url: T.Optional(T.String({ format: "uri" })),
    /** how long an invitation can be accepted */
    invitation_ttl_hours: T.Integer({ default: 168, minimum: 1, maximum: 24 * 365 }),
    /** how long a user's status and role permissions are cached for the per-request check (cleared in-process on every change) */
    user_cache_ms: T.Integer({ default: 2_000, minimum: 0, maximum: 60_000 }),
    /** invitation e-mail over SMTP; no host = no e-mail (links are retrievable by admins) */
    smtp: Section({
      host: T.Optional(T.String({ minLength: 1 })),
      port: T.Integer({ default: 587, minimum: 1, maximum: 65535 }),
      /** implicit TLS (port 465); otherwise STARTTLS when the server offers it */
      secure: T.Boolean({ default: false }),
      /** refuse to send unless the connection is upgraded with STARTTLS */
      require_tls: T.Boolean({ default: false }),
      user: T.Optional(T.String()),
      password: T.Optional(T.String()),
      from: T.String({ default: "svc <no-reply@localhost>", minLength: 3 }),
      timeout_ms: T.Integer({ default: 10_000, minimum: 100 }),
    }),
    /** password sign-in (POST /api/v1/auth/login) for users who accepted an invitation */
    passwords: Section({
      /** operator-wide switch; a workspace may also turn it off while SSO is active */
      enabled: T.Boolean({ default: true }),
      /** lifetime of the access token a password sign-in answers (capped by auth.max_token_ttl_secs) */
      token_ttl_secs: T.Integer({ default: 28_800, minimum: 60 }),
      /** how long a password reset link works */
      reset_ttl_minutes: T.Integer({ default: 30, minimum: 5, maximum: 1_440 }),
      /** failed sign-ins per e-mail address within the window before it is locked */
      max_failures_per_account: T.Integer({ default: 5, minimum: 1, maximum: 1_000 }),
      /** failed sign-ins (and reset requests) per client address within the window before it is locked */
      max_failures_per_address: T.Integer({ default: 30, minimum: 1, maximum: 100_000 }),
      /** reset requests per e-mail address within the window */
      max_resets_per_account: T.Integer({ default: 3, minimum: 1, maximum: 1_000 }),
      /** the window failures are counted in */
      lockout_window_secs: T.Integer({ default: 900, minimum: 1 }),
      /** how long a locked account or address is refused */
      lockout_secs: T.Integer({ default: 900, minimum: 1 }),
      /** behind reverse proxies: the X-Forwarded-For entry this many hops from the right is the client (0 = the peer address) */
      forwarded_for_hops: T.Integer({ default: 0, minimum: 0, maximum: 10 }),
      /** argon2id cost (OWASP's minimum: 19 MiB, 2 passes) */
      argon2_memory_kib: T.Integer({ default: 19_456, minimum: 8_192, maximum: 1_048_576 }),
      /** argon2id passes over the memory */
      argon2_time_cost: T.Integer({ default: 2, minimum: 1, maximum: 10 }),
    }),
    /** SSO connections and sign-in (OIDC, SAML), domain verification */
    sso: Section({
      /** AES-256-GCM key for client secrets at rest: 32 bytes as base64 or 64 hex digits; unset = generated once into the data directory (sso-secret-key) */
      secret_key: T.Optional(T.String({ minLength: 32 })),
      /** DNS servers asked for _svc-verify TXT records, comma-separated ("1.1.1.1,[2606:4700::1111]:53", "127.0.0.1:5353"); unset = the system's */
      dns_servers: T.Optional(T.String({ minLength: 1 })),
      /** per-query DNS timeout */
      dns_timeout_ms: T.Integer({ default: 3_000, minimum: 50, maximum: 60_000 }),
      /** SAML service provider entity id; unset = <public_url or request origin>/api/v1/sso/saml/metadata */
      sp_entity_id: T.Optional(T.String({ minLength: 1 })),
      /** PEM private key and certificate SAML AuthnRequests are signed with (signRequests); unset = generated once into the data directory */
      sp_private_key: T.Optional(T.String({ minLength: 1 })),
      sp_certificate: T.Optional(T.String({ minLength: 1 })),
      /** how long a started sign-in may take to come back from the identity provider */
      login_ttl_secs: T.Integer({ default: 600, minimum: 30, maximum: 3_600 }),
      /** lifetime of the svc access token a sign-in issues (capped by auth.max_token_ttl_secs) */
      token_ttl_secs: T.Integer({ default: 28_800, minimum: 60 }),
      /** accepted clock difference to an identity provider (SAML time window) */
      clock_skew_secs: T.Integer({ default: 60, minimum: 0, maximum: 600 }),
      /** scheme of the https-file verification URL (http only for tests and local development) */
      file_verification_scheme: T.Union([T.Literal("https"), T.Literal("http")], { default: "https" }),
    }),
  }),
};

export type IdentityConfig = Static<(typeof IDENTITY_SECTIONS)["identity"]>;
