/** The cache's instruments on the shared registry. */
import type { Metrics, Counter, Histogram, Gauge } from "../core/metrics";

export interface CacheMetrics {
  /** result: hit | miss | bypass; tier: exact | semantic | l2_context | none */
  lookups: Counter;
  lookupDuration: Histogram;
  /** vectors held in loaded indexes */
  entries: Gauge;
}

export const cacheMetrics = (m: Metrics): CacheMetrics => ({
  lookups: m.counter("svc_cache_lookups_total", "Cache lookups by style, tier and result", ["style", "tier", "result"]),
  lookupDuration: m.histogram("svc_cache_lookup_duration_seconds", "Cache lookup latency", ["tier"]),
  entries: m.gauge("svc_cache_entries", "Cache entries held in memory indexes"),
});
