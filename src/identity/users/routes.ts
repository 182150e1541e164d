/** /api/v1/users (doc3 §4.4, snake_case) and a user's role assignments (§4.5). */
import type { Kernel } from "../../core/kernel";
import { DOC3 } from "../../core/errors";
import { pageOf, snakePageEnvelope } from "../../core/pagination";
import * as S from "../schemas";
import { actor, tag } from "../http";
import { examples } from "../../core/openapi";
import { deleted } from "../types";
import type { UserService } from "./service";
import type { RoleService } from "../roles/service";

const USER_CREATE_EXAMPLE = {
  status: 201,
  request: { email: "ada@example.com", name: "Ada Lovelace" },
  response: {
    id: "ca851e3b-f15d-4c07-8510-48979025f501",
    email: "ada@example.com",
    name: "Ada Lovelace",
    external_id: null,
    identity_provider: null,
    metadata: {},
    status: "ACTIVE",
    created_at: "2026-11-27T08:24:56.837Z",
    updated_at: "2026-11-27T08:24:56.837Z",
    deleted_at: null,
  },
};

export const userRoutes = (kernel: Kernel, users: UserService, roles: RoleService) =>
  kernel
    .mount({ prefix: "/api/v1/users", envelope: DOC3 })
    .post("", async ({ principal, body, set }) => {
      set.status = 201;
      return await users.create(principal.tenantId, body);
    }, { body: S.UserCreate, perm: "WorkspaceAdmin", detail: { ...examples(USER_CREATE_EXAMPLE), summary: "Create a user (409 if the email exists in the workspace)", description: "Adds a user to the workspace (ACTIVE unless `status` says otherwise). A user created here has no password: invite people instead (POST /api/v1/invitations) so they can sign in, or provision them from an identity provider through SSO or SCIM.", ...tag("users") } })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await users.list(principal.tenantId, { offset: page.offset, limit: page.limit, status: query.status, search: query.search });
      return snakePageEnvelope("users", items, total, page);
    }, { query: S.UserListQuery, perm: "WorkspaceAdmin", detail: { summary: "List users (soft-deleted ones excluded)", description: "Lists the workspace's users (paged), filtered by status or a search in e-mail and name.", ...tag("users") } })
    .get("/:id", async ({ principal, params }) => await users.view(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "WorkspaceAdmin",
      detail: { summary: "Get a user (a soft-deleted one too, with deleted_at set)", description: "Answers one user of the workspace; 404 if there is none with this id.", ...tag("users") },
    })
    .put("/:id", async ({ principal, params, body }) => await users.update(principal.tenantId, params.id, body), {
      params: S.IdParams,
      body: S.UserUpdate,
      perm: "WorkspaceAdmin",
      detail: { summary: "Update a user partially (e.g. status SUSPENDED: the user's tokens are refused from the next request on)", description: "Changes the fields present; another user's e-mail is refused with 409. Suspending a user refuses their access tokens from the next request on.", ...tag("users") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await users.remove(principal.tenantId, params.id);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "WorkspaceAdmin", detail: { summary: "Soft-delete a user (role assignments kept)", description: "Marks the user deleted: their tokens are refused from then on, they disappear from lists, and their role assignments are kept for the record.", ...tag("users") } })
    .post("/:id/roles", async ({ principal, params, body, set }) => {
      const { created, ...assignment } = await roles.assign(principal.tenantId, params.id, body, actor(principal), principal.permissions);
      set.status = created ? 201 : 200;
      return assignment;
    }, {
      params: S.IdParams,
      body: S.AssignBody,
      perm: "ManageKeys",
      detail: { summary: "Assign a role (same role and scope again: the expiry is updated, 200)", description: "Gives the user a role in the workspace or on one resource (`scope`), optionally until an expiry; the caller must hold every permission the role grants.", ...tag("roles") },
    })
    .get("/:id/roles", async ({ principal, params }) => {
      const items = await roles.assignments(principal.tenantId, params.id);
      return { assignments: items, total: items.length };
    }, { params: S.IdParams, perm: "ManageKeys", detail: { summary: "A user's role assignments, expired ones marked", description: "Lists the user's role assignments with their scope and expiry; expired ones are listed and marked, and grant nothing.", ...tag("roles") } })
    .delete("/:id/roles/:role_id", async ({ principal, params, query }) => {
      const revoked = await roles.revoke(principal.tenantId, params.id, params.role_id, query.scope, principal.permissions);
      return { deleted: true as const, id: params.role_id, revoked };
    }, {
      params: S.UserRoleParams,
      query: S.RevokeQuery,
      perm: "ManageKeys",
      detail: { summary: "Revoke a user's assignments of a role (every scope, or ?scope=)", description: "Removes the user's assignments of the role, in every scope or only `scope`; the caller must hold every permission the role grants.", ...tag("roles") },
    });
