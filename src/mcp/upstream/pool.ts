/**
 * Connections to registered servers with the official MCP client SDK (2.x): one connected
 * client per server, shared by concurrent calls (JSON-RPC multiplexes), opened on first use and
 * dropped when it fails. Version negotiation is automatic: `server/discover` (2026-07-28) first,
 * the legacy `initialize` handshake otherwise.
 *
 *  - HTTP: Streamable HTTP; SSE: the legacy HTTP+SSE transport — both with the outbound policy's
 *    fetch (and the server's credentials, auth.ts);
 *  - STDIO: `stdio://<name>` names an entry of the operator's allow-list (SVC_MCP__STDIO_COMMANDS).
 */
import { Client, SSEClientTransport, StreamableHTTPClientTransport, type Transport as SdkTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/client/stdio";
import type { Logger } from "../../core/log";
import type { McpConfig } from "../config";
import type { ServerRecord } from "../types";
import { authenticatedFetch, UpstreamError, type AuthContext } from "./auth";

export const STDIO_SCHEME = "stdio://";

/** The allow-list entry a `stdio://<name>` URL names, or undefined. */
export function stdioEntryName(url: string): string | undefined {
  return url.startsWith(STDIO_SCHEME) ? url.slice(STDIO_SCHEME.length) : undefined;
}

export interface UpstreamTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

export interface UpstreamCallResult {
  [key: string]: unknown;
  content?: unknown[];
  isError?: boolean;
}

interface Session {
  client: Client;
  ready: Promise<void>;
}

/** A readable message of whatever the SDK or the network threw. */
export function errorText(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.length > 500 ? msg.slice(0, 500) + "…" : msg;
}

export class UpstreamPool {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly config: McpConfig, private readonly auth: AuthContext, private readonly log: Logger) {}

  private transportOf(server: ServerRecord): SdkTransport {
    if (server.transport === "STDIO") {
      const name = stdioEntryName(server.url);
      const entry = name && Object.hasOwn(this.config.stdio_commands, name) ? this.config.stdio_commands[name] : undefined;
      if (!entry) throw new UpstreamError(`stdio command "${name}" is not in the gateway's allow-list`);
      return new StdioClientTransport({ command: entry.command, args: entry.args ?? [], env: { ...getDefaultEnvironment(), ...entry.env }, cwd: entry.cwd, stderr: "ignore" });
    }
    const fetch = authenticatedFetch(server.authConfig, this.auth);
    const url = new URL(server.url);
    return server.transport === "SSE" ? new SSEClientTransport(url, { fetch }) : new StreamableHTTPClientTransport(url, { fetch });
  }

  private open(server: ServerRecord): Session {
    const client = new Client({ name: "svc-mcp-gateway", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    const session: Session = { client, ready: Promise.resolve() };
    session.ready = (async () => {
      const transport = this.transportOf(server);
      await client.connect(transport, { timeout: this.config.request_timeout_ms });
    })();
    client.onclose = () => {
      if (this.sessions.get(server.id) === session) this.sessions.delete(server.id);
    };
    return session;
  }

  /** A connected client of the server (opened on first use); throws UpstreamError when it cannot connect. */
  async client(server: ServerRecord): Promise<Client> {
    let s = this.sessions.get(server.id);
    if (!s) {
      s = this.open(server);
      this.sessions.set(server.id, s);
    }
    try {
      await s.ready;
      return s.client;
    } catch (e) {
      this.drop(server.id, s);
      throw e instanceof UpstreamError ? e : new UpstreamError(`cannot connect to ${server.name}: ${errorText(e)}`);
    }
  }

  /** Close and forget a server's client (after a failure, a delete or a disable). */
  drop(serverId: string, only?: Session) {
    const s = this.sessions.get(serverId);
    if (!s || (only && s !== only)) return;
    this.sessions.delete(serverId);
    void s.client.close().catch(() => {});
  }

  isConnected(serverId: string): boolean {
    return this.sessions.has(serverId);
  }

  /** The negotiated protocol of an open session ('modern' = 2026-07-28 and later). */
  protocolOf(serverId: string): { era: string | undefined; version: string | undefined } | undefined {
    const c = this.sessions.get(serverId)?.client;
    return c && { era: c.getProtocolEra(), version: c.getNegotiatedProtocolVersion() };
  }

  /**
   * Run `fn` with the server's client; when it fails on a client that was already open (the
   * server restarted, the session expired), reconnect once and retry.
   */
  async with<T>(server: ServerRecord, fn: (c: Client) => Promise<T>): Promise<T> {
    const wasOpen = this.sessions.has(server.id);
    const c = await this.client(server);
    try {
      return await fn(c);
    } catch (e) {
      if (!wasOpen || !isTransportFailure(e)) throw e;
      this.drop(server.id);
      this.log.debug("mcp upstream reconnect", { server: server.id, error: errorText(e) });
      return fn(await this.client(server));
    }
  }

  /** Every tool of the server (all pages), fresh from the server. */
  async listTools(server: ServerRecord): Promise<UpstreamTool[]> {
    return this.with(server, async (c) => {
      const { tools } = await c.listTools(undefined, { cacheMode: "refresh", timeout: this.config.request_timeout_ms });
      return tools as unknown as UpstreamTool[];
    });
  }

  /** One protocol round trip: `server/discover` on the 2026-07-28 era, `ping` on the legacy era. */
  async roundTrip(server: ServerRecord): Promise<void> {
    const opened = !this.sessions.has(server.id);
    await this.with(server, async (c) => {
      if (opened) return; // connecting was the round trip (discover or initialize)
      if (c.getProtocolEra() === "modern") await c.discover({ timeout: this.config.request_timeout_ms });
      else await c.ping({ timeout: this.config.request_timeout_ms });
    });
  }

  async callTool(server: ServerRecord, name: string, args: Record<string, unknown>): Promise<UpstreamCallResult> {
    return this.with(server, async (c) => (await c.callTool({ name, arguments: args }, { timeout: this.config.request_timeout_ms })) as UpstreamCallResult);
  }

  async closeAll() {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((s) => s.client.close().catch(() => {})));
  }
}

/**
 * A failure that shows the request never reached a live session (so a retry cannot run a tool
 * twice): not connected, not sent, the session unknown to the server (HTTP 404), the connection
 * refused. A timeout or a connection closed mid-call is not retried.
 */
function isTransportFailure(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  if (code === "NOT_CONNECTED" || code === "SEND_FAILED") return true;
  const status = (e as { status?: unknown; data?: { status?: unknown } })?.status ?? (e as { data?: { status?: unknown } })?.data?.status;
  if (status === 404) return true;
  return e instanceof TypeError;
}
