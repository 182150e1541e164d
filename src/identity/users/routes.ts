/** /api/v1/users (doc3 §4.4, snake_case) and a user's role assignments (§4.5). */
import type { Kernel } from "../../core/kernel";
import { DOC3 } from "../../core/errors";
import { pageOf, snakePageEnvelope } from "../../core/pagination";
import * as S from "../schemas";
import { actor, tag } from "../http";
import { deleted } from "../types";
import type { UserService } from "./service";
import type { RoleService } from "../roles/service";

export const userRoutes = (kernel: Kernel, users: UserService, roles: RoleService) =>
  kernel
    .mount({ prefix: "/api/v1/users", envelope: DOC3 })
    .post("", async ({ principal, body, set }) => {
      set.status = 201;
      return await users.create(principal.tenantId, body);
    }, { body: S.UserCreate, perm: "WorkspaceAdmin", detail: { summary: "Create a user (409 if the email exists in the workspace)", ...tag("users") } })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await users.list(principal.tenantId, { offset: page.offset, limit: page.limit, status: query.status, search: query.search });
      return snakePageEnvelope("users", items, total, page);
    }, { query: S.UserListQuery, perm: "WorkspaceAdmin", detail: { summary: "List users (soft-deleted ones excluded)", ...tag("users") } })
    .get("/:id", async ({ principal, params }) => await users.view(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "WorkspaceAdmin",
      detail: { summary: "Get a user (a soft-deleted one too, with deleted_at set)", ...tag("users") },
    })
    .put("/:id", async ({ principal, params, body }) => await users.update(principal.tenantId, params.id, body), {
      params: S.IdParams,
      body: S.UserUpdate,
      perm: "WorkspaceAdmin",
      detail: { summary: "Update a user partially (e.g. status SUSPENDED: the user's tokens are refused from the next request on)", ...tag("users") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await users.remove(principal.tenantId, params.id);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "WorkspaceAdmin", detail: { summary: "Soft-delete a user (role assignments kept)", ...tag("users") } })
    .post("/:id/roles", async ({ principal, params, body, set }) => {
      const { created, ...assignment } = await roles.assign(principal.tenantId, params.id, body, actor(principal), principal.permissions);
      set.status = created ? 201 : 200;
      return assignment;
    }, {
      params: S.IdParams,
      body: S.AssignBody,
      perm: "ManageKeys",
      detail: { summary: "Assign a role (same role and scope again: the expiry is updated, 200)", ...tag("roles") },
    })
    .get("/:id/roles", async ({ principal, params }) => {
      const items = await roles.assignments(principal.tenantId, params.id);
      return { assignments: items, total: items.length };
    }, { params: S.IdParams, perm: "ManageKeys", detail: { summary: "A user's role assignments, expired ones marked", ...tag("roles") } })
    .delete("/:id/roles/:role_id", async ({ principal, params, query }) => {
      const revoked = await roles.revoke(principal.tenantId, params.id, params.role_id, query.scope, principal.permissions);
      return { deleted: true as const, id: params.role_id, revoked };
    }, {
      params: S.UserRoleParams,
      query: S.RevokeQuery,
      perm: "ManageKeys",
      detail: { summary: "Revoke a user's assignments of a role (every scope, or ?scope=)", ...tag("roles") },
    });
