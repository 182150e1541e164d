/**
 * Hot state shared by replicas (issue 24): the ports domains decide together through, and their
 * single-node defaults.
 *  - `Bus`: invalidation messages (a key revoked, a user suspended, a role or a team budget
 *    changed). `LocalBus` delivers to this process's subscribers synchronously, which is exactly
 *    what the code did before the bus existed; the Redis bus (core/redis.ts) also delivers them to
 *    every other replica over pub/sub.
 *  - `SharedStore`: atomic scripts on a store every replica sees (Redis Lua). Absent on a single
 *    node: the domains then decide in process memory, as before, at the same speed.
 *  - `FailPolicy`: what a domain does when the shared store is unreachable: `closed` refuses with
 *    503 service_unavailable (Retry-After), `open` decides on this replica's local state and counts
 *    each such decision.
 * Domains receive these through app.ts; the Redis implementation lives beside this file
 * (core/redis.ts) so a domain never imports it.
 */
import { ApiError } from "./errors";

/** Invalidation topics (payload: JSON of the fields named; "" = forget everything of the topic, sent after a bus outage). */
export const TOPICS = {
  /** an API key was revoked or rotated: {t, id} */
  keyRevoked: "key.revoked",
  /** a user's state changed (suspended, deleted, assignments): {t?, u?} (none = every user) */
  user: "identity.user",
  /** teams, team budgets or key links of a workspace changed: {t} */
  budget: "identity.budget",
  /** a tenant's rate-limit tier changed: {t} */
  tier: "ratelimit.tier",
  /** MCP tool-result cache: an invalidation began {t, b: 1} (a read in flight must not store), entries went {t, r: [[toolId, vecKey]]}, or an entry got its vector {t, a: [toolId, embedderId, vecKey, base64 f32]} */
  mcpToolCache: "mcp.toolcache",
  /** a tenant's MCP servers or tools changed (what the /mcp endpoint exposes is rebuilt): {t} */
  mcpRegistry: "mcp.registry",
  /** Memory API vector indexes: an item's vector added {t, p, k, a: key, v: base64 f32}, removed {t, p, k, r: key}, or a project dropped {t, p, d: 1} */
  memoryIndex: "memory.index",
  /** MCP stream events for WebSocket subscribers on every replica: "<channel>\0<tenant>\0<event JSON>" */
  mcpEvents: "mcp.events",
} as const;

export type Topic = (typeof TOPICS)[keyof typeof TOPICS];

export interface Bus {
  /** delivered to this process's subscribers at once, and to every other replica's */
  publish(topic: Topic, payload: string): void;
  subscribe(topic: Topic, handler: (payload: string) => void): void;
}

/** The single-node bus: synchronous in-process delivery. */
export class LocalBus implements Bus {
  private readonly handlers = new Map<string, Array<(payload: string) => void>>();
  publish(topic: Topic, payload: string) {
    this.deliver(topic, payload);
  }
  subscribe(topic: Topic, handler: (payload: string) => void) {
    const list = this.handlers.get(topic);
    if (list) list.push(handler);
    else this.handlers.set(topic, [handler]);
  }
  /** run the topic's handlers (a handler that throws does not stop the others) */
  deliver(topic: string, payload: string) {
    for (const h of this.handlers.get(topic) ?? []) {
      try {
        h(payload);
      } catch {
        // an invalidation handler only drops caches; a malformed payload is ignored
      }
    }
  }
}

/** A Lua script and its SHA-1 (EVALSHA). */
export interface Script {
  readonly src: string;
  readonly sha: string;
}

export const script = (src: string): Script => ({ src, sha: new Bun.CryptoHasher("sha1").update(src).digest("hex") });

/** Atomic scripts on the store every replica shares. `run` rejects when the store is unreachable. */
export interface SharedStore {
  readonly connected: boolean;
  run(s: Script, keys: string[], args: Array<string | number>): Promise<unknown>;
}

/**
 * An ordered log every replica follows (a Redis Stream): entries are appended by scripts on the
 * SharedStore (XADD, after the durable write) and read here in order by each replica from its own
 * position. A replica starts at the log's end (what came before is already in the database);
 * after a reconnect it goes on from its position, and when entries it did not read may be gone
 * (Redis restarted or flushed, the log trimmed past its position) `resync` is called instead: the
 * follower then rebuilds what it keeps in memory from the database.
 */
export interface SharedLog {
  /** `handler` gets each entry's payload and its append time (ms since the epoch, the store's clock) */
  follow(stream: string, handler: (payload: string, appendedAt: number) => void, resync: () => void): void;
}

export type FailMode = "closed" | "open";

/** What a domain does without its shared store. */
export interface FailPolicy {
  mode: FailMode;
  /** count (and log, throttled) one decision taken on local state because the store was unreachable */
  degraded(kind: string, error: unknown): void;
}

/** The refusal of `closed` mode: 503 in the mount's envelope, retry in a second. */
export const hotStateUnavailable = (what: string) =>
  new ApiError("service_unavailable", `${what} cannot be decided: the shared state store (Redis) is unreachable; retry shortly`, { retry_after_secs: 1 }, { "retry-after": "1" });
