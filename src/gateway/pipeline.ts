/**
 * The one proxy pipeline shared by every provider style:
 *   request id -> auth -> rate limit -> header checks -> body (JSON + TypeBox) -> adapter.parse
 *   -> skip-cache? -> cache lookup -> HIT: encode (JSON or rebuilt stream)
 *                                  -> MISS: single-flight upstream call (or live stream) -> store on success
 *   -> usage record, token charge, metrics, X-Cache-Status / X-Request-ID, error envelope.
 * Adapters (adapters/*.ts) only do the wire-format parts. `execute` is the HTTP-free core that
 * GatewayService.complete uses too.
 */
import type { AppContext } from "../context";
import type { CacheKeyInput, LookupResult } from "../cache/types";
import { ApiError, embeddingUnavailable, errorResponse, toApiError } from "../core/errors";
import { requestIdOf } from "../core/http";
import type { CacheMeta, Endpoint, ProviderWire, ProxyCall, Usage } from "./adapter";
import { SseParser, NdjsonParser, JsonArrayParser } from "./sse";
import { Upstream, ProviderReply, ClientGone } from "./upstream";
import { UsageRecorder } from "./usage";

export interface ExecInput {
  tenantId: string;
  endpoint: Endpoint;
  wire: ProviderWire;
  call: ProxyCall;
  skipCache: boolean;
  workspaceContext?: string;
  codeContext?: unknown;
  /** caller's own provider key (messages style pass-through) */
  providerKey?: string;
  clientHeaders?: Headers;
  signal?: AbortSignal;
  requestId: string;
  startedAt: number;
}

export type ExecResult =
  | { kind: "json"; body: unknown; raw: unknown; meta: CacheMeta; usage: Usage }
  | { kind: "forward"; status: number; text: string; contentType: string; meta: CacheMeta }
  | { kind: "stream"; stream: ReadableStream<Uint8Array | string>; contentType: string; meta: CacheMeta };

const BYPASS: CacheMeta = { status: "BYPASS", similarity: 0, lookupMs: 0 };
const enc = new TextEncoder();

/** Internal marker: a single-flight result that is the provider's 4xx. */
interface FlightResult {
  ok: boolean;
  body?: unknown;
  usage?: Usage;
  reply?: ProviderReply;
}

export class Pipeline {
  readonly upstream: Upstream;
  readonly usage: UsageRecorder;

  constructor(private readonly ctx: AppContext) {
    this.upstream = new Upstream(ctx.config, ctx.metrics);
    this.usage = new UsageRecorder(ctx.db, (e) => ctx.log.error("usage flush failed", { error: String(e) }));
    ctx.closers.push(() => this.usage.close());
  }

  // ---------------------------------------------------------------- HTTP layer

  /** Serve one proxy request. `parsedBody` is given when a framework already parsed it. */
  async serve(
    request: Request,
    endpoint: Endpoint,
    wire: ProviderWire,
    params: Record<string, string> = {},
    parsedBody?: unknown,
    /** set when served from the Bun.serve routes table (no Elysia hooks): route template for metrics/logs */
    nativeRoute?: string,
  ): Promise<Response> {
    const startedAt = performance.now();
    if (nativeRoute) this.ctx.requests?.start(request);
    let tenantId: string | undefined;
    const requestId = requestIdOf(request);
    const url = new URL(request.url);
    const headers: Record<string, string> = { "x-request-id": requestId };
    const skip = isSkip(request.headers.get("x-svc-skip-cache"));
    let status = "MISS";
    let response: Response;
    try {
      const principal = await this.ctx.auth.authenticate(request, url);
      tenantId = principal.tenantId;
      this.ctx.rateLimiter?.enforce(principal, request, headers);
      if (endpoint.headerCheck) checkHeaders(endpoint, request.headers);
      const body = endpoint.method === "POST" ? (parsedBody !== undefined ? parsedBody : await readJson(request)) : undefined;
      if (endpoint.check && !endpoint.check.Check(body)) throw validationError(endpoint, body);
      const call = endpoint.parse({ body, params, url, headers: request.headers });
      const result = await this.execute({
        tenantId: principal.tenantId,
        endpoint,
        wire,
        call,
        skipCache: skip,
        workspaceContext: request.headers.get("x-svc-workspace-context") ?? undefined,
        codeContext: parseCodeContext(request.headers.get("x-svc-code-context")),
        providerKey: wire.passThroughKey?.(request.headers, viaAuthorization(request)),
        clientHeaders: request.headers,
        signal: request.signal,
        requestId,
        startedAt,
      });
      status = result.meta.status;
      headers["x-cache-status"] = status;
      if (result.kind === "json") {
        headers["content-type"] = "application/json";
        response = new Response(JSON.stringify(result.body), { status: 200, headers });
      } else if (result.kind === "forward") {
        headers["content-type"] = result.contentType;
        response = new Response(result.text, { status: result.status, headers });
      } else {
        headers["content-type"] = result.contentType;
        headers["cache-control"] = "no-cache";
        response = new Response(result.stream as ReadableStream, { status: 200, headers });
      }
    } catch (e) {
      if (skip) status = "BYPASS";
      headers["x-cache-status"] = status;
      if (e instanceof ProviderReply) {
        response = new Response(e.body, { status: e.status, headers: { ...headers, "content-type": e.contentType } });
      } else {
        const err = e instanceof ClientGone ? new ApiError("proxy_error", "client disconnected") : this.apiError(e, url.pathname);
        response = errorResponse(err, url.pathname, headers);
      }
    }
    if (nativeRoute) this.ctx.requests?.finish({ request, route: nativeRoute, status: response.status, requestId, tenantId });
    return response;
  }

  private apiError(e: unknown, path: string): ApiError {
    if (e instanceof ApiError) return e;
    const embedding = embeddingUnavailable(e);
    if (embedding) return embedding;
    this.ctx.log.error("proxy error", { path, error: String((e as Error)?.stack ?? e) });
    return toApiError(e);
  }

  // ---------------------------------------------------------------- core

  async execute(x: ExecInput): Promise<ExecResult> {
    const { endpoint, call } = x;
    const cacheable = call.key !== null && !!endpoint.usageOf;
    if (!cacheable) {
      if (call.stream) return this.stream(x, undefined, BYPASS);
      const r = await this.upstream.text(this.upstreamReq(x), x.signal);
      let parsed: unknown;
      if (endpoint.reshape || endpoint.usageOf) {
        try {
          parsed = JSON.parse(r.text);
        } catch {
          if (endpoint.reshape) throw new ApiError("proxy_error", `upstream ${endpoint.provider} sent a body that is not JSON`);
        }
      }
      // forwarded calls that bill tokens (embeddings) are accounted with the provider's usage
      this.record(x, BYPASS, endpoint.usageOf && parsed !== undefined ? endpoint.usageOf(parsed) : { inputTokens: 0, outputTokens: 0 }, false);
      if (endpoint.reshape) return { kind: "forward", status: r.status, text: JSON.stringify(endpoint.reshape(parsed, call)), contentType: "application/json", meta: BYPASS };
      return { kind: "forward", status: r.status, text: r.text, contentType: r.contentType, meta: BYPASS };
    }
    const cache = x.skipCache ? undefined : this.ctx.cache;
    const input: CacheKeyInput | undefined = cache
      ? { tenantId: x.tenantId, ...call.key!, workspaceContext: x.workspaceContext, codeContext: x.codeContext }
      : undefined;
    let lookup: LookupResult | undefined;
    if (cache && input) {
      lookup = await cache.lookup(input);
      this.ctx.metrics.cacheLookupDuration.observe({ tier: lookup.hit ? lookup.tier : "none" }, lookup.lookupMs / 1000);
      this.ctx.metrics.cacheLookups.inc({ style: call.key!.style, tier: lookup.hit ? lookup.tier : "none", result: lookup.hit ? "hit" : "miss" });
      if (lookup.hit) {
        const meta: CacheMeta = { status: "HIT", tier: lookup.tier, similarity: lookup.similarity, contextSimilarity: lookup.contextSimilarity, lookupMs: lookup.lookupMs };
        const raw = lookup.payload.body;
        const usage = lookup.payload.usage;
        this.record(x, meta, usage, call.stream);
        if (call.stream && endpoint.stream) {
          const frames = endpoint.stream.replay(raw, call, meta).join("");
          return { kind: "stream", stream: textStream(frames), contentType: endpoint.stream.contentType, meta };
        }
        return { kind: "json", body: endpoint.decorate ? endpoint.decorate(raw, call, meta) : raw, raw, meta, usage };
      }
    } else {
      this.ctx.metrics.cacheLookups.inc({ style: call.key!.style, tier: "none", result: x.skipCache ? "bypass" : "miss" });
    }
    const meta: CacheMeta = x.skipCache ? BYPASS : { status: "MISS", similarity: 0, lookupMs: lookup?.lookupMs ?? 0 };
    if (call.stream) return this.stream(x, cache && input ? { input, lookup: lookup! } : undefined, meta);

    const fetchAndStore = async (): Promise<FlightResult> => {
      let r;
      try {
        r = await this.upstream.text(this.upstreamReq(x), cache ? undefined : x.signal);
      } catch (e) {
        if (e instanceof ProviderReply) return { ok: false, reply: e };
        throw e;
      }
      let body: unknown;
      try {
        body = JSON.parse(r.text);
      } catch {
        throw new ApiError("proxy_error", `upstream ${endpoint.provider} sent a body that is not JSON`);
      }
      const usage = endpoint.usageOf!(body);
      if (cache && input) {
        try {
          await cache.store(input, { body, usage }, lookup);
        } catch (e) {
          this.ctx.log.error("cache store failed", { error: String(e) });
        }
      }
      return { ok: true, body, usage };
    };
    const res = cache && input ? await cache.singleFlight(input, fetchAndStore, lookup) : await fetchAndStore();
    if (!res.ok) throw res.reply!;
    this.record(x, meta, res.usage!, false);
    return { kind: "json", body: endpoint.decorate ? endpoint.decorate(res.body, call, meta) : res.body, raw: res.body, meta, usage: res.usage! };
  }

  /** Live upstream stream: forwarded chunk by chunk, assembled on the side, stored when complete. */
  private async stream(x: ExecInput, store: { input: CacheKeyInput; lookup: LookupResult } | undefined, meta: CacheMeta): Promise<ExecResult> {
    const codec = x.endpoint.stream;
    const up = await this.upstream.open({ ...this.upstreamReq(x), stream: true }, x.signal);
    const contentType = codec?.contentType ?? up.response.headers.get("content-type") ?? "text/event-stream";
    const reader = up.response.body!.getReader();
    const asm = codec?.assembler(x.call);
    const parser = codec ? (codec.format === "sse" ? new SseParser() : codec.format === "json-array" ? new JsonArrayParser() : new NdjsonParser()) : undefined;
    const decoder = new TextDecoder();
    // leading bytes held back until the style's liveHead has decorated the first event
    let head: { text: string; decoder: TextDecoder } | undefined = codec?.liveHead ? { text: "", decoder: new TextDecoder() } : undefined;
    const flushHead = (controller: ReadableStreamDefaultController<Uint8Array>) => {
      if (head) {
        const rest = head.text + head.decoder.decode();
        head = undefined;
        if (rest) controller.enqueue(enc.encode(rest));
      }
    };
    /** the held-back text with its first data event decorated, or undefined while no complete one has arrived */
    const decorateHead = (): string | undefined => {
      let text = head!.text;
      let out = "";
      for (;;) {
        const m = /\r?\n\r?\n/.exec(text);
        if (!m) {
          head!.text = text;
          return out || undefined;
        }
        const end = m.index + m[0].length;
        const decorated = codec!.liveHead!(text.slice(0, end), x.call, meta);
        if (decorated !== undefined) {
          head = undefined;
          return out + decorated + text.slice(end);
        }
        out += text.slice(0, end);
        text = text.slice(end);
      }
    };
    let finished = false;
    const finish = () => {
      finished = true;
      up.release();
    };
    const cache = this.ctx.cache;
    const stream = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) {
                flushHead(controller);
                if (parser && asm) for (const ev of parser.end()) asm.push(ev);
                const body = asm?.result();
                finish();
                if (codec && body === undefined) {
                  this.ctx.metrics.upstreamErrors.inc({ provider: x.endpoint.provider, kind: "incomplete_stream" });
                  if (codec.errorFrame) controller.enqueue(enc.encode(codec.errorFrame("upstream stream ended before completion")));
                } else if (body !== undefined) {
                  const usage = x.endpoint.usageOf ? x.endpoint.usageOf(body) : { inputTokens: 0, outputTokens: 0 };
                  if (store && cache) {
                    try {
                      await cache.store(store.input, { body, usage }, store.lookup);
                    } catch (e) {
                      this.ctx.log.error("cache store failed", { error: String(e) });
                    }
                  }
                  this.record(x, meta, usage, true);
                }
                controller.close();
                return;
              }
              up.deadline.reset();
              if (parser && asm) for (const ev of parser.push(decoder.decode(value, { stream: true }))) asm.push(ev);
              if (!head) {
                controller.enqueue(value);
                return;
              }
              head.text += head.decoder.decode(value, { stream: true });
              const ready = decorateHead();
              if (ready !== undefined) {
                controller.enqueue(enc.encode(ready));
                return;
              }
              // no complete event yet: read on (pull must enqueue before it returns)
            }
          } catch (e) {
            finish();
            const err = this.upstream.classify(x.endpoint.provider, e, up.deadline, this.ctx.config.providers[x.endpoint.provider].timeout_ms);
            if (err instanceof ClientGone) return;
            flushHead(controller);
            if (codec?.errorFrame) {
              controller.enqueue(enc.encode(codec.errorFrame(err.message, err instanceof ApiError ? err.type : undefined)));
              controller.close();
            } else controller.error(err);
          }
        },
        cancel: (reason) => {
          if (!finished) {
            up.deadline.abort(new ClientGone(String(reason ?? "client disconnected")));
            reader.cancel().catch(() => {});
            finish();
          }
        },
      },
      { highWaterMark: 0 },
    );
    return { kind: "stream", stream, contentType, meta };
  }

  private upstreamReq(x: ExecInput) {
    return {
      provider: x.endpoint.provider,
      wire: x.wire,
      method: x.call.upstream.method,
      path: x.call.upstream.path,
      body: x.call.upstream.body,
      key: x.providerKey,
      clientHeaders: x.clientHeaders,
    };
  }

  private record(x: ExecInput, meta: CacheMeta, usage: Usage, streamed: boolean) {
    if (usage.inputTokens || usage.outputTokens) {
      try {
        this.ctx.rateLimiter?.chargeTokens(x.tenantId, usage.inputTokens + usage.outputTokens);
      } catch (e) {
        this.ctx.log.warn("chargeTokens failed", { error: String(e) });
      }
    }
    this.usage.record({
      tenantId: x.tenantId,
      requestId: x.requestId,
      style: x.call.key?.style ?? x.endpoint.provider,
      provider: x.endpoint.provider,
      endpoint: x.endpoint.id,
      model: x.call.model,
      cacheStatus: meta.status,
      cacheTier: meta.tier,
      streamed,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      latencyMs: performance.now() - x.startedAt,
    });
  }
}

function textStream(text: string): ReadableStream<string> {
  return new ReadableStream<string>({
    start(c) {
      c.enqueue(text);
      c.close();
    },
  });
}

const isSkip = (v: string | null) => v !== null && (v === "1" || v.toLowerCase() === "true");

function viaAuthorization(request: Request): "authorization" | "other" {
  return /^Bearer\s+/i.test(request.headers.get("authorization") ?? "") ? "authorization" : "other";
}

/** The X-Svc-Code-Context header's JSON (undefined when absent or empty); 400 when it is not JSON. Also read by POST /api/v1/query. */
export function parseCodeContext(raw: string | null): unknown {
  if (raw === null || raw === "") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw new ApiError("validation_error", "header 'X-Svc-Code-Context' must be JSON");
  }
}

async function readJson(request: Request): Promise<unknown> {
  const text = await request.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError("invalid_request_error", "malformed request body: expected valid JSON");
  }
}

/** The endpoint's header schema over the request's headers (names lower-case). */
function checkHeaders(endpoint: Endpoint, headers: Headers) {
  const values: Record<string, string> = {};
  headers.forEach((v, k) => (values[k] = v));
  if (endpoint.headerCheck!.Check(values)) return;
  const first = endpoint.headerCheck!.Errors(values).First();
  const name = first?.path.replace(/^\//, "") ?? "";
  const hint = (first?.schema as { description?: string } | undefined)?.description;
  throw new ApiError("validation_error", `header '${name}': ${first?.message ?? "invalid"}${hint ? ` (${hint})` : ""}`);
}

function validationError(endpoint: Endpoint, body: unknown): ApiError {
  const first = endpoint.check!.Errors(body).First();
  const path = first?.path.replace(/^\//, "").replace(/\//g, ".") ?? "";
  return new ApiError("validation_error", `body ${path ? `field '${path}'` : ""}: ${first?.message ?? "invalid"}`.replace(/\s+/g, " "));
}
