/**
 * The two WebSocket streams (doc2 §4.8). The upgrade passes the front door first (authentication,
 * rate limit); a socket then receives its own tenant's events only (events.ts).
 *
 *  - /api/v1/mcp/stream: tool calls, hits, misses, invalidations, health checks — a live log of
 *    the tenant's calls, so it needs ViewLogs (docs/security.md, "Access matrix"); the token comes
 *    in `Authorization: Bearer` or, from a browser (which cannot set that header on a WebSocket), as
 *    the subprotocols `svc.bearer, <token>` (read by the front door, core/kernel.ts), never `?token=`;
 *  - /api/v1/mcp/connections/events: connection state changes; the JWT may come in `?token=`;
 *    at most `max_connection_event_sockets` (100) concurrent sockets in the process: the next
 *    upgrade is refused before switching protocols with 503 `service_unavailable` in the doc2
 *    envelope (Retry-After: 5). A slot is reserved at the upgrade and released when the socket
 *    closes (or after 10 s if the socket never opened).
 * Messages sent by clients are ignored.
 */
import type { ServerWebSocket } from "bun";
import { ApiError, unauthenticated } from "../core/errors";
import { requirePermission, type Permission, type Principal } from "../core/auth";
import type { SocketData, SocketRoute } from "../core/domain";
import type { Channel, EventHub } from "./events";
import type { CredentialAuthenticator } from "./ports";

export const STREAM_PATH = "/api/v1/mcp/stream";
export const CONNECTION_EVENTS_PATH = "/api/v1/mcp/connections/events";

interface Attached {
  tenantId: string;
  reservation?: number;
}

const RESERVATION_MS = 10_000;

/** The connection-events mount's authenticator: `Authorization: Bearer` or `?token=`. */
export function tokenAuthenticator(auth: CredentialAuthenticator) {
  return async (request: Request, url: URL): Promise<Principal> => {
    const header = request.headers.get("authorization");
    const m = header ? /^Bearer\s+(.+)$/i.exec(header) : null;
    const cred = m?.[1]?.trim() || url.searchParams.get("token") || undefined;
    if (!cred) throw unauthenticated("missing credentials: send Authorization: Bearer <token> or ?token=<JWT>");
    return auth.authenticateCredential(cred);
  };
}

/** Counts open sockets plus slots reserved by upgrades whose sockets have not opened yet. */
export class SocketLimit {
  private readonly live = new Set<number>();
  private next = 1;
  private readonly reserved = new Map<number, number>();

  constructor(readonly max: number) {}

  get size() {
    const now = Date.now();
    for (const [id, at] of this.reserved) if (now - at > RESERVATION_MS) this.reserved.delete(id);
    return this.live.size + this.reserved.size;
  }

  reserve(): number {
    if (this.size >= this.max) throw new ApiError("service_unavailable", `at most ${this.max} concurrent connection-event streams; try again later`, undefined, { "retry-after": "5" });
    const id = this.next++;
    this.reserved.set(id, Date.now());
    return id;
  }

  opened(id: number | undefined) {
    if (id === undefined) return;
    this.reserved.delete(id);
    this.live.add(id);
  }

  closed(id: number | undefined) {
    if (id !== undefined) this.live.delete(id);
  }
}

/**
 * Fan-out with Bun's native pub/sub: every socket of a (channel, tenant) subscribes to one topic;
 * one hub listener per topic hands each event to an "anchor" socket of the topic, whose publish()
 * sends it to every other subscriber natively (and send() to the anchor itself) — one JS call per
 * event, not one per socket.
 */
function streamRoute(path: string, channel: Channel, events: EventHub, opts: { limit?: SocketLimit; perm?: Permission } = {}): SocketRoute {
  const { limit, perm } = opts;
  const topics = new Map<string, { sockets: Set<ServerWebSocket<SocketData>>; unsubscribe: () => void }>();
  return {
    path,
    upgrade: (_request, principal): Attached => {
      if (perm) requirePermission(principal, perm); // the route's perm, before a slot is reserved
      return { tenantId: principal.tenantId, reservation: limit?.reserve() };
    },
    open(ws) {
      const a = ws.data.data as Attached;
      limit?.opened(a.reservation);
      const topic = `${channel}:${a.tenantId}`;
      let t = topics.get(topic);
      if (!t) {
        const sockets = new Set<ServerWebSocket<SocketData>>();
        const unsubscribe = events.subscribe(channel, a.tenantId, (text) => {
          const anchor = sockets.values().next().value;
          if (!anchor) return;
          anchor.publish(topic, text);
          anchor.send(text);
        });
        topics.set(topic, (t = { sockets, unsubscribe }));
      }
      t.sockets.add(ws);
      ws.subscribe(topic);
    },
    close(ws) {
      const a = ws.data.data as Attached;
      limit?.closed(a.reservation);
      const topic = `${channel}:${a.tenantId}`;
      const t = topics.get(topic);
      if (!t) return;
      t.sockets.delete(ws);
      if (t.sockets.size === 0) {
        t.unsubscribe();
        topics.delete(topic);
      }
    },
  };
}

export function socketRoutes(events: EventHub, maxConnectionEventSockets: number): { routes: SocketRoute[]; limit: SocketLimit } {
  const limit = new SocketLimit(maxConnectionEventSockets);
  return { routes: [streamRoute(STREAM_PATH, "activity", events, { perm: "ViewLogs" }), streamRoute(CONNECTION_EVENTS_PATH, "connections", events, { limit })], limit };
}
