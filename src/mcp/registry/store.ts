/**
 * Servers and their tools over the tenant-bound handle (every statement scoped to the caller's
 * tenant). Health bookkeeping (rolling latency samples, EMAs, consecutive failures) lives on the
 * server row so it survives restarts.
 */
import type { AsyncTenantDb, Changes, Params } from "../../storage/async";
import { TOPICS, type Bus } from "../../core/hotstate";
import type { Dialect } from "../../storage/dialect";
import type { Page, Listed } from "../../core/pagination";
import { containsFilter, flag, listPage, type Filter } from "../sql";
import { type AuthConfig, type CacheConfig, type Category, type ServerRecord, type ServerStatus, type Tool, type ToolAnnotations, type Transport, type AuthType } from "../types";

interface ServerRow {
  id: string;
  name: string;
  description: string;
  url: string;
  transport: Transport;
  auth_type: AuthType;
  auth_config: string;
  status: ServerStatus;
  health_p50_ms: number | null;
  health_p99_ms: number | null;
  last_health_check: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** Health bookkeeping of a server (not part of the API record). */
export interface HealthState {
  samples: number[];
  consecutiveFailures: number;
  avgLatencyMs: number | null;
  errorRate: number;
  lastHealthCheckMs: number | null;
}

const serverOf = (r: ServerRow): ServerRecord => ({
  id: r.id,
  name: r.name,
  description: r.description,
  url: r.url,
  transport: r.transport,
  authType: r.auth_type,
  status: r.status,
  healthLatencyP50Ms: r.health_p50_ms,
  healthLatencyP99Ms: r.health_p99_ms,
  lastHealthCheck: r.last_health_check,
  lastError: r.last_error,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  authConfig: JSON.parse(r.auth_config) as AuthConfig,
});

interface ToolRow {
  id: string;
  server_id: string;
  name: string;
  description: string;
  input_schema: string;
  annotations: string | null;
  category: Category;
  category_confidence: number;
  category_manual: number;
  cache_enabled: number;
  cache_ttl_secs: number;
  semantic_threshold: number;
  cross_agent: number;
  coalescing_window_ms: number;
  cache_manual: number;
  available: number;
  last_discovered_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A tool with whether its cacheConfig was set by hand (category changes then keep it). */
export interface ToolRecord extends Tool {
  cacheManual: boolean;
}

const toolOf = (r: ToolRow): ToolRecord => ({
  id: r.id,
  serverId: r.server_id,
  name: r.name,
  description: r.description,
  inputSchema: JSON.parse(r.input_schema),
  annotations: r.annotations === null ? null : (JSON.parse(r.annotations) as ToolAnnotations),
  category: r.category,
  categoryConfidence: r.category_confidence,
  categoryManualOverride: r.category_manual === 1,
  cacheConfig: {
    enabled: r.cache_enabled === 1,
    ttlSecs: r.cache_ttl_secs,
    semanticThreshold: r.semantic_threshold,
    crossAgent: r.cross_agent === 1,
    coalescingWindowMs: r.coalescing_window_ms,
  },
  available: r.available === 1,
  lastDiscoveredAt: r.last_discovered_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  cacheManual: r.cache_manual === 1,
});

const toolParams = (t: ToolRecord) => ({
  id: t.id,
  server_id: t.serverId,
  name: t.name,
  description: t.description,
  input_schema: JSON.stringify(t.inputSchema),
  annotations: t.annotations === null ? null : JSON.stringify(t.annotations),
  category: t.category,
  category_confidence: t.categoryConfidence,
  category_manual: t.categoryManualOverride ? 1 : 0,
  cache_enabled: t.cacheConfig.enabled ? 1 : 0,
  cache_ttl_secs: t.cacheConfig.ttlSecs,
  semantic_threshold: t.cacheConfig.semanticThreshold,
  cross_agent: t.cacheConfig.crossAgent ? 1 : 0,
  coalescing_window_ms: t.cacheConfig.coalescingWindowMs,
  cache_manual: t.cacheManual ? 1 : 0,
  available: t.available ? 1 : 0,
  last_discovered_at: t.lastDiscoveredAt,
  created_at: t.createdAt,
  updated_at: t.updatedAt,
});

export interface ServerFilter {
  status?: ServerStatus;
  name?: string;
}

export interface ToolFilter {
  serverId?: string;
  category?: Category;
  cacheEnabled?: boolean;
  name?: string;
}

/**
 * A change counter per tenant of its servers and tools, shared by every RegistryStore of one
 * process: state derived from the registry (the /mcp endpoint's exposed tools) is current with
 * this process's writes while the counter has not moved. With a bus (several replicas) every
 * change moves the counter of every replica; without one, or for a message lost in a bus outage,
 * what derives state from it also rebuilds on a timer (ExposedTools.TTL_MS).
 */
export class RegistryVersions {
  private readonly byTenant = new Map<string, number>();
  /** moved for every tenant at once (a bus reconnect: messages may have been missed) */
  private everyone = 0;
  constructor(private readonly bus?: Bus) {
    bus?.subscribe(TOPICS.mcpRegistry, (p) => {
      if (!p) this.everyone++;
      else this.local((JSON.parse(p) as { t: string }).t);
    });
  }
  of(tenantId: string): number {
    return (this.byTenant.get(tenantId) ?? 0) + this.everyone;
  }
  bump(tenantId: string) {
    // the bus delivers to this replica too, synchronously: one path
    if (this.bus) this.bus.publish(TOPICS.mcpRegistry, JSON.stringify({ t: tenantId }));
    else this.local(tenantId);
  }
  private local(tenantId: string) {
    this.byTenant.set(tenantId, (this.byTenant.get(tenantId) ?? 0) + 1);
  }
}

export class RegistryStore {
  constructor(
    readonly db: AsyncTenantDb,
    private readonly versions: RegistryVersions,
    private readonly d: Dialect,
  ) {}

  get tenantId() {
    return this.db.tenantId;
  }

  /** Moves with every write of this tenant's servers or tools (except call averages, see recordCallOutcome). */
  get version(): number {
    return this.versions.of(this.db.tenantId);
  }

  /**
   * A write of servers or tools: the version moves once the statement has run (a reader that saw
   * the new version reads the new rows; inside a transaction, the service bumps again after it commits).
   */
  private async write(sql: string, params: Params): Promise<Changes> {
    try {
      return await this.db.run(sql, params);
    } finally {
      this.changed();
    }
  }

  /** moves the version (services call it again after a transaction that wrote commits) */
  changed() {
    this.versions.bump(this.db.tenantId);
  }

  // ---- servers ----

  async insertServer(s: ServerRecord) {
    await this.write(
      `INSERT INTO mcp_servers (id, tenant_id, name, description, url, transport, auth_type, auth_config, status, created_at, updated_at)
       VALUES ($id, $tenant, $name, $description, $url, $transport, $auth_type, $auth_config, $status, $created_at, $updated_at)`,
      {
        id: s.id,
        name: s.name,
        description: s.description,
        url: s.url,
        transport: s.transport,
        auth_type: s.authType,
        auth_config: JSON.stringify(s.authConfig),
        status: s.status,
        created_at: s.createdAt,
        updated_at: s.updatedAt,
      },
    );
  }

  /** Replace what a configuration import may change (url, transport, authentication, description). */
  async updateServerDefinition(s: ServerRecord) {
    await this.write(
      `UPDATE mcp_servers SET description = $description, url = $url, transport = $transport, auth_type = $auth_type, auth_config = $auth_config, updated_at = $updated_at
       WHERE tenant_id = $tenant AND id = $id`,
      { id: s.id, description: s.description, url: s.url, transport: s.transport, auth_type: s.authType, auth_config: JSON.stringify(s.authConfig), updated_at: s.updatedAt },
    );
  }

  async getServer(id: string): Promise<ServerRecord | undefined> {
    const r = await this.db.get<ServerRow>("SELECT * FROM mcp_servers WHERE tenant_id = $tenant AND id = $id", { id });
    return r && serverOf(r);
  }

  async serverByName(name: string): Promise<ServerRecord | undefined> {
    const r = await this.db.get<ServerRow>("SELECT * FROM mcp_servers WHERE tenant_id = $tenant AND name = $name", { name });
    return r && serverOf(r);
  }

  async listServers(f: ServerFilter, p: Page): Promise<Listed<ServerRecord>> {
    const filters: Filter[] = [
      ["status = $status", "status", f.status],
      containsFilter(this.d, "name", "name", f.name),
    ];
    return listPage(this.db, "mcp_servers", filters, "name", p, serverOf);
  }

  async allServers(): Promise<ServerRecord[]> {
    return (await this.db.all<ServerRow>("SELECT * FROM mcp_servers WHERE tenant_id = $tenant ORDER BY name")).map(serverOf);
  }

  async deleteServer(id: string): Promise<boolean> {
    return (await this.write("DELETE FROM mcp_servers WHERE tenant_id = $tenant AND id = $id", { id })).changes > 0;
  }

  async setStatus(id: string, status: ServerStatus, updatedAt: string) {
    await this.write("UPDATE mcp_servers SET status = $status, updated_at = $updated_at WHERE tenant_id = $tenant AND id = $id", { id, status, updated_at: updatedAt });
  }

  /** DISABLED -> PENDING: the next check decides; earlier failures and the cached result are forgotten. */
  async reenable(id: string, updatedAt: string) {
    await this.write(
      `UPDATE mcp_servers SET status = 'PENDING', consecutive_failures = 0, last_health_check_ms = NULL, last_error = NULL, updated_at = $updated_at
       WHERE tenant_id = $tenant AND id = $id`,
      { id, updated_at: updatedAt },
    );
  }

  async healthState(id: string): Promise<HealthState | undefined> {
    const r = await this.db.get<{ health_samples: string; consecutive_failures: number; avg_latency_ms: number | null; error_rate: number; last_health_check_ms: number | null }>(
      "SELECT health_samples, consecutive_failures, avg_latency_ms, error_rate, last_health_check_ms FROM mcp_servers WHERE tenant_id = $tenant AND id = $id",
      { id },
    );
    if (!r) return undefined;
    return {
      samples: JSON.parse(r.health_samples),
      consecutiveFailures: r.consecutive_failures,
      avgLatencyMs: r.avg_latency_ms,
      errorRate: r.error_rate,
      lastHealthCheckMs: r.last_health_check_ms,
    };
  }

  /** Record a health check: status, latency percentiles, error, bookkeeping. */
  async recordHealth(id: string, u: { status: ServerStatus; p50: number | null; p99: number | null; lastError: string | null; checkedAt: string; checkedAtMs: number; state: HealthState }) {
    await this.write(
      `UPDATE mcp_servers SET status = $status, health_p50_ms = $p50, health_p99_ms = $p99, last_error = $last_error,
         last_health_check = $checked_at, last_health_check_ms = $checked_ms, health_samples = $samples,
         consecutive_failures = $failures, avg_latency_ms = $avg, error_rate = $error_rate, updated_at = $checked_at
       WHERE tenant_id = $tenant AND id = $id`,
      {
        id,
        status: u.status,
        p50: u.p50,
        p99: u.p99,
        last_error: u.lastError,
        checked_at: u.checkedAt,
        checked_ms: u.checkedAtMs,
        samples: JSON.stringify(u.state.samples),
        failures: u.state.consecutiveFailures,
        avg: u.state.avgLatencyMs,
        error_rate: u.state.errorRate,
      },
    );
  }

  /**
   * Fold one upstream call's outcome into the server's moving averages (no status change). Not
   * a change of the version: every miss calls it, and nothing derived from the registry reads the
   * averages (exposure needs status, names and availability; an upstream call the connection fields).
   */
  async recordCallOutcome(id: string, latencyMs: number, failed: boolean, alpha: number) {
    await this.db.run(
      `UPDATE mcp_servers SET
         avg_latency_ms = CASE WHEN avg_latency_ms IS NULL THEN $lat ELSE avg_latency_ms + $alpha * ($lat - avg_latency_ms) END,
         error_rate = error_rate + $alpha * ($failed - error_rate)
       WHERE tenant_id = $tenant AND id = $id`,
      { id, lat: latencyMs, failed: failed ? 1 : 0, alpha },
    );
  }

  // ---- tools ----

  async insertTool(t: ToolRecord) {
    await this.write(
      `INSERT INTO mcp_tools (id, tenant_id, server_id, name, description, input_schema, annotations, category, category_confidence, category_manual,
         cache_enabled, cache_ttl_secs, semantic_threshold, cross_agent, coalescing_window_ms, cache_manual, available, last_discovered_at, created_at, updated_at)
       VALUES ($id, $tenant, $server_id, $name, $description, $input_schema, $annotations, $category, $category_confidence, $category_manual,
         $cache_enabled, $cache_ttl_secs, $semantic_threshold, $cross_agent, $coalescing_window_ms, $cache_manual, $available, $last_discovered_at, $created_at, $updated_at)`,
      toolParams(t),
    );
  }

  async updateTool(t: ToolRecord) {
    await this.write(
      `UPDATE mcp_tools SET description = $description, input_schema = $input_schema, annotations = $annotations, category = $category,
         category_confidence = $category_confidence, category_manual = $category_manual, cache_enabled = $cache_enabled,
         cache_ttl_secs = $cache_ttl_secs, semantic_threshold = $semantic_threshold, cross_agent = $cross_agent,
         coalescing_window_ms = $coalescing_window_ms, cache_manual = $cache_manual, available = $available,
         last_discovered_at = $last_discovered_at, updated_at = $updated_at
       WHERE tenant_id = $tenant AND id = $id`,
      toolParams(t),
    );
  }

  async getTool(id: string): Promise<ToolRecord | undefined> {
    const r = await this.db.get<ToolRow>("SELECT * FROM mcp_tools WHERE tenant_id = $tenant AND id = $id", { id });
    return r && toolOf(r);
  }

  async toolsOfServer(serverId: string): Promise<ToolRecord[]> {
    return (await this.db.all<ToolRow>("SELECT * FROM mcp_tools WHERE tenant_id = $tenant AND server_id = $server_id ORDER BY name", { server_id: serverId })).map(toolOf);
  }

  async toolByName(serverId: string, name: string): Promise<ToolRecord | undefined> {
    const r = await this.db.get<ToolRow>("SELECT * FROM mcp_tools WHERE tenant_id = $tenant AND server_id = $server_id AND name = $name", { server_id: serverId, name });
    return r && toolOf(r);
  }

  async allTools(): Promise<ToolRecord[]> {
    return (await this.db.all<ToolRow>("SELECT * FROM mcp_tools WHERE tenant_id = $tenant ORDER BY name, server_id")).map(toolOf);
  }

  async toolsByIds(ids: string[]): Promise<ToolRecord[]> {
    if (ids.length === 0) return [];
    return (await this.db.all<ToolRow>(`SELECT * FROM mcp_tools WHERE tenant_id = $tenant AND id IN ${this.d.inJsonArray("$ids")}`, { ids: JSON.stringify(ids) })).map(toolOf);
  }

  async listTools(f: ToolFilter, p: Page): Promise<Listed<ToolRecord>> {
    const filters: Filter[] = [
      ["server_id = $server_id", "server_id", f.serverId],
      ["category = $category", "category", f.category],
      ["cache_enabled = $cache_enabled", "cache_enabled", flag(f.cacheEnabled)],
      containsFilter(this.d, "name", "name", f.name),
    ];
    return listPage(this.db, "mcp_tools", filters, "name, server_id", p, toolOf);
  }

  async countToolsByServer(): Promise<Map<string, number>> {
    const rows = await this.db.all<{ server_id: string; n: number }>("SELECT server_id, COUNT(*) AS n FROM mcp_tools WHERE tenant_id = $tenant GROUP BY server_id");
    return new Map(rows.map((r) => [r.server_id, r.n]));
  }
}
