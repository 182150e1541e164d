/**
 * Server health (doc2 §2, §3, §4.1): a real protocol round trip (server/discover on the
 * 2026-07-28 era, ping on the legacy era, the handshake itself when no session is open), latency
 * p50/p99 over the last 50 successful round trips, `lastError`, and the status moves:
 *
 *   PENDING  --success-->  HEALTHY (or DEGRADED when slow)     PENDING --failure--> PENDING
 *   any      --success-->  HEALTHY; DEGRADED when latency > degraded_latency_ms or error_rate >= 0.25
 *   HEALTHY/DEGRADED --failure--> DEGRADED; DOWN after down_after_failures consecutive failures
 *   DISABLED: set and cleared only by an admin (never checked, never called)
 *
 * `error_rate` and `avg_latency_ms` are exponential moving averages (alpha 0.2) over health
 * checks and upstream tool calls (transport/protocol failures only — a tool's `isError` result is
 * an answer, not a failure). Results are cached for 30 s (GET …/health); the background checker
 * (`checkAll`, on the domain's timer) checks every enabled server of every tenant.
 */
import type { AsyncStorage } from "../../storage/async";
import type { ForTenant } from "../../storage/scoped";
import type { Logger } from "../../core/log";
import type { McpConfig } from "../config";
import type { EventHub } from "../events";
import type { WallClock } from "../ports";
import type { RegistryStore, HealthState } from "../registry/store";
import type { UpstreamPool } from "../upstream/pool";
import { errorText } from "../upstream/pool";
import { iso, type ServerRecord, type ServerStatus } from "../types";

export const HEALTH_CACHE_MS = 30_000;
export const SAMPLE_WINDOW = 50;
export const EMA_ALPHA = 0.2;
export const DEGRADED_ERROR_RATE = 0.25;

export interface HealthResult {
  serverId: string;
  status: ServerStatus;
  latencyP50Ms: number | null;
  latencyP99Ms: number | null;
  error: string | null;
  checkedAt: string | null;
  /** total cache hits of the server's tools */
  access_count: number;
  /** exponential moving averages over checks and upstream calls */
  avg_latency_ms: number | null;
  error_rate: number;
  /** answered from the 30-second cache */
  cached: boolean;
}

/** Nearest-rank percentile of a sample (null when empty). */
export function percentile(samples: number[], p: number): number | null {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!);
}

/** The status after one check (see the table above). */
export function nextStatus(current: ServerStatus, ok: boolean, latencyMs: number, state: HealthState, cfg: Pick<McpConfig, "degraded_latency_ms" | "down_after_failures">): ServerStatus {
  if (current === "DISABLED") return "DISABLED";
  if (ok) return latencyMs > cfg.degraded_latency_ms || state.errorRate >= DEGRADED_ERROR_RATE ? "DEGRADED" : "HEALTHY";
  if (current === "PENDING") return "PENDING";
  return state.consecutiveFailures >= cfg.down_after_failures ? "DOWN" : "DEGRADED";
}

export interface HealthDeps {
  storage: AsyncStorage;
  registry: ForTenant<RegistryStore>;
  pool: UpstreamPool;
  config: McpConfig;
  clock: WallClock;
  events: EventHub;
  log: Logger;
  /** total cache hits of a server's tools (access_count) */
  hitsOfServer(tenantId: string, serverId: string): Promise<number>;
}

export class HealthService {
  private readonly inFlight = new Map<string, Promise<HealthResult>>();

  constructor(private readonly d: HealthDeps) {}

  private async resultOf(tenantId: string, s: ServerRecord, state: HealthState, cached: boolean): Promise<HealthResult> {
    return {
      serverId: s.id,
      status: s.status,
      latencyP50Ms: s.healthLatencyP50Ms,
      latencyP99Ms: s.healthLatencyP99Ms,
      error: s.lastError,
      checkedAt: s.lastHealthCheck,
      access_count: await this.d.hitsOfServer(tenantId, s.id),
      avg_latency_ms: state.avgLatencyMs === null ? null : Math.round(state.avgLatencyMs * 100) / 100,
      error_rate: Math.round(state.errorRate * 10_000) / 10_000,
      cached,
    };
  }

  /** GET …/health: the last result when younger than 30 s, else a new check. Throws nothing for a failing server. */
  async get(tenantId: string, server: ServerRecord): Promise<HealthResult> {
    const store = this.d.registry(tenantId);
    const state = (await store.healthState(server.id))!;
    if (server.status === "DISABLED" || (state.lastHealthCheckMs !== null && this.d.clock.now() - state.lastHealthCheckMs < HEALTH_CACHE_MS))
      return this.resultOf(tenantId, server, state, true);
    return this.check(tenantId, server);
  }

  /** One check now (concurrent checks of the same server share one round trip). */
  check(tenantId: string, server: ServerRecord): Promise<HealthResult> {
    const key = `${tenantId}\u0000${server.id}`;
    let p = this.inFlight.get(key);
    if (!p) {
      p = this.runCheck(tenantId, server).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, p);
    }
    return p;
  }

  private async runCheck(tenantId: string, server: ServerRecord): Promise<HealthResult> {
    const started = performance.now();
    let error: string | null = null;
    try {
      await this.d.pool.roundTrip(server);
    } catch (e) {
      error = errorText(e);
      this.d.pool.drop(server.id);
    }
    return this.record(tenantId, server.id, error === null, performance.now() - started, error);
  }

  /**
   * Fold one protocol round trip (a check, or a discovery) into the server's health: samples,
   * EMAs, failures, status; emits `health_check`. Returns the new result.
   */
  async record(tenantId: string, serverId: string, ok: boolean, latencyMs: number, error: string | null): Promise<HealthResult> {
    const store = this.d.registry(tenantId);
    const nowMs = this.d.clock.now();
    const updated = await store.db.tx(async () => {
      const s = await store.getServer(serverId);
      const prev = s && (await store.healthState(serverId));
      if (!s || !prev) return undefined;
      const samples = ok ? [...prev.samples, Math.round(latencyMs * 100) / 100].slice(-SAMPLE_WINDOW) : prev.samples;
      const state: HealthState = {
        samples,
        consecutiveFailures: ok ? 0 : prev.consecutiveFailures + 1,
        avgLatencyMs: ok ? (prev.avgLatencyMs === null ? latencyMs : prev.avgLatencyMs + EMA_ALPHA * (latencyMs - prev.avgLatencyMs)) : prev.avgLatencyMs,
        errorRate: prev.errorRate + EMA_ALPHA * ((ok ? 0 : 1) - prev.errorRate),
        lastHealthCheckMs: nowMs,
      };
      const status = nextStatus(s.status, ok, latencyMs, state, this.d.config);
      const p50 = percentile(samples, 50);
      const p99 = percentile(samples, 99);
      await store.recordHealth(serverId, { status, p50, p99, lastError: ok ? null : error, checkedAt: iso(nowMs), checkedAtMs: nowMs, state });
      return { before: s.status, server: (await store.getServer(serverId))!, state };
    });
    store.changed();
    if (!updated) throw new Error("server vanished during its health check");
    const { server, state, before } = updated;
    this.d.events.activity(tenantId, "health_check", {
      serverId,
      serverName: server.name,
      status: server.status,
      previousStatus: before,
      ok,
      latencyMs: Math.round(latencyMs * 100) / 100,
      latencyP50Ms: server.healthLatencyP50Ms,
      latencyP99Ms: server.healthLatencyP99Ms,
      error: server.lastError,
    });
    return this.resultOf(tenantId, server, state, false);
  }

  /** Background pass: check every enabled server of every tenant (a few at a time). */
  async checkAll(concurrency = 4): Promise<number> {
    const rows = await this.d.storage
      .global("health checker: the background pass checks every tenant's enabled servers")
      .all<{ tenant_id: string; id: string }>("SELECT tenant_id, id FROM mcp_servers WHERE status != 'DISABLED' ORDER BY tenant_id, created_at");
    let next = 0;
    const worker = async () => {
      while (next < rows.length) {
        const r = rows[next++]!;
        const s = await this.d.registry(r.tenant_id).getServer(r.id);
        if (!s || s.status === "DISABLED") continue;
        try {
          await this.check(r.tenant_id, s);
        } catch (e) {
          this.d.log.warn("mcp health check failed to record", { server: r.id, error: errorText(e) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, rows.length) }, worker));
    return rows.length;
  }
}
