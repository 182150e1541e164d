/**
 * The whole configuration schema, assembled from core's sections and each domain's (composition
 * level, beside app.ts). Env names map to paths by lower-casing and splitting on "__".
 */
import { Type as T, type Static } from "@sinclair/typebox";
import { CORE_SECTIONS, ConfigError, configLoader } from "./core/config";
import { GATEWAY_SECTIONS } from "./gateway/config";
import { PROVIDER_NAMES } from "./gateway/providers";
import { OPS_SECTIONS } from "./ops/config";
import { CACHE_SECTIONS, checkCacheConfig } from "./cache/config";
import { EMBEDDING_SECTIONS, checkEmbeddingConfig } from "./embedding/config";
import { RATE_LIMIT_SECTIONS } from "./ratelimit/config";
import { IDENTITY_SECTIONS } from "./identity/config";
import { MCP_SECTIONS } from "./mcp/config";
import { MEMORY_SECTIONS } from "./memory/config";
import { REDIS_SECTIONS } from "./core/config";

export const ConfigSchema = T.Object({
  ...CORE_SECTIONS,
  ...GATEWAY_SECTIONS,
  ...EMBEDDING_SECTIONS,
  ...CACHE_SECTIONS,
  ...RATE_LIMIT_SECTIONS,
  ...IDENTITY_SECTIONS,
  ...MCP_SECTIONS,
  ...OPS_SECTIONS,
  ...MEMORY_SECTIONS,
  ...REDIS_SECTIONS,
});

export type Config = Static<typeof ConfigSchema>;

const fail = (message: string): never => {
  throw new ConfigError(message);
};

/** readiness.probe_providers names providers of the gateway's registry */
function checkProbes(c: Config) {
  for (const p of c.readiness.probe_providers)
    if (!(PROVIDER_NAMES as string[]).includes(p)) fail(`SVC_READINESS__PROBE_PROVIDERS: unknown provider "${p}" (expected ${PROVIDER_NAMES.join(", ")})`);
}

const loader = configLoader(ConfigSchema, [(c) => checkCacheConfig(c, fail), (c) => checkEmbeddingConfig(c, fail), checkProbes]);

/** Defaults < YAML file named by SVC_CONFIG < SVC_* environment variables (< overrides, for tests). */
export const loadConfig = (env: Record<string, string | undefined> = process.env, overrides?: Record<string, unknown>): Config => loader.load(env, overrides);

/** SVC_* variables that name no setting (logged as a warning by `svc serve`). */
export const unknownSettings = (env: Record<string, string | undefined> = process.env) => loader.unknownSettings(env);

export { ConfigError };
