/**
 * The per-tenant event hub behind the two WebSocket streams. A subscriber gets only its own
 * tenant's events; an event is serialised once however many sockets receive it.
 *
 * Every event is `{type, timestamp, data}` (docs/decisions.md "MCP gateway" lists the fields); a
 * cacheKey is an exact JSON integer, as in the REST answers:
 *   activity stream  (/api/v1/mcp/stream):             tool_call, cache_hit, cache_miss, invalidation, health_check
 *   connection stream (/api/v1/mcp/connections/events): connection_state
 */
import { toJson } from "./json";

export type Channel = "activity" | "connections";

export type ActivityType = "tool_call" | "cache_hit" | "cache_miss" | "invalidation" | "health_check";
export type ConnectionEventType = "connection_state";

export interface StreamEvent {
  type: ActivityType | ConnectionEventType;
  timestamp: string;
  data: Record<string, unknown>;
}

type Listener = (text: string) => void;

export class EventHub {
  private readonly subs = new Map<string, Set<Listener>>();

  constructor(private readonly now: () => number) {}

  private key(channel: Channel, tenantId: string) {
    return `${channel}\u0000${tenantId}`;
  }

  /** Listen to one tenant's events on a channel; returns the unsubscribe function. */
  subscribe(channel: Channel, tenantId: string, listener: Listener): () => void {
    const k = this.key(channel, tenantId);
    let set = this.subs.get(k);
    if (!set) this.subs.set(k, (set = new Set()));
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0 && this.subs.get(k) === set) this.subs.delete(k);
    };
  }

  /** Whether anyone listens (callers skip building events nobody receives). */
  listening(channel: Channel, tenantId: string): boolean {
    return this.subs.has(this.key(channel, tenantId));
  }

  publish(channel: Channel, tenantId: string, type: StreamEvent["type"], data: Record<string, unknown>) {
    const set = this.subs.get(this.key(channel, tenantId));
    if (!set) return;
    const text = toJson({ type, timestamp: new Date(this.now()).toISOString(), data } satisfies StreamEvent);
    for (const l of set) {
      try {
        l(text);
      } catch {
        // a socket that fails to send is closed by its own handler; the others still receive
      }
    }
  }

  activity(tenantId: string, type: ActivityType, data: Record<string, unknown>) {
    this.publish("activity", tenantId, type, data);
  }
}
