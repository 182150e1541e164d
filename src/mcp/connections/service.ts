/**
 * Client connections to servers (doc2 §4.7): tracking records a client keeps up to date.
 *
 *   CONNECTING    -> CONNECTED, DISCONNECTING, DISCONNECTED, ERROR
 *   CONNECTED     -> DISCONNECTING, DISCONNECTED, ERROR
 *   DISCONNECTING -> DISCONNECTED, ERROR
 *   ERROR         -> CONNECTING, DISCONNECTED
 *   DISCONNECTED  -> CONNECTING                        (a reconnect reuses the record)
 * Setting the current state again is a no-op; any other move is 409 `conflict`. A heartbeat is
 * accepted while CONNECTING, CONNECTED or DISCONNECTING (409 otherwise); a CONNECTING or
 * CONNECTED connection without a heartbeat or state change for heartbeat_timeout_secs goes
 * DISCONNECTED (reason heartbeat_timeout) on the domain's timer. Every move is a
 * `connection_state` event on /api/v1/mcp/connections/events.
 */
import type { ForTenant } from "../../storage/scoped";
import type { AsyncStorage, AsyncTenantDb } from "../../storage/async";
import { conflict, notFound } from "../../core/errors";
import type { Page, Listed } from "../../core/pagination";
import { uuid } from "../../core/ids";
import type { WallClock } from "../ports";
import type { EventHub } from "../events";
import type { RegistryStore } from "../registry/store";
import { asInt, listPage, type Filter } from "../sql";
import { iso, CONNECTION_STATES, type Connection, type ConnectionState } from "../types";

export const ALLOWED_MOVES: Record<ConnectionState, readonly ConnectionState[]> = {
  CONNECTING: ["CONNECTED", "DISCONNECTING", "DISCONNECTED", "ERROR"],
  CONNECTED: ["DISCONNECTING", "DISCONNECTED", "ERROR"],
  DISCONNECTING: ["DISCONNECTED", "ERROR"],
  ERROR: ["CONNECTING", "DISCONNECTED"],
  DISCONNECTED: ["CONNECTING"],
};

const ALIVE: readonly ConnectionState[] = ["CONNECTING", "CONNECTED", "DISCONNECTING"];

interface Row {
  id: string;
  server_id: string;
  client_id: string;
  state: ConnectionState;
  created_at: string;
  updated_at: string;
  connected_at: string | null;
  disconnected_at: string | null;
  last_heartbeat_at: string | null;
  state_changed_at: string;
}

const connectionOf = (r: Row): Connection => ({
  id: r.id,
  serverId: r.server_id,
  clientId: r.client_id,
  state: r.state,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  connectedAt: r.connected_at,
  disconnectedAt: r.disconnected_at,
  lastHeartbeatAt: r.last_heartbeat_at,
  stateChangedAt: r.state_changed_at,
});

export class ConnectionStore {
  constructor(readonly db: AsyncTenantDb) {}

  async insert(c: Connection, atMs: number) {
    await this.db.run(
      `INSERT INTO mcp_connections (id, tenant_id, server_id, client_id, state, created_at, updated_at, last_activity_ms, state_changed_at)
       VALUES ($id, $tenant, $server_id, $client_id, $state, $at, $at, $ms, $at)`,
      { id: c.id, server_id: c.serverId, client_id: c.clientId, state: c.state, at: c.createdAt, ms: atMs },
    );
  }

  async get(id: string): Promise<Connection | undefined> {
    const r = await this.db.get<Row>("SELECT * FROM mcp_connections WHERE tenant_id = $tenant AND id = $id", { id });
    return r && connectionOf(r);
  }

  list(f: { serverId?: string; clientId?: string; state?: ConnectionState }, p: Page): Promise<Listed<Connection>> {
    const filters: Filter[] = [
      ["server_id = $server_id", "server_id", f.serverId],
      ["client_id = $client_id", "client_id", f.clientId],
      ["state = $state", "state", f.state],
    ];
    return listPage(this.db, "mcp_connections", filters, "created_at DESC, id", p, connectionOf);
  }

  async move(id: string, to: ConnectionState, at: string, atMs: number) {
    await this.db.run(
      `UPDATE mcp_connections SET state = $to, updated_at = $at, state_changed_at = $at, last_activity_ms = $ms, state_changes = state_changes + 1,
         connected_at = CASE WHEN $to = 'CONNECTED' THEN $at ELSE connected_at END,
         disconnected_at = CASE WHEN $to = 'DISCONNECTED' THEN $at ELSE disconnected_at END,
         errors = errors + ${asInt("$to = 'ERROR'")}
       WHERE tenant_id = $tenant AND id = $id`,
      { id, to, at, ms: atMs },
    );
  }

  async heartbeat(id: string, at: string, atMs: number) {
    await this.db.run("UPDATE mcp_connections SET last_heartbeat_at = $at, updated_at = $at, last_activity_ms = $ms WHERE tenant_id = $tenant AND id = $id", { id, at, ms: atMs });
  }

  async statsOf(serverId: string) {
    const byState = await this.db.all<{ state: ConnectionState; n: number }>("SELECT state, COUNT(*) AS n FROM mcp_connections WHERE tenant_id = $tenant AND server_id = $server_id GROUP BY state", {
      server_id: serverId,
    });
    const t = (await this.db.get<{ total: number; with_errors: number; errors: number; changes: number; last_hb: string | null }>(
      `SELECT COUNT(*) AS total, COALESCE(SUM(${asInt("errors > 0")}), 0) AS with_errors, COALESCE(SUM(errors), 0) AS errors, COALESCE(SUM(state_changes), 0) AS changes,
              MAX(last_heartbeat_at) AS last_hb
       FROM mcp_connections WHERE tenant_id = $tenant AND server_id = $server_id`,
      { server_id: serverId },
    ))!;
    return { byState: Object.fromEntries(CONNECTION_STATES.map((s) => [s, byState.find((b) => b.state === s)?.n ?? 0])) as Record<ConnectionState, number>, ...t };
  }
}

export class ConnectionService {
  constructor(
    private readonly stores: ForTenant<ConnectionStore>,
    private readonly registry: ForTenant<RegistryStore>,
    private readonly storage: AsyncStorage,
    private readonly events: EventHub,
    private readonly clock: WallClock,
    private readonly heartbeatTimeoutSecs: number,
  ) {}

  async get(tenantId: string, id: string): Promise<Connection> {
    const c = await this.stores(tenantId).get(id);
    if (!c) throw notFound("connection");
    return c;
  }

  list(tenantId: string, f: { serverId?: string; clientId?: string; state?: ConnectionState }, p: Page) {
    return this.stores(tenantId).list(f, p);
  }

  async create(tenantId: string, input: { serverId: string; clientId: string }): Promise<Connection> {
    if (!(await this.registry(tenantId).getServer(input.serverId))) throw notFound("server");
    const nowMs = this.clock.now();
    const at = iso(nowMs);
    const c: Connection = { id: uuid(), serverId: input.serverId, clientId: input.clientId, state: "CONNECTING", createdAt: at, updatedAt: at, connectedAt: null, disconnectedAt: null, lastHeartbeatAt: null, stateChangedAt: at };
    await this.stores(tenantId).insert(c, nowMs);
    this.emit(tenantId, c, null, "created");
    return c;
  }

  async setState(tenantId: string, id: string, to: ConnectionState, reason = "requested"): Promise<Connection> {
    const store = this.stores(tenantId);
    const { before, after } = await store.db.tx(async () => {
      const c = await this.get(tenantId, id);
      if (c.state === to) return { before: c, after: c };
      if (!ALLOWED_MOVES[c.state].includes(to)) throw conflict(`a connection cannot move from ${c.state} to ${to} (allowed: ${ALLOWED_MOVES[c.state].join(", ")})`);
      const nowMs = this.clock.now();
      await store.move(id, to, iso(nowMs), nowMs);
      return { before: c, after: await this.get(tenantId, id) };
    });
    if (before.state !== after.state) this.emit(tenantId, after, before.state, reason);
    return after;
  }

  async heartbeat(tenantId: string, id: string) {
    const store = this.stores(tenantId);
    const c = await this.get(tenantId, id);
    if (!ALIVE.includes(c.state)) throw conflict(`a ${c.state} connection takes no heartbeat (move it to CONNECTING first)`);
    const nowMs = this.clock.now();
    const at = iso(nowMs);
    await store.heartbeat(id, at, nowMs);
    return { connectionId: id, state: c.state, acknowledged: true, recordedAt: at };
  }

  async stats(tenantId: string, serverId: string, callErrors: () => Promise<{ totalCalls: number; failedCalls: number; toolErrors: number }>) {
    if (!(await this.registry(tenantId).getServer(serverId))) throw notFound("server");
    const s = await this.stores(tenantId).statsOf(serverId);
    const calls = await callErrors();
    const rate = (n: number, d: number) => (d ? Math.round((n / d) * 10_000) / 10_000 : 0);
    return {
      serverId,
      activeConnections: s.byState.CONNECTING + s.byState.CONNECTED,
      totalConnections: s.total,
      byState: s.byState,
      stateChanges: s.changes,
      connectionErrors: s.errors,
      connectionErrorRate: rate(s.with_errors, s.total),
      lastHeartbeatAt: s.last_hb,
      totalCalls: calls.totalCalls,
      failedCalls: calls.failedCalls,
      callErrorRate: rate(calls.failedCalls, calls.totalCalls),
      toolErrorRate: rate(calls.toolErrors, calls.totalCalls),
    };
  }

  /** CONNECTING/CONNECTED connections silent for heartbeat_timeout_secs go DISCONNECTED (every tenant). */
  async expireStale(): Promise<number> {
    if (this.heartbeatTimeoutSecs <= 0) return 0;
    const cutoff = this.clock.now() - this.heartbeatTimeoutSecs * 1000;
    const rows = await this.storage
      .global("connection sweep: connections of every tenant that stopped sending heartbeats")
      .all<{ tenant_id: string; id: string }>("SELECT tenant_id, id FROM mcp_connections WHERE state IN ('CONNECTING', 'CONNECTED') AND last_activity_ms < $cutoff", { cutoff });
    for (const r of rows) await this.setState(r.tenant_id, r.id, "DISCONNECTED", "heartbeat_timeout");
    return rows.length;
  }

  private emit(tenantId: string, c: Connection, from: ConnectionState | null, reason: string) {
    this.events.publish("connections", tenantId, "connection_state", { connectionId: c.id, serverId: c.serverId, clientId: c.clientId, from, to: c.state, reason, at: c.stateChangedAt });
  }
}
