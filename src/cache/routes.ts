/**
 * Cache administration (the caller's tenant only):
 *   GET    /api/v1/cache/stats           entry count and hit/miss counters (ViewMetrics)
 *   GET    /api/v1/cache/entries         list entries, newest first, limit/offset (ViewMetrics)
 *   DELETE /api/v1/cache/entries/:id     delete one entry (ManageConfig)
 *   DELETE /api/v1/cache                 purge the tenant's cache (ManageConfig)
 *   GET    /api/v1/cache/settings        the tenant's operating point of the learned hit decision (ViewMetrics)
 *   PUT    /api/v1/cache/settings        set it (decisionThreshold 0..1, or null for the default) (ManageConfig)
 *   POST   /api/v1/cache/feedback        a verdict on a hit by its X-Request-ID (ManageConfig, or the key that made the request)
 * (POST /api/v1/query, a lookup of a chat-completions request, is the gateway's: src/gateway/query.ts)
 */
import { t } from "elysia";
import type { Kernel } from "../core/kernel";
import { ApiError, DOC1, notFound } from "../core/errors";
import { hasPermission } from "../core/auth";
import { limitOffsetQuery } from "../core/pagination";
import type { SemanticCacheEngine } from "./engine";
import { CacheStatsSchema } from "./types";
import { examples } from "../core/openapi";

const EntrySchema = t.Object({
  id: t.String(),
  style: t.String(),
  model: t.String(),
  mode: t.String(),
  query: t.Union([t.String(), t.Null()]),
  hits: t.Integer(),
  createdAt: t.String(),
  lastUsedAt: t.String(),
  expiresAt: t.Union([t.String(), t.Null()]),
});

const iso = (ms: number) => new Date(ms).toISOString();

const SettingsSchema = t.Object({
  /** the tenant's own operating point (null: the default) */
  decisionThreshold: t.Union([t.Number(), t.Null()]),
  /** whether the learned stage decides this gateway's hits (false: the embedder is not the one it was trained on, or it is off) */
  learned: t.Boolean(),
  /** the operating point lookups use and where it comes from */
  effectiveThreshold: t.Union([t.Number(), t.Null()]),
  source: t.Union([t.Literal("tenant"), t.Literal("config"), t.Literal("model"), t.Null()]),
  /** the model's own default operating point */
  modelThreshold: t.Union([t.Number(), t.Null()]),
});

async function settingsOf(engine: SemanticCacheEngine, tenantId: string) {
  const e = await engine.effectiveDecision(tenantId);
  return { decisionThreshold: (await engine.tenantSettings(tenantId)).decisionThreshold, learned: e.learned, effectiveThreshold: e.threshold, source: e.source, modelThreshold: e.modelThreshold };
}

export const cacheRoutes = (kernel: Kernel, engine: SemanticCacheEngine, enabled: boolean) => {
  const on = () => {
    if (!enabled) throw new ApiError("service_unavailable", "the cache is disabled");
    return engine;
  };
  return kernel
    .mount({ prefix: "/api/v1/cache", envelope: DOC1 })
    .get("/stats", ({ principal }) => on().stats(principal.tenantId), {
      perm: "ViewMetrics",
      response: CacheStatsSchema,
      detail: {
        summary: "Cache statistics of the caller's tenant (counters since start)",
        description: "Counts the tenant's cached answers and, since the process started, its lookups, hits per tier (exact, semantic, l2_context), misses, stores and evictions.",
        tags: ["cache"],
        ...examples({ response: { entries: 1250, lookups: 4800, hits: { exact: 1900, semantic: 610, l2_context: 42 }, misses: 2248, stores: 2248, evictions: 0, feedback: { wrong: 0, right: 0, point: 0.94, raisedBy: 0, maxWrongHitRate: 0.01 } } }),
      },
    })
    .get(
      "/entries",
      async ({ principal, query }) => {
        const limit = query.limit ?? 20;
        const offset = query.offset ?? 0;
        const { entries, total } = await on().listEntries(principal.tenantId, limit, offset);
        return {
          entries: entries.map((e) => ({ ...e, createdAt: iso(e.createdAt), lastUsedAt: iso(e.lastUsedAt), expiresAt: e.expiresAt === null ? null : iso(e.expiresAt) })),
          total,
          limit,
          offset,
        };
      },
      {
        perm: "ViewMetrics",
        query: t.Object(limitOffsetQuery(20, 100)),
        response: t.Object({ entries: t.Array(EntrySchema), total: t.Integer(), limit: t.Integer(), offset: t.Integer() }),
        detail: { summary: "List the caller's cache entries, newest first", description: "Lists the tenant's cached answers, newest first (`limit`/`offset`): the API style, model, the question that keyed it, hit count, last use and expiry; never the cached answer itself.", tags: ["cache"] },
      },
    )
    .delete(
      "/entries/:id",
      async ({ principal, params }) => {
        if (!(await on().deleteEntry(principal.tenantId, params.id))) throw notFound(`cache entry ${params.id}`);
        return { id: params.id, deleted: true };
      },
      {
        perm: "ManageConfig",
        params: t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) }),
        response: t.Object({ id: t.String(), deleted: t.Boolean() }),
        detail: { summary: "Delete one cache entry", description: "Removes one cached answer of the tenant, so the next such request goes to the provider; 404 when the tenant has no entry with this id.", tags: ["cache"] },
      },
    )
    .get("/settings", ({ principal }) => settingsOf(on(), principal.tenantId), {
      perm: "ViewMetrics",
      response: SettingsSchema,
      detail: {
        summary: "The caller's operating point of the learned hit decision",
        description: "Answers the tenant's own decision threshold (null: the default), the threshold lookups use and where it comes from (tenant, config or model), and whether the learned stage decides hits on this gateway.",
        tags: ["cache"],
      },
    })
    .put(
      "/settings",
      async ({ principal, body }) => {
        const engine = on();
        await engine.setTenantSettings(principal.tenantId, { decisionThreshold: body.decisionThreshold });
        return settingsOf(engine, principal.tenantId);
      },
      {
        perm: "ManageConfig",
        body: t.Object(
          {
            decisionThreshold: t.Union([t.Number({ minimum: 0, maximum: 1 }), t.Null()], {
              description: "probability a pair needs to hit: higher = fewer, surer hits (precision), lower = more hits (recall); null = the default",
            }),
          },
          { additionalProperties: false },
        ),
        response: SettingsSchema,
        detail: {
          summary: "Set the caller's operating point of the learned hit decision",
          description: "Sets the probability a cached answer needs, by the learned hit decision, to be served for a request (0 to 1; null returns to the default), and answers the settings as GET does. The cross-validated precision / recall of the shipped point and the trade-off along the cosine floor are in BENCHMARKS.md (\"Cache quality\").",
          tags: ["cache"],
        },
      },
    )
    .post(
      "/feedback",
      ({ principal, body }) => {
        const caller = principal.keyId ?? `sub:${principal.sub}`;
        return on().reportFeedback(principal.tenantId, body.requestId, body.verdict, caller, hasPermission(principal, "ManageConfig"));
      },
      {
        body: t.Object(
          {
            requestId: t.String({ minLength: 1, maxLength: 128, description: "the X-Request-ID of the response served from the cache" }),
            verdict: t.Union([t.Literal("wrong"), t.Literal("right")]),
          },
          { additionalProperties: false },
        ),
        response: t.Object({
          requestId: t.String(),
          verdict: t.Union([t.Literal("wrong"), t.Literal("right")]),
          wrong: t.Integer(),
          right: t.Integer(),
          point: t.Number(),
          raisedBy: t.Number(),
          maxWrongHitRate: t.Number(),
        }),
        detail: {
          summary: "Report that a cache hit served the wrong (or the right) answer",
          description:
            "\"wrong\": the entry stops serving that question (and near-identical ones) for this tenant at once, and the tenant's operating point tightens toward cache.max_wrong_hit_rate; \"right\" and unreported hits loosen it back slowly. 404: unknown request id; 409: the request did not hit, or was already judged; 403: another caller's request without ManageConfig.",
          tags: ["cache"],
        },
      },
    )
    .delete("", async ({ principal }) => ({ deleted: await on().purge(principal.tenantId) }), {
      perm: "ManageConfig",
      response: t.Object({ deleted: t.Integer() }),
      detail: { summary: "Purge the caller's whole cache", description: "Deletes every cached answer of the tenant and answers how many were deleted; other tenants' caches are untouched.", tags: ["cache"] },
    });
};
