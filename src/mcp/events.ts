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
import { TOPICS, type Bus } from "../core/hotstate";

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

  /**
   * `bus` (several replicas): every event goes through it, so subscribers on every replica get it
   * (the bus delivers to this replica's own subscribers synchronously, as before). Without it events
   * stay in the process.
   */
  constructor(
    private readonly now: () => number,
    private readonly bus?: Bus,
  ) {
    bus?.subscribe(TOPICS.mcpEvents, (payload) => {
      const a = payload.indexOf("\u0000");
      const b = payload.indexOf("\u0000", a + 1);
      if (a < 0 || b < 0) return; // "" after a bus outage: events sent meanwhile are gone
      this.deliver(this.key(payload.slice(0, a) as Channel, payload.slice(a + 1, b)), payload.slice(b + 1));
    });
  }

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

  /** Whether anyone listens (callers skip building events nobody receives); with replicas, someone may on another one. */
  listening(channel: Channel, tenantId: string): boolean {
    return !!this.bus || this.subs.has(this.key(channel, tenantId));
  }

  publish(channel: Channel, tenantId: string, type: StreamEvent["type"], data: Record<string, unknown>) {
    if (!this.bus && !this.subs.has(this.key(channel, tenantId))) return;
    const text = toJson({ type, timestamp: new Date(this.now()).toISOString(), data } satisfies StreamEvent);
    if (this.bus) this.bus.publish(TOPICS.mcpEvents, `${channel}\u0000${tenantId}\u0000${text}`);
    else this.deliver(this.key(channel, tenantId), text);
  }

  private deliver(key: string, text: string) {
    const set = this.subs.get(key);
    if (!set) return;
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
