/**
 * Every domain's migrations in the order the composition root applies them — what a command that
 * prepares a database without building the gateway needs (`svc storage copy` migrates the target
 * first). test/schema.test.ts checks it equals the migrations of the domains createApp builds.
 */
import type { MigrationSet } from "./storage/migrations";
import { CORE_MIGRATIONS } from "./core/secrets";
import { CACHE_MIGRATIONS } from "./cache/migrations";
import { GATEWAY_MIGRATIONS } from "./gateway/migrations";
import { OVERVIEW_MIGRATIONS } from "./gateway/overview-api";
import { KEYS_MIGRATIONS } from "./keys/migrations";
import { RATELIMIT_MIGRATIONS } from "./ratelimit/store";
import { PROMPTS_MIGRATIONS } from "./prompts/migrations";
import { IDENTITY_MIGRATIONS } from "./identity/migrations";
import { MCP_MIGRATIONS } from "./mcp/migrations";
import { MEMORY_MIGRATIONS } from "./memory/migrations";

export function migrationSets(): MigrationSet[] {
  return [
    { domain: "core", migrations: CORE_MIGRATIONS },
    { domain: "embedding", migrations: [] },
    { domain: "cache", migrations: CACHE_MIGRATIONS },
    { domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] },
    { domain: "keys", migrations: KEYS_MIGRATIONS },
    { domain: "ratelimit", migrations: RATELIMIT_MIGRATIONS },
    { domain: "prompts", migrations: PROMPTS_MIGRATIONS },
    { domain: "identity", migrations: IDENTITY_MIGRATIONS },
    { domain: "mcp", migrations: MCP_MIGRATIONS },
    { domain: "memory", migrations: MEMORY_MIGRATIONS },
    { domain: "ops", migrations: [] },
    { domain: "ui", migrations: [] },
  ];
}
