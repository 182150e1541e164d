/**
 * Upstream HTTP: one client for all providers. Keep-alive connection reuse is Bun's fetch
 * default (pooled per origin); a semaphore bounds in-flight upstream requests
 * (upstream.max_in_flight; beyond it requests queue for upstream.queue_timeout_ms, then 503); a deadline per request (providers.<p>.timeout_ms) that streams
 * re-arm on every chunk, so a long stream is fine while a stalled one is cut.
 * Failures become: unreachable / 5xx -> 502 proxy_error, deadline -> 504 timeout_error,
 * provider 4xx -> ProviderReply (status + body passed through to the client).
 */
import { ApiError } from "../core/errors";
import type { Counter, Histogram } from "../core/metrics";
import type { ProviderWire } from "./providers/types";
import type { ProviderName } from "./providers";
import type { ProvidersConfig, UpstreamConfig } from "./config";

export interface UpstreamMetrics {
  duration: Histogram;
  errors: Counter;
}

/** A provider's own 4xx answer, handed to the client unchanged. */
export class ProviderReply extends Error {
  constructor(readonly status: number, readonly body: string, readonly contentType: string) {
    super(`provider answered ${status}`);
  }
  /** the provider's error message, best effort */
  providerMessage(): string {
    try {
      const j = JSON.parse(this.body);
      const m = j?.error?.message ?? j?.message ?? (Array.isArray(j) ? j[0]?.error?.message : undefined);
      if (typeof m === "string") return m;
    } catch {}
    return this.body.slice(0, 500) || `provider answered ${this.status}`;
  }
}

/** Thrown when the client went away; nothing is sent back. */
export class ClientGone extends Error {}

/** Abort controller with a re-armable timer. */
export class Deadline {
  readonly controller = new AbortController();
  timedOut = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  constructor(private readonly ms: number) {
    this.reset();
  }
  get signal() {
    return this.controller.signal;
  }
  reset() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new DOMException("upstream deadline", "TimeoutError"));
    }, this.ms);
  }
  clear() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
  abort(reason?: unknown) {
    this.clear();
    if (!this.controller.signal.aborted) this.controller.abort(reason ?? new ClientGone("client disconnected"));
  }
}

export interface UpstreamRequest {
  provider: ProviderName;
  wire: ProviderWire;
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  /** key to send: caller's pass-through key, else the configured key */
  key?: string;
  clientHeaders?: Headers;
  stream?: boolean;
}

export interface OpenUpstream {
  response: Response;
  deadline: Deadline;
  /** release the in-flight slot (idempotent) */
  release(): void;
  startedAt: number;
}

export class Upstream {
  private active = 0;
  private waiting: Array<{ grant(): void }> = [];
  private readonly bases: Record<string, string>;

  constructor(private readonly config: { providers: ProvidersConfig; upstream: UpstreamConfig }, private readonly metrics: UpstreamMetrics) {
    this.bases = Object.fromEntries(Object.entries(config.providers).map(([name, p]) => [name, p.base_url.replace(/\/+$/, "")]));
  }

  get inFlight() {
    return this.active;
  }

  /** requests waiting for a slot */
  get queued() {
    return this.waiting.length;
  }

  /**
   * Take an in-flight slot. When all upstream.max_in_flight are busy the request waits in FIFO
   * order for at most upstream.queue_timeout_ms, then fails with 503 service_unavailable (a
   * client that disconnects while waiting leaves the queue).
   */
  private acquire(provider: ProviderName, clientSignal?: AbortSignal): Promise<void> | void {
    const { max_in_flight: max, queue_timeout_ms: waitMs } = this.config.upstream;
    if (this.active < max) {
      this.active++;
      return;
    }
    const saturated = () => {
      this.metrics.errors.inc({ provider, kind: "saturated" });
      return new ApiError("service_unavailable", `too many upstream requests in flight (${max}); no slot freed within ${waitMs} ms, retry later`);
    };
    if (waitMs <= 0) throw saturated();
    return new Promise<void>((resolve, reject) => {
      const leave = (err: Error) => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        clearTimeout(timer);
        clientSignal?.removeEventListener("abort", onAbort);
        reject(err);
      };
      const onAbort = () => leave(new ClientGone("client disconnected while queued"));
      const timer = setTimeout(() => leave(saturated()), waitMs);
      const waiter = {
        grant: () => {
          clearTimeout(timer);
          clientSignal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      clientSignal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaseSlot() {
    const next = this.waiting.shift();
    if (next) next.grant(); // the slot passes to the next waiter
    else this.active--;
  }

  /**
   * Send a request; resolves with a 2xx response whose body is still to be read.
   * The caller must call release() once done with the body.
   */
  /**
   * `clientSignal` cancels the call when the client leaves; `queueSignal` (default: the same) only
   * takes a waiting request out of the queue — a cacheable call that has started completes and is
   * stored even if its client left, but a client gone while queued never reaches the upstream.
   */
  async open(req: UpstreamRequest, clientSignal?: AbortSignal, queueSignal: AbortSignal | undefined = clientSignal): Promise<OpenUpstream> {
    const settings = this.config.providers[req.provider];
    const headers: Record<string, string> = { accept: req.stream ? "text/event-stream" : "application/json" };
    if (req.body !== undefined) headers["content-type"] = "application/json";
    if (req.clientHeaders) for (const h of req.wire.forwardHeaders) {
      const v = req.clientHeaders.get(h);
      if (v) headers[h] = v;
    }
    const key = req.key ?? settings.api_key;
    if (key) Object.assign(headers, req.wire.authHeaders(key));

    const wait = this.acquire(req.provider, queueSignal);
    if (wait) await wait;
    let released = false;
    const release = () => {
      if (!released) {
        released = true;
        this.releaseSlot();
      }
    };
    const deadline = new Deadline(settings.timeout_ms);
    const onClientAbort = () => deadline.abort();
    clientSignal?.addEventListener("abort", onClientAbort, { once: true });
    const startedAt = performance.now();
    let response: Response;
    try {
      response = await fetch(this.bases[req.provider] + req.path, {
        method: req.method,
        headers,
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
        signal: deadline.signal,
      });
    } catch (e) {
      deadline.clear();
      release();
      clientSignal?.removeEventListener("abort", onClientAbort);
      throw this.classify(req.provider, e, deadline, settings.timeout_ms);
    }
    const seconds = (performance.now() - startedAt) / 1000;
    this.metrics.duration.observe({ provider: req.provider, status: String(response.status) }, seconds);
    if (response.status >= 400) {
      let text = "";
      try {
        text = await response.text();
      } catch {}
      deadline.clear();
      release();
      clientSignal?.removeEventListener("abort", onClientAbort);
      if (response.status >= 500) {
        this.metrics.errors.inc({ provider: req.provider, kind: "5xx" });
        throw new ApiError("proxy_error", `upstream ${req.provider} answered ${response.status}`);
      }
      this.metrics.errors.inc({ provider: req.provider, kind: "4xx" });
      throw new ProviderReply(response.status, text, response.headers.get("content-type") ?? "application/json");
    }
    return {
      response,
      deadline,
      startedAt,
      release: () => {
        deadline.clear();
        clientSignal?.removeEventListener("abort", onClientAbort);
        release();
      },
    };
  }

  /** Whole request, body read as text within the deadline. */
  async text(req: UpstreamRequest, clientSignal?: AbortSignal, queueSignal: AbortSignal | undefined = clientSignal): Promise<{ status: number; text: string; contentType: string; ms: number }> {
    const up = await this.open(req, clientSignal, queueSignal);
    try {
      const text = await up.response.text();
      return { status: up.response.status, text, contentType: up.response.headers.get("content-type") ?? "application/json", ms: performance.now() - up.startedAt };
    } catch (e) {
      throw this.classify(req.provider, e, up.deadline, this.config.providers[req.provider].timeout_ms);
    } finally {
      up.release();
    }
  }

  classify(provider: ProviderName, e: unknown, deadline: Deadline, timeoutMs: number): Error {
    if (e instanceof ApiError || e instanceof ProviderReply) return e;
    if (deadline.timedOut) {
      this.metrics.errors.inc({ provider, kind: "timeout" });
      return new ApiError("timeout_error", `upstream ${provider} did not answer within ${timeoutMs} ms`);
    }
    if (deadline.signal.aborted && deadline.signal.reason instanceof ClientGone) return deadline.signal.reason;
    this.metrics.errors.inc({ provider, kind: "unreachable" });
    const code = (e as { code?: string })?.code;
    return new ApiError("proxy_error", `upstream ${provider} unreachable${code ? ` (${code})` : ""}`);
  }
}
