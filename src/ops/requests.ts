/**
 * Per-request observation: the request counter and latency histogram (labelled by route
 * template, never the raw path, so label cardinality stays bounded) and one structured JSON
 * log line per request when server.request_log is on.
 */
import type { AppContext } from "../context";

/** Route label of requests that matched no route (404s, body-size rejections). */
export const UNMATCHED = "unmatched";

export interface RequestRecord {
  request: Request;
  route: string | undefined;
  status: number;
  requestId: string;
  tenantId?: string;
}

export class RequestObserver {
  private readonly started = new WeakMap<Request, number>();
  private readonly log: boolean;
  /** tenants that made an authenticated request since start (for /stats) */
  readonly tenantsSeen = new Set<string>();
  requests = 0;

  constructor(private readonly ctx: AppContext) {
    this.log = ctx.config.server.request_log;
  }

  start(request: Request) {
    this.started.set(request, performance.now());
  }

  finish(r: RequestRecord) {
    const t0 = this.started.get(r.request);
    const ms = t0 === undefined ? 0 : performance.now() - t0;
    const method = r.request.method;
    const route = r.route ?? UNMATCHED;
    const labels = { method, route, status: String(r.status) };
    this.requests++;
    const m = this.ctx.metrics;
    m.httpRequests.inc(labels);
    m.httpDuration.observe(labels, ms / 1000);
    if (r.tenantId) this.tenantsSeen.add(r.tenantId);
    if (this.log)
      this.ctx.log.info("request", {
        request_id: r.requestId,
        tenant: r.tenantId,
        method,
        route,
        path: pathOf(r.request.url),
        status: r.status,
        latency_ms: Math.round(ms * 1000) / 1000,
      });
  }
}

function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  return start < 0 ? "/" : url.slice(start, q < 0 ? undefined : q);
}
