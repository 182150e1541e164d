/**
 * What a provider style contributes to the gateway. A style is one folder, `providers/<name>/`:
 * its adapter (wire format: validate and parse a request, name the cache key parts, build the
 * upstream request, encode cached responses back into its JSON and streaming formats) and its
 * ProviderDefinition (default base URL, proxy routes, default model globs, the information
 * document's endpoints, how GatewayService.complete calls it) — plus one entry in the PROVIDERS
 * record (providers/index.ts). Auth, rate limits, cache, upstream I/O, metrics and errors live in
 * the pipeline (pipeline.ts, serve.ts).
 */
import { Type, type IntegerOptions, type TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import type { TokenUsage } from "../../core/usage";
import type { CacheKeyInput, CacheTier, Turn } from "../ports";
import type { SseEvent } from "../sse";
import type { CompletionInput, NeutralAnswer, NeutralRequest } from "./neutral";
import type { Examples } from "../../core/openapi";

/**
 * An integer field of a provider body (doc1 §4.2-§4.5 `max_tokens`, `k`, `num_generations`,
 * `maxOutputTokens` ...): a JSON number only. Elysia's t.Integer also takes an integer-formatted
 * string ("5", made for query strings), which a proxy would forward upstream as the client sent it.
 */
export const JsonInteger = (options: IntegerOptions = {}) => Type.Integer(options);

export type KeyParts = Pick<CacheKeyInput, "style" | "model" | "scope" | "turns" | "sessionId">;

/** A parsed, validated client request, ready for the pipeline. */
export interface ProxyCall {
  model: string;
  stream: boolean;
  /** cache key parts; null = this request is never cached */
  key: KeyParts | null;
  upstream: { method: "GET" | "POST"; path: string; body?: unknown };
  /** adapter-private details the encoders need (e.g. the session id, include_usage) */
  meta: Record<string, unknown>;
}

/** Cache facts attached to a response in the style's metadata object. */
export interface CacheMeta {
  status: "HIT" | "MISS" | "BYPASS";
  tier?: CacheTier;
  similarity: number;
  contextSimilarity?: number;
  /** the learned stage's probability of same meaning, on a hit it decided */
  learnedScore?: number;
  lookupMs: number;
  /** the cache's operating point (cosine floor) for this lookup and what set it */
  decisionPoint?: number;
  pointSource?: "config" | "feedback" | "request" | "exact";
}

/** The `svc` object of the generate-content and chat/generate styles (doc1 §4.4, §4.5). */
/**
 * The `svc` object of the generate-content and chat styles. `similarity` is the hit's, and on a
 * miss the nearest cached question's (as svc_metadata and /api/v1/query report it; 0 when nothing
 * was compared, and on a bypass). `miss: "zero"` keeps 0.0 on a miss where doc1 spells it so
 * (§4.5 legacy /v1/generate).
 */
export function svcObject(meta: CacheMeta, miss: "nearest" | "zero" = "nearest") {
  return {
    cache_hit: meta.status === "HIT",
    similarity: meta.status === "HIT" || (meta.status === "MISS" && miss === "nearest") ? meta.similarity : 0,
    source: meta.status === "HIT" ? meta.tier ?? "exact" : "provider",
    latency_ms: Math.round(meta.lookupMs),
  };
}

export type Usage = TokenUsage;

/** Rebuilds a non-streamed response body from the upstream stream's events. */
export interface Assembler {
  push(ev: SseEvent): void;
  /** the complete body, or undefined if the stream did not finish normally */
  result(): unknown | undefined;
}

export interface StreamCodec {
  /** sse; ndjson (one JSON event per line); json-array (generate-content without ?alt=sse) */
  format: "sse" | "ndjson" | "json-array";
  contentType: string;
  assembler(call: ProxyCall): Assembler;
  /** frames (already serialised) replaying a cached body as this style's stream */
  replay(body: any, call: ProxyCall, meta: CacheMeta): string[];
  /** a frame telling the client the stream failed, if the style has one */
  errorFrame?(message: string, type?: string): string;
  /**
   * live (upstream) streams: one leading event, given as its data (the data lines joined), rewritten
   * as a whole frame that carries the style's cache metadata; undefined = not that event, forward it
   * as it came and offer the next. Only leading events are held back (until the first one is
   * decorated); the rest stream as is.
   */
  liveHead?(data: string, call: ProxyCall, meta: CacheMeta): string | undefined;
  /**
   * live (upstream) streams in another format than the client's: each upstream event re-encoded
   * (e.g. the provider's newline-delimited JSON as Server-Sent Events); without it bytes pass as sent
   */
  reframe?(event: SseEvent): string;
  /**
   * live (upstream) streams re-encoded event by event by a stateful framer (instead of `reframe` and
   * `errorFrame`): only complete events reach the client, so the error event of a failed stream
   * always starts at an event boundary; `end` closes a completed stream (e.g. a JSON array's `]`)
   */
  framer?(): StreamFramer;
}

export interface StreamFramer {
  event(ev: SseEvent): string;
  /** after the last event of a stream that completed */
  end(): string;
  /** the in-band error that ends a failed stream (svc's error type: timeout_error, proxy_error) */
  error(message: string, type?: string): string;
}

export interface RequestInput {
  body: any;
  /** path parameters (model for generate-content) */
  params: Record<string, string>;
  url: URL;
  headers: Headers;
}

export interface Endpoint {
  /** metric/route label, e.g. "openai.chat_completions" */
  id: string;
  provider: string;
  method: "GET" | "POST";
  /** request body schema (TypeBox), checked before parse */
  schema?: TSchema;
  check?: TypeCheck<TSchema>;
  /**
   * request header schema (TypeBox, lower-case names), e.g. the messages style's required
   * `anthropic-version`; checked before the body, a failure is 400 validation_error
   */
  headerSchema?: TSchema;
  headerCheck?: TypeCheck<TSchema>;
  parse(input: RequestInput): ProxyCall;
  /** tokens of a response: cacheable endpoints, and forwarded ones that bill tokens (embeddings) */
  usageOf?(body: any): Usage;
  textOf?(body: any): string;
  decorate?(body: any, call: ProxyCall, meta: CacheMeta): any;
  /**
   * never-cached endpoints: normalise the provider's 2xx JSON into the spec's shape (e.g. the
   * model objects of GET /v1/models, /v1beta/models); without it the body is forwarded verbatim
   */
  reshape?(body: any, call: ProxyCall): unknown;
  stream?: StreamCodec;
  /**
   * the request and answer in provider-neutral terms (neutral.ts), for fallback deployments of
   * another provider (models.fallbacks): `input` undefined = this request cannot be said neutrally
   * without losing something; `answer` reads this style's non-streamed answer; `output` writes one
   */
  neutral?: {
    input(body: any): NeutralRequest | undefined;
    answer(body: any): NeutralAnswer;
    output(answer: NeutralAnswer, call: ProxyCall): unknown;
  };
}

/** Provider-level wire details shared by a style's endpoints. */
export interface ProviderWire {
  name: string;
  /** headers carrying the upstream key */
  authHeaders(key: string): Record<string, string>;
  /** client headers forwarded upstream (lower-case names) */
  forwardHeaders: string[];
  /** the key a caller passes through (messages style: x-api-key), if any */
  passThroughKey?(headers: Headers, authenticatedVia: "authorization" | "other", isGatewayCredential: (c: string) => boolean): string | undefined;
}

export type { CompletionInput };

/**
 * How a style is asked for a completion: its endpoint and the request body built from neutral
 * terms; `build` answers undefined when the style cannot say the request exactly (never for text).
 */
export interface CompletionTarget {
  endpoint: Endpoint;
  build(req: CompletionInput): unknown;
  headers?: Record<string, string>;
}

/** One proxy route of a style. */
export interface ProxyRoute {
  method: "GET" | "POST";
  /** Bun routes path; `*` matches the rest (model paths) */
  path: string;
  /** the endpoint served; or `dispatch` picks one from the request (model paths with actions) */
  endpoint?: Endpoint;
  /** for `*` paths: the endpoint and path parameters of this request, or undefined (404) */
  dispatch?: (request: Request, url: URL) => { endpoint: Endpoint; params: Record<string, string> } | undefined;
  /** when several styles declare the same method and path: this one serves the requests it claims */
  claims?: (request: Request, url: URL) => boolean;
  /** how the route appears in /openapi.json: each real path template it serves */
  docs: Array<{ path: string; summary: string; description?: string; body?: TSchema; stream?: "sse" | "ndjson" | "json-array"; examples?: Examples }>;
}

export interface ProviderDefinition {
  /** the provider's origin when SVC_PROVIDERS__<NAME>__BASE_URL is unset */
  defaultBaseUrl: string;
  wire: ProviderWire;
  routes: ProxyRoute[];
  /** model names routed to this style by default where svc picks the provider (CONTRACT.md) */
  modelGlobs: string[];
  /** the information document's `endpoints`: style name -> the request it starts with */
  info: Record<string, { method: string; path: string }>;
  /** a cheap authenticated request that tells whether the provider answers (readiness probes): its model list */
  probe: { path: string; headers?: Record<string, string> };
  /** how GatewayService.complete calls the style */
  completion: CompletionTarget;
  /** where a fallback deployment of this provider sends a translated request (models.fallbacks); default `completion` */
  fallback?: CompletionTarget;
}

/**
 * Attach the body checker, compiled on first use: compiling every endpoint's schema when the
 * adapters load cost ~4 ms of the cold start (BENCHMARKS.md); each endpoint compiles once, on
 * its first request.
 */
export function compile(ep: Endpoint): Endpoint {
  lazyCheck(ep, "check", ep.schema);
  lazyCheck(ep, "headerCheck", ep.headerSchema);
  return ep;
}

function lazyCheck(ep: Endpoint, prop: "check" | "headerCheck", schema: TSchema | undefined) {
  if (schema && !ep[prop])
    Object.defineProperty(ep, prop, {
      configurable: true,
      enumerable: true,
      get() {
        const check = TypeCompiler.Compile(schema);
        Object.defineProperty(ep, prop, { value: check, writable: true, configurable: true, enumerable: true });
        return check;
      },
    });
}

export const sha = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex").slice(0, 16);

/** Compact JSON used when a structured part must become turn text. */
export const compact = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

/** Drop the listed keys; what remains is the scope of a request (what changes the answer). */
export function scopeOf(body: Record<string, unknown>, drop: string[]): Record<string, unknown> {
  const scope: Record<string, unknown> = {};
  // for…in over own keys (no entry arrays: this runs on every proxied request)
  for (const k in body) {
    if (!Object.hasOwn(body, k) || drop.includes(k)) continue;
    const v = body[k];
    if (v !== undefined) scope[k] = v;
  }
  return scope;
}

/** Rough token estimate (4 characters per token) when a provider reports no usage. */
export const estimateTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

export type { Turn };
