/**
 * Cache administration (the caller's tenant only):
 *   GET    /api/v1/cache/stats           entry count and hit/miss counters (ViewMetrics)
 *   GET    /api/v1/cache/entries         list entries, newest first, limit/offset (ViewMetrics)
 *   DELETE /api/v1/cache/entries/:id     delete one entry (ManageConfig)
 *   DELETE /api/v1/cache                 purge the tenant's cache (ManageConfig)
 * (POST /api/v1/query, a lookup of a chat-completions request, is the gateway's: src/gateway/query.ts)
 */
import { t } from "elysia";
import type { Kernel } from "../core/kernel";
import { ApiError, DOC1, notFound } from "../core/errors";
import { limitOffsetQuery } from "../core/pagination";
import type { SemanticCacheEngine } from "./engine";
import { CacheStatsSchema } from "./types";

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
      detail: { summary: "Cache statistics of the caller's tenant (counters since start)", tags: ["cache"] },
    })
    .get(
      "/entries",
      ({ principal, query }) => {
        const limit = query.limit ?? 20;
        const offset = query.offset ?? 0;
        const { entries, total } = on().listEntries(principal.tenantId, limit, offset);
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
        detail: { summary: "List the caller's cache entries, newest first", tags: ["cache"] },
      },
    )
    .delete(
      "/entries/:id",
      ({ principal, params }) => {
        if (!on().deleteEntry(principal.tenantId, params.id)) throw notFound(`cache entry ${params.id}`);
        return { id: params.id, deleted: true };
      },
      {
        perm: "ManageConfig",
        params: t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) }),
        response: t.Object({ id: t.String(), deleted: t.Boolean() }),
        detail: { summary: "Delete one cache entry", tags: ["cache"] },
      },
    )
    .delete("", async ({ principal }) => ({ deleted: await on().purge(principal.tenantId) }), {
      perm: "ManageConfig",
      response: t.Object({ deleted: t.Integer() }),
      detail: { summary: "Purge the caller's whole cache", tags: ["cache"] },
    });
};
