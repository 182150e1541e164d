/**
 * /api/v1/invitations (doc3 §4.6; WorkspaceAdmin) and the public acceptance step,
 * /api/v1/invitations/accept: the invitation token is the credential.
 */
import { Elysia } from "elysia";
import type { Kernel } from "../../core/kernel";
import { DOC3, badRequest } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import * as S from "../schemas";
import { actor, originOf, tag } from "../http";
import { examples } from "../../core/openapi";
import { ACCEPT_PATH, type InvitationService } from "./service";

const INVITE_EXAMPLE = {
  status: 201,
  request: { emails: ["grace@example.com"], roleId: null, message: "Welcome to the platform team" },
  response: {
    invitations: [
      {
        id: "2ca480c8-a716-47ab-ad0f-0a2d45bf0658",
        email: "grace@example.com",
        roleId: null,
        message: "Welcome to the platform team",
        status: "pending",
        invitedBy: "user:ca851e3b-f15d-4c07-8510-48979025f501",
        expiresAt: "2026-12-04T08:24:56.841Z",
        link: "https://svc.example.com/api/v1/invitations/accept?token=2ca480c8-a716-47ab-ad0f-0a2d45bf0658.aVRaWM_2s9fhgbmsiivGjqUidNZcdsWZ-m_u2wyu8g8",
        emailStatus: "not_configured",
        emailError: null,
        sentAt: "2026-11-27T08:24:56.841Z",
        createdAt: "2026-11-27T08:24:56.841Z",
        updatedAt: "2026-11-27T08:24:56.841Z",
        acceptedAt: null,
        acceptedUserId: null,
        revokedAt: null,
      },
    ],
    failures: [],
    sent: 0,
    failed: 0,
    created: 1,
    unsent: 1,
    message: "no e-mail was sent: no SMTP server is configured (identity.smtp.host); give each invitee the link in invitations[].link",
  },
};

export const invitationRoutes = (kernel: Kernel, invitations: InvitationService) =>
  new Elysia({ name: "svc-identity-invitations" })
    .use(
      kernel
        .mount({ prefix: "/api/v1/invitations", envelope: DOC3 })
        .post("", async ({ principal, body, set, request }) => {
          set.status = 201;
          return await invitations.create(principal.tenantId, body, actor(principal), originOf(request));
        }, {
          body: S.InviteBody,
          perm: "WorkspaceAdmin",
          detail: {
            summary: "Invite several addresses with a role and a message",
            description:
              "Creates one invitation per address (valid 7 days by default: identity.invitation_ttl_hours) and e-mails each its link through the configured SMTP server. The answer counts what happened: `created` invitations, `sent` e-mails the SMTP server accepted, `unsent` ones (no SMTP configured, or delivery failed: give the invitee `invitations[].link`) and `failed` addresses (invalid, already a user, already invited, repeated), with a `message` saying so.",
            ...examples(INVITE_EXAMPLE),
            ...tag("invitations"),
          },
        })
        .get("", async ({ principal, query, request }) => {
          if (query.page_size !== undefined && query.pageSize !== undefined && query.page_size !== query.pageSize)
            throw badRequest("query: page_size and pageSize disagree");
          const page = pageOf({ page: query.page, pageSize: query.page_size ?? query.pageSize });
          const { items, total } = await invitations.list(principal.tenantId, { email: query.email, status: query.status, offset: page.offset, limit: page.limit }, originOf(request));
          return pageEnvelope("invitations", items, total, page);
        }, { query: S.InvitationListQuery, perm: "WorkspaceAdmin", detail: { summary: "List invitations, newest first (pending ones with their link)", description: "Lists the workspace's invitations (paged), filtered by e-mail or status (pending, accepted, expired, revoked), with the e-mail delivery status of each.", ...tag("invitations") } })
        .get("/:id", async ({ principal, params, request }) => await invitations.get(principal.tenantId, params.id, originOf(request)), {
          params: S.IdParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Get an invitation (pending: with its link for manual delivery)", description: "Answers one invitation with its status and delivery status; a pending one carries its link, for handing it over another way.", ...tag("invitations") },
        })
        .post("/:id/resend", async ({ principal, params, request }) => await invitations.resend(principal.tenantId, params.id, originOf(request)), {
          params: S.IdParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Resend with a new token and expiry (the old link stops working)", description: "Issues a new link with a new expiry for a pending or expired invitation and e-mails it again; the previous link stops working.", ...tag("invitations") },
        })
        .delete("/:id", async ({ principal, params, request }) => await invitations.revoke(principal.tenantId, params.id, originOf(request)), {
          params: S.IdParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Revoke an invitation", description: "Revokes a pending invitation: its link is refused from then on.", ...tag("invitations") },
        }),
    )
    .use(
      kernel
        .mount({ prefix: ACCEPT_PATH, exact: true, envelope: DOC3, auth: "public" })
        .get("", async ({ query }) => await invitations.preview(query.token), {
          query: S.AcceptQuery,
          detail: { summary: "What an invitation link shows (changes nothing)", description: "Reads an invitation link's token and answers the workspace, e-mail, status, role, message and expiry it is for; nothing changes, so mail scanners following the link accept nothing.", ...tag("invitations"), security: [] },
        })
        .post("", async ({ body }) => {
          const { workspace, user, invitation, passwordSet } = await invitations.accept(body.token, { name: body.name, password: body.password });
          return { workspace, user, invitation, passwordSet };
        }, {
          body: S.AcceptBody,
          detail: {
            summary: "Accept an invitation: the user is created or linked, gets the role and sets the password they sign in with (POST /api/v1/auth/login)", description: "Accepts with the link's token, which is the credential here: the user is created (or the existing user with that address linked), the invitation's role assigned, and the password set (at least 12 characters, not a common one; required while the workspace signs in with passwords). Expired, revoked or used invitations are refused.",
            ...tag("invitations"),
            security: [],
          },
        }),
    );
