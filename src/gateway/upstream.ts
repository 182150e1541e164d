/**
 * Upstream HTTP: one client for all providers. Keep-alive connection reuse is Bun's fetch
 * default (pooled per origin); a semaphore bounds in-flight upstream requests
 * (upstream.max_in_flight; beyond it requests queue for upstream.queue_timeout_ms, then 503); a deadline per request (providers.<p>.timeout_ms) that streams
 * re-arm on every chunk, so a long stream is fine while a stalled one is cut.
 * Failures become: unreachable / 5xx -> 502 proxy_error, deadline -> 504 timeout_error,
 * provider 4xx -> ProviderReply (status + body passed through to the client).
 *
 * Retries and fallbacks (`open` with a plan of several requests): each deployment is tried up to
 * 1 + providers.<p>.max_retries times on 429, 5xx and connection failures, waiting the provider's
 * Retry-After (when it is within retry_max_wait_ms) or an exponential backoff with jitter; then
 * the next deployment of the plan (models.fallbacks) is tried, also after a timeout. A request is
 * only retried before its response headers arrived: once `open` returned, nothing is resent, so no
 * stream byte reaches a client twice. Other 4xx are the caller's and are returned at once.
 */
import { ApiError, type ErrorType } from "../core/errors";
import { histogramSeries, SeriesCache, type Counter, type Histogram, type HistogramSeries } from "../core/metrics";
import type { ProviderWire } from "./providers/types";
import type { ProviderName } from "./providers";
import type { ProvidersConfig, UpstreamConfig } from "./config";
import { normaliseBaseUrl } from "../core/base-url";
import { credentialSafeFetch } from "../core/outbound";

export interface UpstreamMetrics {
  duration: Histogram;
  errors: Counter;
  /** retries by provider and reason (429, 5xx, unreachable) */
  retries?: Counter;
  /** fallbacks by the deployment that failed and the one tried next */
  fallbacks?: Counter;
}

/** Each provider's effective base URL (what svc prefixes the provider's real paths with). */
export const effectiveBaseUrls = (providers: ProvidersConfig): Record<string, string> =>
  Object.fromEntries(Object.entries(providers).map(([name, p]) => [name, normaliseBaseUrl(p.base_url)]));

/** Where one attempt goes: a provider deployment (the provider's settings, or a fallback's). */
export interface Target {
  /** label in usage records, metrics and logs */
  name: string;
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
}

/** Which deployment answered, after how many attempts in all. */
export interface Served {
  deployment: string;
  provider: ProviderName;
  /** the model the answering request named */
  model: string;
  /** index in the plan (0 = primary) */
  index: number;
  attempts: number;
}

/** A failure another attempt may fix. */
class AttemptFailed extends Error {
  constructor(readonly error: Error, readonly retry: boolean, readonly retryAfterMs?: number) {
    super(error.message);
  }
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504, 529]);

/**
 * doc1 §7's type for a provider's 4xx status (rule 2: an unknown model is 404 `not_found`; rule 3:
 * a rate limit is 429 `rate_limit_error`); statuses doc1 has no word for are `invalid_request_error`.
 */
const DOC1_TYPE_BY_STATUS: Record<number, ErrorType> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "authorization_error",
  404: "not_found",
  413: "invalid_request_error",
  422: "validation_error",
  429: "rate_limit_error",
};

/** A provider's own 4xx answer, handed to the client with doc1's error fields (serve.ts). */
export class ProviderReply extends Error {
  /** the URL that answered (operators' hint on a 404: a wrong base URL) */
  url?: string;
  constructor(
    readonly status: number,
    readonly body: string,
    readonly contentType: string,
    /** the provider's Retry-After, in milliseconds, when it sent one */
    readonly retryAfterMs?: number,
  ) {
    super(`provider answered ${status}`);
  }
  /**
   * The doc1 type of this answer. A provider's own type is kept only where doc1 allows it for the
   * status (a 400 is `invalid_request_error` or `validation_error`): OpenAI calls an unknown model
   * `invalid_request_error` and a rate limit `requests`/`tokens`, Anthropic says `not_found_error`
   * and `permission_error` — doc1 §7 answers 404 `not_found`, 429 `rate_limit_error`, 403
   * `authorization_error`. The SDKs pick their error class from the status, never from the type.
   */
  doc1Type(providerType?: unknown): ErrorType {
    if (this.status === 400 && (providerType === "invalid_request_error" || providerType === "validation_error")) return providerType;
    return DOC1_TYPE_BY_STATUS[this.status] ?? "invalid_request_error";
  }
  /** A 429's `retry_after_secs` (doc1 §7): the provider's Retry-After in whole seconds, rounded up, at least 1. */
  retryAfterSecs(): number {
    return Math.max(1, Math.ceil((this.retryAfterMs ?? 0) / 1000));
  }
  /** the provider's error message, best effort */
  providerMessage(): string {
    try {
      const j = JSON.parse(this.body);
      const m = typeof j?.error === "string" ? j.error : (j?.error?.message ?? j?.message ?? (Array.isArray(j) ? j[0]?.error?.message : undefined));
      if (typeof m === "string") return m;
    } catch {}
    return this.body.slice(0, 500) || `provider answered ${this.status}`;
  }
}

/** Thrown when the client went away; nothing is sent back. */
export class ClientGone extends Error {}

/** providers.<p>.stream_max_ms when unset: 1 h, what the messages SDK allows a 128k-token answer */
export const DEFAULT_STREAM_MAX_MS = 3_600_000;

/** Abort controller with a re-armable timer. */
export class Deadline {
  readonly controller = new AbortController();
  timedOut = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  constructor(private ms: number) {
    this.reset();
  }
  get signal() {
    return this.controller.signal;
  }
  /**
   * Re-arm the timer (for `ms` from now on, when given). A live stream re-arms it at every event:
   * the same duration refreshes the armed timer in place instead of clearing it and making another.
   */
  reset(ms?: number) {
    if (ms !== undefined && ms !== this.ms) {
      this.ms = ms;
      this.clear();
    }
    if (this.timer) this.timer.refresh();
    else this.timer = setTimeout(expireDeadline, this.ms, this);
  }
  /** Time is up now: abort as a timeout. */
  expire() {
    this.clear();
    if (this.controller.signal.aborted) return;
    this.timedOut = true;
    this.controller.abort(new DOMException("upstream deadline", "TimeoutError"));
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

/** a Deadline's timer callback (one function for all: no closure per request) */
const expireDeadline = (d: Deadline) => d.expire();

export interface UpstreamRequest {
  provider: ProviderName;
  /** the deployment (default: the provider's configured one) */
  target?: Target;
  /** the model named by this request (usage records) */
  model?: string;
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
  /** which deployment answered (set by `open`) */
  served: Served;
}

export class Upstream {
  private active = 0;
  private waiting: Array<{ grant(): void }> = [];
  private readonly bases: Record<string, string>;
  /** the duration histogram's series per provider and status (prom-client's per-call label check and hashing done once) */
  private readonly durations = new SeriesCache<HistogramSeries>();

  constructor(private readonly config: { providers: ProvidersConfig; upstream: UpstreamConfig }, private readonly metrics: UpstreamMetrics) {
    this.bases = effectiveBaseUrls(config.providers);
  }

  /** A provider's stream bounds: the longest wait for the next complete event, and the longest stream (0 = none). */
  streamLimits(provider: ProviderName): { idleMs: number; maxMs: number } {
    const p = this.config.providers[provider];
    return { idleMs: p.stream_idle_ms ?? p.timeout_ms, maxMs: p.stream_max_ms ?? DEFAULT_STREAM_MAX_MS };
  }

  /** The provider's configured deployment. */
  primary(provider: ProviderName): Target {
    const p = this.config.providers[provider];
    return { name: provider, baseUrl: this.bases[provider]!, apiKey: p.api_key, timeoutMs: p.timeout_ms };
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
  async open(plan: UpstreamRequest | UpstreamRequest[], clientSignal?: AbortSignal, queueSignal: AbortSignal | undefined = clientSignal): Promise<OpenUpstream> {
    const reqs = Array.isArray(plan) ? plan : [plan];
    let attempts = 0;
    let last: Error | undefined;
    for (let i = 0; i < reqs.length; i++) {
      const req = reqs[i]!;
      const target = req.target ?? this.primary(req.provider);
      const policy = this.config.providers[req.provider];
      for (let retry = 0; ; retry++) {
        attempts++;
        try {
          const up = await this.attempt(req, target, clientSignal, queueSignal);
          up.served = { deployment: target.name, provider: req.provider, model: req.model ?? "", index: i, attempts };
          return up;
        } catch (e) {
          if (!(e instanceof AttemptFailed)) throw e;
          last = e.error;
          if (!e.retry || retry >= policy.max_retries) break;
          if (e.retryAfterMs !== undefined && e.retryAfterMs > policy.retry_max_wait_ms) break;
          const backoff = policy.retry_backoff_ms * 2 ** retry;
          const wait = Math.min(policy.retry_max_wait_ms, e.retryAfterMs ?? backoff / 2 + Math.random() * (backoff / 2));
          this.metrics.retries?.inc({ provider: req.provider, reason: reasonOf(e.error) });
          await sleep(wait, clientSignal);
        }
      }
      // a 4xx other than 408/429 is the caller's; every other failure moves on to the next deployment
      if (last instanceof ProviderReply && !RETRY_STATUS.has(last.status)) break;
      if (i + 1 < reqs.length) {
        const next = reqs[i + 1]!;
        this.metrics.fallbacks?.inc({ from: target.name, to: (next.target ?? this.primary(next.provider)).name });
      }
    }
    throw last ?? new ApiError("proxy_error", "no upstream deployment");
  }

  /** One attempt at one deployment; failures another attempt may fix are wrapped in AttemptFailed. */
  private async attempt(req: UpstreamRequest, target: Target, clientSignal: AbortSignal | undefined, queueSignal: AbortSignal | undefined): Promise<OpenUpstream> {
    const headers: Record<string, string> = { accept: req.stream ? "text/event-stream" : "application/json" };
    if (req.body !== undefined) headers["content-type"] = "application/json";
    if (req.clientHeaders) for (const h of req.wire.forwardHeaders) {
      const v = req.clientHeaders.get(h);
      if (v) headers[h] = v;
    }
    const key = req.key ?? target.apiKey;
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
    const deadline = new Deadline(target.timeoutMs);
    const onClientAbort = () => deadline.abort();
    clientSignal?.addEventListener("abort", onClientAbort, { once: true });
    const startedAt = performance.now();
    let response: Response;
    try {
      response = await credentialSafeFetch(target.baseUrl + req.path, {
        method: req.method,
        headers,
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
        signal: deadline.signal,
      });
    } catch (e) {
      deadline.clear();
      release();
      clientSignal?.removeEventListener("abort", onClientAbort);
      const err = this.classify(req.provider, e, deadline, target.timeoutMs);
      if (err instanceof ClientGone) throw err;
      // unreachable: retried; a timeout already waited timeout_ms: the next deployment, no retry
      throw new AttemptFailed(err, !deadline.timedOut);
    }
    const seconds = (performance.now() - startedAt) / 1000;
    const status = response.status;
    this.durations.get(`${req.provider} ${status}`, () => histogramSeries(this.metrics.duration, { provider: req.provider, status: String(status) })).observe(seconds);
    if (response.status >= 400) {
      let text = "";
      try {
        text = await response.text();
      } catch {}
      deadline.clear();
      release();
      clientSignal?.removeEventListener("abort", onClientAbort);
      const after = retryAfterMs(response.headers.get("retry-after"));
      if (response.status >= 500) {
        this.metrics.errors.inc({ provider: req.provider, kind: "5xx" });
        throw new AttemptFailed(new ApiError("proxy_error", `upstream ${req.provider} (${target.name}) answered ${response.status}`), RETRY_STATUS.has(response.status), after);
      }
      this.metrics.errors.inc({ provider: req.provider, kind: "4xx" });
      const reply = new ProviderReply(response.status, text, response.headers.get("content-type") ?? "application/json", after);
      reply.url = target.baseUrl + req.path.replace(/\?.*$/, "");
      if (RETRY_STATUS.has(response.status)) throw new AttemptFailed(reply, true, after);
      throw reply;
    }
    return {
      served: { deployment: target.name, provider: req.provider, model: req.model ?? "", index: 0, attempts: 1 },
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
  async text(
    plan: UpstreamRequest | UpstreamRequest[],
    clientSignal?: AbortSignal,
    queueSignal: AbortSignal | undefined = clientSignal,
  ): Promise<{ status: number; text: string; contentType: string; ms: number; served: Served }> {
    const up = await this.open(plan, clientSignal, queueSignal);
    try {
      const text = await up.response.text();
      return { status: up.response.status, text, contentType: up.response.headers.get("content-type") ?? "application/json", ms: performance.now() - up.startedAt, served: up.served };
    } catch (e) {
      const req = (Array.isArray(plan) ? plan : [plan])[up.served.index]!;
      throw this.classify(req.provider, e, up.deadline, (req.target ?? this.primary(req.provider)).timeoutMs);
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

function reasonOf(e: Error): string {
  if (e instanceof ProviderReply) return String(e.status);
  if (e instanceof ApiError && /answered (\d+)/.test(e.message)) return "5xx";
  return "unreachable";
}

/** Wait `ms`, or until the client leaves (then ClientGone). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ClientGone("client disconnected while waiting to retry"));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ClientGone("client disconnected while waiting to retry"));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
