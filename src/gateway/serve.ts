/**
 * Serving one proxy request over HTTP. The kernel's front door has already authenticated the
 * caller (wherever the SDK put the credential), applied the rate limits and the body limit; here:
 *   header checks -> body (bounded JSON + the endpoint's TypeBox schema) -> adapter.parse
 *   -> Pipeline.execute -> the answer with X-Cache-Status (errors in the doc1 envelope, a
 *   provider's own 4xx passed through with the doc1 fields added).
 */
import { ApiError, DOC1, errorResponse, toApiError } from "../core/errors";
import type { Logger } from "../core/log";
import type { RequestState } from "../core/kernel";
import { describeValueError, parseJsonBody } from "../core/validation";
import type { Endpoint, ProviderWire, RequestInput } from "./providers/types";
import type { Pipeline, RequestFacts } from "./pipeline";
import { ProviderReply, ClientGone } from "./upstream";

export interface ServeDeps {
  pipeline: Pipeline;
  log: Logger;
  /** whether a credential is shaped like svc's own (an SDK's x-api-key may be the provider's key) */
  isGatewayCredential: (c: string) => boolean;
}

export type ServeEndpoint = (request: Request, state: RequestState, endpoint: Endpoint, wire: ProviderWire, params?: Record<string, string>) => Promise<Response>;

export function proxyServer(d: ServeDeps): ServeEndpoint {
  return async (request, state, endpoint, wire, params = {}) => {
    const startedAt = performance.now();
    const headers: Record<string, string> = {};
    // (no closures made per request: the answers below are built by `answer`, the URL by CallInput when read)
    const skip = isSkip(request.headers.get("x-svc-skip-cache"));
    let status = "MISS";
    try {
      const principal = state.principal!;
      if (endpoint.headerCheck) checkHeaders(endpoint, request.headers);
      const body = endpoint.method === "POST" ? parseJsonBody(await request.text()) : undefined;
      if (endpoint.check && !endpoint.check.Check(body)) throw validationError(endpoint, body);
      const call = endpoint.parse(new CallInput(body, params, request));
      // a never-cached operation (models, embeddings, countTokens) says BYPASS on its errors too
      if (call.key === null || !endpoint.usageOf) status = "BYPASS";
      // the request log line's fields, gathered only when requests are logged
      const facts = state.logged === false ? undefined : (state.facts ??= {});
      if (facts) {
        facts.model = call.model;
        facts.provider = endpoint.provider;
      }
      const result = await d.pipeline.execute({
        tenantId: principal.tenantId,
        sub: principal.sub,
        keyId: principal.keyId,
        endpoint,
        wire,
        call,
        skipCache: skip,
        workspaceContext: request.headers.get("x-svc-workspace-context") ?? undefined,
        codeContext: parseCodeContext(request.headers.get("x-svc-code-context")),
        providerKey: wire.passThroughKey?.(request.headers, viaAuthorization(request), d.isGatewayCredential),
        clientHeaders: request.headers,
        signal: request.signal,
        requestId: state.id,
        startedAt,
        facts: facts && ((f) => Object.assign(facts, logFacts(f))),
      });
      status = result.meta.status;
      if (facts) {
        facts.cache = status;
        if (result.meta.tier) facts.cache_tier = result.meta.tier;
      }
      headers["x-cache-status"] = status;
      if (result.kind === "json") {
        headers["content-type"] = "application/json";
        return answer(state, JSON.stringify(result.body), 200, headers);
      }
      if (result.kind === "forward") {
        headers["content-type"] = result.contentType;
        return answer(state, result.text, result.status, headers);
      }
      headers["content-type"] = result.contentType;
      headers["cache-control"] = "no-cache";
      if (result.done) state.settled = result.done;
      return answer(state, result.stream as ReadableStream, 200, headers);
    } catch (e) {
      headers["x-cache-status"] = skip ? "BYPASS" : status;
      if (e instanceof ProviderReply) {
        // a 404 on a path the provider must have is most often a wrong base URL: say which URL answered
        if (e.status === 404) d.log.warn("upstream answered 404", { provider: endpoint.provider, url: e.url, hint: `check SVC_PROVIDERS__${endpoint.provider.toUpperCase()}__BASE_URL (the provider's origin, with or without its version segment)` });
        const { body, contentType } = withDoc1Fields(e);
        if (e.status === 429) headers["retry-after"] = String(e.retryAfterSecs());
        return answer(state, body, e.status, { ...headers, "content-type": contentType });
      }
      const err = e instanceof ClientGone ? new ApiError("proxy_error", "client disconnected") : e;
      if (!(err instanceof ApiError)) d.log.error("proxy error", { path: new URL(request.url).pathname, error: String((err as Error)?.stack ?? err) });
      return errorResponse(toApiError(err), DOC1, headers);
    }
  };
}

/**
 * An answer built here, with the front door's headers added to `headers` (X-Request-ID, X-RateLimit-*;
 * none of them is a header set here) and marked on the state, so the kernel does not copy them onto it
 * afterwards (an error answer may carry its own: the kernel merges those).
 */
function answer(state: RequestState, body: ConstructorParameters<typeof Response>[0], status: number, headers: Record<string, string>): Response {
  const r = new Response(body, { status, headers: Object.assign(headers, state.headers) });
  state.stamped = r;
  return r;
}

/** What an endpoint's parse reads; the URL object is built only if it is read (most endpoints' parse does not). */
class CallInput implements RequestInput {
  #url: URL | undefined;
  readonly headers: Headers;
  constructor(
    readonly body: unknown,
    readonly params: Record<string, string>,
    private readonly request: Request,
  ) {
    this.headers = request.headers;
  }
  get url(): URL {
    return (this.#url ??= new URL(this.request.url));
  }
}

/** The request log line's gateway fields (snake_case, like the line's own). */
function logFacts(f: RequestFacts): Record<string, unknown> {
  return {
    model: f.model,
    provider: f.provider,
    cache: f.cacheStatus,
    ...(f.cacheTier ? { cache_tier: f.cacheTier } : {}),
    ...(f.deployment ? { deployment: f.deployment, attempts: f.attempts } : {}),
    input_tokens: f.inputTokens,
    output_tokens: f.outputTokens,
    cost_usd: Math.round(f.costUsd * 1e6) / 1e6,
    ...(f.costSavedUsd ? { cost_saved_usd: Math.round(f.costSavedUsd * 1e6) / 1e6 } : {}),
  };
}

const isSkip = (v: string | null) => v !== null && (v === "1" || v.toLowerCase() === "true");

function viaAuthorization(request: Request): "authorization" | "other" {
  return /^Bearer\s+/i.test(request.headers.get("authorization") ?? "") ? "authorization" : "other";
}

/** The X-Svc-Code-Context header's JSON (undefined when absent or empty); 400 when it is not JSON. */
export function parseCodeContext(raw: string | null): unknown {
  if (raw === null || raw === "") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw new ApiError("validation_error", "header 'X-Svc-Code-Context' must be JSON");
  }
}

/** The endpoint's header schema over the request's headers (names lower-case). */
function checkHeaders(endpoint: Endpoint, headers: Headers) {
  const values: Record<string, string> = {};
  headers.forEach((v, k) => (values[k] = v));
  if (endpoint.headerCheck!.Check(values)) return;
  throw new ApiError("validation_error", describeValueError(endpoint.headerCheck!.Errors(values).First(), "header"));
}

function validationError(endpoint: Endpoint, body: unknown): ApiError {
  if (body === undefined) return new ApiError("validation_error", "request body: expected a JSON object");
  return new ApiError("validation_error", describeValueError(endpoint.check!.Errors(body).First(), "body"));
}

/**
 * A provider's 4xx in doc1's envelope (§7: every doc1 endpoint answers `{error: {message, type}}`,
 * a 429 with `retry_after_secs`): the provider's body keeps its own fields, so its SDK still reads
 * it, and `error.message`, `error.type` (doc1's type for the status, ProviderReply.doc1Type) and,
 * on a 429, `error.retry_after_secs` are set. A body that is not a JSON object with an error
 * object (plain text, `{"error": "..."}`, `{"message": ...}`) gets one.
 */
export function withDoc1Fields(reply: ProviderReply): { body: string; contentType: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(reply.body);
  } catch {}
  const retry = reply.status === 429 ? { retry_after_secs: reply.retryAfterSecs() } : {};
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    const error = { message: reply.providerMessage(), type: reply.doc1Type(), ...retry };
    return { body: JSON.stringify({ error }), contentType: "application/json" };
  }
  const o = parsed as Record<string, unknown>;
  const e = o.error && typeof o.error === "object" && !Array.isArray(o.error) ? (o.error as Record<string, unknown>) : {};
  const message = typeof e.message === "string" ? e.message : reply.providerMessage();
  return { body: JSON.stringify({ ...o, error: { ...e, message, type: reply.doc1Type(e.type), ...retry } }), contentType: reply.contentType };
}
