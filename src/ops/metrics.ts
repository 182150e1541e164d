/**
 * Prometheus metrics (prom-client). One registry per running gateway so tests stay isolated.
 * Other domains record through these named instruments; /metrics renders the registry.
 */
import { Registry, Counter, Histogram, Gauge, collectDefaultMetrics } from "prom-client";

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({ name: "svc_http_requests_total", help: "HTTP requests by route and status", labelNames: ["method", "route", "status"], registers: [this.registry] });
  readonly httpDuration = new Histogram({ name: "svc_http_request_duration_seconds", help: "HTTP request latency by route and status", labelNames: ["method", "route", "status"], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  /** result: hit | miss | bypass; tier: exact | semantic | l2_context | none */
  readonly cacheLookups = new Counter({ name: "svc_cache_lookups_total", help: "Cache lookups by style, tier and result", labelNames: ["style", "tier", "result"], registers: [this.registry] });
  readonly cacheLookupDuration = new Histogram({ name: "svc_cache_lookup_duration_seconds", help: "Cache lookup latency", labelNames: ["tier"], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly embeddingDuration = new Histogram({ name: "svc_embedding_duration_seconds", help: "Embedding latency per batch", labelNames: ["provider"], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly upstreamDuration = new Histogram({ name: "svc_upstream_duration_seconds", help: "Upstream provider latency (to headers)", labelNames: ["provider", "status"], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly upstreamErrors = new Counter({ name: "svc_upstream_errors_total", help: "Upstream failures by provider and kind", labelNames: ["provider", "kind"], registers: [this.registry] });
  readonly rateLimitRejections = new Counter({ name: "svc_rate_limit_rejections_total", help: "Requests rejected by rate limits", labelNames: ["group", "limit"], registers: [this.registry] });
  readonly cacheEntries = new Gauge({ name: "svc_cache_entries", help: "Cache entries held in memory indexes", registers: [this.registry] });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: "svc_process_" });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
  get contentType(): string {
    return this.registry.contentType;
  }
}
