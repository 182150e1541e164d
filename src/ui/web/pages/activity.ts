/**
 * The MCP page's live activity: the tenant's tool calls, cache hits and misses, invalidations and
 * health checks as they happen, from the WebSocket /api/v1/mcp/stream (ViewLogs). A browser cannot
 * set Authorization on a WebSocket, so the token travels as a subprotocol
 * (`Sec-WebSocket-Protocol: svc.bearer, <token>`): never in the URL, where logs and history keep it.
 */
import { useEffect, useState } from "preact/hooks";
import { BASE, session } from "../api";
import { html, when } from "../kit";

interface StreamEvent {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

const KEEP = 50;

/** What an event says, in one line. */
export const summary = (e: StreamEvent): string => {
  const d = e.data;
  const tool = typeof d.toolName === "string" ? d.toolName : undefined;
  switch (e.type) {
    case "tool_call":
      return `${tool ?? "tool"}: ${String(d.cacheStatus ?? "")}${typeof d.latencyMs === "number" ? ` in ${Math.round(d.latencyMs)} ms` : ""}${d.error ? ` — ${String(d.error)}` : ""}`;
    case "cache_hit":
      return `${tool ?? "tool"}: cache hit (${String(d.tier ?? "")})`;
    case "cache_miss":
      return `${tool ?? "tool"}: cache miss${d.stored ? ", answer stored" : ""}`;
    case "invalidation":
      return `invalidated ${String(d.invalidated ?? 0)} entries (${String(d.reason ?? "")}${d.entityType ? `, ${String(d.entityType)}` : ""})`;
    case "health_check":
      return `health check of ${String(d.serverName ?? d.serverId ?? "a server")}: ${String(d.status ?? "")}`;
    default:
      return e.type;
  }
};

export function LiveActivity() {
  const [events, setEvents] = useState<StreamEvent[]>([]);
  const [state, setState] = useState<"connecting" | "live" | "closed">("connecting");
  useEffect(() => {
    const s = session();
    if (!s) return;
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${BASE}/api/v1/mcp/stream`;
    const ws = new WebSocket(url, ["svc.bearer", s.token]);
    ws.onopen = () => setState("live");
    ws.onclose = () => setState("closed");
    ws.onmessage = (m) => {
      try {
        const e = JSON.parse(String(m.data)) as StreamEvent;
        setEvents((list) => [e, ...list].slice(0, KEEP));
      } catch {
        // not an event: ignored
      }
    };
    return () => ws.close(1000);
  }, []);
  return html`<section class="card" aria-labelledby="h-live">
    <h2 id="h-live">Live activity</h2>
    <p class="muted" role="status">${state === "live" ? "Connected: new tool calls, cache hits, invalidations and health checks appear here." : state === "connecting" ? "Connecting…" : "Disconnected; reopen the page to reconnect."}</p>
    <ol class="live" aria-label="Live MCP activity" aria-live="polite">${events.map(
      (e) => html`<li><time>${when(e.timestamp)}</time> <span class="badge">${e.type}</span> ${summary(e)}</li>`,
    )}</ol>
  </section>`;
}
