/**
 * The MCP endpoint clients call (`/mcp`, Streamable HTTP, served with the official server SDK):
 * a tenant's bearer token opens its discovered, available tools of HEALTHY or DEGRADED servers
 * that are not disabled, named `<server>__<tool>` (the server part reduced to [A-Za-z0-9_.-];
 * when two servers reduce to the same part, each gets `-<first 8 hex of its id>`). Both protocol
 * eras are served: 2026-07-28 requests per request, 2025-era requests by the stateless legacy leg.
 * Every tools/call goes through CallService (cache, coalescing, invalidation, analytics, events);
 * the cache outcome rides in the result's `_meta["svc/cache"]`.
 */
import { Server, createMcpHandler, isJsonContentType, DEFAULT_MAX_REQUEST_BODY_SIZE, ProtocolError, ProtocolErrorCode, type AuthInfo } from "@modelcontextprotocol/server";
import type { Principal } from "../core/auth";
import { ApiError } from "../core/errors";
import type { ForTenant } from "../storage/scoped";
import type { NativeHandler } from "../core/kernel";
import type { RegistryStore, ToolRecord } from "./registry/store";
import type { CallService } from "./calls/service";
import type { ServerRecord } from "./types";

export const AGENT_HEADER = "x-svc-agent-id";
const EXPOSED: ReadonlySet<string> = new Set(["HEALTHY", "DEGRADED"]);

const baseOf = (s: ServerRecord) => s.name.replace(/[^A-Za-z0-9_.-]+/g, "-").replace(/^-+|-+$/g, "") || "server";

/** The exposed name prefix of each exposed server of a tenant. */
function exposedServers(store: RegistryStore): Array<{ prefix: string; server: ServerRecord }> {
  const servers = store.allServers().filter((s) => EXPOSED.has(s.status));
  const count = new Map<string, number>();
  for (const s of servers) count.set(baseOf(s), (count.get(baseOf(s)) ?? 0) + 1);
  return servers.map((s) => ({ server: s, prefix: count.get(baseOf(s))! > 1 ? `${baseOf(s)}-${s.id.replace(/-/g, "").slice(0, 8)}` : baseOf(s) }));
}

type Exposed = Map<string, { tool: ToolRecord; server: ServerRecord }>;

/** The exposed name of every callable tool of a tenant. */
export function exposedTools(store: RegistryStore): Exposed {
  const out: Exposed = new Map();
  for (const { server, prefix } of exposedServers(store)) for (const t of store.toolsOfServer(server.id)) if (t.available) out.set(`${prefix}__${t.name}`, { tool: t, server });
  return out;
}

/**
 * Each tenant's exposed tools, kept while its registry version has not moved (any write of its
 * servers or tools moves it): a call no longer reads every server row and a tool row first
 * (~35 µs of a hit). tools/list and tools/call read the same map, so a name resolves to the tool
 * tools/list showed. The maps are shared: read only. Tenants beyond MAX_TENANTS start the maps
 * over (a rebuild costs what every lookup cost before).
 */
export class ExposedTools {
  private static readonly MAX_TENANTS = 10_000;
  private readonly byTenant = new Map<string, { version: number; tools: Exposed }>();
  constructor(private readonly registry: ForTenant<RegistryStore>) {}

  of(tenantId: string): Exposed {
    const store = this.registry(tenantId);
    const version = store.version;
    const kept = this.byTenant.get(tenantId);
    if (kept?.version === version) return kept.tools;
    const tools = exposedTools(store);
    if (this.byTenant.size >= ExposedTools.MAX_TENANTS) this.byTenant.clear();
    this.byTenant.set(tenantId, { version, tools });
    return tools;
  }
}

/** The server factory of createMcpHandler: a new instance per request (the SDK's contract), the tenant from authInfo. */
export function mcpServerFactory(exposed: ExposedTools, calls: CallService) {
  return ({ authInfo }: { authInfo?: { extra?: Record<string, unknown> } }) => {
    const tenantId = authInfo?.extra?.tenantId as string | undefined;
    const agentId = authInfo?.extra?.agentId as string | undefined;
    const server = new Server({ name: "svc-mcp-gateway", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async () => {
      if (!tenantId) return { tools: [] };
      const tools = [...exposed.of(tenantId)].map(([name, { tool }]) => ({
        name,
        description: tool.description,
        inputSchema: { type: "object", ...tool.inputSchema } as { type: "object"; [k: string]: unknown },
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
      }));
      return { tools };
    });
    server.setRequestHandler("tools/call", async (request) => {
      const name = request.params.name;
      const target = tenantId ? exposed.of(tenantId).get(name) : undefined;
      if (!tenantId || !agentId || !target) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
      try {
        const out = await calls.callResolved(tenantId, target.tool, target.server, { arguments: (request.params.arguments ?? {}) as Record<string, unknown>, agentId });
        const meta = { ...((out.result._meta as Record<string, unknown> | undefined) ?? {}), "svc/cache": { status: out.cache.status, tier: out.cache.tier, cacheKey: out.cache.cacheKey?.toString() ?? null } };
        return { ...out.result, content: (out.result.content ?? []) as never, _meta: meta };
      } catch (e) {
        if (e instanceof ApiError) return { content: [{ type: "text" as const, text: e.message }], isError: true };
        throw e;
      }
    });
    return server;
  };
}

/** The SDK's bound on a body it reads itself (given to it explicitly, so withBody and the SDK agree). */
const MAX_MCP_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE;

/**
 * A JSON POST's body read and parsed once here and handed to the SDK as `parsedBody` (its option
 * for a body the caller already holds): left unread, the SDK clones the request (to keep the body
 * for its legacy leg) and reads the stream itself. Whatever the SDK answers differently for a body
 * it reads — a declared or real size over its bound (413), an empty or non-JSON body, an
 * unreadable stream (400) — stays its answer: it gets the request as it came, or the same bytes
 * again, or the stream's error.
 */
async function withBody(request: Request): Promise<{ request: Request; parsedBody?: unknown }> {
  if (request.method.toUpperCase() !== "POST" || !isJsonContentType(request.headers.get("content-type"))) return { request };
  if (Number(request.headers.get("content-length")) > MAX_MCP_BODY) return { request };
  const again = (body: Uint8Array | ReadableStream) => new Request(request.url, { method: request.method, headers: request.headers, body, signal: request.signal });
  let bytes: Uint8Array;
  try {
    bytes = await request.bytes();
  } catch (e) {
    return { request: again(new ReadableStream({ start: (c) => c.error(e) })) };
  }
  if (bytes.byteLength > MAX_MCP_BODY) return { request: again(bytes) };
  const text = new TextDecoder().decode(bytes);
  let parsed: unknown;
  try {
    parsed = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return parsed === undefined ? { request: again(bytes) } : { request, parsedBody: parsed };
}

export function mcpEndpoint(registry: ForTenant<RegistryStore>, calls: CallService): { handler: NativeHandler; close(): Promise<void> } {
  const mcp = createMcpHandler(mcpServerFactory(new ExposedTools(registry), calls), { legacy: "stateless", maxRequestBodySize: MAX_MCP_BODY });
  const handler: NativeHandler = async (request, state) => {
    const p = state.principal as Principal;
    const agentId = request.headers.get(AGENT_HEADER)?.slice(0, 256) || p.sub;
    const authInfo: AuthInfo = { token: "", clientId: p.sub, scopes: [...p.permissions], extra: { tenantId: p.tenantId, agentId } };
    const read = await withBody(request);
    return mcp.fetch(read.request, read.parsedBody === undefined ? { authInfo } : { authInfo, parsedBody: read.parsedBody });
  };
  return { handler, close: () => mcp.close() };
}
