/**
 * The record of every tool call that went through svc (analytics, per-key stats, access counts).
 * cache_status: HIT (exact or semantic, `tier`), COALESCED (shared an identical in-flight call),
 * MISS (cacheable, called upstream), BYPASS (not cacheable, called upstream).
 */
import type { AsyncTenantDb } from "../../storage/async";
import type { Dialect } from "../../storage/dialect";
import type { Granularity } from "../types";
import { asInt, containsFilter, whereOf } from "../sql";

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
const HITS = `COALESCE(SUM(${asInt(HIT)}), 0)`;

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

/**
 * The trend's bucket of `at` (the ISO time of at_ms) per granularity: labelled `YYYY-MM-DDTHH:00:00Z`
 * (hour), `YYYY-MM-DD` (day; week = its Monday), `YYYY-MM` (month). The one place the dialects differ
 * beyond dialect.ts: the Monday of a week.
 */
function periodSql(d: Dialect, g: Granularity): string {
  if (g === "week") return d.name === "postgres" ? `to_char(date_trunc('week', (at)::timestamptz AT TIME ZONE 'UTC'), 'YYYY-MM-DD')` : "date(at, 'weekday 0', '-6 days')";
  return d.isoBucket("at", g);
}

export class CallStore {
  constructor(
    readonly db: AsyncTenantDb,
    private readonly d: Dialect,
  ) {}

  static readonly INSERT = `INSERT INTO mcp_calls (tenant_id, at_ms, server_id, tool_id, tool_name, agent_id, cache_status, tier, cache_key, latency_ms, upstream_ms, error)
       VALUES ($tenant, $at_ms, $server_id, $tool_id, $tool_name, $agent_id, $cache_status, $tier, $cache_key, $latency_ms, $upstream_ms, $error)`;

  static params(c: CallRecord) {
    return {
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
    };
  }

  async insert(c: CallRecord) {
    await this.db.run(CallStore.INSERT, CallStore.params(c));
  }

  async keyStats(key: bigint) {
    const r = (await this.db.get<{ calls: number; hits: number; hit_lat: number | null; miss_lat: number | null; tool_id: string | null }>(
      `SELECT COUNT(*) AS calls, ${HITS} AS hits,
              AVG(CASE WHEN ${HIT} THEN latency_ms END) AS hit_lat, AVG(CASE WHEN NOT ${HIT} THEN latency_ms END) AS miss_lat, MAX(tool_id) AS tool_id
       FROM mcp_calls WHERE tenant_id = $tenant AND cache_key = $key`,
      { key },
    ))!;
    const r2 = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);
    return { calls: r.calls, hits: r.hits, misses: r.calls - r.hits, avgHitLatencyMs: r2(r.hit_lat), avgMissLatencyMs: r2(r.miss_lat), toolId: r.tool_id };
  }

  /** Hits and misses of cacheable calls (BYPASS calls are not cache lookups). */
  async cacheTotals(): Promise<{ hits: number; misses: number }> {
    return (await this.db.get<{ hits: number; misses: number }>(
      `SELECT ${HITS} AS hits, COALESCE(SUM(${asInt("cache_status = 'MISS'")}), 0) AS misses FROM mcp_calls WHERE tenant_id = $tenant`,
    ))!;
  }

  async hitsOfServer(serverId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM mcp_calls WHERE tenant_id = $tenant AND server_id = $server_id AND ${HIT}`, { server_id: serverId }))!.n;
  }

  /** Calls of a server: all, failed upstream (unreachable, timeout, protocol error), answered with isError. */
  async serverCallErrors(serverId: string): Promise<{ totalCalls: number; failedCalls: number; toolErrors: number }> {
    return (await this.db.get<{ totalCalls: number; failedCalls: number; toolErrors: number }>(
      `SELECT COUNT(*) AS "totalCalls", COALESCE(SUM(${asInt("error IS NOT NULL AND error <> $tool_error")}), 0) AS "failedCalls",
              COALESCE(SUM(${asInt("error = $tool_error")}), 0) AS "toolErrors"
       FROM mcp_calls WHERE tenant_id = $tenant AND server_id = $server_id`,
      { server_id: serverId, tool_error: TOOL_ERROR },
    ))!;
  }

  private where(f: AnalyticsFilter) {
    return whereOf([
      ["at_ms >= $from", "from", f.fromMs],
      ["at_ms < $to", "to", f.toMs],
      ["server_id = $server_id", "server_id", f.serverId],
      containsFilter(this.d, "tool_name", "tool_name", f.toolName),
    ]);
  }

  private static readonly AGG = `COUNT(*) AS calls, ${HITS} AS hits,
    COALESCE(SUM(CASE WHEN ${HIT} THEN latency_ms END), 0) AS "hitLatencySum",
    COALESCE(SUM(CASE WHEN NOT ${HIT} THEN latency_ms END), 0) AS "missLatencySum"`;

  async summary(f: AnalyticsFilter): Promise<Aggregate> {
    const { w, params } = this.where(f);
    return (await this.db.get<Aggregate>(`SELECT ${CallStore.AGG} FROM mcp_calls WHERE ${w}`, params))!;
  }

  byServer(f: AnalyticsFilter): Promise<Array<Aggregate & { serverId: string }>> {
    const { w, params } = this.where(f);
    return this.db.all(`SELECT server_id AS "serverId", ${CallStore.AGG} FROM mcp_calls WHERE ${w} GROUP BY server_id`, params);
  }

  byTool(f: AnalyticsFilter): Promise<Array<Aggregate & { toolId: string; toolName: string; serverId: string; latencySum: number }>> {
    const { w, params } = this.where(f);
    return this.db.all(
      `SELECT tool_id AS "toolId", MAX(tool_name) AS "toolName", MAX(server_id) AS "serverId", ${CallStore.AGG}, SUM(latency_ms) AS "latencySum"
       FROM mcp_calls WHERE ${w} GROUP BY tool_id ORDER BY calls DESC, "toolName"`,
      params,
    );
  }

  /** Buckets of `granularity` over the range, oldest first. */
  trend(f: AnalyticsFilter, granularity: Granularity): Promise<Array<Aggregate & { period: string }>> {
    const { w, params } = this.where(f);
    return this.db.all(
      `SELECT ${periodSql(this.d, granularity)} AS period, ${CallStore.AGG}
       FROM (SELECT mcp_calls.*, ${this.d.msToIso("at_ms")} AS at FROM mcp_calls WHERE ${w}) AS c
       GROUP BY period ORDER BY period`,
      params,
    );
  }

  /** Mean upstream latency of a tool's calls that went upstream (over all time): what a hit of it saves. */
  async upstreamMeans(): Promise<Map<string, number>> {
    const rows = await this.db.all<{ tool_id: string; m: number }>(
      "SELECT tool_id, AVG(upstream_ms) AS m FROM mcp_calls WHERE tenant_id = $tenant AND upstream_ms IS NOT NULL GROUP BY tool_id",
    );
    return new Map(rows.map((r) => [r.tool_id, r.m]));
  }
}
