/**
 * The Memory API's settings (`SVC_MEMORY__*`).
 *
 *   SVC_MEMORY__INTELLIGENCE_MODEL=gpt-4o-mini   # answers of /intelligence/query (unset = extractive answers)
 *
 * Connector credentials are read from environment variables named in a source's `config`
 * (`tokenEnv`); the names must start with `secret_env_prefix`, so a tenant can never make svc send
 * one of its own settings (SVC_AUTH__JWT_SECRET, provider keys) to a server it controls.
 */
import { Type as T, type Static } from "@sinclair/typebox";
import { Section } from "../core/config";

export const MEMORY_SECTIONS = {
  memory: Section({
    /** model that writes intelligence answers, routed like prompt execution; unset = extractive answers */
    intelligence_model: T.Optional(T.String({ minLength: 1 })),
    /** max tokens of an intelligence answer */
    intelligence_max_tokens: T.Integer({ default: 800, minimum: 1, maximum: 100_000 }),
    /** environment variables named by a source's config (tokenEnv) must start with this */
    secret_env_prefix: T.String({ default: "MEMORY_SECRET_", minLength: 1 }),
    /** items asked per page from an external API */
    sync_page_size: T.Integer({ default: 50, minimum: 1, maximum: 100 }),
    /** most items one sync run stores (the next run continues from the cursor) */
    sync_max_items: T.Integer({ default: 5_000, minimum: 1 }),
    /** timeout of one request to an external API */
    sync_timeout_ms: T.Integer({ default: 30_000, minimum: 1 }),
    /** promotions per project per minute (doc1 §8) */
    promotions_per_minute: T.Integer({ default: 10, minimum: 1 }),
    /** lexical search ignores query words found in more of the searched items than this (near-zero BM25 weight; keeps the cost bounded) */
    lexical_max_df: T.Integer({ default: 2_000, minimum: 1 }),
    /** vector indexes (one per tenant, project and kind) kept loaded; the least recently used is rebuilt from SQLite on next use */
    max_indexes: T.Integer({ default: 1_000, minimum: 1 }),
  }),
};

export type MemoryConfig = Static<(typeof MEMORY_SECTIONS)["memory"]>;
