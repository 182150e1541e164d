/**
 * The proxy pipeline's core, shared by every provider style and free of HTTP (the proxies'
 * serving layer is serve.ts; GatewayService.complete calls `execute` directly):
 *
 *   cacheable? -> cache lookup -> HIT: the stored body (decorated) or its rebuilt stream
 *                              -> MISS: single-flight upstream call (or a live stream) -> store on success
 *   -> usage record and token charge.
 * Adapters (providers/<name>/adapter.ts) only do the wire-format parts.
 */
import { ApiError, invalidRequest } from "../core/errors";
import type { Logger } from "../core/log";
import { NO_USAGE } from "../core/usage";
import type { CacheMeta, Endpoint, ProviderWire, ProxyCall, Usage } from "./providers/types";
import type { CacheKeyInput, LookupResult, ResponseCache, SpendGuard, SpendTicket, TokenMeter } from "./ports";
import type { PriceTable } from "./prices";
import { Upstream, ProviderReply, type Served, type UpstreamRequest } from "./upstream";
import { liveStream } from "./live-stream";
import type { UsageRecorder } from "./usage";
import type { DeploymentConfig, ProvidersConfig } from "./config";
import { normaliseBaseUrl } from "../core/base-url";
import { PROVIDERS, type ProviderName } from "./providers";
import { fallbacksFor } from "./routing";

export interface ExecInput {
  tenantId: string;
  /** the caller's subject and API key (usage records, team budgets) */
  sub?: string;
  keyId?: string;
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
  /** told what the request did once it is accounted (the request log line's fields) */
  facts?: (f: RequestFacts) => void;
}

export type ExecResult =
  | { kind: "json"; body: unknown; raw: unknown; meta: CacheMeta; usage: Usage }
  | { kind: "forward"; status: number; text: string; contentType: string; meta: CacheMeta }
  | {
      kind: "stream";
      stream: ReadableStream<Uint8Array | string>;
      contentType: string;
      meta: CacheMeta;
      /** a live stream: settles once it is over and accounted (its usage known), whatever the way it ended */
      done?: Promise<void>;
    };

/**
 * Per-request cache controls that can only make matching stricter (issue 25):
 *   X-Svc-Cache-Min-Similarity: 0..1, this request's operating point (cosine floor); the tenant's
 *     own point still applies when it is higher
 *   X-Svc-Cache-Namespace: entries are stored and found only within this namespace (1-128 of [A-Za-z0-9._:-])
 * An invalid value is a 400.
 */
export function cacheRequestHeaders(h: Headers | undefined): { minSimilarity?: number; namespace?: string } {
  const out: { minSimilarity?: number; namespace?: string } = {};
  const min = h?.get("x-svc-cache-min-similarity");
  if (min !== null && min !== undefined) {
    const v = min.trim() === "" ? Number.NaN : Number(min);
    if (!Number.isFinite(v) || v < 0 || v > 1) throw invalidRequest(`X-Svc-Cache-Min-Similarity must be a number from 0 to 1, got ${JSON.stringify(min.slice(0, 40))}`);
    out.minSimilarity = v;
  }
  const ns = h?.get("x-svc-cache-namespace");
  if (ns !== null && ns !== undefined) {
    if (!/^[A-Za-z0-9._:-]{1,128}$/.test(ns)) throw invalidRequest("X-Svc-Cache-Namespace must be 1-128 characters of A-Z a-z 0-9 . _ : -");
    out.namespace = ns;
  }
  return out;
}

export const BYPASS: CacheMeta = { status: "BYPASS", similarity: 0, lookupMs: 0 };

/** A single-flight result: the body, or the provider's own 4xx to hand every waiter. */
interface FlightResult {
  ok: boolean;
  body?: unknown;
  usage?: Usage;
  reply?: ProviderReply;
  served?: Served;
}

/** One request of an upstream plan; a deployment of another provider converts its answer back into the client's style. */
type PlannedRequest = UpstreamRequest & { convert?: (body: unknown) => { body: unknown; usage: Usage } };

export interface PipelineDeps {
  upstream: Upstream;
  cache: ResponseCache;
  meter: TokenMeter;
  usage: UsageRecorder;
  providers: ProvidersConfig;
  /** admits requests before they spend money upstream (team budgets) */
  guard: SpendGuard;
  log: Logger;
  /** upstream stream failures (metric) */
  incompleteStream(provider: string): void;
  /** model name or glob -> fallback deployments (models.fallbacks) */
  fallbacks: () => Record<string, DeploymentConfig[]>;
  prices: PriceTable;
  /** every finished request's accounting facts (metrics, request log) */
  accounted?: (x: ExecInput, facts: RequestFacts) => void;
}

/** What one proxied request did, for the request log and the token/cost counters. */
export interface RequestFacts {
  provider: string;
  model: string;
  deployment?: string;
  attempts: number;
  cacheStatus: CacheMeta["status"];
  cacheTier?: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  costSavedUsd: number;
}

export class Pipeline {
  constructor(private readonly d: PipelineDeps) {}

  get upstream(): Upstream {
    return this.d.upstream;
  }

  async execute(x: ExecInput): Promise<ExecResult> {
    const { endpoint, call } = x;
    const cacheable = call.key !== null && !!endpoint.usageOf;
    if (!cacheable) return this.forward(x);
    const input: CacheKeyInput = {
      tenantId: x.tenantId,
      ...call.key!,
      workspaceContext: x.workspaceContext,
      codeContext: x.codeContext,
      ...cacheRequestHeaders(x.clientHeaders),
      requestId: x.requestId,
      caller: x.keyId ?? (x.sub ? `sub:${x.sub}` : undefined),
    };
    let lookup: LookupResult | undefined;
    if (x.skipCache) this.d.cache.bypassed(call.key!.style);
    else {
      lookup = await this.d.cache.lookup(input);
      if (lookup.hit) {
        const meta: CacheMeta = {
          status: "HIT",
          tier: lookup.tier,
          similarity: lookup.similarity,
          contextSimilarity: lookup.contextSimilarity,
          learnedScore: lookup.learnedScore,
          lookupMs: lookup.lookupMs,
          decisionPoint: lookup.decisionPoint,
          pointSource: lookup.pointSource,
        };
        const raw = lookup.payload.body;
        const usage = lookup.payload.usage;
        this.record(x, meta, usage, call.stream, undefined, lookup.entryId);
        if (call.stream && endpoint.stream) {
          const frames = endpoint.stream.replay(raw, call, meta).join("");
          return { kind: "stream", stream: textStream(frames), contentType: endpoint.stream.contentType, meta };
        }
        return { kind: "json", body: endpoint.decorate ? endpoint.decorate(raw, call, meta) : raw, raw, meta, usage };
      }
    }
    // a miss reports how close the nearest cached question was (0 when nothing was compared)
    const missed = lookup && !lookup.hit ? lookup : undefined;
    const meta: CacheMeta = x.skipCache
      ? BYPASS
      : { status: "MISS", similarity: missed?.nearestSimilarity ?? 0, lookupMs: lookup?.lookupMs ?? 0, decisionPoint: missed?.decisionPoint, pointSource: missed?.pointSource };
    const store = lookup ? { input, lookup } : undefined;
    const ticket = await this.admit(x);
    if (call.stream) return this.stream(x, store, meta, ticket);

    const fetchAndStore = async (): Promise<FlightResult> => {
      let r;
      const plan = this.plan(x);
      try {
        // a cacheable call completes for the cache even if its client leaves; a client gone while queued leaves the queue
        r = await this.d.upstream.text(plan, store ? undefined : x.signal, x.signal);
      } catch (e) {
        if (e instanceof ProviderReply) return { ok: false, reply: e };
        throw e;
      }
      const convert = plan[r.served.index]!.convert;
      let body: unknown;
      let usage: Usage;
      if (convert) ({ body, usage } = convert(parseUpstreamJson(r.text, endpoint)));
      else {
        body = parseUpstreamJson(r.text, endpoint);
        usage = endpoint.usageOf!(body);
      }
      if (store) await this.store(store.input, body, usage, store.lookup);
      return { ok: true, body, usage, served: r.served };
    };
    let res: FlightResult;
    try {
      // (a waiter on another replica answers from the entry the flight stored: no provider served it here)
      res = store ? await this.d.cache.singleFlight(input, fetchAndStore, lookup, (p) => ({ ok: true, body: p.body, usage: p.usage })) : await fetchAndStore();
    } catch (e) {
      ticket.settle(0);
      throw e;
    }
    if (!res.ok) {
      ticket.settle(0);
      throw res.reply!;
    }
    ticket.settle(this.record(x, meta, res.usage!, false, res.served));
    return { kind: "json", body: endpoint.decorate ? endpoint.decorate(res.body, call, meta) : res.body, raw: res.body, meta, usage: res.usage! };
  }

  /** Never-cached operations (models, embeddings, countTokens, ...): forwarded, normalised where the style says. */
  private async forward(x: ExecInput): Promise<ExecResult> {
    const { endpoint, call } = x;
    const ticket = await this.admit(x);
    if (call.stream) return this.stream(x, undefined, BYPASS, ticket);
    let r;
    try {
      // never-cached operations have no cross-provider translation: same-style deployments only
      r = await this.d.upstream.text(this.plan(x).filter((p) => !p.convert), x.signal);
    } catch (e) {
      ticket.settle(0);
      throw e;
    }
    let parsed: unknown;
    if (endpoint.reshape || endpoint.usageOf) {
      try {
        parsed = JSON.parse(r.text);
      } catch {
        if (endpoint.reshape) throw notJson(endpoint);
      }
    }
    // forwarded calls that bill tokens (embeddings) are accounted with the provider's usage
    ticket.settle(this.record(x, BYPASS, endpoint.usageOf && parsed !== undefined ? endpoint.usageOf(parsed) : NO_USAGE, false, r.served));
    if (endpoint.reshape) return { kind: "forward", status: r.status, text: JSON.stringify(endpoint.reshape(parsed, call)), contentType: "application/json", meta: BYPASS };
    return { kind: "forward", status: r.status, text: r.text, contentType: r.contentType, meta: BYPASS };
  }

  private async stream(x: ExecInput, store: { input: CacheKeyInput; lookup: LookupResult } | undefined, meta: CacheMeta, ticket: SpendTicket): Promise<ExecResult> {
    let up;
    const plan = this.plan(x).map((p) => (p.convert ? p : { ...p, stream: true }));
    try {
      up = await this.d.upstream.open(plan, x.signal);
    } catch (e) {
      ticket.settle(0);
      throw e;
    }
    const served = up.served;
    const convert = plan[served.index]!.convert;
    if (convert) {
      // another provider answered a non-streamed request: its answer, in the client's style, is replayed as the client's stream
      let text: string;
      try {
        text = await up.response.text();
      } catch (e) {
        ticket.settle(0);
        throw this.d.upstream.classify(served.provider, e, up.deadline, this.d.providers[served.provider].timeout_ms);
      } finally {
        up.release();
      }
      let converted;
      try {
        converted = convert(parseUpstreamJson(text, x.endpoint));
      } catch (e) {
        // an answer the client's style cannot say (proxy_error): a failed request, nothing charged or held
        ticket.settle(0);
        throw e;
      }
      const { body, usage } = converted;
      if (store) await this.store(store.input, body, usage, store.lookup);
      ticket.settle(this.record(x, meta, usage, true, served));
      if (!x.endpoint.stream) return { kind: "json", body: x.endpoint.decorate ? x.endpoint.decorate(body, x.call, meta) : body, raw: body, meta, usage };
      return { kind: "stream", stream: textStream(x.endpoint.stream.replay(body, x.call, meta).join("")), contentType: x.endpoint.stream.contentType, meta };
    }
    const contentType = x.endpoint.stream?.contentType ?? up.response.headers.get("content-type") ?? "text/event-stream";
    const { promise: done, resolve: closed } = Promise.withResolvers<void>();
    const stream = liveStream(up, x.endpoint, x.call, meta, this.d.upstream, this.d.providers[x.endpoint.provider as keyof ProvidersConfig].timeout_ms, {
      completed: async (body, usage) => {
        if (store) await this.store(store.input, body, usage, store.lookup);
        ticket.settle(this.record(x, meta, usage, true, served));
      },
      // a cut or failed stream: its cost is unknown (no usage arrived); nothing is charged
      incomplete: () => {
        ticket.settle(0);
        this.d.incompleteStream(x.endpoint.provider);
      },
      closed,
    });
    return { kind: "stream", stream, contentType, meta, done };
  }

  /** A failed write is logged, never the client's problem: the answer is already theirs. */
  private async store(input: CacheKeyInput, body: unknown, usage: Usage, lookup: LookupResult) {
    try {
      await this.d.cache.store(input, { body, usage }, lookup);
    } catch (e) {
      this.d.log.error("cache store failed", { error: String(e) });
    }
  }

  /**
   * The upstream plan of a request: the provider's configured deployment, then the model's
   * fallback deployments (models.fallbacks) in order. A deployment of the same provider gets the
   * same request (its model swapped in when it names one); one of another provider gets the
   * request rebuilt in that provider's style (`fallback ?? completion`) from its neutral form
   * (`Endpoint.neutral`, providers/neutral.ts), its answer converted back; a request that either
   * side cannot say exactly skips that deployment.
   */
  private plan(x: ExecInput): PlannedRequest[] {
    const provider = x.endpoint.provider as ProviderName;
    const primary: PlannedRequest = {
      provider,
      model: x.call.model,
      wire: x.wire,
      method: x.call.upstream.method,
      path: x.call.upstream.path,
      body: x.call.upstream.body,
      key: x.providerKey,
      clientHeaders: x.clientHeaders,
    };
    const deployments = fallbacksFor(x.call.model, this.d.fallbacks());
    if (!deployments.length) return [primary];
    const plan = [primary];
    deployments.forEach((d, i) => {
      const settings = this.d.providers[d.provider];
      const model = d.model ?? x.call.model;
      const baseUrl = d.base_url ? normaliseBaseUrl(d.base_url) : normaliseBaseUrl(settings.base_url);
      const host = d.base_url ? `@${new URL(baseUrl).host}` : "";
      const target = { name: d.name ?? `${d.provider}/${model}${host}#${i + 1}`, baseUrl, apiKey: d.api_key ?? settings.api_key, timeoutMs: d.timeout_ms ?? settings.timeout_ms };
      if (d.provider === provider) {
        const swapped = withModel(x.call.upstream, x.call.model, model);
        // the caller's own provider key goes only where the primary would have sent it
        const key = d.base_url || d.api_key ? undefined : x.providerKey;
        plan.push({ ...primary, ...swapped, model, target, key });
        return;
      }
      const neutral = x.endpoint.neutral;
      const input = neutral?.input(x.call.upstream.body);
      const def = PROVIDERS[d.provider];
      const to = def.fallback ?? def.completion;
      const body = input && to.build({ ...input, model });
      // not expressible exactly in the other provider's terms: skipped
      if (!neutral || !to.endpoint.neutral || body === undefined) return;
      const call = to.endpoint.parse({ body, params: { model }, url: new URL("http://svc.internal/"), headers: new Headers() });
      const read = to.endpoint.neutral.answer;
      plan.push({
        provider: d.provider,
        model,
        wire: def.wire,
        method: call.upstream.method,
        path: call.upstream.path,
        body: call.upstream.body,
        clientHeaders: new Headers(to.headers ?? {}),
        target,
        convert: (answer) => {
          const a = read(answer);
          return { body: neutral.output(a, x.call), usage: a.usage };
        },
      });
    });
    return plan;
  }

  /** Admission by the spend guard (team budgets) before a request goes upstream. */
  private admit(x: ExecInput): SpendTicket | Promise<SpendTicket> {
    return this.d.guard.admit({ tenantId: x.tenantId, sub: x.sub ?? x.tenantId, keyId: x.keyId }, x.call.model);
  }

  /** Usage record and token charge; returns the list-price cost of what went upstream (0 on a hit). */
  private record(x: ExecInput, meta: CacheMeta, usage: Usage, streamed: boolean, served: Served | undefined, entryId?: string): number {
    if (usage.inputTokens || usage.outputTokens) {
      try {
        this.d.meter.chargeTokens(x.tenantId, usage.inputTokens + usage.outputTokens);
      } catch (e) {
        this.d.log.warn("chargeTokens failed", { error: String(e) });
      }
    }
    this.d.usage.record({
      tenantId: x.tenantId,
      keyId: x.keyId,
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
      deployment: served?.deployment,
      upstreamModel: served?.model || undefined,
      attempts: served?.attempts ?? 0,
      // why it hit or missed (a miss's similarity is its nearest cached question's, 0 when nothing was compared: recorded as none)
      cacheEntryId: entryId,
      similarity: meta.status === "HIT" || (meta.status === "MISS" && meta.similarity > 0) ? meta.similarity : undefined,
      learnedScore: meta.learnedScore,
      cachePoint: meta.decisionPoint,
    });
    // a hit is priced as the model asked for; an upstream answer as the model that gave it
    const cost = this.d.prices.costOf(served?.model || x.call.model, usage.inputTokens, usage.outputTokens);
    const hit = meta.status === "HIT";
    this.d.accounted?.(x, {
      provider: x.endpoint.provider,
      model: x.call.model,
      deployment: served?.deployment,
      attempts: served?.attempts ?? 0,
      cacheStatus: meta.status,
      cacheTier: meta.tier,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costUsd: hit ? 0 : cost,
      costSavedUsd: hit ? cost : 0,
    });
    return hit ? 0 : cost;
  }
}

const notJson = (endpoint: Endpoint) => new ApiError("proxy_error", `upstream ${endpoint.provider} sent a body that is not JSON`);

function parseUpstreamJson(text: string, endpoint: Endpoint): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw notJson(endpoint);
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

/** The same request naming another model: the body's `model` and a `/models/{model}` path segment. */
function withModel(up: ProxyCall["upstream"], from: string, to: string): { path: string; body: unknown } {
  if (from === to) return { path: up.path, body: up.body };
  const body = up.body && typeof up.body === "object" && !Array.isArray(up.body) && "model" in (up.body as object) ? { ...(up.body as object), model: to } : up.body;
  const enc = (m: string) => encodeURIComponent(m);
  const path = up.path.replace(`/models/${enc(from)}`, `/models/${enc(to)}`).replace(`/models/${from}`, `/models/${to}`);
  return { path, body };
}
