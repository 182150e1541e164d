/**
 * The kernel's vocabulary (kernel.ts re-exports it): request ids, the path of a URL, what a mount
 * declares (prefix, envelope, authentication policy, rate-limit group) and the per-request state the
 * front door hands to routes and observers.
 */
import type { Envelope } from "./errors";
import type { Principal } from "./auth";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * X-Request-ID: echo a valid incoming UUID, otherwise a new one — time-ordered (UUID v7): the
 * wrong-hit feedback rows of hits are keyed (tenant, request id), and a random key put each batch's
 * rows all over that index (a B-tree page rewritten per row at the next checkpoint: ~2x the CPU of
 * writing a hit's row, scripts/bench/gateway-profile.ts --exact).
 */
export function requestIdOf(request: Request): string {
  const incoming = request.headers.get("x-request-id");
  return incoming && UUID_RE.test(incoming) ? incoming : Bun.randomUUIDv7();
}

/** The pathname of a URL string without building a URL object (hot path). */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  let end = url.length;
  const q = url.indexOf("?", start);
  if (q >= 0) end = q;
  const h = url.indexOf("#", start);
  if (h >= 0 && h < end) end = h;
  return url.slice(start, end);
}

/** Takes a token per request from the tenant's buckets; throws ApiError rate_limit_error (429). */
export interface RequestLimiter {
  /** `group`: the mount's rate-limit group (undefined = tier limits only); writes X-RateLimit-* into headers */
  enforce(principal: Principal, group: string | undefined, headers: Record<string, string>): void | Promise<void>;
}

export type AuthPolicy =
  /** Authorization: Bearer <JWT or API key> (default) */
  | "bearer"
  /** also wherever a provider SDK puts its key: x-api-key, x-goog-api-key, ?key= (the proxies) */
  | "sdk"
  /** no credential needed; the route authenticates what it must itself (token exchange, SSO callbacks) */
  | "public"
  /** a credential of the domain's own (e.g. SCIM bearer tokens), resolved to a principal */
  | ((request: Request, url: URL) => Promise<Principal>);

export interface MountSpec {
  /** path prefix, matched at segment boundaries; the longest matching prefix wins */
  prefix: string;
  /** match the prefix itself only, not paths below it (e.g. the information document at "/") */
  exact?: boolean;
  envelope: Envelope;
  /** rate-limit group: one name, or one for reads (GET/HEAD) and one for writes; none = tier limits only */
  rateGroup?: string | { read: string; write: string };
  auth?: AuthPolicy;
}

export interface Mount extends Required<Pick<MountSpec, "prefix" | "envelope" | "auth">> {
  rateGroup?: MountSpec["rateGroup"];
  exact: boolean;
}

/** What the front door knows about a request while it is served. */
export interface RequestState {
  id: string;
  mount: Mount;
  principal?: Principal;
  /** route template, for metrics and logs */
  route?: string;
  /** headers added to the answer (X-Request-ID, X-RateLimit-*) */
  headers: Record<string, string>;
  /** the route's answer, when the route built it with `headers` already on it (the front door does not set them again) */
  stamped?: Response;
  /** what the route learned about the request (e.g. the gateway's model, provider, cache status, tokens): extra fields of its log line */
  facts?: Record<string, unknown>;
  /** false: the request log is off, so a route need not gather `facts` */
  logged?: boolean;
  /**
   * a streamed answer whose facts are complete only once the stream is over: the request's log
   * line waits for it (metrics do not: they measure the answer's headers)
   */
  settled?: Promise<unknown>;
}
