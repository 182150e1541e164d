/**
 * GET /api/v1/mcp/analytics (doc2 §4.6), from the recorded calls.
 *
 *  - range: [startDate, endDate); default the 30 days up to now; buckets of `granularity`
 *    labelled `YYYY-MM-DDTHH:00:00Z` (hour), `YYYY-MM-DD` (day; week = its Monday), `YYYY-MM` (month);
 *  - hits are calls answered without an upstream call of their own (cache hits and coalesced);
 *  - estimatedTimeSavedMs = Σ over tools of hits × max(0, the tool's mean upstream latency over
 *    all its upstream calls − its mean hit latency in the range) — what the hits would have cost;
 *  - estimatedCostSaved = hits × SVC_MCP__COST_PER_CALL_USD (an operator's estimate of one
 *    upstream call; tool calls carry no price of their own).
 */
import type { ForTenant } from "../../storage/scoped";
import { ApiError } from "../../core/errors";
import type { WallClock } from "../ports";
import type { RegistryStore } from "../registry/store";
import type { Granularity } from "../types";
import type { Aggregate, AnalyticsFilter, CallStore } from "./store";

const DAY_MS = 86_400_000;

export interface AnalyticsQuery {
  granularity?: Granularity;
  startDate?: string;
  endDate?: string;
  serverId?: string;
  toolName?: string;
}

const r2 = (x: number) => Math.round(x * 100) / 100;
const rate = (hits: number, calls: number) => (calls ? Math.round((hits / calls) * 10_000) / 10_000 : 0);
const avg = (sum: number, n: number) => (n ? r2(sum / n) : 0);

function parseDate(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const ms = Date.parse(v);
  if (!Number.isFinite(ms)) throw new ApiError("validation_error", `query field '${name}': expected an ISO 8601 date-time`);
  return ms;
}

export class Analytics {
  constructor(
    private readonly calls: ForTenant<Promise<CallStore>>,
    private readonly registry: ForTenant<RegistryStore>,
    private readonly clock: WallClock,
    private readonly costPerCallUsd: number,
  ) {}

  async report(tenantId: string, q: AnalyticsQuery) {
    const started = performance.now();
    const toMs = parseDate(q.endDate, "endDate") ?? this.clock.now() + 1;
    const fromMs = parseDate(q.startDate, "startDate") ?? toMs - 30 * DAY_MS;
    if (fromMs > toMs) throw new ApiError("validation_error", "startDate must not be after endDate");
    const f: AnalyticsFilter = { fromMs, toMs, serverId: q.serverId, toolName: q.toolName };
    const store = await this.calls(tenantId);
    const reg = this.registry(tenantId);
    const s = await store.summary(f);
    const tools = await store.byTool(f);
    const means = await store.upstreamMeans();
    const toolsById = new Map((await reg.toolsByIds(tools.map((t) => t.toolId))).map((t) => [t.id, t]));

    let saved = 0;
    for (const t of tools) {
      if (!t.hits) continue;
      const upstream = means.get(t.toolId) ?? (t.calls > t.hits ? t.missLatencySum / (t.calls - t.hits) : 0);
      saved += t.hits * Math.max(0, upstream - t.hitLatencySum / t.hits);
    }
    const misses = s.calls - s.hits;
    const serverCalls = new Map((await store.byServer(f)).map((a) => [a.serverId, a]));
    const toolCounts = await reg.countToolsByServer();
    const servers = (await reg.allServers()).filter((sv) => !q.serverId || sv.id === q.serverId);
    const none: Aggregate = { calls: 0, hits: 0, hitLatencySum: 0, missLatencySum: 0 };

    return {
      summary: {
        totalCalls: s.calls,
        cacheHits: s.hits,
        cacheMisses: misses,
        hitRate: rate(s.hits, s.calls),
        avgLatencyCacheMs: avg(s.hitLatencySum, s.hits),
        avgLatencyMissMs: avg(s.missLatencySum, misses),
        estimatedTimeSavedMs: Math.round(saved),
        estimatedCostSaved: Math.round(s.hits * this.costPerCallUsd * 1e6) / 1e6,
      },
      byServer: servers.map((sv) => {
        const a = serverCalls.get(sv.id) ?? none;
        return { serverId: sv.id, serverName: sv.name, totalCalls: a.calls, cacheHits: a.hits, hitRate: rate(a.hits, a.calls), toolCount: toolCounts.get(sv.id) ?? 0 };
      }),
      byTool: tools.map((t) => ({
        toolId: t.toolId,
        toolName: t.toolName,
        serverId: t.serverId,
        category: toolsById.get(t.toolId)?.category ?? null,
        totalCalls: t.calls,
        cacheHits: t.hits,
        hitRate: rate(t.hits, t.calls),
        avgLatencyMs: avg(t.latencySum, t.calls),
      })),
      trend: (await store.trend(f, q.granularity ?? "day")).map((b) => ({
        period: b.period,
        totalCalls: b.calls,
        cacheHits: b.hits,
        cacheMisses: b.calls - b.hits,
        hitRate: rate(b.hits, b.calls),
      })),
      executionTimeMs: Math.round((performance.now() - started) * 1000) / 1000,
    };
  }
}
