/** /api/v1/teams (doc3 §4.3, camelCase): teams, their virtual keys, spend and members; WorkspaceAdmin. */
import { t } from "elysia";
import type { Kernel } from "../../core/kernel";
import { DOC3 } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import * as S from "../schemas";
import { actor, tag } from "../http";
import { deleted, type Team } from "../types";
import type { VirtualKeyService } from "../keys/service";
import type { TeamService } from "./service";

/** A team as the API shows it (camelCase throughout). */
export const teamView = ({ external_id, ...t }: Team) => ({ ...t, externalId: external_id });

export const teamRoutes = (kernel: Kernel, teams: TeamService, keys: VirtualKeyService) => {
  const members = async (tenantId: string, id: string) => {
    const userIds = await teams.members(tenantId, id);
    return { teamId: id, userIds, total: userIds.length };
  };
  return kernel
    .mount({ prefix: "/api/v1/teams", envelope: DOC3 })
    .post("", async ({ principal, body, set }) => {
      set.status = 201;
      return teamView(await teams.create(principal.tenantId, body, actor(principal)));
    }, { body: S.TeamCreate, perm: "WorkspaceAdmin", detail: { summary: "Create a team", ...tag("teams") } })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await teams.list(principal.tenantId, { offset: page.offset, limit: page.limit, includeDeleted: query.includeDeleted });
      return pageEnvelope("teams", items.map(teamView), total, page);
    }, { query: S.TeamListQuery, perm: "WorkspaceAdmin", detail: { summary: "List teams (soft-deleted ones with includeDeleted=true)", ...tag("teams") } })
    .get("/:id", async ({ principal, params, query }) => teamView(await teams.view(principal.tenantId, params.id, query.includeDeleted === true)), {
      params: S.IdParams,
      query: S.TeamGetQuery,
      perm: "WorkspaceAdmin",
      detail: { summary: "Get a team (a soft-deleted one with includeDeleted=true)", ...tag("teams") },
    })
    .put("/:id", async ({ principal, params, body }) => teamView(await teams.update(principal.tenantId, params.id, body)), {
      params: S.IdParams,
      body: S.TeamUpdate,
      perm: "WorkspaceAdmin",
      detail: { summary: "Update a team partially", ...tag("teams") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await teams.remove(principal.tenantId, params.id);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "WorkspaceAdmin", detail: { summary: "Soft-delete a team: its keys are unlinked, not revoked", ...tag("teams") } })
    .get("/:id/keys", async ({ principal, params }) => {
      const items = (await teams.keys(principal.tenantId, params.id)).map((k) => keys.view(k, params.id));
      return { keys: items, total: items.length };
    }, { params: S.IdParams, perm: "WorkspaceAdmin", detail: { summary: "Virtual keys assigned to the team", ...tag("teams") } })
    .get("/:id/spend", async ({ principal, params }) => await teams.spend(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "WorkspaceAdmin",
      detail: { summary: "Spend in the current budget period (totalSpendCents includes sub-teams)", ...tag("teams") },
    })
    .get("/:id/members", async ({ principal, params }) => members(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "WorkspaceAdmin",
      detail: { summary: "The team's members (user ids)", ...tag("teams") },
    })
    .post("/:id/members", async ({ principal, params, body }) => {
      await teams.addMembers(principal.tenantId, params.id, body.userIds);
      return members(principal.tenantId, params.id);
    }, { params: S.IdParams, body: S.MembersBody, perm: "WorkspaceAdmin", detail: { summary: "Add members", ...tag("teams") } })
    .put("/:id/members", async ({ principal, params, body }) => {
      await teams.setMembers(principal.tenantId, params.id, body.userIds);
      return members(principal.tenantId, params.id);
    }, { params: S.IdParams, body: t.Object({ userIds: t.Array(S.Uuid, { maxItems: 1000 }) }), perm: "WorkspaceAdmin", detail: { summary: "Replace the members", ...tag("teams") } })
    .delete("/:id/members/:user_id", async ({ principal, params }) => {
      await teams.removeMembers(principal.tenantId, params.id, [params.user_id]);
      return members(principal.tenantId, params.id);
    }, { params: t.Object({ id: S.Uuid, user_id: S.Uuid }), perm: "WorkspaceAdmin", detail: { summary: "Remove a member", ...tag("teams") } });
};
