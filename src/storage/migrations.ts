/**
 * Versioned migrations, applied in id order at start-up, each in its own transaction.
 * Ids are "<NNNN>_<domain>_<what>"; each domain owns its own migration list in its folder
 * and this file only collects them. Never edit an applied migration: add a new one.
 */
import type { Database } from "bun:sqlite";
import { CORE_MIGRATIONS } from "../core/migrations";
import { RATELIMIT_MIGRATIONS } from "../ratelimit/store";
import { PROMPTS_MIGRATIONS } from "../prompts/migrations";
import { CACHE_MIGRATIONS } from "../cache/migrations";
import { GATEWAY_MIGRATIONS } from "../gateway/usage";

export interface Migration {
  id: string;
  up: string | ((db: Database) => void);
}

export const MIGRATIONS: Migration[] = [...CORE_MIGRATIONS, ...RATELIMIT_MIGRATIONS, ...PROMPTS_MIGRATIONS, ...CACHE_MIGRATIONS, ...GATEWAY_MIGRATIONS];
