/**
 * Operational endpoints (doc1 §4.1): GET /health (liveness), /ready (readiness), /metrics
 * (Prometheus text), /stats (JSON), / (information document), /openapi.json and /docs.
 * They are unauthenticated, like the usual probes and scrape targets (docs/decisions.md).
 */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context";
import { ApiError } from "../core/errors";
import pkg from "../../package.json";
import type { RequestObserver } from "./requests";

export const SERVICE = "svc";

/** Provider styles and the request each one starts with. */
export const ENDPOINTS = {
  "chat-completions": { method: "POST", path: "/v1/chat/completions" },
  messages: { method: "POST", path: "/v1/messages" },
  "generate-content": { method: "POST", path: "/v1beta/models/{model}/generateContent" },
  chat: { method: "POST", path: "/v1/chat" },
  generate: { method: "POST", path: "/v1/generate" },
  embed: { method: "POST", path: "/v1/embed" },
} as const;

export interface ReadinessReport {
  ready: boolean;
  checks: { database: boolean; migrations: boolean; embedder: boolean };
}

export function readiness(ctx: AppContext): ReadinessReport {
  let database = ctx.readiness.database && !ctx.db.closed;
  let migrations = false;
  if (database) {
    try {
      ctx.db.get("SELECT 1 AS ok");
      // every migration this build knows is recorded in schema_migrations
      migrations = ctx.readiness.migrations && ctx.db.pendingMigrations().length === 0;
    } catch {
      database = false;
    }
  }
  let embedder = false;
  try {
    embedder = ctx.readiness.embedder();
  } catch {}
  const checks = { database, migrations, embedder };
  return { ready: database && checks.migrations && embedder, checks };
}

/** Sum of a counter's values grouped by some of its labels. */
async function sumBy(metric: { get(): Promise<{ values: Array<{ labels: Record<string, string | number>; value: number }> }> }, keyOf: (l: Record<string, string | number>) => string) {
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values) {
    const k = keyOf(v.labels);
    out[k] = (out[k] ?? 0) + v.value;
  }
  return out;
}

export async function stats(ctx: AppContext, observer: RequestObserver) {
  const m = ctx.metrics;
  const byStatus = await sumBy(m.httpRequests, (l) => String(l.status).slice(0, 1) + "xx");
  const lookups = (await m.cacheLookups.get()).values;
  const tiers: Record<string, { hits: number; misses: number }> = {};
  let hits = 0;
  let misses = 0;
  for (const v of lookups) {
    const tier = String(v.labels.tier ?? "none");
    const result = String(v.labels.result ?? "");
    const slot = (tiers[tier] ??= { hits: 0, misses: 0 });
    if (result === "hit") {
      slot.hits += v.value;
      hits += v.value;
    } else if (result === "miss") {
      slot.misses += v.value;
      misses += v.value;
    }
  }
  const rejections = (await m.rateLimitRejections.get()).values.reduce((s, v) => s + v.value, 0);
  const entries = (await m.cacheEntries.get()).values.reduce((s, v) => s + v.value, 0);
  return {
    service: SERVICE,
    version: pkg.version,
    uptimeSecs: Math.floor((Date.now() - ctx.startedAt) / 1000),
    requests: { total: observer.requests, byStatus, rateLimited: rejections },
    cache: { hits, misses, hitRate: hits + misses > 0 ? hits / (hits + misses) : 0, tiers, entries },
    tenants: { active: observer.tenantsSeen.size },
  };
}

const Health = t.Object({ status: t.Literal("ok") });
const Ready = t.Object({
  status: t.Literal("ready"),
  checks: t.Object({ database: t.Boolean(), migrations: t.Boolean(), embedder: t.Boolean() }),
});

export const opsRoutes = (ctx: AppContext, observer: RequestObserver) =>
  new Elysia({ name: "svc-ops" })
    .get("/health", () => ({ status: "ok" as const }), {
      response: Health,
      detail: { summary: "Liveness: the process serves HTTP", tags: ["ops"], security: [] },
    })
    .get(
      "/ready",
      () => {
        const r = readiness(ctx);
        if (!r.ready) {
          const failed = Object.entries(r.checks).filter(([, ok]) => !ok).map(([k]) => k);
          throw new ApiError("service_unavailable", `not ready: ${failed.join(", ")}`, { checks: r.checks });
        }
        return { status: "ready" as const, checks: r.checks };
      },
      { response: Ready, detail: { summary: "Readiness: database open, migrations applied, embedding model loaded", tags: ["ops"], security: [] } },
    )
    .get(
      "/metrics",
      async () => new Response(await ctx.metrics.render(), { headers: { "content-type": ctx.metrics.contentType } }),
      { detail: { summary: "Prometheus metrics (text exposition format)", tags: ["ops"], security: [] } },
    )
    .get("/stats", () => stats(ctx, observer), {
      response: t.Object({
        service: t.String(),
        version: t.String(),
        uptimeSecs: t.Integer(),
        requests: t.Object({ total: t.Integer(), byStatus: t.Record(t.String(), t.Number()), rateLimited: t.Number() }),
        cache: t.Object({
          hits: t.Number(),
          misses: t.Number(),
          hitRate: t.Number(),
          tiers: t.Record(t.String(), t.Object({ hits: t.Number(), misses: t.Number() })),
          entries: t.Number(),
        }),
        tenants: t.Object({ active: t.Integer() }),
      }),
      detail: { summary: "Statistics: uptime, request counts, cache hits and misses per tier", tags: ["ops"], security: [] },
    })
    .get(
      "/",
      () => ({
        service: SERVICE,
        version: pkg.version,
        description: pkg.description,
        documentation: { openapi: "/openapi.json", swagger: "/docs" },
        endpoints: ENDPOINTS,
      }),
      {
        response: t.Object({
          service: t.String(),
          version: t.String(),
          description: t.String(),
          documentation: t.Object({ openapi: t.String(), swagger: t.String() }),
          endpoints: t.Record(t.String(), t.Object({ method: t.String(), path: t.String() })),
        }),
        detail: { summary: "Information document", tags: ["ops"], security: [] },
      },
    );
