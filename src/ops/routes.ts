/**
 * Operational endpoints (doc1 §4.1): GET /health (liveness), /ready (readiness), /metrics
 * (Prometheus text), /stats (JSON), / (information document), /openapi.json and /docs.
 * Probes and the documents are unauthenticated, like the usual probe targets; /metrics is too
 * unless metrics.token is set (then `Authorization: Bearer <token>`), and serves text rendered at
 * most once per metrics.render_interval_ms; /stats (totals across tenants) needs a credential
 * with ViewMetrics (docs/decisions.md).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { t } from "elysia";
import { ApiError, DOC1 } from "../core/errors";
import type { Kernel, RequestObserver } from "../core/kernel";
import type { Metrics, MetricValues } from "../core/metrics";
import pkg from "../../package.json";
import type { UpstreamProbes } from "./probes";
import type { MetricsConfig } from "./config";

export const SERVICE = "svc";

/** What ops reads: readiness checks, the metrics registry, the request observer, the information document's endpoints. */
export interface OpsDeps {
  kernel: Kernel;
  metrics: Metrics;
  observer: RequestObserver;
  /**
   * named readiness checks (database, migrations, embedder, ...); a check that throws, rejects or
   * takes longer than READY_CHECK_TIMEOUT_MS counts as failed
   */
  readiness: Record<string, ReadinessCheck>;
  /** what a failed check names in /ready's message, e.g. database → "postgres db.internal:5432/svc" */
  readinessLabels?: Record<string, string>;
  /** provider style -> the request it starts with (the gateway's registry) */
  endpoints: Record<string, { method: string; path: string }>;
  startedAt: number;
  /** background provider probes (readiness.probe_providers), reported by /ready */
  probes?: UpstreamProbes;
  /** metrics.token and metrics.render_interval_ms (default: no token, render at every scrape) */
  settings?: MetricsConfig;
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** The scrape token check: constant time, 401 in doc1's envelope without it. */
function scrapeGuard(token: string | undefined): (request: Request) => void {
  if (!token) return () => {};
  const expected = digest(token);
  return (request) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "");
    if (!m || !timingSafeEqual(digest(m[1]!), expected)) throw new ApiError("authentication_error", "GET /metrics needs Authorization: Bearer <metrics token>");
  };
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, boolean>;
}

export type ReadinessCheck = () => boolean | Promise<boolean>;

/** a database that does not answer within this is reported not ready (a load balancer's probe must not hang) */
export const READY_CHECK_TIMEOUT_MS = 2000;

export async function readiness(checks: OpsDeps["readiness"]): Promise<ReadinessReport> {
  const out: Record<string, boolean> = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        const result = check();
        out[name] =
          result instanceof Promise
            ? (await Promise.race([result, new Promise<false>((r) => (timer = setTimeout(() => r(false), READY_CHECK_TIMEOUT_MS)))])) === true
            : result === true;
      } catch {
        out[name] = false;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const ordered = Object.fromEntries(Object.keys(checks).map((k) => [k, out[k]!]));
  return { ready: Object.values(ordered).every(Boolean), checks: ordered };
}

/** Sum of a counter's values grouped by some of its labels. */
function sumBy(values: MetricValues, keyOf: (l: MetricValues[number]["labels"]) => string) {
  const out: Record<string, number> = {};
  for (const v of values) {
    const k = keyOf(v.labels);
    out[k] = (out[k] ?? 0) + v.value;
  }
  return out;
}

/** /stats reads the counters other domains register, by name (absent metrics count as zero). */
export async function stats(d: Pick<OpsDeps, "metrics" | "observer" | "startedAt">) {
  const m = d.metrics;
  const observer = d.observer;
  const byStatus = sumBy(await m.values("svc_http_requests_total"), (l) => String(l.status).slice(0, 1) + "xx");
  const lookups = await m.values("svc_cache_lookups_total");
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
  const rejections = (await m.values("svc_rate_limit_rejections_total")).reduce((s, v) => s + v.value, 0);
  const entries = (await m.values("svc_cache_entries")).reduce((s, v) => s + v.value, 0);
  return {
    service: SERVICE,
    version: pkg.version,
    uptimeSecs: Math.floor((Date.now() - d.startedAt) / 1000),
    requests: { total: observer.requests, byStatus, rateLimited: rejections },
    cache: { hits, misses, hitRate: hits + misses > 0 ? hits / (hits + misses) : 0, tiers, entries },
    tenants: { active: observer.tenantsSeen.size },
  };
}

const Health = t.Object({ status: t.Literal("ok") });
const UpstreamState = t.Object({
  status: t.Union([t.Literal("unknown"), t.Literal("up"), t.Literal("down"), t.Literal("error")]),
  checkedAt: t.Union([t.String(), t.Null()]),
  latencyMs: t.Union([t.Number(), t.Null()]),
  httpStatus: t.Union([t.Integer(), t.Null()]),
  consecutiveFailures: t.Integer(),
  error: t.Union([t.String(), t.Null()]),
});
const Ready = t.Object({
  status: t.Literal("ready"),
  checks: t.Record(t.String(), t.Boolean()),
  /** the last probe of each probed provider (readiness.probe_providers), when probes are on */
  upstreams: t.Optional(t.Record(t.String(), UpstreamState)),
});

/** Public mounts: probes carry no tokens; /metrics checks its own token when one is configured. */
const OPS_PATHS = ["/health", "/ready", "/metrics"] as const;

export const opsRoutes = (d: OpsDeps) => {
  for (const prefix of OPS_PATHS) d.kernel.register({ prefix, envelope: DOC1, auth: "public" });
  // totals across tenants: a credential, like every tenant's own usage
  d.kernel.register({ prefix: "/stats", envelope: DOC1 });
  const guard = scrapeGuard(d.settings?.token);
  const interval = d.settings?.render_interval_ms ?? 0;
  d.kernel.register({ prefix: "/", exact: true, envelope: DOC1, auth: "public" });
  return d.kernel
    .routes("")
    .get("/health", () => ({ status: "ok" as const }), {
      response: Health,
      detail: { summary: "Liveness: the process serves HTTP", description: "Answers `{status: \"ok\"}` whenever the process serves HTTP, whatever its dependencies; for a liveness probe.", tags: ["ops"], security: [] },
    })
    .get(
      "/ready",
      async () => {
        const r = await readiness(d.readiness);
        const upstreams = d.probes?.enabled ? d.probes.report() : undefined;
        if (!r.ready) {
          const failed = Object.entries(r.checks)
            .filter(([, ok]) => !ok)
            .map(([k]) => (d.readinessLabels?.[k] ? `${k} (${d.readinessLabels[k]})` : k));
          throw new ApiError("service_unavailable", `not ready: ${failed.join(", ")}`, { checks: r.checks, ...(upstreams ? { upstreams } : {}) });
        }
        return { status: "ready" as const, checks: r.checks, ...(upstreams ? { upstreams } : {}) };
      },
      {
        response: Ready,
        detail: {
          summary: "Readiness: database open, migrations applied, embedding model loaded; with readiness.probe_providers, each provider's last background probe (deciding readiness only with readiness.require_upstream)",
          description: "Answers 200 with each check once svc can serve requests, 503 (service_unavailable) naming the failed checks otherwise; for a readiness probe or a load balancer.",
          tags: ["ops"],
          security: [],
        },
      },
    )
    .get(
      "/metrics",
      async ({ request }) => {
        guard(request);
        return new Response(await d.metrics.renderCached(interval), { headers: { "content-type": d.metrics.contentType } });
      },
      {
        detail: {
          summary: "Prometheus metrics (text exposition format), rendered at most once per metrics.render_interval_ms",
          description:
            "Every counter and histogram of the process for a Prometheus scrape: HTTP requests by route template, cache lookups per tier and entries, upstream calls, errors, retries and fallbacks, tokens, cost and savings, rate-limit and budget rejections, process figures. With `metrics.token` configured, the scraper must send it as `Authorization: Bearer <token>` (401 otherwise).",
          tags: ["ops"],
        },
      },
    )
    .get("/stats", () => stats(d), {
      perm: "ViewMetrics",
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
      detail: {
        summary: "Statistics across tenants: uptime, request counts, cache hits and misses per tier",
        description: "A JSON summary of the whole process since it started, across tenants: uptime, requests by status, rate-limited requests, cache hits and misses per tier, cache entries and the number of tenants seen.",
        tags: ["ops"],
      },
    })
    .get(
      "/",
      () => ({
        service: SERVICE,
        version: pkg.version,
        description: pkg.description,
        documentation: { openapi: "/openapi.json", swagger: "/docs" },
        endpoints: d.endpoints,
      }),
      {
        response: t.Object({
          service: t.String(),
          version: t.String(),
          description: t.String(),
          documentation: t.Object({ openapi: t.String(), swagger: t.String() }),
          endpoints: t.Record(t.String(), t.Object({ method: t.String(), path: t.String() })),
        }),
        detail: { summary: "Information document", description: "Names the service and its version, where the API reference is (/openapi.json, /docs) and the proxy endpoints it serves.", tags: ["ops"], security: [] },
      },
    );
};
