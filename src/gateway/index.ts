/**
 * Gateway domain: the provider-compatible proxies (/v1/*, /v1beta/*: one pipeline, one folder per
 * provider style under providers/), POST /api/v1/query, usage records, and GatewayService for the
 * domains that call a model (prompts, chains, memory). Tables: usage_records.
 */
import type { Storage } from "../storage/scoped";
import type { Logger } from "../core/log";
import type { Metrics } from "../core/metrics";
import { DOC1 } from "../core/errors";
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

export { GATEWAY_SECTIONS, type GatewayConfig, type ProvidersConfig } from "./config";
export { PROVIDERS, PROVIDER_NAMES, infoEndpoints, type ProviderName } from "./providers";
export { proxyDocs, type ProxyDoc } from "./routes";
export { GatewayService, type CompletionRequest, type CompletionResult } from "./service";
export type { ResponseCache, TokenMeter, SpendGuard, SpendTicket, Spender } from "./ports";

export interface GatewayDeps {
  config: GatewayConfig;
  /** cache.enabled: POST /api/v1/query answers 503 when the cache is off */
  cacheEnabled: boolean;
  storage: Storage;
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
}

export function create(deps: GatewayDeps): Domain<GatewayService> & Gateway {
  const upstreamErrors = deps.metrics.counter("svc_upstream_errors_total", "Upstream failures by provider and kind", ["provider", "kind"]);
  const upstream = new Upstream(deps.config, {
    duration: deps.metrics.histogram("svc_upstream_duration_seconds", "Upstream provider latency (to headers)", ["provider", "status"]),
    errors: upstreamErrors,
  });
  deps.metrics.gauge("svc_upstream_in_flight", "Upstream requests in flight", [], () => upstream.inFlight);
  deps.metrics.gauge("svc_upstream_queued", "Requests waiting for an upstream slot (upstream.max_in_flight)", [], () => upstream.queued);
  const usage = new UsageRecorder(deps.storage, (e) => deps.log.error("usage flush failed", { error: String(e) }));
  const pipeline = new Pipeline({
    upstream,
    cache: deps.cache,
    meter: deps.meter,
    usage,
    providers: deps.config.providers,
    guard: deps.guard ?? NO_GUARD,
    log: deps.log,
    incompleteStream: (provider) => upstreamErrors.inc({ provider, kind: "incomplete_stream" }),
  });
  const service = new GatewayService(pipeline, () => deps.config.models.routes);
  for (const prefix of PROXY_PREFIXES) deps.kernel.register({ prefix, envelope: DOC1, auth: "sdk", rateGroup: "proxy" });
  return {
    name: "gateway",
    migrations: GATEWAY_MIGRATIONS,
    routes: queryRoutes(deps.kernel, deps.cache, () => deps.cacheEnabled),
    native: proxyRoutes(proxyServer({ pipeline, log: deps.log, isGatewayCredential: deps.isGatewayCredential })),
    service,
    pipeline,
    usage,
    close: () => usage.close(),
  };
}
