/**
 * /api/v1/virtual-keys: svc API keys with their team — create (the key is shown once), list,
 * get, assign to a team, revoke (ManageKeys to change, ViewKeys to read) — and their analytics
 * (doc3 §4.7).
 */
import type { Kernel } from "../../core/kernel";
import { DOC3 } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import * as S from "../schemas";
import { tag } from "../http";
import type { VirtualKeyService } from "./service";
import type { KeyAnalyticsService } from "./analytics";

export const keyRoutes = (kernel: Kernel, keys: VirtualKeyService, analytics: KeyAnalyticsService) =>
  kernel
    .mount({ prefix: "/api/v1/virtual-keys", envelope: DOC3 })
    .post("", async ({ principal, body, set }) => {
      set.status = 201;
      return await keys.create(principal.tenantId, body, principal.permissions);
    }, {
      body: S.KeyCreate,
      perm: "ManageKeys",
      detail: { summary: "Create a virtual key, optionally for a team; `key` is returned only here", ...tag("virtual-keys") },
    })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await keys.list(principal.tenantId, { teamId: query.teamId, status: query.status, offset: page.offset, limit: page.limit });
      return pageEnvelope("keys", items, total, page);
    }, { query: S.KeyListQuery, perm: "ViewKeys", detail: { summary: "List virtual keys, newest first", ...tag("virtual-keys") } })
    .get("/:id", async ({ principal, params }) => await keys.get(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "ViewKeys",
      detail: { summary: "Get a virtual key (never the key itself)", ...tag("virtual-keys") },
    })
    .put("/:id/team", async ({ principal, params, body }) => await keys.assign(principal.tenantId, params.id, body.teamId), {
      params: S.IdParams,
      body: S.KeyAssign,
      perm: "ManageKeys",
      detail: { summary: "Assign the key to a team, or unlink it with null", ...tag("virtual-keys") },
    })
    .delete("/:id", async ({ principal, params }) => await keys.revoke(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "ManageKeys",
      detail: { summary: "Revoke the key (it stays listed as revoked)", ...tag("virtual-keys") },
    })
    .get("/:id/analytics", async ({ principal, params, query }) => await analytics.analytics(principal.tenantId, params.id, query.period ?? "24h"), {
      params: S.IdParams,
      query: S.AnalyticsQuery,
      perm: "ViewKeys",
      detail: { summary: "Usage totals, hourly breakdown and anomalies of a key over 1h/6h/24h/7d/30d", ...tag("virtual-keys") },
    });
