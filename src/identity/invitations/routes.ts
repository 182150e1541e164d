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
import { ACCEPT_PATH, type InvitationService } from "./service";

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
            summary: "Invite several addresses with a role and message: {invitations, failures, sent (e-mails delivered), failed (addresses refused), created, unsent, message}",
            ...tag("invitations"),
          },
        })
        .get("", async ({ principal, query, request }) => {
          if (query.page_size !== undefined && query.pageSize !== undefined && query.page_size !== query.pageSize)
            throw badRequest("query: page_size and pageSize disagree");
          const page = pageOf({ page: query.page, pageSize: query.page_size ?? query.pageSize });
          const { items, total } = await invitations.list(principal.tenantId, { email: query.email, status: query.status, offset: page.offset, limit: page.limit }, originOf(request));
          return pageEnvelope("invitations", items, total, page);
        }, { query: S.InvitationListQuery, perm: "WorkspaceAdmin", detail: { summary: "List invitations, newest first (pending ones with their link)", ...tag("invitations") } })
        .get("/:id", async ({ principal, params, request }) => await invitations.get(principal.tenantId, params.id, originOf(request)), {
          params: S.IdParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Get an invitation (pending: with its link for manual delivery)", ...tag("invitations") },
        })
        .post("/:id/resend", async ({ principal, params, request }) => await invitations.resend(principal.tenantId, params.id, originOf(request)), {
          params: S.IdParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Resend with a new token and expiry (the old link stops working)", ...tag("invitations") },
        })
        .delete("/:id", async ({ principal, params, request }) => await invitations.revoke(principal.tenantId, params.id, originOf(request)), {
          params: S.IdParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Revoke an invitation", ...tag("invitations") },
        }),
    )
    .use(
      kernel
        .mount({ prefix: ACCEPT_PATH, exact: true, envelope: DOC3, auth: "public" })
        .get("", async ({ query }) => await invitations.preview(query.token), {
          query: S.AcceptQuery,
          detail: { summary: "What an invitation link shows (changes nothing)", ...tag("invitations"), security: [] },
        })
        .post("", async ({ body }) => {
          const { workspace, user, invitation, passwordSet } = await invitations.accept(body.token, { name: body.name, password: body.password });
          return { workspace, user, invitation, passwordSet };
        }, {
          body: S.AcceptBody,
          detail: {
            summary: "Accept an invitation: the user is created or linked, gets the role and sets the password they sign in with (POST /api/v1/auth/login)",
            ...tag("invitations"),
            security: [],
          },
        }),
    );
