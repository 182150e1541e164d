/**
 * The MCP endpoint clients call (`/mcp`, Streamable HTTP, served with the official server SDK):
 * a tenant's bearer token opens its discovered, available tools of HEALTHY or DEGRADED servers
 * that are not disabled, named `<server>__<tool>` (the server part reduced to [A-Za-z0-9_.-];
 * when two servers reduce to the same part, each gets `-<first 8 hex of its id>`). Both protocol
 * eras are served: 2026-07-28 requests per request, 2025-era requests by the stateless legacy leg.
 * Every tools/call goes through CallService (cache, coalescing, invalidation, analytics, events);
 * the cache outcome rides in the result's `_meta["svc/cache"]`. Every answer is the SDK's: a
 * repeated exact hit is answered with the bytes the SDK gave the first time (see "replayed hits").
 */
import {
  Server,
  createMcpHandler,
  classifyInboundRequest,
  isJsonContentType,
  DEFAULT_MAX_REQUEST_BODY_SIZE,
  SUPPORTED_PROTOCOL_VERSIONS,
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type AuthInfo,
} from "@modelcontextprotocol/server";
import { LRUCache } from "lru-cache";
import type { Principal } from "../core/auth";
import { ApiError } from "../core/errors";
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "../core/validation";
import type { ForTenant } from "../storage/scoped";
import type { NativeHandler } from "../core/kernel";
import type { RegistryStore, ToolRecord } from "./registry/store";
import type { CallService } from "./calls/service";
import type { ServerRecord } from "./types";

export const AGENT_HEADER = "x-svc-agent-id";
const SERVER_INFO_META = "io.modelcontextprotocol/serverInfo";
const EXPOSED: ReadonlySet<string> = new Set(["HEALTHY", "DEGRADED"]);

const baseOf = (s: ServerRecord) => s.name.replace(/[^A-Za-z0-9_.-]+/g, "-").replace(/^-+|-+$/g, "") || "server";

/** The exposed name prefix of each exposed server of a tenant. */
async function exposedServers(store: RegistryStore): Promise<Array<{ prefix: string; server: ServerRecord }>> {
  const servers = (await store.allServers()).filter((s) => EXPOSED.has(s.status));
  const count = new Map<string, number>();
  for (const s of servers) count.set(baseOf(s), (count.get(baseOf(s)) ?? 0) + 1);
  return servers.map((s) => ({ server: s, prefix: count.get(baseOf(s))! > 1 ? `${baseOf(s)}-${s.id.replace(/-/g, "").slice(0, 8)}` : baseOf(s) }));
}

type Exposed = Map<string, { tool: ToolRecord; server: ServerRecord }>;

/** The exposed name of every callable tool of a tenant. */
export async function exposedTools(store: RegistryStore): Promise<Exposed> {
  const out: Exposed = new Map();
  for (const { server, prefix } of await exposedServers(store)) for (const t of await store.toolsOfServer(server.id)) if (t.available) out.set(`${prefix}__${t.name}`, { tool: t, server });
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
  /**
   * Without a bus the version counts this process's writes only: another replica's (servers shared
   * through PostgreSQL) reach this map when it is rebuilt, at most this long after it was built.
   * With one, every replica's writes move it (RegistryVersions).
   */
  static TTL_MS = 1_000;
  private readonly byTenant = new Map<string, { version: number; builtAt: number; tools: Exposed }>();
  constructor(private readonly registry: ForTenant<RegistryStore>) {}

  /** (the version is read before the rows: a write meanwhile leaves a map the next call rebuilds) */
  async of(tenantId: string): Promise<Exposed> {
    const store = this.registry(tenantId);
    const version = store.version;
    const now = performance.now();
    const kept = this.byTenant.get(tenantId);
    if (kept?.version === version && now - kept.builtAt < ExposedTools.TTL_MS) return kept.tools;
    const tools = await exposedTools(store);
    if (this.byTenant.size >= ExposedTools.MAX_TENANTS) this.byTenant.clear();
    this.byTenant.set(tenantId, { version, builtAt: now, tools });
    return tools;
  }
}

/** An exact-tier hit the SDK answered: which entry, for whom. */
interface ServedHit {
  tenantId: string;
  key: bigint;
  resultJson: string;
}

/**
 * The server factory of createMcpHandler: a new instance per request (the SDK's contract), the
 * tenant from authInfo. `served` learns, per request (its authInfo), an exact hit it answered.
 */
export function mcpServerFactory(exposed: ExposedTools, calls: CallService, served?: (authInfo: object, hit: ServedHit) => void) {
  return ({ authInfo }: { authInfo?: { extra?: Record<string, unknown> } }) => {
    const tenantId = authInfo?.extra?.tenantId as string | undefined;
    const agentId = authInfo?.extra?.agentId as string | undefined;
    const server = new Server({ name: "svc-mcp-gateway", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async () => {
      if (!tenantId) return { tools: [] };
      const tools = [...(await exposed.of(tenantId))].map(([name, { tool }]) => ({
        name,
        description: tool.description,
        inputSchema: { type: "object", ...tool.inputSchema } as { type: "object"; [k: string]: unknown },
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
      }));
      return { tools };
    });
    server.setRequestHandler("tools/call", async (request) => {
      const name = request.params.name;
      const target = tenantId ? (await exposed.of(tenantId)).get(name) : undefined;
      if (!tenantId || !agentId || !target) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
      try {
        const onExactHit = served && authInfo ? (key: bigint, resultJson: string) => served(authInfo, { tenantId, key, resultJson }) : undefined;
        const out = await calls.callResolved(tenantId, target.tool, target.server, { arguments: (request.params.arguments ?? {}) as Record<string, unknown>, agentId }, onExactHit);
        // the upstream's own identity stamp (2026 era: `io.modelcontextprotocol/serverInfo` on every result) is not
        // passed on: the client talks to svc, and the SDK stamps svc's identity only where none is present
        const { [SERVER_INFO_META]: _upstreamIdentity, ...upstreamMeta } = (out.result._meta as Record<string, unknown> | undefined) ?? {};
        const meta = { ...upstreamMeta, "svc/cache": { status: out.cache.status, tier: out.cache.tier, cacheKey: out.cache.cacheKey?.toString() ?? null } };
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
async function withBody(request: Request): Promise<{ request: Request; parsedBody?: unknown; refused?: Response }> {
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
  // the kernel's depth bound, before JSON.parse (and the SDK's own parse) spend ~0.3 s on 1 MB of "["
  // (answered as the SDK answers a body that is not JSON: a JSON-RPC parse error, 400)
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH))
    return { request, refused: Response.json({ jsonrpc: "2.0", error: { code: -32700, message: `Parse error: request body nests deeper than ${MAX_JSON_DEPTH} levels` }, id: null }, { status: 400 }) };
  let parsed: unknown;
  try {
    parsed = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return parsed === undefined ? { request: again(bytes) } : { request, parsedBody: parsed };
}

// ---- replayed hits ----
//
// The SDK's work for one tools/call (a server instance and its transport, the validation of the
// request, envelope and result against its schemas) is ~70 µs of CPU, half of a /mcp cache hit;
// building the server instance is ~4 µs of it, so keeping instances would not help (and the SDK
// refuses an instance still bound to another exchange). A repeated exact hit does not need that
// work: its answer depends only on the era (and protocol version header), the cache entry and the
// request id. So the first time the SDK answers an exact hit of an entry, its bytes are kept —
// once it is checked that rebuilding them around that request's id gives exactly those bytes —
// and a later plain call of the same entry is answered with them, recorded as the hit it is.
// Everything else — misses, semantic hits, unknown tools, other methods, any call that is not
// plain — is the SDK's. endpoint-wire.test.ts compares the answers with the SDK's byte for byte.

type Era = "modern" | "legacy";

/** A tools/call the SDK would hand to the tools/call handler as it is. */
interface PlainCall {
  era: Era;
  /** the era and the protocol version the request names: answers are kept per variant */
  variant: string;
  id: string | number;
  name: string;
  args: Record<string, unknown>;
}

/** The modern revision replayed (the SDK's only one; a request naming another goes to it). */
const MODERN = "2026-07-28";
/** Answer headers, as the SDK sets them: modern JSON, legacy SSE (the stateless legacy leg). */
const JSON_HEADERS: Record<string, string> = { "Content-Type": "application/json" };
const SSE_HEADERS: Record<string, string> = { "Content-Type": "text/event-stream", "Cache-Control": "no-cache, no-transform", Connection: "keep-alive", "X-Accel-Buffering": "no" };
const MESSAGE_KEYS = new Set(["jsonrpc", "id", "method", "params"]);
const PARAM_KEYS: Record<Era, ReadonlySet<string>> = { modern: new Set(["name", "arguments", "_meta"]), legacy: new Set(["name", "arguments"]) };
const ENVELOPE_KEYS = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY]);
/** Bound on the kept answers (result text + stored JSON, in UTF-16 code units). */
const MAX_KEPT = 16 * 1024 * 1024;

const isPlain = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const onlyKeys = (o: Record<string, unknown>, keys: ReadonlySet<string>) => Object.keys(o).every((k) => keys.has(k));

/**
 * A single tools/call that the SDK would dispatch to the handler with these name, arguments and
 * id — classified by the SDK's own classifyInboundRequest, then narrowed to the plainest form of
 * each era: modern = revision 2026-07-28 in body and header, Mcp-Method and a plain Mcp-Name equal
 * to the body's (the SDK's standard-header rung), params only name/arguments/the envelope keys;
 * legacy = no envelope, Accept naming both JSON and SSE, a supported or no MCP-Protocol-Version
 * (the stateless transport's checks), params only name/arguments. Anything else: undefined.
 */
export function plainCall(request: Request, body: unknown): PlainCall | undefined {
  if (!isPlain(body) || body.method !== "tools/call" || !onlyKeys(body, MESSAGE_KEYS)) return undefined;
  const params = body.params;
  if (!isPlain(params) || typeof params.name !== "string") return undefined;
  const args = params.arguments;
  if (args !== undefined && (!isPlain(args) || Object.hasOwn(args, "__proto__"))) return undefined;
  const h = request.headers;
  const version = h.get("mcp-protocol-version") ?? undefined;
  const route = classifyInboundRequest({ httpMethod: request.method, protocolVersionHeader: version, mcpMethodHeader: h.get("mcp-method") ?? undefined, mcpNameHeader: h.get("mcp-name") ?? undefined, body });
  let era: Era;
  if (route.kind === "modern") {
    if (route.messageKind !== "request" || route.classification.revision !== MODERN || version !== MODERN || h.get("mcp-method") !== "tools/call") return undefined;
    if (h.get("mcp-name") !== params.name || params.name.startsWith("=?base64?")) return undefined;
    if (!onlyKeys(params, PARAM_KEYS.modern) || !isPlain(params._meta) || !onlyKeys(params._meta, ENVELOPE_KEYS)) return undefined;
    era = "modern";
  } else if (route.kind === "legacy" && route.reason === "no-claim") {
    const accept = h.get("accept");
    if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return undefined;
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
    if (!onlyKeys(params, PARAM_KEYS.legacy)) return undefined;
    era = "legacy";
  } else return undefined;
  return { era, variant: `${era} ${version ?? ""}`, id: body.id as string | number, name: params.name, args: args ?? {} };
}

/** The JSON-RPC answer the SDK writes for a result (JSON.stringify of {result, jsonrpc, id}). */
const answerText = (result: string, id: string | number) => `{"result":${result},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
const SSE_PREFIX = "event: message\ndata: ";

function answer(era: Era, text: string): Response {
  if (era === "modern") return new Response(text, { status: 200, headers: JSON_HEADERS });
  const frame = new TextEncoder().encode(`${SSE_PREFIX}${text}\n\n`);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(frame);
      c.close();
    },
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}

const sameHeaders = (h: Headers, expected: Record<string, string>) => {
  const got = [...h];
  return got.length === Object.keys(expected).length && Object.entries(expected).every(([k, v]) => h.get(k) === v);
};

/** The result text of an answer the SDK gave, if rebuilding the answer from it gives exactly its bytes. */
function resultOf(era: Era, id: string | number, body: string): string | undefined {
  let text = body;
  if (era === "legacy") {
    if (!body.startsWith(SSE_PREFIX) || !body.endsWith("\n\n")) return undefined;
    text = body.slice(SSE_PREFIX.length, -2);
    if (text.includes("\n")) return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlain(parsed) || !isPlain(parsed.result)) return undefined;
  const result = JSON.stringify(parsed.result);
  return answerText(result, id) === text ? result : undefined;
}

export function mcpEndpoint(registry: ForTenant<RegistryStore>, calls: CallService): { handler: NativeHandler; close(): Promise<void>; replayed(): number } {
  const exposed = new ExposedTools(registry);
  /** the SDK's result text per (variant, tenant, key), valid while the entry holds the same stored JSON */
  const kept = new LRUCache<string, { resultJson: string; result: string }>({ maxSize: MAX_KEPT, sizeCalculation: (v) => v.resultJson.length + v.result.length });
  const keyOf = (call: PlainCall, tenantId: string, key: bigint) => `${call.variant}\u0000${tenantId}\u0000${key}`;
  const served = new WeakMap<object, ServedHit>();
  const mcp = createMcpHandler(
    mcpServerFactory(exposed, calls, (authInfo, hit) => served.set(authInfo, hit)),
    { legacy: "stateless", maxRequestBodySize: MAX_MCP_BODY },
  );
  let closed = false;
  let replays = 0;

  /** A kept answer for this call, recorded as the hit it is; undefined (nothing recorded) otherwise. */
  const replay = async (call: PlainCall, tenantId: string, agentId: string): Promise<Response | undefined> => {
    const target = (await exposed.of(tenantId)).get(call.name);
    if (!target || !agentId) return undefined;
    let answerable: { resultJson: string; result: string } | undefined;
    const out = await calls.exactHit(tenantId, target.tool, target.server, { arguments: call.args, agentId }, (key) => (answerable = kept.get(keyOf(call, tenantId, key)))?.resultJson);
    if (!out || !answerable) return undefined;
    replays++;
    return answer(call.era, answerText(answerable.result, call.id));
  };

  /** Keep the SDK's answer to an exact hit, once it is checked to be what replay would send. */
  const keep = (call: PlainCall, hit: ServedHit, response: Response) => {
    if (response.status !== 200 || !sameHeaders(response.headers, call.era === "modern" ? JSON_HEADERS : SSE_HEADERS)) return;
    void response
      .clone()
      .text()
      .then((body) => {
        const result = resultOf(call.era, call.id, body);
        if (result !== undefined) kept.set(keyOf(call, hit.tenantId, hit.key), { resultJson: hit.resultJson, result });
      })
      .catch(() => {});
  };

  const handler: NativeHandler = async (request, state) => {
    const p = state.principal as Principal;
    const agentId = request.headers.get(AGENT_HEADER)?.slice(0, 256) || p.sub;
    const authInfo: AuthInfo = { token: "", clientId: p.sub, scopes: [...p.permissions], extra: { tenantId: p.tenantId, agentId } };
    const read = await withBody(request);
    if (read.refused) return read.refused;
    const call = !closed && read.parsedBody !== undefined ? plainCall(read.request, read.parsedBody) : undefined;
    const replayed = call && (await replay(call, p.tenantId, agentId));
    if (replayed) return replayed;
    const response = await mcp.fetch(read.request, read.parsedBody === undefined ? { authInfo } : { authInfo, parsedBody: read.parsedBody });
    const hit = call && served.get(authInfo);
    if (call && hit) keep(call, hit, response);
    return response;
  };
  return {
    handler,
    close: () => {
      closed = true;
      return mcp.close();
    },
    replayed: () => replays,
  };
}
