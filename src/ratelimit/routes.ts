/**
 * Rate-limit administration (doc1 §4.8). A caller sees and manages only its own tenant:
 * {tenant_id} must be the caller's tenant, any other id is 404 not_found (tenant isolation).
 */
import { t } from "elysia";
import type { Kernel } from "../core/kernel";
import { DOC1, notFound } from "../core/errors";
import type { Principal } from "../core/auth";
import { TIERS, TIER_NAMES } from "./tiers";
import type { TenantLimits } from "./limiter";
import type { TierAssignment } from "./store";
import type { TierName } from "./tiers";

/** What the routes manage: the in-process limiter or the shared one (describe then reads the store). */
export interface TierAdmin {
  describe(tenantId: string): TenantLimits | Promise<TenantLimits>;
  setTier(tenantId: string, tier: TierName, by: string): Promise<TierAssignment>;
  resetTier(tenantId: string): Promise<boolean>;
}

const TierSchema = t.Object({
  name: t.String(),
  requestsPerSecond: t.Integer(),
  requestsPerMinute: t.Integer(),
  tokensPerMinute: t.Integer(),
  requestsPerDay: t.Integer(),
});

const TenantLimitsSchema = t.Object({
  tenantId: t.String(),
  tier: t.String(),
  isDefault: t.Boolean(),
  updatedAt: t.Nullable(t.String()),
  limits: t.Omit(TierSchema, ["name"]),
  remaining: t.Object({
    requestsPerSecond: t.Integer(),
    requestsPerMinute: t.Integer(),
    requestsPerDay: t.Integer(),
    tokensPerMinute: t.Integer(),
  }),
});

const TenantParam = t.Object({ tenant_id: t.String({ minLength: 1, maxLength: 128 }) });


function ownTenant(principal: Principal, tenantId: string) {
  if (tenantId !== principal.tenantId) throw notFound(`tenant ${tenantId}`);
}

export const rateLimitRoutes = (kernel: Kernel, limiter: TierAdmin) =>
  kernel
    .mount({ prefix: "/api/v1/rate-limits", envelope: DOC1 })
    .get("", async ({ principal }) => ({ tenants: [await limiter.describe(principal.tenantId)] }), {
      perm: "ViewMetrics",
      response: t.Object({ tenants: t.Array(TenantLimitsSchema) }),
      detail: { summary: "List tenant tier assignments (the caller's tenant)", description: "Answers the caller's tenant with its tier, its limits and what remains of each in the current window (a list, for the shape of the admin API).", tags: ["rate-limits"] },
    })
    .get("/tiers", () => ({ tiers: TIER_NAMES.map((n) => TIERS[n]) }), {
      perm: "ViewMetrics",
      response: t.Object({ tiers: t.Array(TierSchema) }),
      detail: { summary: "List tier presets", description: "The tiers a tenant can be assigned, each with its requests per second, minute and day and tokens per minute.", tags: ["rate-limits"] },
    })
    .get(
      "/:tenant_id",
      ({ principal, params }) => {
        ownTenant(principal, params.tenant_id);
        return limiter.describe(params.tenant_id);
      },
      {
        perm: "ViewMetrics",
        params: TenantParam,
        response: TenantLimitsSchema,
        detail: { summary: "Current tier of a tenant", description: "The tenant's tier, whether it is the default, when it was set, its limits and what remains of each now. Only the caller's own tenant: any other id answers 404.", tags: ["rate-limits"] },
      },
    )
    .put(
      "/:tenant_id",
      async ({ principal, params, body }) => {
        ownTenant(principal, params.tenant_id);
        await limiter.setTier(params.tenant_id, body.tier, principal.sub);
        return limiter.describe(params.tenant_id);
      },
      {
        perm: "ManageConfig",
        params: TenantParam,
        body: t.Object({ tier: t.Union(TIER_NAMES.map((n) => t.Literal(n)), { description: "starter | pro | enterprise" }) }),
        response: TenantLimitsSchema,
        detail: { summary: "Assign a tier (starter, pro, enterprise)", description: "Sets the tenant's tier; the new limits apply from the next request. Only the caller's own tenant: any other id answers 404." , tags: ["rate-limits"] },
      },
    )
    .delete(
      "/:tenant_id",
      async ({ principal, params }) => {
        ownTenant(principal, params.tenant_id);
        await limiter.resetTier(params.tenant_id);
        return limiter.describe(params.tenant_id);
      },
      {
        perm: "ManageConfig",
        params: TenantParam,
        response: TenantLimitsSchema,
        detail: { summary: "Reset a tenant to the default tier (starter)", description: "Removes the tenant's tier assignment so the default tier applies again, and answers the tenant's limits. Only the caller's own tenant: any other id answers 404.", tags: ["rate-limits"] },
      },
    );
