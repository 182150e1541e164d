/** /api/v1/scim (doc3 §4.2; WorkspaceAdmin, DOC3 envelope, camelCase): tokens, activities, statistics. */
import { t } from "elysia";
import type { Kernel } from "../../core/kernel";
import { DOC3, badRequest } from "../../core/errors";
import { pageEnvelope, pageOf, pageQuery } from "../../core/pagination";
import { actor, tag } from "../http";
import { deleted } from "../types";
import { ACTIVITY_STATUSES, OPERATIONS, RESOURCE_TYPES, type ActivityService } from "./activities";
import { SCIM_TOKEN_LIMITS, TOKEN_STATUSES, type ScimTokenService } from "./tokens";

const OneOf = <V extends string>(values: readonly V[]) => t.Union(values.map((v) => t.Literal(v)));
const T = tag("scim");
const Params = t.Object({ id: t.String({ format: "uuid" }) });
const DateParam = t.String({ minLength: 4, maxLength: 40 });

const TokenCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: SCIM_TOKEN_LIMITS.name }),
  // the service names an unknown scope (400) — the schema only bounds the list
  scopes: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 16 })),
  expiresInDays: t.Optional(t.Nullable(t.Integer({ minimum: 1, maximum: SCIM_TOKEN_LIMITS.expiresInDays }))),
});
const TokenListQuery = t.Object({
  ...pageQuery(),
  status: t.Optional(OneOf(TOKEN_STATUSES)),
  name: t.Optional(t.String({ minLength: 1, maxLength: SCIM_TOKEN_LIMITS.name })),
});
const ActivityQuery = t.Object({
  ...pageQuery(),
  operation: t.Optional(OneOf(OPERATIONS)),
  resourceType: t.Optional(OneOf(RESOURCE_TYPES)),
  status: t.Optional(OneOf(ACTIVITY_STATUSES)),
  startDate: t.Optional(DateParam),
  endDate: t.Optional(DateParam),
});

/**
 * An ISO 8601 date or date-time as an instant. Both ends are inclusive, so a bare date as `endDate`
 * means the end of that day (UTC): `startDate=2026-05-01&endDate=2026-05-01` is the whole day.
 */
function dateOf(field: string, v: string | undefined, end = false): string | undefined {
  if (v === undefined) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) || Number.isNaN(Date.parse(v))) throw badRequest(`${field}: expected an ISO 8601 date or date-time`);
  const ms = Date.parse(v);
  return new Date(end && /^\d{4}-\d{2}-\d{2}$/.test(v) ? ms + 86_400_000 - 1 : ms).toISOString();
}

export const scimAdminRoutes = (kernel: Kernel, tokens: ScimTokenService, activities: ActivityService) =>
  kernel
    .mount({ prefix: "/api/v1/scim", envelope: DOC3 })
    .post("/tokens", async ({ principal, body, set }) => {
      set.status = 201;
      return await tokens.create(principal.tenantId, body, actor(principal));
    }, { body: TokenCreate, perm: "WorkspaceAdmin", detail: { summary: "Create a SCIM token (plainValue is returned once)", description: "Creates the bearer token an identity provider uses on /scim/v2, with its scopes (users:read, users:write, groups:read, groups:write; default the users scopes) and an optional expiry in days. `plainValue` is in this answer only; svc stores its hash.", ...T } })
    .get("/tokens", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await tokens.list(principal.tenantId, { status: query.status, name: query.name, offset: page.offset, limit: page.limit });
      return pageEnvelope("tokens", items, total, page);
    }, { query: TokenListQuery, perm: "WorkspaceAdmin", detail: { summary: "List SCIM tokens (masked values only)", description: "Lists the workspace's SCIM tokens (paged) with their scopes, status (active, revoked, expired), expiry and last use.", ...T } })
    .get("/tokens/:id", async ({ principal, params }) => await tokens.get(principal.tenantId, params.id), {
      params: Params,
      perm: "WorkspaceAdmin",
      detail: { summary: "Get a SCIM token (the plain value is never returned)", description: "Answers one SCIM token with its masked value, scopes, status, expiry and last use.", ...T },
    })
    .post("/tokens/:id/revoke", async ({ principal, params }) => await tokens.revoke(principal.tenantId, params.id), {
      params: Params,
      perm: "WorkspaceAdmin",
      detail: { summary: "Revoke a SCIM token (refused from the next SCIM request on)", description: "Revokes the token: every SCIM request looks it up, so the next one with it is refused.", ...T },
    })
    .delete("/tokens/:id", async ({ principal, params }) => {
      await tokens.remove(principal.tenantId, params.id);
      return deleted(params.id);
    }, { params: Params, perm: "WorkspaceAdmin", detail: { summary: "Delete a SCIM token and its activity log", description: "Deletes the token and the record of the SCIM requests made with it.", ...T } })
    .get("/activities", async ({ principal, query }) => {
      const page = pageOf(query);
      const startDate = dateOf("startDate", query.startDate);
      const endDate = dateOf("endDate", query.endDate, true);
      if (startDate && endDate && startDate > endDate) throw badRequest("startDate: must not be after endDate");
      const { items, total } = await activities.list(principal.tenantId, { ...query, startDate, endDate, offset: page.offset, limit: page.limit });
      return pageEnvelope("activities", items, total, page);
    }, { query: ActivityQuery, perm: "WorkspaceAdmin", detail: { summary: "SCIM activity (newest first; operation, resourceType, status, date range)", description: "Lists the SCIM requests identity providers made (paged, newest first): operation, resource type and id, status and error, filtered by operation, resource type, status or date range.", ...T } })
    .get("/statistics", async ({ principal }) => await activities.statistics(principal.tenantId), {
      perm: "WorkspaceAdmin",
      detail: { summary: "SCIM statistics (totals, last 24 h counters, last sync, active tokens)", description: "Counts the workspace's users and groups, the users and groups SCIM added and removed in the last 24 hours and its errors, and answers the last sync time and the number of active tokens.", ...T },
    });
