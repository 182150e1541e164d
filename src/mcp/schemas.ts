/** TypeBox request schemas of the MCP gateway: every doc2 §8 limit lives here (400 validation_error). */
import { t } from "elysia";
import type { Static, TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ApiError } from "../core/errors";
import { describeValueError } from "../core/validation";
import { pageQuery } from "../core/pagination";
import { AUTH_TYPES, CATEGORIES, COALESCE_MAX, CONNECTION_STATES, GRANULARITIES, OPERATIONS, SERVER_STATUSES, TRANSPORTS, TTL_MAX } from "./types";

export const LIMITS = {
  serverName: 128,
  serverDescription: 2_000,
  url: 2_048,
  entityName: 128,
  entityDescription: 2_000,
  paramName: 256,
  clientId: 256,
  agentId: 256,
  queryText: 10_000,
  embeddingDims: 4_096,
  entityId: 1_024,
  searchLimit: 100,
  toolName: 256,
  ttlSecs: TTL_MAX,
  coalescingWindowMs: COALESCE_MAX,
} as const;

/** An enum as a union of literals (not t.UnionEnum: Elysia would default an optional one to its first value). */
const OneOf = <V extends string>(values: readonly V[]) => t.Union(values.map((v) => t.Literal(v)));

const Uuid = t.String({ format: "uuid" });
const PageQuery = pageQuery();

export const IdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) });
export const MappingParams = t.Object({ tool_id: t.String({ minLength: 1, maxLength: 128 }), entity_id: t.String({ minLength: 1, maxLength: 128 }) });
export const CacheKeyParams = t.Object({ cache_key: t.String({ minLength: 1, maxLength: 64 }) });

// ---- servers and tools ----

export const ServerListQuery = t.Object({
  status: t.Optional(OneOf(SERVER_STATUSES)),
  name: t.Optional(t.String({ maxLength: LIMITS.serverName })),
  ...PageQuery,
});

export const ServerCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: LIMITS.serverName }),
  description: t.Optional(t.String({ maxLength: LIMITS.serverDescription })),
  url: t.String({ minLength: 1, maxLength: LIMITS.url }),
  transport: t.Optional(OneOf(TRANSPORTS)),
  authType: t.Optional(OneOf(AUTH_TYPES)),
  /** checked field by field against authType by the service (so a literal secret is named and refused, not silently dropped) */
  authConfig: t.Optional(t.Record(t.String(), t.Unknown())),
});

export const ToolListQuery = t.Object({
  serverId: t.Optional(Uuid),
  category: t.Optional(OneOf(CATEGORIES)),
  cacheEnabled: t.Optional(t.Boolean()),
  name: t.Optional(t.String({ maxLength: LIMITS.toolName })),
  ...PageQuery,
});

export const ToolConfig = t.Object({
  category: t.Optional(OneOf(CATEGORIES)),
  cacheEnabled: t.Optional(t.Boolean()),
  cacheTtlSecs: t.Optional(t.Integer({ minimum: 1, maximum: LIMITS.ttlSecs })),
  semanticThreshold: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
  crossAgentEnabled: t.Optional(t.Boolean()),
  coalescingWindowMs: t.Optional(t.Integer({ minimum: 0, maximum: LIMITS.coalescingWindowMs })),
});

export const ToolCall = t.Object({
  arguments: t.Optional(t.Record(t.String(), t.Unknown())),
  agentId: t.Optional(t.String({ minLength: 1, maxLength: LIMITS.agentId })),
});

// ---- entities, mappings, rules ----

export const EntityListQuery = t.Object({
  parentId: t.Optional(Uuid),
  name: t.Optional(t.String({ maxLength: LIMITS.entityName })),
  ...PageQuery,
});

export const EntityCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: LIMITS.entityName }),
  description: t.Optional(t.String({ maxLength: LIMITS.entityDescription })),
  parentId: t.Optional(t.Nullable(Uuid)),
});

export const EntityUpdate = t.Object({
  name: t.Optional(t.String({ minLength: 1, maxLength: LIMITS.entityName })),
  description: t.Optional(t.String({ maxLength: LIMITS.entityDescription })),
  parentId: t.Optional(t.Nullable(Uuid)),
});

export const MappingCreate = t.Object({
  toolId: Uuid,
  entityId: Uuid,
  paramName: t.String({ minLength: 1, maxLength: LIMITS.paramName }),
  operation: OneOf(OPERATIONS),
});

export const RuleListQuery = t.Object({
  writeToolId: t.Optional(Uuid),
  invalidateToolId: t.Optional(Uuid),
  enabled: t.Optional(t.Boolean()),
  ...PageQuery,
});

export const RuleCreate = t.Object({ writeToolId: Uuid, invalidateToolId: Uuid, enabled: t.Optional(t.Boolean()) });
export const RuleUpdate = t.Object({ enabled: t.Boolean() });

// ---- tool cache ----

export const CacheSearch = t.Object({
  queryEmbedding: t.Optional(t.Array(t.Number(), { minItems: 1, maxItems: LIMITS.embeddingDims })),
  queryText: t.Optional(t.String({ minLength: 1, maxLength: LIMITS.queryText })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: LIMITS.searchLimit })),
  threshold: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
  toolId: t.Optional(Uuid),
  serverId: t.Optional(Uuid),
});

export const CacheInvalidate = t.Object({
  entityType: t.String({ minLength: 1, maxLength: LIMITS.entityName }),
  entityId: t.Optional(t.String({ minLength: 1, maxLength: LIMITS.entityId })),
  cascade: t.Optional(t.Boolean()),
});

// ---- analytics, connections ----

export const AnalyticsQuery = t.Object({
  granularity: t.Optional(OneOf(GRANULARITIES)),
  startDate: t.Optional(t.String({ format: "date-time" })),
  endDate: t.Optional(t.String({ format: "date-time" })),
  serverId: t.Optional(Uuid),
  toolName: t.Optional(t.String({ maxLength: LIMITS.toolName })),
});

export const ConnectionListQuery = t.Object({
  serverId: t.Optional(Uuid),
  clientId: t.Optional(t.String({ minLength: 1, maxLength: LIMITS.clientId })),
  state: t.Optional(OneOf(CONNECTION_STATES)),
  ...PageQuery,
});

export const ConnectionCreate = t.Object({ serverId: Uuid, clientId: t.String({ minLength: 1, maxLength: LIMITS.clientId }) });
export const ConnectionStateBody = t.Object({ state: OneOf(CONNECTION_STATES) });

/**
 * Validate a body inside the handler, for routes with a permission: the kernel checks a declared
 * `body` schema before the route's `perm` (core issue, reported), so those routes declare no body
 * schema and check it here, after the permission — 403 before 400, as the front door promises.
 */
export function bodyOf<T extends TSchema>(schema: T, body: unknown): Static<T> {
  const check = compiled.get(schema) ?? compiled.set(schema, TypeCompiler.Compile(schema)).get(schema)!;
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) throw new ApiError("validation_error", "request body: expected a JSON object");
  if (check.Check(body)) return body as Static<T>;
  throw new ApiError("validation_error", describeValueError(check.Errors(body).First(), "body"));
}
const compiled = new Map<TSchema, TypeCheck<TSchema>>();
