/**
 * Cache HTTP API (the caller's tenant only):
 *   POST   /api/v1/query                 lookup without calling upstream (any authenticated caller)
 *   GET    /api/v1/cache/stats           entry count and hit/miss counters (ViewMetrics)
 *   GET    /api/v1/cache/entries         list entries, newest first, limit/offset (ViewMetrics)
 *   DELETE /api/v1/cache/entries/:id     delete one entry (ManageConfig)
 *   DELETE /api/v1/cache                 purge the tenant's cache (ManageConfig)
 */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context";
import { kernel } from "../core/http";
import { ApiError, embeddingUnavailable, notFound } from "../core/errors";
import { limitOffsetQuery } from "../core/pagination";
import { ChatCompletionBody, openai } from "../gateway/adapters/openai";
import { parseCodeContext } from "../gateway/pipeline";
import type { SemanticCacheEngine } from "./engine";
import type { CacheKeyInput } from "./types";

function engineOf(ctx: AppContext): SemanticCacheEngine {
  const c = ctx.cache as SemanticCacheEngine | undefined;
  if (!c || !ctx.config.cache.enabled) throw new ApiError("service_unavailable", "the cache is disabled");
  return c;
}

const QueryResponse = t.Object({
  hit: t.Boolean(),
  tier: t.Union([t.Literal("exact"), t.Literal("semantic"), t.Literal("l2_context"), t.Null()]),
  similarity: t.Number(),
  contextSimilarity: t.Union([t.Number(), t.Null()]),
  entryId: t.Union([t.String(), t.Null()]),
  lookupMs: t.Number(),
  response: t.Any(),
});

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

export const cacheRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: "/api/v1" })
    .use(kernel(ctx))
    .post(
      "/query",
      async ({ body, request, principal }) => {
        const engine = engineOf(ctx);
        const call = openai.chatCompletions.parse({ body, params: {}, url: new URL(request.url), headers: request.headers });
        const input: CacheKeyInput = {
          tenantId: principal.tenantId,
          ...call.key!,
          workspaceContext: request.headers.get("x-svc-workspace-context") ?? undefined,
          codeContext: parseCodeContext(request.headers.get("x-svc-code-context")),
        };
        let r;
        try {
          r = await engine.lookup(input);
        } catch (e) {
          throw embeddingUnavailable(e) ?? e;
        }
        if (!r.hit) return { hit: false, tier: null, similarity: 0, contextSimilarity: null, entryId: null, lookupMs: r.lookupMs, response: null };
        return {
          hit: true,
          tier: r.tier,
          similarity: r.similarity,
          contextSimilarity: r.contextSimilarity ?? null,
          entryId: r.entryId,
          lookupMs: r.lookupMs,
          response: r.payload.body,
        };
      },
      {
        auth: true,
        body: ChatCompletionBody,
        response: QueryResponse,
        detail: {
          summary: "Look a chat-completions request up in the cache without calling upstream",
          description: "Body: a chat-completions request (`stream` ignored); headers X-Svc-Workspace-Context and X-Svc-Code-Context as on the proxy.",
          tags: ["cache"],
        },
      },
    )
    .get(
      "/cache/stats",
      ({ principal }) => engineOf(ctx).stats(principal.tenantId),
      {
        auth: "ViewMetrics",
        response: t.Object({
          entries: t.Integer(),
          lookups: t.Integer(),
          hits: t.Object({ exact: t.Integer(), semantic: t.Integer(), l2_context: t.Integer() }),
          misses: t.Integer(),
          stores: t.Integer(),
          evictions: t.Integer(),
        }),
        detail: { summary: "Cache statistics of the caller's tenant (counters since start)", tags: ["cache"] },
      },
    )
    .get(
      "/cache/entries",
      ({ principal, query }) => {
        const limit = query.limit ?? 20;
        const offset = query.offset ?? 0;
        const { entries, total } = engineOf(ctx).listEntries(principal.tenantId, limit, offset);
        return {
          entries: entries.map((e) => ({
            ...e,
            createdAt: iso(e.createdAt),
            lastUsedAt: iso(e.lastUsedAt),
            expiresAt: e.expiresAt === null ? null : iso(e.expiresAt),
          })),
          total,
          limit,
          offset,
        };
      },
      {
        auth: "ViewMetrics",
        query: t.Object(limitOffsetQuery(20, 100)),
        response: t.Object({ entries: t.Array(EntrySchema), total: t.Integer(), limit: t.Integer(), offset: t.Integer() }),
        detail: { summary: "List the caller's cache entries, newest first", tags: ["cache"] },
      },
    )
    .delete(
      "/cache/entries/:id",
      ({ principal, params }) => {
        if (!engineOf(ctx).deleteEntry(principal.tenantId, params.id)) throw notFound(`cache entry ${params.id}`);
        return { id: params.id, deleted: true };
      },
      {
        auth: "ManageConfig",
        params: t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) }),
        response: t.Object({ id: t.String(), deleted: t.Boolean() }),
        detail: { summary: "Delete one cache entry", tags: ["cache"] },
      },
    )
    .delete(
      "/cache",
      async ({ principal }) => ({ deleted: await engineOf(ctx).purge(principal.tenantId) }),
      {
        auth: "ManageConfig",
        response: t.Object({ deleted: t.Integer() }),
        detail: { summary: "Purge the caller's whole cache", tags: ["cache"] },
      },
    );
