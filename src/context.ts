/**
 * AppContext: the services one running gateway is made of, created once at start-up
 * (src/app.ts) and handed to each domain's routes. Tests build one with createContext().
 */
import type { Config } from "./core/config";
import type { Db } from "./storage/db";
import type { Logger } from "./core/log";
import type { Authenticator, TokenService, ApiKeyService, Principal } from "./core/auth";
import type { Metrics } from "./ops/metrics";
import type { RequestObserver } from "./ops/requests";
import type { CacheEngine } from "./cache/types";
import type { Embedder } from "./cache/embedding/types";
import type { GatewayService } from "./gateway/types";

/** Per-request rate limiting (src/ratelimit). Throws ApiError rate_limit_error (429). */
export interface RateLimiterLike {
  enforce(principal: Principal, request: Request, headers: Record<string, string>): void;
  /** Charge LLM tokens an upstream reported (usage) to the tenant's tokens/minute budget; proxies call it after each response. */
  chargeTokens(tenantId: string, tokens: number): void;
}

/** Readiness flags checked by /ready. */
export interface Readiness {
  database: boolean;
  migrations: boolean;
  embedder: () => boolean;
}

export interface AppContext {
  config: Config;
  db: Db;
  log: Logger;
  tokens: TokenService;
  apiKeys: ApiKeyService;
  auth: Authenticator;
  readiness: Readiness;
  startedAt: number;
  metrics: Metrics;
  /** per-request metrics and request log (src/ops/requests.ts), fed by hooks in src/app.ts */
  requests?: RequestObserver;
  rateLimiter?: RateLimiterLike;
  /** set by src/cache at start-up */
  embedder?: Embedder;
  cache?: CacheEngine;
  /** set by src/gateway at start-up */
  gateway?: GatewayService;
  /** resources closed on shutdown, in reverse order of registration */
  closers: Array<() => void | Promise<void>>;
}
