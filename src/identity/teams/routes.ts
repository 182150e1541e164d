/** /api/v1/teams (doc3 §4.3, camelCase): teams, their virtual keys, spend and members; WorkspaceAdmin. */
import { t } from "elysia";
import type { Kernel } from "../../core/kernel";
import { DOC3 } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import * as S from "../schemas";
import { actor, tag } from "../http";
import { examples } from "../../core/openapi";
import { deleted, type Team } from "../types";
import type { VirtualKeyService } from "../keys/service";
import type { TeamService } from "./service";

/** A team as the API shows it (camelCase throughout). */
export const teamView = ({ external_id, ...t }: Team) => ({ ...t, externalId: external_id });

const TEAM_CREATE_EXAMPLE = {
  status: 201,
  request: { name: "Platform", description: "Platform engineering", maxBudgetCents: 50000, budgetPeriod: "monthly" },
  response: {
    id: "59e1e3f3-d6c6-4353-85e0-b2f3bf39bca2",
    name: "Platform",
    description: "Platform engineering",
    parentTeamId: null,
    maxBudgetCents: 50000,
    budgetPeriod: "monthly",
    createdBy: "user:ca851e3b-f15d-4c07-8510-48979025f501",
    createdAt: "2026-11-27T08:24:56.834Z",
    updatedAt: "2026-11-27T08:24:56.834Z",
    deletedAt: null,
    externalId: null,
  },
};

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
    }, { body: S.TeamCreate, perm: "WorkspaceAdmin", detail: { ...examples(TEAM_CREATE_EXAMPLE), summary: "Create a team", description: "Creates a team, optionally under a parent team, with a budget in USD cents per period (daily, weekly, monthly) that the virtual keys assigned to it, and to its sub-teams, spend against: once the period's spend reaches it, their proxy requests are refused with 429 until the period resets.", ...tag("teams") } })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await teams.list(principal.tenantId, { offset: page.offset, limit: page.limit, includeDeleted: query.includeDeleted });
      return pageEnvelope("teams", items.map(teamView), total, page);
    }, { query: S.TeamListQuery, perm: "WorkspaceAdmin", detail: { summary: "List teams (soft-deleted ones with includeDeleted=true)", description: "Lists the workspace's teams (paged) with their parents and budgets.", ...tag("teams") } })
    .get("/:id", async ({ principal, params, query }) => teamView(await teams.view(principal.tenantId, params.id, query.includeDeleted === true)), {
      params: S.IdParams,
      query: S.TeamGetQuery,
      perm: "WorkspaceAdmin",
      detail: { summary: "Get a team (a soft-deleted one with includeDeleted=true)", description: "Answers one team with its parent and budget; 404 if there is none with this id.", ...tag("teams") },
    })
    .put("/:id", async ({ principal, params, body }) => teamView(await teams.update(principal.tenantId, params.id, body)), {
      params: S.IdParams,
      body: S.TeamUpdate,
      perm: "WorkspaceAdmin",
      detail: { summary: "Update a team partially", description: "Changes the fields present (name, description, parent, budget, period); a parent may not be the team itself or one of its sub-teams.", ...tag("teams") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await teams.remove(principal.tenantId, params.id);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "WorkspaceAdmin", detail: { summary: "Soft-delete a team: its keys are unlinked, not revoked", description: "Marks the team deleted: its keys keep working without a team, and its sub-teams move up to its parent so the budgets above them still apply.", ...tag("teams") } })
    .get("/:id/keys", async ({ principal, params }) => {
      const items = (await teams.keys(principal.tenantId, params.id)).map((k) => keys.view(k, params.id));
      return { keys: items, total: items.length };
    }, { params: S.IdParams, perm: "WorkspaceAdmin", detail: { summary: "Virtual keys assigned to the team", description: "Lists the virtual keys assigned to the team (never the keys themselves).", ...tag("teams") } })
    .get("/:id/spend", async ({ principal, params }) => await teams.spend(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "WorkspaceAdmin",
      detail: { summary: "Spend in the current budget period (totalSpendCents includes sub-teams)", description: "Answers what the team spent in its current budget period, from the usage records: its own keys' spend, the total with its sub-teams' (what the budget is enforced on), its keys and the period's bounds.", ...tag("teams") },
    })
    .get("/:id/members", async ({ principal, params }) => members(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "WorkspaceAdmin",
      detail: { summary: "The team's members (user ids)", description: "Lists the ids of the team's members.", ...tag("teams") },
    })
    .post("/:id/members", async ({ principal, params, body }) => {
      await teams.addMembers(principal.tenantId, params.id, body.userIds);
      return members(principal.tenantId, params.id);
    }, { params: S.IdParams, body: S.MembersBody, perm: "WorkspaceAdmin", detail: { summary: "Add members", description: "Adds users of the workspace to the team; users already in it stay.", ...tag("teams") } })
    .put("/:id/members", async ({ principal, params, body }) => {
      await teams.setMembers(principal.tenantId, params.id, body.userIds);
      return members(principal.tenantId, params.id);
    }, { params: S.IdParams, body: t.Object({ userIds: t.Array(S.Uuid, { maxItems: 1000 }) }), perm: "WorkspaceAdmin", detail: { summary: "Replace the members", description: "Replaces the team's members with exactly these users.", ...tag("teams") } })
    .delete("/:id/members/:user_id", async ({ principal, params }) => {
      await teams.removeMembers(principal.tenantId, params.id, [params.user_id]);
      return members(principal.tenantId, params.id);
    }, { params: t.Object({ id: S.Uuid, user_id: S.Uuid }), perm: "WorkspaceAdmin", detail: { summary: "Remove a member", description: "Removes one user from the team.", ...tag("teams") } });
};
