/**
 * The request log line and the per-route request counters and duration histogram of the kernel's
 * front door (kernel.ts re-exports it), labelled by route template, never the raw path.
 */
import type { Logger } from "./log";
import type { Principal } from "./auth";
import { counterSeries, histogramSeries, LastOf3, SeriesCache, type CounterSeries, type HistogramSeries, type Metrics } from "./metrics";
import { pathOf, type Mount } from "./kernel-types";

/** The request log line and the per-route counters (labelled by route template, never the raw path). */
export class RequestObserver {
  /** tenants that made an authenticated request since start (for /stats) */
  readonly tenantsSeen = new Set<string>();
  requests = 0;
  private watchers: Array<(tenantId: string, status: number, mount: Mount) => void> = [];
  /** the request counter's and duration histogram's series per method, route template and status (built once each) */
  private readonly series = new SeriesCache<{ requests: CounterSeries; duration: HistogramSeries }>();
  /** most answers repeat the previous one's method, status and route: its series are reused without building a key */
  private readonly last = new LastOf3<string, number, string, { requests: CounterSeries; duration: HistogramSeries }>();

  constructor(private readonly metrics: Metrics, private readonly log: Logger, private readonly requestLog: boolean) {}

  /** whether requests are logged (their facts are read only then) */
  get logging(): boolean {
    return this.requestLog;
  }

  /**
   * Be told the status of every authenticated request's answer (tenant, status, the mount that
   * served it), synchronously: a watcher must only count, never do I/O (e.g. the overview's
   * per-tenant error and 429 counts, written behind in batches).
   */
  watch(f: (tenantId: string, status: number, mount: Mount) => void) {
    this.watchers = [...this.watchers, f];
  }

  finish(request: Request, state: { id: string; route?: string; principal?: Principal; facts?: Record<string, unknown>; settled?: Promise<unknown>; mount?: Mount }, status: number, startedAt: number) {
    const ms = performance.now() - startedAt;
    const method = request.method;
    const route = state.route ?? UNMATCHED;
    let series = this.last.hit(method, status, route);
    if (series === undefined)
      series = this.last.set(
        method,
        status,
        route,
        this.series.get(`${method} ${status} ${route}`, () => {
          const labels = { method, route, status: String(status) };
          return { requests: counterSeries(this.metrics.httpRequests, labels), duration: histogramSeries(this.metrics.httpDuration, labels) };
        }),
      );
    this.requests++;
    series.requests.inc();
    series.duration.observe(ms / 1000);
    const tenant = state.principal?.tenantId;
    if (tenant) {
      this.tenantsSeen.add(tenant);
      if (state.mount) for (const w of this.watchers) w(tenant, status, state.mount);
    }
    if (!this.requestLog) return;
    const line = (extra?: Record<string, unknown>) =>
      this.log.info("request", {
        request_id: state.id,
        tenant,
        method,
        route,
        path: pathOf(request.url),
        status,
        latency_ms: Math.round(ms * 1000) / 1000,
        ...extra,
        ...state.facts,
      });
    if (!state.settled) return line();
    // a stream: logged when it is over, with what it cost; latency_ms stays the time to its headers
    void state.settled.then(
      () => line({ stream_ms: Math.round((performance.now() - startedAt) * 1000) / 1000 }),
      () => line(),
    );
  }
}

/** Route label of requests that matched no route (404s, body-size rejections). */
export const UNMATCHED = "unmatched";
