/** Records of the MCP gateway (API field names, doc2 §2) and the small helpers every part shares. */
import { conflict } from "../core/errors";
import { StorageConstraintError } from "../storage/errors";

/**
 * A name check and its insert race with another request (another replica on PostgreSQL): the
 * unique index refuses the second insert; it gets the 409 the check would have given, not a 500.
 */
export async function uniqueOr409<T>(fn: () => Promise<T>, message: string): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof StorageConstraintError && e.kind === "unique") throw conflict(message);
    throw e;
  }
}

/**
 * An idempotent write (skips what exists) that raced another one to the same rows: run again, it
 * now skips what the other committed. Bounded: each failed attempt means another request committed.
 */
export async function retryOnUnique<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof StorageConstraintError && e.kind === "unique") || attempt >= attempts) throw e;
    }
  }
}

export const TRANSPORTS = ["HTTP", "STDIO", "SSE"] as const;
export type Transport = (typeof TRANSPORTS)[number];

export const AUTH_TYPES = ["NONE", "API_KEY", "OAUTH", "MTLS"] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

export const SERVER_STATUSES = ["PENDING", "HEALTHY", "DEGRADED", "DOWN", "DISABLED"] as const;
export type ServerStatus = (typeof SERVER_STATUSES)[number];

export const CATEGORIES = ["READ", "WRITE", "IDEMPOTENT", "UNKNOWN"] as const;
export type Category = (typeof CATEGORIES)[number];

export const OPERATIONS = ["READ", "WRITE"] as const;
export type Operation = (typeof OPERATIONS)[number];

export const CONNECTION_STATES = ["CONNECTING", "CONNECTED", "DISCONNECTING", "DISCONNECTED", "ERROR"] as const;
export type ConnectionState = (typeof CONNECTION_STATES)[number];

export const GRANULARITIES = ["hour", "day", "week", "month"] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** authConfig as stored: environment-variable names and file paths only, never a secret value. */
export interface AuthConfig {
  type: AuthType;
  header?: string;
  valueEnv?: string;
  tokenUrl?: string;
  clientId?: string;
  clientSecretEnv?: string;
  scopes?: string[];
  certPath?: string;
  keyPath?: string;
  caPath?: string;
}

export interface Server {
  id: string;
  name: string;
  description: string;
  url: string;
  transport: Transport;
  authType: AuthType;
  status: ServerStatus;
  healthLatencyP50Ms: number | null;
  healthLatencyP99Ms: number | null;
  lastHealthCheck: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A server with what only the gateway reads (never returned). */
export interface ServerRecord extends Server {
  authConfig: AuthConfig;
}

export interface CacheConfig {
  enabled: boolean;
  ttlSecs: number;
  semanticThreshold: number;
  crossAgent: boolean;
  coalescingWindowMs: number;
}

export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface Tool {
  id: string;
  serverId: string;
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: ToolAnnotations | null;
  category: Category;
  categoryConfidence: number;
  categoryManualOverride: boolean;
  cacheConfig: CacheConfig;
  /** offered by the server at the last discovery (false: disappeared, or known only from an import) */
  available: boolean;
  lastDiscoveredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Entity {
  id: string;
  name: string;
  description: string;
  parentId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Mapping {
  toolId: string;
  entityId: string;
  paramName: string;
  operation: Operation;
  createdAt: string;
}

export interface Rule {
  id: string;
  writeToolId: string;
  invalidateToolId: string;
  enabled: boolean;
  createdAt: string;
}

export interface Connection {
  id: string;
  serverId: string;
  clientId: string;
  state: ConnectionState;
  createdAt: string;
  updatedAt: string;
  connectedAt: string | null;
  disconnectedAt: string | null;
  lastHeartbeatAt: string | null;
  stateChangedAt: string;
}

/** Longest cache TTL accepted (30 days) and longest coalescing window (1 minute). */
export const TTL_MAX = 2_592_000;
export const COALESCE_MAX = 60_000;

/** ISO 8601 UTC of epoch milliseconds. */
export const iso = (ms: number) => new Date(ms).toISOString();

/** Escape LIKE wildcards so a partial-name filter for "a_b" matches the literal text (used with ESCAPE '\'). */
export const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (c) => "\\" + c)}%`;

/** doc2 deletes: `{deleted: true, message}`. */
export const deleted = (message: string) => ({ deleted: true as const, message });

/** OpenAPI tag of a route */
export const tag = (t: string) => ({ tags: [t] });
