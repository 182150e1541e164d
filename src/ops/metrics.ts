/**
 * Prometheus metrics (prom-client). One registry per running gateway so tests stay isolated.
 * Other domains record through these named instruments; /metrics renders the registry.
 *
 * Start-up cost (BENCHMARKS.md, cold start): the four classes are loaded from prom-client's own
 * files instead of its index, which would also load the Pushgateway (node:http/https), the
 * cluster aggregator and the default collectors (~3 ms of a ~60 ms cold start); the default
 * process metrics (svc_process_*, ~4 ms to load and register) are registered off the start-up
 * path: at the first render() or 1 s after start, whichever comes first.
 */
import type * as Prom from "prom-client";

// prom-client ships CommonJS; these are the same classes its index re-exports.
const Registry: typeof Prom.Registry = require("prom-client/lib/registry");
const Counter: typeof Prom.Counter = require("prom-client/lib/counter");
const Histogram: typeof Prom.Histogram = require("prom-client/lib/histogram");
const Gauge: typeof Prom.Gauge = require("prom-client/lib/gauge");

/** Delay before the default process metrics are registered when nothing scraped yet. */
const DEFAULT_METRICS_DELAY_MS = 1000;

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

  private defaultsPending: ReturnType<typeof setTimeout> | undefined;

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) {
      this.defaultsPending = setTimeout(() => this.startDefaultMetrics(), DEFAULT_METRICS_DELAY_MS);
      this.defaultsPending.unref?.();
    }
  }

  /** Register prom-client's default process metrics (svc_process_*) once. */
  private startDefaultMetrics() {
    if (this.defaultsPending === undefined) return;
    clearTimeout(this.defaultsPending);
    this.defaultsPending = undefined;
    const collectDefaultMetrics: typeof Prom.collectDefaultMetrics = require("prom-client/lib/defaultMetrics");
    collectDefaultMetrics({ register: this.registry, prefix: "svc_process_" });
  }

  render(): Promise<string> {
    this.startDefaultMetrics();
    return this.registry.metrics();
  }
  get contentType(): string {
    return this.registry.contentType;
  }
}
