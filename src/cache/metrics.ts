/** The cache's instruments on the shared registry. */
import type { Metrics, Counter, Histogram, Gauge } from "../core/metrics";

export interface CacheMetrics {
  /** result: hit | miss | bypass; tier: exact | semantic | l2_context | none */
  lookups: Counter;
  lookupDuration: Histogram;
  /** vectors held in loaded indexes */
  entries: Gauge;
  /** replicas: misses that waited for another replica's upstream call (its lease) instead of calling upstream */
  flightWaits: Counter;
  /** replicas: entry changes of other replicas applied to this one's memory, by kind (add, drop, purge, settings) */
  applied: Counter;
  /** replicas: from a change's append (Redis's clock) to its application here */
  applyDelay: Histogram;
}

export const cacheMetrics = (m: Metrics): CacheMetrics => ({
  lookups: m.counter("svc_cache_lookups_total", "Cache lookups by style, tier and result", ["style", "tier", "result"]),
  lookupDuration: m.histogram("svc_cache_lookup_duration_seconds", "Cache lookup latency", ["tier"]),
  entries: m.gauge("svc_cache_entries", "Cache entries held in memory indexes"),
  flightWaits: m.counter("svc_cache_replica_flight_waits_total", "Identical misses that waited for another replica's upstream call"),
  applied: m.counter("svc_cache_replica_changes_applied_total", "Cache changes of other replicas applied to this replica's indexes", ["kind"]),
  applyDelay: m.histogram("svc_cache_replica_change_delay_seconds", "From another replica's cache change (its stream append) to its application on this replica"),
});
