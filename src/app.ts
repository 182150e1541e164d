/**
 * Composition root: builds the AppContext from a Config and mounts every domain's routes.
 * A reader finds an endpoint's code from its URL: /v1*, /v1beta* -> src/gateway, /api/v1/<domain> -> src/<domain>.
 */
import { Elysia } from "elysia";
import type { Config } from "./core/config";
import { Db } from "./storage/db";
import { Logger } from "./core/log";
import { Authenticator, ApiKeyService, TokenService, resolveJwtSecret } from "./core/auth";
import { mapError, requestIdOf } from "./core/http";
import type { AppContext } from "./context";
import { authRoutes } from "./core/auth.routes";
import { Metrics } from "./ops/metrics";
import { RequestObserver } from "./ops/requests";
import { opsRoutes } from "./ops/routes";
import { docsRoutes } from "./ops/docs";
import { RateLimiter, SqliteTierStore, rateLimitRoutes } from "./ratelimit";
import { promptRoutes } from "./prompts/routes";
import { installGateway, gatewayRoutes } from "./gateway/routes";
import { installCache } from "./cache";
import { cacheRoutes } from "./cache/routes";

export interface ContextOptions {
  logger?: Logger;
}

export async function createContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  const log = opts.logger ?? new Logger("info");
  const db = new Db(config.storage.path);
  const tokens = new TokenService(resolveJwtSecret(config, (m) => log.warn(m)), config.auth.jwks_url, config.auth.token_ttl_secs);
  const apiKeys = new ApiKeyService(db);
  const ctx: AppContext = {
    config,
    db,
    log,
    tokens,
    apiKeys,
    auth: new Authenticator(tokens, apiKeys),
    readiness: { database: true, migrations: true, embedder: () => true },
    startedAt: Date.now(),
    metrics: new Metrics(),
    closers: [() => db.close()],
  };
  ctx.requests = new RequestObserver(ctx);
  ctx.rateLimiter = new RateLimiter(new SqliteTierStore(db), { enabled: config.rate_limits.enabled, metrics: ctx.metrics });
  installCache(ctx); // sets ctx.embedder (loading in the background) and ctx.cache
  installGateway(ctx); // sets ctx.gateway
  return ctx;
}

export function createApp(ctx: AppContext) {
  const observer = ctx.requests;
  const app = new Elysia({ name: "svc" })
    .onRequest(({ request, set }) => {
      set.headers["x-request-id"] = requestIdOf(request);
      observer?.start(request);
    })
    .onError(({ code, error, request, set }) => {
      const res = mapError(code, error, request, ctx.log);
      res.headers.set("x-request-id", String(set.headers["x-request-id"] ?? requestIdOf(request)));
      set.status = res.status; // seen by onAfterResponse
      return res;
    })
    .onAfterResponse((c) => {
      const { request, set } = c;
      const route = (c as { route?: string }).route;
      const principal = (c as { principal?: { tenantId: string } }).principal;
      const value = (c as { responseValue?: unknown }).responseValue;
      observer?.finish({
        request,
        route: route || undefined,
        status: value instanceof Response ? value.status : typeof set.status === "number" ? set.status : 200,
        requestId: String(set.headers["x-request-id"] ?? ""),
        tenantId: principal?.tenantId,
      });
    })
    .use(opsRoutes(ctx, observer!))
    .use(docsRoutes())
    .use(rateLimitRoutes(ctx))
    .use(authRoutes(ctx))
    .use(promptRoutes(ctx))
    .use(gatewayRoutes(ctx))
    .use(cacheRoutes(ctx));
  return app;
}

export async function closeContext(ctx: AppContext) {
  for (const close of [...ctx.closers].reverse()) {
    try {
      await close();
    } catch (e) {
      ctx.log.error("error during shutdown", { error: String(e) });
    }
  }
}
