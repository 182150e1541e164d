/**
 * Keys domain: svc API keys (the credential core's authenticator verifies through it) and the
 * token exchange, POST /api/v1/auth/token. Tables: api_keys, on the async storage (SQLite or
 * PostgreSQL, docs/notes/postgres-plan.md).
 */
import type { AsyncStorage } from "../storage/async";
import type { Kernel, RequestLimiter } from "../core/kernel";
import type { TokenService } from "../core/auth";
import type { Domain } from "../core/domain";
import { KEYS_MIGRATIONS } from "./migrations";
import { keyStores } from "./store";
import { ApiKeyService } from "./service";
import { keyRoutes } from "./routes";

export { ApiKeyService, API_KEY_PREFIX, isApiKey, type ApiKeyRecord } from "./service";
export { KEYS_MIGRATIONS } from "./migrations";

/** The service alone (the CLI, and the authenticator, which exists before the kernel). */
export const createKeyService = (storage: AsyncStorage) => new ApiKeyService(keyStores(storage));

export interface KeysDeps {
  service: ApiKeyService;
  kernel: Kernel;
  tokens: TokenService;
  limiter: RequestLimiter;
}

export function create(deps: KeysDeps): Domain<ApiKeyService> {
  return {
    name: "keys",
    migrations: KEYS_MIGRATIONS,
    routes: keyRoutes(deps.kernel, deps.service, deps.tokens, deps.limiter),
    service: deps.service,
  };
}
