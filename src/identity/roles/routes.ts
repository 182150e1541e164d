/** /api/v1/roles (doc3 §4.5): built-in and custom roles; ManageKeys. */
import type { Kernel } from "../../core/kernel";
import { DOC3 } from "../../core/errors";
import { pageOf, snakePageEnvelope } from "../../core/pagination";
import * as S from "../schemas";
import { tag } from "../http";
import { deleted } from "../types";
import type { RoleService } from "./service";

export const roleRoutes = (kernel: Kernel, roles: RoleService) =>
  kernel
    .mount({ prefix: "/api/v1/roles", envelope: DOC3 })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await roles.list(principal.tenantId, { name: query.name, is_system: query.is_system, permission: query.permission, offset: page.offset, limit: page.limit });
      return snakePageEnvelope("roles", items, total, page);
    }, { query: S.RoleListQuery, perm: "ManageKeys", detail: { summary: "List roles: built-in first, then custom, by name", description: "Lists the roles a user can be given: the built-in ones, then the workspace's custom roles, with the permissions each grants; filtered by name or permission.", ...tag("roles") } })
    .post("", async ({ principal, body, set }) => {
      set.status = 201;
      return await roles.create(principal.tenantId, body, principal.permissions);
    }, { body: S.RoleCreate, perm: "ManageKeys", detail: { summary: "Create a custom role (409 on a duplicate name; 403 for a permission the caller does not hold)", description: "Creates a workspace role granting a set of permissions; names are unique case-insensitively (built-in names included), and a role may not grant a permission its creator does not hold.", ...tag("roles") } })
    .get("/:id", async ({ principal, params }) => await roles.require(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "ManageKeys",
      detail: { summary: "Get a role", description: "Answers one role, built-in or custom, with its permissions.", ...tag("roles") },
    })
    .patch("/:id", async ({ principal, params, body }) => await roles.update(principal.tenantId, params.id, body, principal.permissions), {
      params: S.IdParams,
      body: S.RoleUpdate,
      perm: "ManageKeys",
      detail: { summary: "Update a custom role partially (built-in roles: 409)", description: "Changes a custom role's name, description or permissions; a changed permission set applies at once to everyone holding the role, so adding one the caller does not hold is refused.", ...tag("roles") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await roles.remove(principal.tenantId, params.id, principal.permissions);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "ManageKeys", detail: { summary: "Delete a custom role and its assignments (built-in roles: 409)", description: "Deletes a custom role and every assignment of it; its holders lose what it granted from the next request on.", ...tag("roles") } });
