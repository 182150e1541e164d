/**
 * The MCP gateway's services wired together over one storage (tests call them without HTTP), and
 * the background pass the domain's timer runs (health checks, heartbeat expiry, expired entries).
 */
import type { AsyncStorage } from "../storage/async";
import type { OutboundPolicy } from "../core/outbound";
import type { Logger } from "../core/log";
import type { McpConfig } from "./config";
import type { Embedder, WallClock } from "./ports";
import type { Bus } from "../core/hotstate";
import { EventHub } from "./events";
import { RegistryStore, RegistryVersions } from "./registry/store";
import { RegistryService } from "./registry/service";
import { EntityStore } from "./entities/store";
import { EntityService } from "./entities/service";
import { ToolCacheStore } from "./toolcache/store";
import { ToolCache } from "./toolcache/service";
import { ToolVectors } from "./toolcache/vectors";
import { CallStore } from "./calls/store";
import { CallService } from "./calls/service";
import { CallLog } from "./calls/log";
import { Analytics } from "./calls/analytics";
import { ConnectionService, ConnectionStore } from "./connections/service";
import { HealthService } from "./health/service";
import { ConfigIO } from "./config-io";
import { UpstreamPool } from "./upstream/pool";
import { OAuthTokens, type Env } from "./upstream/auth";

export interface McpServiceDeps {
  storage: AsyncStorage;
  outbound: OutboundPolicy;
  embedder: Embedder;
  config: McpConfig;
  log: Logger;
  clock: WallClock;
  /** where the environment variables named in authConfig are read (process.env) */
  env: Env;
  /** several replicas (Redis): tool-cache invalidations and stream events reach every replica */
  bus?: Bus;
}

export interface McpServices {
  events: EventHub;
  pool: UpstreamPool;
  registry: RegistryService;
  health: HealthService;
  entities: EntityService;
  cache: ToolCache;
  calls: CallService;
  /** each call's record and a hit's count, written just behind the answer */
  callLog: CallLog;
  analytics: Analytics;
  connections: ConnectionService;
  configIO: ConfigIO;
  /** calls(t): the tenant's call records, its queued ones written first */
  stores: { registry(t: string): RegistryStore; entities(t: string): EntityStore; cache(t: string): ToolCacheStore; calls(t: string): Promise<CallStore> };
  connectionStats(tenantId: string, serverId: string): ReturnType<ConnectionService["stats"]>;
  /** One background pass: health checks of every enabled server, stale connections, expired entries. */
  tick(): Promise<{ checked: number; disconnected: number; expired: number }>;
  close(): Promise<void>;
}

export function mcpServices(d: McpServiceDeps): McpServices {
  const { storage, config, clock, log } = d;
  const dialect = storage.dialect;
  const registryVersions = new RegistryVersions(d.bus);
  const registryStore = (t: string) => new RegistryStore(storage.tenant(t), registryVersions, dialect);
  const entityStore = (t: string) => new EntityStore(storage.tenant(t), dialect);
  const cacheStore = (t: string) => new ToolCacheStore(storage.tenant(t), dialect);
  const callLog = new CallLog(storage, dialect, (e, lost) => log.error("mcp call log: a batch was not written", { error: String(e), lostRows: lost }));
  // every reader of the call records (analytics, stats, health, connection stats) sees the queued ones
  const callStore = async (t: string) => {
    await callLog.flush(t);
    return new CallStore(storage.tenant(t), dialect);
  };
  const connectionStore = (t: string) => new ConnectionStore(storage.tenant(t));

  const events = new EventHub(() => clock.now(), d.bus);
  const pool = new UpstreamPool(config, { outbound: d.outbound, env: d.env, oauth: new OAuthTokens(d.outbound.fetch, d.env, () => clock.now()), mtlsDir: config.mtls_dir }, log);
  const cache = new ToolCache({ storage, stores: cacheStore, entities: entityStore, registry: registryStore, calls: callStore, callLog, vectors: new ToolVectors(), embedder: d.embedder, clock, events, config, log, bus: d.bus });
  const health = new HealthService({ storage, registry: registryStore, pool, config, clock, events, log, hitsOfServer: async (t, id) => (await callStore(t)).hitsOfServer(id) });
  const registry = new RegistryService(registryStore, { outbound: d.outbound, config, clock, pool, health: () => health, cache: () => cache });
  const entities = new EntityService(entityStore, registryStore, () => cache, clock);
  const calls = new CallService({ registry: registryStore, entities: entityStore, callLog, cache, pool, events, clock, log });
  const analytics = new Analytics(callStore, registryStore, clock, config.cost_per_call_usd);
  const connections = new ConnectionService(connectionStore, registryStore, storage, events, clock, config.heartbeat_timeout_secs);
  const configIO = new ConfigIO(registryStore, entityStore, registry, pool, clock);

  return {
    events,
    pool,
    registry,
    health,
    entities,
    cache,
    calls,
    callLog,
    analytics,
    connections,
    configIO,
    stores: { registry: registryStore, entities: entityStore, cache: cacheStore, calls: callStore },
    connectionStats: (tenantId, serverId) => connections.stats(tenantId, serverId, async () => (await callStore(tenantId)).serverCallErrors(serverId)),
    async tick() {
      const disconnected = await connections.expireStale();
      const expired = await cache.sweepExpired();
      const checked = await health.checkAll();
      return { checked, disconnected, expired };
    },
    async close() {
      await callLog.close();
      await pool.closeAll();
    },
  };
}
