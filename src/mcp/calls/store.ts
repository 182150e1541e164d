/**
 * The record of every tool call that went through svc (analytics, per-key stats, access counts).
 * cache_status: HIT (exact or semantic, `tier`), COALESCED (shared an identical in-flight call),
 * MISS (cacheable, called upstream), BYPASS (not cacheable, called upstream).
 */
import type { TenantDb } from "../../storage/scoped";
import { likePattern } from "../types";
import { whereOf } from "../sql";

export const CACHE_STATUSES = ["HIT", "COALESCED", "MISS", "BYPASS"] as const;
export type CacheStatus = (typeof CACHE_STATUSES)[number];
export type Tier = "exact" | "semantic";

export interface CallRecord {
  atMs: number;
  serverId: string;
  toolId: string;
  toolName: string;
  agentId: string;
  cacheStatus: CacheStatus;
  tier: Tier | null;
  cacheKey: bigint | null;
  latencyMs: number;
  upstreamMs: number | null;
  error: string | null;
}

/** The error text recorded for a result the tool marked `isError` (an answer, not a failure). */
export const TOOL_ERROR = "tool returned isError";

/** Hits are calls answered without an upstream call of their own. */
const HIT = "cache_status IN ('HIT', 'COALESCED')";

export interface AnalyticsFilter {
  fromMs: number;
  toMs: number;
  serverId?: string;
  toolName?: string;
}

export interface Aggregate {
  calls: number;
  hits: number;
  hitLatencySum: number;
  missLatencySum: number;
}

export class CallStore {
  constructor(readonly db: TenantDb) {}

  insert(c: CallRecord) {
    this.db.run(
      `INSERT INTO mcp_calls (tenant_id, at_ms, server_id, tool_id, tool_name, agent_id, cache_status, tier, cache_key, latency_ms, upstream_ms, error)
       VALUES ($tenant, $at_ms, $server_id, $tool_id, $tool_name, $agent_id, $cache_status, $tier, $cache_key, $latency_ms, $upstream_ms, $error)`,
      {
        at_ms: c.atMs,
        server_id: c.serverId,
        tool_id: c.toolId,
        tool_name: c.toolName,
        agent_id: c.agentId,
        cache_status: c.cacheStatus,
        tier: c.tier,
        cache_key: c.cacheKey,
        latency_ms: c.latencyMs,
        upstream_ms: c.upstreamMs,
        error: c.error,
      },
    );
  }

  keyStats(key: bigint) {
    const r = this.db.get<{ calls: number; hits: number; hit_lat: number | null; miss_lat: number | null; tool_id: string | null }>(
      `SELECT COUNT(*) AS calls, COALESCE(SUM(${HIT}), 0) AS hits,
              AVG(CASE WHEN ${HIT} THEN latency_ms END) AS hit_lat, AVG(CASE WHEN NOT ${HIT} THEN latency_ms END) AS miss_lat, MAX(tool_id) AS tool_id
       FROM mcp_calls WHERE tenant_id = $tenant AND cache_key = $key`,
      { key },
    )!;
    const r2 = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);
    return { calls: r.calls, hits: r.hits, misses: r.calls - r.hits, avgHitLatencyMs: r2(r.hit_lat), avgMissLatencyMs: r2(r.miss_lat), toolId: r.tool_id };
  }

  /** Hits and misses of cacheable calls (BYPASS calls are not cache lookups). */
  cacheTotals(): { hits: number; misses: number } {
    return this.db.get<{ hits: number; misses: number }>(
      `SELECT COALESCE(SUM(${HIT}), 0) AS hits, COALESCE(SUM(cache_status = 'MISS'), 0) AS misses FROM mcp_calls WHERE tenant_id = $tenant`,
    )!;
  }

  hitsOfServer(serverId: string): number {
    return this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM mcp_calls WHERE tenant_id = $tenant AND server_id = $server_id AND ${HIT}`, { server_id: serverId })!.n;
  }

  /** Calls of a server: all, failed upstream (unreachable, timeout, protocol error), answered with isError. */
  serverCallErrors(serverId: string): { totalCalls: number; failedCalls: number; toolErrors: number } {
    return this.db.get<{ totalCalls: number; failedCalls: number; toolErrors: number }>(
      `SELECT COUNT(*) AS totalCalls, COALESCE(SUM(error IS NOT NULL AND error <> $tool_error), 0) AS failedCalls, COALESCE(SUM(error = $tool_error), 0) AS toolErrors
       FROM mcp_calls WHERE tenant_id = $tenant AND server_id = $server_id`,
      { server_id: serverId, tool_error: TOOL_ERROR },
    )!;
  }

  private where(f: AnalyticsFilter) {
    return whereOf([
      ["at_ms >= $from", "from", f.fromMs],
      ["at_ms < $to", "to", f.toMs],
      ["server_id = $server_id", "server_id", f.serverId],
      ["tool_name LIKE $tool_name ESCAPE '\\'", "tool_name", f.toolName && likePattern(f.toolName)],
    ]);
  }

  private static readonly AGG = `COUNT(*) AS calls, COALESCE(SUM(${HIT}), 0) AS hits,
    COALESCE(SUM(CASE WHEN ${HIT} THEN latency_ms END), 0) AS hitLatencySum,
    COALESCE(SUM(CASE WHEN NOT ${HIT} THEN latency_ms END), 0) AS missLatencySum`;

  summary(f: AnalyticsFilter): Aggregate {
    const { w, params } = this.where(f);
    return this.db.get<Aggregate>(`SELECT ${CallStore.AGG} FROM mcp_calls WHERE ${w}`, params)!;
  }

  byServer(f: AnalyticsFilter): Array<Aggregate & { serverId: string }> {
    const { w, params } = this.where(f);
    return this.db.all(`SELECT server_id AS serverId, ${CallStore.AGG} FROM mcp_calls WHERE ${w} GROUP BY server_id`, params);
  }

  byTool(f: AnalyticsFilter): Array<Aggregate & { toolId: string; toolName: string; serverId: string; latencySum: number }> {
    const { w, params } = this.where(f);
    return this.db.all(
      `SELECT tool_id AS toolId, MAX(tool_name) AS toolName, MAX(server_id) AS serverId, ${CallStore.AGG}, SUM(latency_ms) AS latencySum
       FROM mcp_calls WHERE ${w} GROUP BY tool_id ORDER BY calls DESC, toolName`,
      params,
    );
  }

  /** Buckets by `period`, an SQL expression over the ISO time of at_ms. */
  trend(f: AnalyticsFilter, period: string): Array<Aggregate & { period: string }> {
    const { w, params } = this.where(f);
    return this.db.all(
      `SELECT ${period} AS period, ${CallStore.AGG} FROM (SELECT *, strftime('%Y-%m-%dT%H:%M:%fZ', at_ms / 1000.0, 'unixepoch') AS at FROM mcp_calls WHERE ${w})
       GROUP BY period ORDER BY period`,
      params,
    );
  }

  /** Mean upstream latency of a tool's calls that went upstream (over all time): what a hit of it saves. */
  upstreamMeans(): Map<string, number> {
    const rows = this.db.all<{ tool_id: string; m: number }>(
      "SELECT tool_id, AVG(upstream_ms) AS m FROM mcp_calls WHERE tenant_id = $tenant AND upstream_ms IS NOT NULL GROUP BY tool_id",
    );
    return new Map(rows.map((r) => [r.tool_id, r.m]));
  }
}
