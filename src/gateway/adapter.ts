/**
 * What a provider style contributes to the shared proxy pipeline (src/gateway/pipeline.ts).
 * An adapter only knows its wire format: it validates and parses a request, names the cache
 * key parts, builds the upstream request, and encodes (cached) responses back into its JSON
 * and streaming formats. Auth, rate limits, cache, upstream I/O, metrics and errors live in
 * the pipeline. A new style is one new file in adapters/ plus its entries in routes.ts.
 */
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import type { ProviderName } from "../core/config";
import type { CacheKeyInput, CacheTier, Turn } from "../cache/types";
import type { SseEvent } from "./sse";

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
  lookupMs: number;
}

/** The `svc` object of the generate-content and chat/generate styles (doc1 §4.4, §4.5). */
export function svcObject(meta: CacheMeta) {
  return {
    cache_hit: meta.status === "HIT",
    similarity: meta.similarity,
    source: meta.status === "HIT" ? meta.tier ?? "exact" : "provider",
    latency_ms: Math.round(meta.lookupMs),
  };
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

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
   * live (upstream) streams: rewrite one leading event (its text up to and including the blank
   * line) to carry the style's cache metadata; undefined = not that event, forward it and offer the
   * next. Only leading events are held back (until the first one is decorated); the rest stream as is.
   */
  liveHead?(event: string, call: ProxyCall, meta: CacheMeta): string | undefined;
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
  provider: ProviderName;
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
}

/** Provider-level wire details shared by a style's endpoints. */
export interface ProviderWire {
  name: ProviderName;
  /** headers carrying the upstream key */
  authHeaders(key: string): Record<string, string>;
  /** client headers forwarded upstream (lower-case names) */
  forwardHeaders: string[];
  /** the key a caller passes through (messages style: x-api-key), if any */
  passThroughKey?(headers: Headers, authenticatedVia: "authorization" | "other"): string | undefined;
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
  for (const [k, v] of Object.entries(body)) if (!drop.includes(k) && v !== undefined) scope[k] = v;
  return scope;
}

/** Rough token estimate (4 characters per token) when a provider reports no usage. */
export const estimateTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

export type { Turn };
