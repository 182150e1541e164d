/**
 * Gateway domain: the provider-compatible proxies (/v1/*, /v1beta/*: one pipeline, one folder per
 * provider style under providers/), POST /api/v1/query, usage records, and GatewayService for the
 * domains that call a model (prompts, chains, memory). Tables: usage_records.
 */
import type { AsyncStorage } from "../storage/async";
import type { Logger } from "../core/log";
import { counterSeries, LastOf3, SeriesCache, type CounterSeries, type Metrics } from "../core/metrics";
import { ApiError, DOC1 } from "../core/errors";
import type { Kernel } from "../core/kernel";
import type { Domain } from "../core/domain";
import type { GatewayConfig } from "./config";
import { NO_GUARD, type ResponseCache, type SpendGuard, type TokenMeter } from "./ports";
import { GATEWAY_MIGRATIONS } from "./migrations";
import { Upstream } from "./upstream";
import { UsageRecorder } from "./usage";
import { Pipeline } from "./pipeline";
import { proxyServer } from "./serve";
import { proxyRoutes, PROXY_PREFIXES } from "./routes";
import { queryRoutes } from "./query";
import { GatewayService } from "./service";
import { PriceTable } from "./prices";
import { UsageQuery, usageRoutes } from "./usage-api";
import { OutcomeCounter, OVERVIEW_MIGRATIONS, OverviewQuery, overviewRoutes } from "./overview-api";
import { Elysia } from "elysia";
import { probeProvider, type ProbeResult } from "./probe";
import type { ProviderName } from "./providers";

export { GATEWAY_SECTIONS, type GatewayConfig, type ProvidersConfig } from "./config";
export { effectiveBaseUrls } from "./upstream";
export type { RequestFacts } from "./pipeline";
export { PROVIDERS, PROVIDER_NAMES, infoEndpoints, type ProviderName } from "./providers";
export { proxyDocs, type ProxyDoc } from "./routes";
export { GatewayService, type CompletionRequest, type CompletionResult } from "./service";
export type { ResponseCache, TokenMeter, SpendGuard, SpendTicket, Spender } from "./ports";

export interface GatewayDeps {
  config: GatewayConfig;
  /** cache.enabled: POST /api/v1/query answers 503 when the cache is off */
  cacheEnabled: boolean;
  storage: AsyncStorage;
  kernel: Kernel;
  metrics: Metrics;
  log: Logger;
  cache: ResponseCache;
  meter: TokenMeter;
  /** team budgets (identity); default: every request admitted */
  guard?: SpendGuard;
  isGatewayCredential: (c: string) => boolean;
}

export interface Gateway {
  service: GatewayService;
  pipeline: Pipeline;
  usage: UsageRecorder;
  usageQuery: UsageQuery;
  /** one readiness probe of a provider (never throws) */
  probe(provider: string, timeoutMs: number): Promise<ProbeResult>;
}

/** Keeps a label's distinct values bounded: the first `max` seen are kept, later ones count as "other". */
export class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(private readonly max: number) {}
  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return "other";
    this.seen.add(value);
    return value;
  }
}

/** The spend guard, counting its refusals (a team's budget spent) for /metrics. */
function countRefusals(guard: SpendGuard, refused: { inc(): void }): SpendGuard {
  const count = (e: unknown) => {
    if (e instanceof ApiError && e.type === "rate_limit_error") refused.inc();
    throw e;
  };
  return {
    admit(spender, model) {
      try {
        const ticket = guard.admit(spender, model);
        return ticket instanceof Promise ? ticket.catch(count) : ticket;
      } catch (e) {
        return count(e);
      }
    },
  };
}

export function create(deps: GatewayDeps): Domain<GatewayService> & Gateway {
  const upstreamErrors = deps.metrics.counter("svc_upstream_errors_total", "Upstream failures by provider and kind", ["provider", "kind"]);
  const upstream = new Upstream(deps.config, {
    duration: deps.metrics.histogram("svc_upstream_duration_seconds", "Upstream provider latency (to headers)", ["provider", "status"]),
    errors: upstreamErrors,
    retries: deps.metrics.counter("svc_upstream_retries_total", "Upstream requests retried, by provider and the failure (429, 5xx, unreachable, ...)", ["provider", "reason"]),
    fallbacks: deps.metrics.counter("svc_upstream_fallbacks_total", "Requests that moved on to the next deployment, by the deployment that failed and the next one", ["from", "to"]),
  });
  const prices = new PriceTable(deps.config.prices.overrides);
  const tenantLabel = deps.config.usage.metrics_tenant_label;
  const labels = tenantLabel ? ["provider", "model", "tenant"] : ["provider", "model"];
  const tokens = deps.metrics.counter("svc_llm_tokens_total", "LLM tokens of proxied requests (cache hits included), by provider, model and direction", [...labels, "direction"]);
  const cost = deps.metrics.counter("svc_llm_cost_usd_total", "List-price USD of what went upstream, by provider and model", labels);
  const saved = deps.metrics.counter("svc_llm_cost_saved_usd_total", "List-price USD the cache saved, by provider and model", labels);
  const models = new BoundedLabel(deps.config.usage.metrics_max_label_values);
  const tenants = new BoundedLabel(deps.config.usage.metrics_max_label_values);
  // the label objects of each (provider, model[, tenant]) built once: the counters run on every proxied request
  // (and their series: prom-client checks and hashes a label object on every inc)
  const labelSets = new SeriesCache<{ input: CounterSeries; output: CounterSeries; cost: CounterSeries; saved: CounterSeries }>();
  const labelsOf = (provider: string, model: string, tenant: string | undefined) =>
    labelSets.get(`${provider}\u0000${model}\u0000${tenant ?? ""}`, () => {
      const base: Record<string, string> = tenant === undefined ? { provider, model } : { provider, model, tenant };
      return {
        input: counterSeries(tokens, { ...base, direction: "input" }),
        output: counterSeries(tokens, { ...base, direction: "output" }),
        cost: counterSeries(cost, base),
        saved: counterSeries(saved, base),
      };
    });
  // most requests repeat the previous one's provider, model and tenant: its series are reused without building a key
  const last = new LastOf3<string, string, string | undefined, ReturnType<typeof labelsOf>>();
  deps.metrics.gauge("svc_upstream_in_flight", "Upstream requests in flight", [], () => upstream.inFlight);
  deps.metrics.gauge("svc_upstream_queued", "Requests waiting for an upstream slot (upstream.max_in_flight)", [], () => upstream.queued);
  const usage = new UsageRecorder(deps.storage, (e, lost) => deps.log.error("usage flush failed", { error: String(e), lost_rows: lost }), prices);
  const pipeline = new Pipeline({
    upstream,
    cache: deps.cache,
    meter: deps.meter,
    usage,
    providers: deps.config.providers,
    guard: deps.guard ? countRefusals(deps.guard, deps.metrics.counter("svc_budget_rejections_total", "Requests refused before going upstream because a team's budget is spent")) : NO_GUARD,
    log: deps.log,
    incompleteStream: (provider) => upstreamErrors.inc({ provider, kind: "incomplete_stream" }),
    fallbacks: () => deps.config.models.fallbacks,
    prices,
    accounted: (x, f) => {
      const tenant = tenantLabel ? x.tenantId : undefined;
      const l = last.hit(f.provider, f.model, tenant) ?? last.set(f.provider, f.model, tenant, labelsOf(f.provider, models.of(f.model), tenant === undefined ? undefined : tenants.of(tenant)));
      if (f.inputTokens) l.input.inc(f.inputTokens);
      if (f.outputTokens) l.output.inc(f.outputTokens);
      if (f.costUsd) l.cost.inc(f.costUsd);
      if (f.costSavedUsd) l.saved.inc(f.costSavedUsd);
      x.facts?.(f);
    },
  });
  const service = new GatewayService(pipeline, () => deps.config.models.routes);
  const usageQuery = new UsageQuery(deps.storage, (tenantId) => usage.flush(tenantId));
  const proxyMounts = PROXY_PREFIXES.map((prefix) => deps.kernel.register({ prefix, envelope: DOC1, auth: "sdk", rateGroup: "proxy" }));
  // the overview's errors and 429s: the proxies' failed answers leave no usage record
  const outcomes = new OutcomeCounter(deps.storage, (e) => deps.log.error("request outcome flush failed", { error: String(e) }));
  deps.kernel.observer.watch((tenantId, status, mount) => proxyMounts.includes(mount) && outcomes.observe(tenantId, status));
  return {
    name: "gateway",
    migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS],
    routes: new Elysia({ name: "svc-gateway" }).use(queryRoutes(deps.kernel, deps.cache, () => deps.cacheEnabled)).use(usageRoutes(deps.kernel, usageQuery))
      .use(overviewRoutes(deps.kernel, new OverviewQuery(deps.storage, (tenantId) => usage.flush(tenantId), Date.now, outcomes))),
    native: proxyRoutes(proxyServer({ pipeline, log: deps.log, isGatewayCredential: deps.isGatewayCredential })),
    service,
    pipeline,
    usage,
    usageQuery,
    probe: (provider, timeoutMs) => probeProvider(deps.config.providers, provider as ProviderName, timeoutMs),
    close: async () => {
      await Promise.all([usage.close(), outcomes.close()]);
    },
  };
}
