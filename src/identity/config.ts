/** The identity domain's settings: `SVC_IDENTITY__*` (invitations, SMTP delivery, the user-status cache). */
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
  }),
};

export type IdentityConfig = Static<(typeof IDENTITY_SECTIONS)["identity"]>;
