/**
 * Tool calls through svc (REST and the MCP endpoint share this path):
 *
 *   READ/IDEMPOTENT tool with its cache on:
 *     exact lookup (key = tenant, server, tool, agent unless crossAgent, canonical arguments)
 *     -> semantic lookup (semanticThreshold < 1: same tool, agent scope and argument structure,
 *        cosine of the arguments' text >= threshold)
 *   -> an identical call already in flight for at most coalescingWindowMs: share its answer
 *   -> upstream call; a result that is not `isError` is stored for ttlSecs (unless an
 *      invalidation happened meanwhile)
 *   -> after any upstream execution: the tool's enabled rules and WRITE mappings invalidate
 *      (rules, entity instance, child entities); a WRITE/UNKNOWN/IDEMPOTENT tool with neither
 *      rules nor WRITE mappings drops its server's cached results (the safe default, toolcache)
 *
 * Every call is recorded (analytics; queued by the call log and written just after the answer,
 * log.ts) and emitted on the activity stream (tool_call, and cache_hit / cache_miss for cacheable
 * tools).
 */
import type { ForTenant } from "../../storage/scoped";
import { ApiError, conflict, notFound } from "../../core/errors";
import type { Logger } from "../../core/log";
import type { WallClock } from "../ports";
import type { EventHub } from "../events";
import type { RegistryStore, ToolRecord } from "../registry/store";
import type { EntityStore } from "../entities/store";
import { CACHEABLE } from "../registry/classify";
import type { ToolCache } from "../toolcache/service";
import { cacheKeyOf, canonical, structKeyOf } from "../toolcache/key";
import { errorText, type UpstreamCallResult, type UpstreamPool } from "../upstream/pool";
import { UpstreamError } from "../upstream/auth";
import { EMA_ALPHA } from "../health/service";
import type { ServerRecord } from "../types";
import type { CacheEntry } from "../toolcache/store";
import { TOOL_ERROR, type CacheStatus, type Tier } from "./store";
import type { CallLog } from "./log";

export interface CallInput {
  arguments: Record<string, unknown>;
  /** who calls (default: the token's subject); part of the cache key unless the tool is crossAgent */
  agentId: string;
}

export interface CallOutcome {
  toolId: string;
  toolName: string;
  serverId: string;
  result: UpstreamCallResult;
  cache: {
    status: CacheStatus;
    tier: Tier | null;
    similarity: number | null;
    cacheKey: bigint | null;
    /** the result was stored by this call */
    stored: boolean;
  };
  latencyMs: number;
  upstreamLatencyMs: number | null;
}

interface Flight {
  startedAtMs: number;
  promise: Promise<{ result: UpstreamCallResult; upstreamMs: number }>;
}

export interface CallDeps {
  registry: ForTenant<RegistryStore>;
  entities: ForTenant<EntityStore>;
  callLog: CallLog;
  cache: ToolCache;
  pool: UpstreamPool;
  events: EventHub;
  clock: WallClock;
  log: Logger;
}

export class CallService {
  private readonly flights = new Map<string, Flight>();

  constructor(private readonly d: CallDeps) {}

  /** The tool and its server, ready to be called (404 unknown; 409 unavailable or DISABLED). */
  async target(tenantId: string, toolId: string): Promise<{ tool: ToolRecord; server: ServerRecord }> {
    const store = this.d.registry(tenantId);
    const tool = await store.getTool(toolId);
    if (!tool) throw notFound("tool");
    const server = await store.getServer(tool.serverId);
    if (!server) throw notFound("server");
    if (server.status === "DISABLED") throw conflict(`server ${server.name} is DISABLED`);
    if (!tool.available) throw conflict(`tool ${tool.name} is not offered by ${server.name} (run discovery)`);
    return { tool, server };
  }

  async call(tenantId: string, toolId: string, input: CallInput): Promise<CallOutcome> {
    const { tool, server } = await this.target(tenantId, toolId);
    return this.callResolved(tenantId, tool, server, input);
  }

  /** What the cache lookups of a call are keyed on. */
  private keyed(tenantId: string, tool: ToolRecord, server: ServerRecord, input: CallInput) {
    const cfg = tool.cacheConfig;
    const agentScope = cfg.crossAgent ? "" : input.agentId;
    const canonicalArgs = canonical(input.arguments);
    return {
      cfg,
      cacheable: cfg.enabled && CACHEABLE.includes(tool.category),
      agentScope,
      canonicalArgs,
      key: cacheKeyOf(tenantId, server.id, tool.name, agentScope, canonicalArgs),
      base: { toolId: tool.id, toolName: tool.name, serverId: server.id },
    };
  }

  /**
   * callResolved's exact tier alone, for a caller that holds answers for some stored results:
   * when `answerable(key)` names the stored JSON it can answer for and the call's key has a live
   * entry holding exactly that JSON, the HIT callResolved would answer (recorded and emitted
   * alike); otherwise undefined, and nothing recorded.
   */
  async exactHit(tenantId: string, tool: ToolRecord, server: ServerRecord, input: CallInput, answerable: (key: bigint) => string | undefined): Promise<CallOutcome | undefined> {
    const t0 = performance.now();
    const { cacheable, key, base } = this.keyed(tenantId, tool, server, input);
    const wanted = cacheable ? answerable(key) : undefined;
    const hit = wanted === undefined ? undefined : await this.d.cache.exact(tenantId, key);
    if (!hit || hit.resultJson !== wanted) return undefined;
    return this.answered(tenantId, tool, input, base, t0, JSON.parse(hit.resultJson), { status: "HIT", tier: "exact", similarity: 1, key: hit.cacheKey, entry: hit });
  }

  /** `onExactHit` learns the key and stored JSON of an exact-tier hit (the /mcp endpoint keeps its encoded answer). */
  async callResolved(tenantId: string, tool: ToolRecord, server: ServerRecord, input: CallInput, onExactHit?: (key: bigint, resultJson: string) => void): Promise<CallOutcome> {
    const t0 = performance.now();
    const args = input.arguments;
    const { cfg, cacheable, agentScope, canonicalArgs, key, base } = this.keyed(tenantId, tool, server, input);

    let vector: Float32Array | undefined;
    let structKey = "";
    if (cacheable) {
      const hit = await this.d.cache.exact(tenantId, key);
      if (hit) {
        onExactHit?.(hit.cacheKey, hit.resultJson);
        return this.answered(tenantId, tool, input, base, t0, JSON.parse(hit.resultJson), { status: "HIT", tier: "exact", similarity: 1, key: hit.cacheKey, entry: hit });
      }
      if (cfg.semanticThreshold < 1) {
        structKey = structKeyOf(args, await this.entityParams(tenantId, tool.id));
        vector = await this.d.cache.embedArgs(tool.name, args);
        const sem = vector && (await this.d.cache.semantic(tenantId, tool, agentScope, structKey, vector, cfg.semanticThreshold));
        if (sem) return this.answered(tenantId, tool, input, base, t0, JSON.parse(sem.entry.resultJson), { status: "HIT", tier: "semantic", similarity: sem.similarity, key: sem.entry.cacheKey, entry: sem.entry });
      } else structKey = structKeyOf(args, await this.entityParams(tenantId, tool.id));
    }

    const flightKey = `${tenantId}\u0000${key}`;
    const now = this.d.clock.now();
    const flight = cfg.coalescingWindowMs > 0 ? this.flights.get(flightKey) : undefined;
    if (flight && now - flight.startedAtMs <= cfg.coalescingWindowMs) {
      const shared = await flight.promise.catch((e) => this.failed(tenantId, tool, input, base, t0, e, null, "COALESCED"));
      return this.answered(tenantId, tool, input, base, t0, shared.result, { status: "COALESCED", key: cacheable ? key : null });
    }

    const epoch = this.d.cache.epoch(tenantId);
    const upstream = this.upstream(tenantId, tool, server, args);
    if (cfg.coalescingWindowMs > 0) {
      const mine: Flight = { startedAtMs: now, promise: upstream };
      this.flights.set(flightKey, mine);
      void upstream.catch(() => {}).finally(() => this.flights.get(flightKey) === mine && this.flights.delete(flightKey));
    }
    let answer: { result: UpstreamCallResult; upstreamMs: number };
    try {
      answer = await upstream;
    } catch (e) {
      await this.d.cache.afterExecution(tenantId, tool, args); // the write may have happened before the failure
      return this.failed(tenantId, tool, input, base, t0, e, cacheable ? key : null, cacheable ? "MISS" : "BYPASS");
    }
    const stored =
      cacheable && answer.result.isError !== true
        ? await this.d.cache.store(tenantId, tool, { key, args, canonicalArgs, agentScope, structKey, result: answer.result, upstreamMs: answer.upstreamMs, epoch, vector })
        : false;
    await this.d.cache.afterExecution(tenantId, tool, args);
    return this.answered(tenantId, tool, input, base, t0, answer.result, { status: cacheable ? "MISS" : "BYPASS", key: cacheable ? key : null, upstreamMs: answer.upstreamMs, stored });
  }

  /** Parameter paths the tool's entity mappings name (kept exact in semantic matching). */
  private async entityParams(tenantId: string, toolId: string): Promise<Set<string>> {
    return new Set((await this.d.entities(tenantId).mappingsOfTool(toolId)).map((m) => m.paramName));
  }

  private async upstream(tenantId: string, tool: ToolRecord, server: ServerRecord, args: Record<string, unknown>) {
    const started = performance.now();
    try {
      const result = await this.d.pool.callTool(server, tool.name, args);
      const upstreamMs = performance.now() - started;
      await this.d.registry(tenantId).recordCallOutcome(server.id, upstreamMs, false, EMA_ALPHA);
      return { result, upstreamMs };
    } catch (e) {
      const answered = isJsonRpcError(e);
      if (!answered) await this.d.registry(tenantId).recordCallOutcome(server.id, performance.now() - started, true, EMA_ALPHA);
      throw e;
    }
  }

  /** Queue the call's record (and a hit's count on its entry): written just after the answer (log.ts). */
  private record(
    tenantId: string,
    tool: ToolRecord,
    input: CallInput,
    base: { serverId: string },
    r: { status: CacheStatus; tier: Tier | null; key: bigint | null; latencyMs: number; upstreamMs: number | null; error: string | null },
    entry?: CacheEntry,
  ) {
    const call = {
      atMs: this.d.clock.now(),
      serverId: base.serverId,
      toolId: tool.id,
      toolName: tool.name,
      agentId: input.agentId,
      cacheStatus: r.status,
      tier: r.tier,
      cacheKey: r.key,
      latencyMs: r.latencyMs,
      upstreamMs: r.upstreamMs,
      error: r.error,
    };
    this.d.callLog.record(tenantId, call, entry ? entry.vecKey : null);
  }

  private emit(tenantId: string, tool: ToolRecord, input: CallInput, out: Omit<CallOutcome, "result">, error: string | null) {
    const ev = this.d.events;
    if (!ev.listening("activity", tenantId)) return;
    const common = { toolId: out.toolId, toolName: out.toolName, serverId: out.serverId, agentId: input.agentId, cacheKey: out.cache.cacheKey };
    if (out.cache.status === "HIT") ev.activity(tenantId, "cache_hit", { ...common, tier: out.cache.tier, similarity: out.cache.similarity });
    else if (out.cache.status === "MISS") ev.activity(tenantId, "cache_miss", { ...common, stored: out.cache.stored });
    ev.activity(tenantId, "tool_call", {
      ...common,
      category: tool.category,
      cacheStatus: out.cache.status,
      tier: out.cache.tier,
      latencyMs: out.latencyMs,
      upstreamLatencyMs: out.upstreamLatencyMs,
      error,
    });
  }

  private answered(
    tenantId: string,
    tool: ToolRecord,
    input: CallInput,
    base: { toolId: string; toolName: string; serverId: string },
    t0: number,
    result: UpstreamCallResult,
    how: Answer,
  ): CallOutcome {
    const { status, key, tier = null, similarity = null, upstreamMs = null, stored = false } = how;
    const latencyMs = round3(performance.now() - t0);
    const error = result.isError === true ? TOOL_ERROR : null;
    this.record(tenantId, tool, input, base, { status, tier, key, latencyMs, upstreamMs: upstreamMs === null ? null : round3(upstreamMs), error }, how.entry);
    const out: CallOutcome = {
      ...base,
      result,
      cache: { status, tier, similarity: similarity === null ? null : Math.round(similarity * 1e6) / 1e6, cacheKey: key, stored },
      latencyMs,
      upstreamLatencyMs: upstreamMs === null ? null : round3(upstreamMs),
    };
    this.emit(tenantId, tool, input, out, error);
    return out;
  }

  /** Record and emit a failed call, then throw its API error (502 proxy_error, 504 timeout_error, 400 for arguments the server refused). */
  private failed(tenantId: string, tool: ToolRecord, input: CallInput, base: { toolId: string; toolName: string; serverId: string }, t0: number, e: unknown, key: bigint | null, status: CacheStatus): never {
    const latencyMs = round3(performance.now() - t0);
    const api = upstreamApiError(tool.name, e);
    this.record(tenantId, tool, input, base, { status, tier: null, key, latencyMs, upstreamMs: null, error: api.message });
    this.emit(tenantId, tool, input, { ...base, cache: { status, tier: null, similarity: null, cacheKey: key, stored: false }, latencyMs, upstreamLatencyMs: null }, api.message);
    throw api;
  }
}

/** How a call was answered: a hit names the entry it came from (its hit count). */
interface Answer {
  status: CacheStatus;
  key: bigint | null;
  tier?: Tier;
  similarity?: number;
  entry?: CacheEntry;
  upstreamMs?: number;
  /** the result was stored by this call */
  stored?: boolean;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** A JSON-RPC error answer of a live server (negative integer code), as opposed to a transport failure. */
function isJsonRpcError(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === "number" && code < 0;
}

export function upstreamApiError(toolName: string, e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const msg = errorText(e);
  const code = (e as { code?: unknown })?.code;
  if (code === "REQUEST_TIMEOUT") return new ApiError("timeout_error", `tool ${toolName}: the MCP server did not answer in time`);
  if (code === -32602) return new ApiError("validation_error", `tool ${toolName}: the MCP server refused the arguments: ${msg}`);
  if (isJsonRpcError(e)) return new ApiError("proxy_error", `tool ${toolName}: the MCP server answered with an error: ${msg}`);
  if (e instanceof UpstreamError) return new ApiError("proxy_error", `tool ${toolName}: ${msg}`);
  return new ApiError("proxy_error", `tool ${toolName}: the MCP server could not be reached: ${msg}`);
}
