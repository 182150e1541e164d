/**
 * The composition root: the one module that knows every domain. It builds core (storage, tokens,
 * the authenticator, the rate limiter, the HTTP kernel), creates each domain through its factory
 * with the narrow dependencies it declares, applies every domain's migrations, and mounts the
 * routes. A reader finds an endpoint's code from its URL: /v1*, /v1beta* -> src/gateway,
 * /api/v1/<domain> -> src/<domain> (docs/architecture.md has the whole map).
 */
import { Elysia } from "elysia";
import type { Config } from "./config";
import { Db } from "./storage/db";
import { storageOf, type Storage } from "./storage/scoped";
import { openStorage } from "./storage/open";
import type { AsyncStorage } from "./storage/async";
import { Logger } from "./core/log";
import { Metrics } from "./core/metrics";
import { Authenticator, TokenService, resolveJwtSecret } from "./core/auth";
import { Kernel, RequestObserver, type RequestLimiter } from "./core/kernel";
import type { Domain, NativeRoutes, SocketRoute } from "./core/domain";
import * as keys from "./keys";
import * as ratelimit from "./ratelimit";
import * as embedding from "./embedding";
import * as cache from "./cache";
import * as gateway from "./gateway";
import * as prompts from "./prompts";
import * as ops from "./ops";
import * as identity from "./identity";
import * as mcp from "./mcp";
import * as memory from "./memory";
import * as ui from "./ui";
import type { Embedder } from "./embedding/types";
import type { Clock } from "./ratelimit/bucket";
import { buildOpenApi } from "./core/openapi";
import { ConfigError } from "./core/config";
import { API_TAGS } from "./api-tags";
import { OutboundPolicy } from "./core/outbound";
import { LocalBus, TOPICS, type Bus } from "./core/hotstate";
import { RedisHotState } from "./core/redis";
import { CORE_MIGRATIONS, agreeOnSecrets, sharedSecretStore } from "./core/secrets";
import pkg from "../package.json";
import { usePieceTokenizer } from "./cache/verify/align";

// the cache's pair model aligns words by USE-lite's token table, tokenised by the embedding domain's SentencePiece (built on first use)
usePieceTokenizer(embedding.useLitePieceTokenizer);

/** Seams for tests: a fake clock, a stand-in limiter, model double or embedder. */
export interface AppOptions {
  logger?: Logger;
  clock?: Clock;
  limiter?: RequestLimiter & gateway.TokenMeter;
  completer?: prompts.Completer;
  embedder?: Embedder;
  /**
   * wall clock in ms (identity: assignment and invitation expiry, budget periods; MCP: health,
   * caches, connections); default: Date.now, or — when only `clock` is given — a wall clock that
   * advances with that fake clock
   */
  wallClock?: () => number;
}

export interface App {
  config: Config;
  log: Logger;
  /** the SQLite connection (tests and scripts on SQLite; throws on PostgreSQL: use `data`) */
  db: Db;
  /** synchronous tenant-scoped handles over `db` (SQLite only, like db) */
  storage: Storage;
  /**
   * the storage every domain runs on (src/storage/async.ts): SQLite at SVC_STORAGE__PATH, wrapping
   * the same connection as `db`, or PostgreSQL at SVC_STORAGE__URL
   */
  data: AsyncStorage;
  metrics: Metrics;
  tokens: TokenService;
  auth: Authenticator;
  apiKeys: keys.ApiKeyService;
  limiter: RequestLimiter & gateway.TokenMeter;
  kernel: Kernel;
  /** every call to a URL a tenant supplied goes through it (SSRF) */
  outbound: OutboundPolicy;
  embedder: Embedder;
  cache: cache.SemanticCacheEngine;
  gateway: gateway.GatewayService;
  usage: ReturnType<typeof gateway.create>["usage"];
  prompts: prompts.PromptServices;
  identity: identity.IdentityServices;
  mcp: mcp.McpServices;
  memory: memory.MemoryServices;
  /** named readiness checks behind /ready (a registry: tests may replace a check) */
  readiness: Record<string, ops.ReadinessCheck>;
  /** background provider probes reported by /ready (readiness.probe_providers) */
  probes: ops.UpstreamProbes;
  domains: Domain[];
  /** the shared hot state (SVC_REDIS__URL), absent on a single node */
  hotState?: RedisHotState;
  /** invalidations (in-process, or to every replica through Redis) */
  bus: Bus;
  /** native routes (proxies) for Bun.serve's routes table, behind the front door */
  bunRoutes: ReturnType<Kernel["bunRoutes"]>;
  sockets: SocketRoute[];
  /** serve any request through the front door (what Bun.serve's fetch and tests call) */
  fetch(request: Request): Promise<Response>;
  startedAt: number;
}

/**
 * Build the app on SQLite, synchronously (tests, scripts). A database shared by replicas
 * (SVC_STORAGE__URL) is migrated and checked over the network: use createAppAsync.
 */
export function createApp(config: Config, opts: AppOptions = {}): App {
  const steps = appSteps(config, opts);
  for (let next = steps.next(); ; ) {
    if (next.done) return next.value;
    if (typeof next.value !== "string") {
      void next.value.catch(() => {});
      steps.return(undefined as never);
      throw new Error("createApp builds on SQLite only: on PostgreSQL (SVC_STORAGE__URL) use createAppAsync");
    }
    next = steps.next();
  }
}

/**
 * Build the app in steps that give the event loop a turn between them (a few ms each), awaiting the
 * database where a step needs it: what startServer runs once its socket listens, so that /health is
 * answered while the app is built. Works on both backends.
 */
export async function createAppAsync(config: Config, opts: AppOptions = {}): Promise<App> {
  const steps = appSteps(config, opts);
  let next = steps.next();
  for (;;) {
    if (next.done) return next.value;
    if (typeof next.value === "string") {
      await new Promise<void>((resolve) => setImmediate(resolve));
      next = steps.next();
    } else {
      let settled: unknown;
      try {
        settled = await next.value;
      } catch (e) {
        next = steps.throw(e);
        continue;
      }
      next = steps.next(settled);
    }
  }
}

/** Which backend holds durable state: PostgreSQL when SVC_STORAGE__URL is set. */
export const onSharedDatabase = (config: Pick<Config, "storage">) => config.storage.url !== undefined && config.storage.url !== "";

/**
 * The steps of building the app. Each yield either names the step just done
 * (scripts/bench/startup-profile.ts times them) or hands the driver a promise to await (the
 * database's migrations and checks on PostgreSQL; on SQLite every step is synchronous).
 */
export function* appSteps(config: Config, opts: AppOptions = {}): Generator<string | Promise<unknown>, App, unknown> {
  const startedAt = Date.now();
  const log = opts.logger ?? new Logger("info");
  const metrics = new Metrics();
  const shared = onSharedDatabase(config);
  if (shared) requireSharedSecrets(config);
  const alone = replicaWarning(config);
  if (alone) log.warn(alone);
  const sqlite = shared ? undefined : new Db(config.storage.path);
  const storage = sqlite && storageOf(sqlite);
  const data = sqlite
    ? openStorage({ path: config.storage.path, db: sqlite })
    : openStorage({ path: config.storage.path, url: config.storage.url, schema: config.storage.schema, poolSize: config.storage.pool_size, queryTimeoutMs: config.storage.query_timeout_ms });
  const jwtSecret = shared ? config.auth.jwt_secret! : resolveJwtSecret({ jwtSecret: config.auth.jwt_secret, dataPath: config.storage.path }, (m) => log.warn(m));
  const tokens = new TokenService(jwtSecret, {
    ttlSecs: config.auth.token_ttl_secs,
    maxTtlSecs: config.auth.max_token_ttl_secs,
    jwksUrl: config.auth.jwks_url,
  });
  const apiKeys = keys.createKeyService(data);
  const auth = new Authenticator(tokens, [apiKeys]);
  // hot state shared by replicas (issue 24): limits, budgets and invalidations through Redis when configured
  const hotState = config.redis.url
    ? new RedisHotState(config.redis, log, metrics.counter("svc_hotstate_degraded_decisions_total", "Decisions taken without Redis (fail mode open)", ["kind", "mode"]))
    : undefined;
  const bus: Bus = hotState ?? new LocalBus();
  const sharedHot = hotState && { store: hotState, bus, fail: hotState.fail, prefix: config.redis.prefix };
  const limitDeps = { storage: data, metrics, config: config.rate_limits, clock: opts.clock };
  const rateLimiter = sharedHot ? ratelimit.createLimiter(limitDeps, sharedHot) : ratelimit.createLimiter(limitDeps);
  bus.subscribe(TOPICS.keyRevoked, () => apiKeys.forgetVerified());
  const limiter = opts.limiter ?? rateLimiter;
  const observer = new RequestObserver(metrics, log, config.server.request_log);
  const outbound = new OutboundPolicy({ allowPrivate: config.outbound.allow_private, allowCidrs: config.outbound.allow_cidrs });
  const kernel = new Kernel({ auth, limiter, observer, log, maxBodyBytes: config.server.max_body_bytes, maxHeaderBytes: config.server.max_header_bytes });
  yield "core: database, secrets, auth, limiter, kernel";

  const embeddingD = embedding.create({ config: config.embedding, metrics, log, embedder: opts.embedder });
  const cacheD = cache.create({
    config: { cache: config.cache, context_cache: config.context_cache, embedding: config.embedding },
    databasePath: config.storage.path,
    storage: data,
    embedder: embeddingD.service,
    metrics,
    log,
    kernel,
    shared: hotState && { store: hotState, log: hotState, prefix: config.redis.prefix },
  });
  yield "embedding, cache";
  // identity: users, roles, teams with budgets (the gateway's spend guard), the per-request user check
  const wallClock = opts.wallClock ?? (opts.clock ? followClock(opts.clock) : Date.now);
  const identityD = identity.create({
    config: config.identity,
    storage: data,
    kernel,
    keys: apiKeys,
    usage: usageReader(data, () => gatewayD.usage),
    addCheck: (check) => auth.addCheck(check),
    secret: jwtSecret,
    clock: wallClock,
    outbound: outbound.fetch,
    checkUrl: (url) => outbound.check(url),
    allowInsecureIdp: config.outbound.allow_private,
    tokens,
    dataPath: config.storage.path,
    warn: (m) => log.warn(m),
    bus,
    sharedBudgets: sharedHot,
    sharedKeys: shared ? (box) => sharedSecretStore(data, box) : undefined,
  });
  yield "identity";
  const gatewayD = gateway.create({
    config: { providers: config.providers, upstream: config.upstream, models: config.models, prices: config.prices, usage: config.usage },
    cacheEnabled: config.cache.enabled,
    storage: data,
    kernel,
    metrics,
    log,
    cache: cacheD.service,
    meter: limiter,
    guard: identityD.service.guard,
    isGatewayCredential: auth.isGatewayCredential,
  });
  yield "gateway";
  const keysD = keys.create({ service: apiKeys, kernel, tokens, limiter });
  const ratelimitD = ratelimit.create({ kernel, limiter: rateLimiter });
  const promptsD = prompts.create({ storage: data, kernel, completer: opts.completer ?? gatewayD.service });
  yield "keys, ratelimit, prompts";
  const mcpD = mcp.create({ storage: data, kernel, outbound, embedder: embeddingD.service, auth, config: config.mcp, log, clock: { now: wallClock }, env: process.env, bus: hotState });
  yield "mcp";
  const memoryD = memory.create({
    storage: data,
    kernel,
    embedder: embeddingD.service,
    completer: opts.completer ?? gatewayD.service,
    outbound,
    config: config.memory,
    indexDir: memory.indexDirOf(config.storage.path),
    env: process.env,
    clock: wallClock,
    bus: hotState,
  });
  yield "memory";
  const readiness: Record<string, ops.ReadinessCheck> = {
    database: sqlite ? () => !sqlite.closed && sqlite.get<{ ok: number }>("SELECT 1 AS ok")?.ok === 1 : () => data.ping().then(() => true),
    migrations: sqlite ? () => sqlite.pendingMigrations().length === 0 : async () => (await data.pendingMigrations()).length === 0,
    embedder: () => embeddingD.service.isReady(),
    cache: () => cacheD.service.ready(),
  };
  if (hotState) readiness.redis = () => hotState.ready();
  let http = new Elysia({ name: "svc" }).use(kernel.plugin());
  const openapi = () =>
    buildOpenApi({
      app: http,
      kernel,
      info: { title: ops.SERVICE, version: pkg.version, description: pkg.description },
      tags: API_TAGS,
      operations: [...gateway.proxyDocs().map((d) => ({ ...d, tags: ["proxies"], errors: [502, 503, 504] })), ...mcp.nativeDocs(), ...identity.nativeDocs()],
      hidden: ["/openapi.json", "/docs"],
    });
  const probes = new ops.UpstreamProbes(config.readiness, { providers: gateway.PROVIDER_NAMES, probe: (p, ms) => gatewayD.probe(p, ms) });
  if (config.readiness.require_upstream && probes.enabled) readiness.upstreams = () => probes.ready();
  const opsD = ops.create({ kernel, metrics, observer, readiness, readinessLabels: { database: data.description }, endpoints: gateway.infoEndpoints(), startedAt, openapi, probes, settings: config.metrics });

  const uiD = ui.create({ kernel });
  yield "readiness, ops, ui";

  const domains: Domain[] = [embeddingD, cacheD, gatewayD, keysD, ratelimitD, promptsD, identityD, mcpD, memoryD, opsD, uiD];
  const sets = [{ domain: "core", migrations: CORE_MIGRATIONS }, ...domains.map((d) => ({ domain: d.name, migrations: d.migrations }))];
  if (sqlite) sqlite.migrate(sets);
  else {
    // under an advisory lock: replicas starting together migrate once; an older build refuses a newer schema
    yield data.migrate(sets);
    // every replica runs with the secrets the first one recorded (core/secrets.ts)
    yield agreeOnSecrets(data, { SVC_AUTH__JWT_SECRET: jwtSecret, SVC_IDENTITY__SSO__SECRET_KEY: identity.canonicalSecretKey(config.identity.sso.secret_key!) });
  }
  // the cache's indexes load from the database in the background: /ready waits for them, /health does not
  void cacheD.service.warmUp();
  yield "migrations";

  for (const d of domains)
    if (d.routes) {
      http = http.use(d.routes);
      yield `routes of ${d.name}`;
    }
  const native: NativeRoutes = Object.assign({}, ...domains.map((d) => d.native ?? {}));
  kernel.install(http, native);

  const sqliteOnly = (what: string) => () => {
    throw new Error(`app.${what} is the SQLite handle; this app runs on ${data.description}: use app.data`);
  };
  return {
    config,
    log,
    get db() {
      return sqlite ?? sqliteOnly("db")();
    },
    get storage() {
      return storage ?? sqliteOnly("storage")();
    },
    data,
    metrics,
    tokens,
    auth,
    apiKeys,
    limiter,
    kernel,
    outbound,
    embedder: embeddingD.service,
    cache: cacheD.service,
    gateway: gatewayD.service,
    usage: gatewayD.usage,
    prompts: promptsD.service,
    identity: identityD.service,
    mcp: mcpD.service,
    memory: memoryD.service,
    readiness,
    probes,
    domains,
    hotState,
    bus,
    bunRoutes: kernel.bunRoutes(native),
    sockets: domains.flatMap((d) => d.sockets ?? []),
    fetch: kernel.fetch,
    startedAt,
  };
}

/**
 * Replicas on one database must share their secrets (core/secrets.ts): on PostgreSQL the JWT secret
 * and the SSO secret key come from configuration, never from files one replica generates.
 */
function requireSharedSecrets(config: Config) {
  const missing = [
    config.auth.jwt_secret ? undefined : "SVC_AUTH__JWT_SECRET (at least 16 characters; e.g. openssl rand -base64 32)",
    config.identity.sso.secret_key ? undefined : "SVC_IDENTITY__SSO__SECRET_KEY (32 bytes, base64 or 64 hex digits; e.g. openssl rand -base64 32)",
  ].filter(Boolean);
  if (missing.length)
    throw new ConfigError(
      `SVC_STORAGE__URL is set: replicas on one database must share their secrets, so svc does not generate them into its data directory. Set ${missing.join(" and ")} to the same value on every replica.`,
    );
}

/**
 * A shared database (SVC_STORAGE__URL) means several replicas are likely; without Redis each one
 * decides rate limits, budgets and caches alone.
 */
export function replicaWarning(config: Pick<Config, "storage" | "redis">): string | undefined {
  if (!onSharedDatabase(config) || config.redis.url) return undefined;
  return "SVC_STORAGE__URL is set without SVC_REDIS__URL: with several replicas, rate limits and team budgets are per replica (a tenant gets N times its limit) and each replica's cache index sees only its own entries; set SVC_REDIS__URL to share them";
}

/**
 * Identity reads the gateway's usage records (spend per key, hourly analytics) through its
 * UsageReader port; buffered records are written first so that reads see every settled request.
 */
export function usageReader(storage: AsyncStorage, recorder: () => { flush(tenantId?: string): Promise<void> }): identity.UsageReader {
  const inKeys = storage.dialect.inJsonArray("$keys");
  return {
    flush: () => recorder().flush(),
    spendUsd: async (tenantId, keyIds, since) =>
      keyIds.length === 0
        ? 0
        : (await storage
            .tenant(tenantId)
            .get<{ usd: number }>(
              `SELECT COALESCE(SUM(cost_usd), 0) AS usd FROM usage_records WHERE tenant_id = $tenant AND key_id IN ${inKeys} AND created_at >= $since`,
              { keys: JSON.stringify(keyIds), since },
            ))!.usd,
    hourly: (tenantId, keyId, since, until) =>
      storage.tenant(tenantId).all<identity.HourlyUsage>(
        `SELECT substr(created_at, 1, 13) || ':00:00.000Z' AS hour, model, COUNT(*) AS requests, SUM(input_tokens + output_tokens) AS tokens, SUM(cost_usd) AS "costUsd"
         FROM usage_records WHERE tenant_id = $tenant AND key_id = $key AND created_at >= $since AND created_at < $until GROUP BY hour, model`,
        { key: keyId, since, until },
      ),
    modelsBefore: async (tenantId, keyId, before) =>
      (await storage.tenant(tenantId).all<{ model: string }>(`SELECT DISTINCT model FROM usage_records WHERE tenant_id = $tenant AND key_id = $key AND created_at < $before`, { key: keyId, before })).map(
        (r) => r.model,
      ),
  };
}

/**
 * Start the domains' background work (timers, loading the embedding model) — once the server
 * listens. An app that is only created (the CLI, some tests) runs nothing in the background.
 */
export function startApp(app: App) {
  for (const d of app.domains) d.start?.();
}

/** A wall clock (ms since the epoch) that advances with a test's fake clock. */
function followClock(c: Clock): () => number {
  const t0 = c.now();
  const w0 = Date.now();
  return () => w0 + (c.now() - t0);
}

/** Close every domain (reverse order of creation), then the database. */
export async function closeApp(app: App) {
  for (const d of [...app.domains].reverse()) {
    try {
      await d.close?.();
    } catch (e) {
      app.log.error("error during shutdown", { domain: d.name, error: String(e) });
    }
  }
  app.hotState?.close();
  // the async storage first (PostgreSQL: the pool; over SQLite it does not own the Db)
  await app.data.close();
  if (!onSharedDatabase(app.config)) app.db.close();
}
