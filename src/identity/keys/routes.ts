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
import { examples } from "../../core/openapi";
import type { VirtualKeyService } from "./service";
import type { KeyAnalyticsService } from "./analytics";

const KEY = {
  id: "01d88af1-3e58-40bd-ba75-1afa566cff1d",
  name: "ci-pipeline",
  prefix: "svc_TPzBYCmK",
  permissions: ["ViewMetrics"],
  teamId: "59e1e3f3-d6c6-4353-85e0-b2f3bf39bca2",
  status: "active",
  createdAt: "2026-11-27T08:24:56.824Z",
  lastUsedAt: null,
  revokedAt: null,
};
const KEY_CREATE_EXAMPLE = {
  status: 201,
  request: { name: KEY.name, permissions: KEY.permissions, teamId: KEY.teamId },
  response: { key: "svc_TPzBYCmKmg4-d2aIzbaIQ8xiqGwQv9ArqhhhfPt97uk", ...KEY },
};
const KEY_LIST_EXAMPLE = { response: { keys: [KEY], total: 1, page: 1, pageSize: 20, totalPages: 1 } };

export const keyRoutes = (kernel: Kernel, keys: VirtualKeyService, analytics: KeyAnalyticsService) =>
  kernel
    .mount({ prefix: "/api/v1/virtual-keys", envelope: DOC3 })
    .post("", async ({ principal, body, set }) => {
      set.status = 201;
      return await keys.create(principal.tenantId, body, principal.permissions);
    }, {
      body: S.KeyCreate,
      perm: "ManageKeys",
      detail: { ...examples(KEY_CREATE_EXAMPLE), summary: "Create a virtual key, optionally for a team; `key` is returned only here", description: "Mints an svc API key with the permissions given (only ones the caller holds; with none it may call the proxies and every route that needs no permission), optionally assigned to a team whose budget it then spends. The key itself is in this answer only; svc stores its hash. Use it as the SDKs' API key, or exchange it at POST /api/v1/auth/token.", ...tag("virtual-keys") },
    })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await keys.list(principal.tenantId, { teamId: query.teamId, status: query.status, offset: page.offset, limit: page.limit });
      return pageEnvelope("keys", items, total, page);
    }, { query: S.KeyListQuery, perm: "ViewKeys", detail: { ...examples(KEY_LIST_EXAMPLE), summary: "List virtual keys, newest first", description: "Lists the workspace's virtual keys (paged), filtered by team or status, with their prefix, permissions, team and last use; never the keys themselves.", ...tag("virtual-keys") } })
    .get("/:id", async ({ principal, params }) => await keys.get(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "ViewKeys",
      detail: { summary: "Get a virtual key (never the key itself)", description: "Answers one virtual key with its prefix, permissions, team, status and last use.", ...tag("virtual-keys") },
    })
    .put("/:id/team", async ({ principal, params, body }) => await keys.assign(principal.tenantId, params.id, body.teamId), {
      params: S.IdParams,
      body: S.KeyAssign,
      perm: "ManageKeys",
      detail: { summary: "Assign the key to a team, or unlink it with null", description: "Moves the key to a team (its spend then counts against that team's budget) or, with null, leaves it without a team.", ...tag("virtual-keys") },
    })
    .delete("/:id", async ({ principal, params }) => await keys.revoke(principal.tenantId, params.id), {
      params: S.IdParams,
      perm: "ManageKeys",
      detail: { summary: "Revoke the key (it stays listed as revoked)", description: "Revokes the key: requests with it, and access tokens exchanged from it, are refused from then on; it stays listed with its revocation time.", ...tag("virtual-keys") },
    })
    .get("/:id/analytics", async ({ principal, params, query }) => await analytics.analytics(principal.tenantId, params.id, query.period ?? "24h"), {
      params: S.IdParams,
      query: S.AnalyticsQuery,
      perm: "ViewKeys",
      detail: { summary: "Usage totals, hourly breakdown and anomalies of a key over 1h/6h/24h/7d/30d", description: "Answers the key's requests, tokens and spend over the period, hour by hour, and the anomalies found: an hour's spend above 3 times or requests above 5 times the mean of the 24 hours before it, and models the key never used before.", ...tag("virtual-keys") },
    });
