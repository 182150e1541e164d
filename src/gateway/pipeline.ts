/**
 * The proxy pipeline's core, shared by every provider style and free of HTTP (the proxies'
 * serving layer is serve.ts; GatewayService.complete calls `execute` directly):
 *
 *   cacheable? -> cache lookup -> HIT: the stored body (decorated) or its rebuilt stream
 *                              -> MISS: single-flight upstream call (or a live stream) -> store on success
 *   -> usage record and token charge.
 * Adapters (providers/<name>/adapter.ts) only do the wire-format parts.
 */
import { ApiError } from "../core/errors";
import type { Logger } from "../core/log";
import { NO_USAGE } from "../core/usage";
import type { CacheMeta, Endpoint, ProviderWire, ProxyCall, Usage } from "./providers/types";
import type { CacheKeyInput, LookupResult, ResponseCache, SpendGuard, SpendTicket, TokenMeter } from "./ports";
import { costOf } from "./prices";
import { Upstream, ProviderReply } from "./upstream";
import { liveStream } from "./live-stream";
import type { UsageRecorder } from "./usage";
import type { ProvidersConfig } from "./config";

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
}

export type ExecResult =
  | { kind: "json"; body: unknown; raw: unknown; meta: CacheMeta; usage: Usage }
  | { kind: "forward"; status: number; text: string; contentType: string; meta: CacheMeta }
  | { kind: "stream"; stream: ReadableStream<Uint8Array | string>; contentType: string; meta: CacheMeta };

export const BYPASS: CacheMeta = { status: "BYPASS", similarity: 0, lookupMs: 0 };

/** A single-flight result: the body, or the provider's own 4xx to hand every waiter. */
interface FlightResult {
  ok: boolean;
  body?: unknown;
  usage?: Usage;
  reply?: ProviderReply;
}

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
    const input: CacheKeyInput = { tenantId: x.tenantId, ...call.key!, workspaceContext: x.workspaceContext, codeContext: x.codeContext };
    let lookup: LookupResult | undefined;
    if (x.skipCache) this.d.cache.bypassed(call.key!.style);
    else {
      lookup = await this.d.cache.lookup(input);
      if (lookup.hit) {
        const meta: CacheMeta = { status: "HIT", tier: lookup.tier, similarity: lookup.similarity, contextSimilarity: lookup.contextSimilarity, learnedScore: lookup.learnedScore, lookupMs: lookup.lookupMs };
        const raw = lookup.payload.body;
        const usage = lookup.payload.usage;
        this.record(x, meta, usage, call.stream);
        if (call.stream && endpoint.stream) {
          const frames = endpoint.stream.replay(raw, call, meta).join("");
          return { kind: "stream", stream: textStream(frames), contentType: endpoint.stream.contentType, meta };
        }
        return { kind: "json", body: endpoint.decorate ? endpoint.decorate(raw, call, meta) : raw, raw, meta, usage };
      }
    }
    // a miss reports how close the nearest cached question was (0 when nothing was compared)
    const meta: CacheMeta = x.skipCache ? BYPASS : { status: "MISS", similarity: lookup && !lookup.hit ? (lookup.nearestSimilarity ?? 0) : 0, lookupMs: lookup?.lookupMs ?? 0 };
    const store = lookup ? { input, lookup } : undefined;
    const ticket = await this.admit(x);
    if (call.stream) return this.stream(x, store, meta, ticket);

    const fetchAndStore = async (): Promise<FlightResult> => {
      let r;
      try {
        // a cacheable call completes for the cache even if its client leaves; a client gone while queued leaves the queue
        r = await this.d.upstream.text(this.upstreamReq(x), store ? undefined : x.signal, x.signal);
      } catch (e) {
        if (e instanceof ProviderReply) return { ok: false, reply: e };
        throw e;
      }
      const body = parseUpstreamJson(r.text, endpoint);
      const usage = endpoint.usageOf!(body);
      if (store) await this.store(store.input, body, usage, store.lookup);
      return { ok: true, body, usage };
    };
    let res: FlightResult;
    try {
      res = store ? await this.d.cache.singleFlight(input, fetchAndStore, lookup) : await fetchAndStore();
    } catch (e) {
      ticket.settle(0);
      throw e;
    }
    if (!res.ok) {
      ticket.settle(0);
      throw res.reply!;
    }
    ticket.settle(this.record(x, meta, res.usage!, false));
    return { kind: "json", body: endpoint.decorate ? endpoint.decorate(res.body, call, meta) : res.body, raw: res.body, meta, usage: res.usage! };
  }

  /** Never-cached operations (models, embeddings, countTokens, ...): forwarded, normalised where the style says. */
  private async forward(x: ExecInput): Promise<ExecResult> {
    const { endpoint, call } = x;
    const ticket = await this.admit(x);
    if (call.stream) return this.stream(x, undefined, BYPASS, ticket);
    let r;
    try {
      r = await this.d.upstream.text(this.upstreamReq(x), x.signal);
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
    ticket.settle(this.record(x, BYPASS, endpoint.usageOf && parsed !== undefined ? endpoint.usageOf(parsed) : NO_USAGE, false));
    if (endpoint.reshape) return { kind: "forward", status: r.status, text: JSON.stringify(endpoint.reshape(parsed, call)), contentType: "application/json", meta: BYPASS };
    return { kind: "forward", status: r.status, text: r.text, contentType: r.contentType, meta: BYPASS };
  }

  private async stream(x: ExecInput, store: { input: CacheKeyInput; lookup: LookupResult } | undefined, meta: CacheMeta, ticket: SpendTicket): Promise<ExecResult> {
    let up;
    try {
      up = await this.d.upstream.open({ ...this.upstreamReq(x), stream: true }, x.signal);
    } catch (e) {
      ticket.settle(0);
      throw e;
    }
    const contentType = x.endpoint.stream?.contentType ?? up.response.headers.get("content-type") ?? "text/event-stream";
    const stream = liveStream(up, x.endpoint, x.call, meta, this.d.upstream, this.d.providers[x.endpoint.provider as keyof ProvidersConfig].timeout_ms, {
      completed: async (body, usage) => {
        if (store) await this.store(store.input, body, usage, store.lookup);
        ticket.settle(this.record(x, meta, usage, true));
      },
      // a cut or failed stream: its cost is unknown (no usage arrived); nothing is charged
      incomplete: () => {
        ticket.settle(0);
        this.d.incompleteStream(x.endpoint.provider);
      },
    });
    return { kind: "stream", stream, contentType, meta };
  }

  /** A failed write is logged, never the client's problem: the answer is already theirs. */
  private async store(input: CacheKeyInput, body: unknown, usage: Usage, lookup: LookupResult) {
    try {
      await this.d.cache.store(input, { body, usage }, lookup);
    } catch (e) {
      this.d.log.error("cache store failed", { error: String(e) });
    }
  }

  private upstreamReq(x: ExecInput) {
    return {
      provider: x.endpoint.provider as keyof ProvidersConfig,
      wire: x.wire,
      method: x.call.upstream.method,
      path: x.call.upstream.path,
      body: x.call.upstream.body,
      key: x.providerKey,
      clientHeaders: x.clientHeaders,
    };
  }

  /** Admission by the spend guard (team budgets) before a request goes upstream. */
  private admit(x: ExecInput): SpendTicket | Promise<SpendTicket> {
    return this.d.guard.admit({ tenantId: x.tenantId, sub: x.sub ?? x.tenantId, keyId: x.keyId }, x.call.model);
  }

  /** Usage record and token charge; returns the list-price cost of what went upstream (0 on a hit). */
  private record(x: ExecInput, meta: CacheMeta, usage: Usage, streamed: boolean): number {
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
    });
    return meta.status === "HIT" ? 0 : costOf(x.call.model, usage.inputTokens, usage.outputTokens);
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
