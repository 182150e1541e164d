/**
 * Servers and tools (doc2 §4.1, §4.2): registration with the outbound URL policy and the STDIO
 * allow-list, authConfig rules, DISABLED set and cleared by an admin, deletion with everything
 * that hangs off a server, discovery (every page; tools that disappeared are marked unavailable)
 * and per-tool configuration.
 */
import type { ForTenant } from "../../storage/scoped";
import { ApiError, conflict, notFound } from "../../core/errors";
import type { OutboundPolicy } from "../../core/outbound";
import type { Page, Listed } from "../../core/pagination";
import { uuid } from "../../core/ids";
import type { McpConfig } from "../config";
import type { WallClock } from "../ports";
import type { HealthService } from "../health/service";
import { mtlsPath } from "../upstream/auth";
import { stdioEntryName, STDIO_SCHEME, errorText, type UpstreamPool, type UpstreamTool } from "../upstream/pool";
import { iso, uniqueOr409, type AuthConfig, type AuthType, type CacheConfig, type Category, type Server, type ServerRecord, type Tool, type ToolAnnotations, type Transport } from "../types";
import { CACHEABLE, classify, defaultCacheConfig } from "./classify";
import type { RegistryStore, ServerFilter, ToolFilter, ToolRecord } from "./store";

export interface RegisterInput {
  name: string;
  description?: string;
  url: string;
  transport?: Transport;
  authType?: AuthType;
  authConfig?: AuthConfig | Record<string, unknown>;
}

export interface ToolConfigInput {
  category?: Category;
  cacheEnabled?: boolean;
  cacheTtlSecs?: number;
  semanticThreshold?: number;
  crossAgentEnabled?: boolean;
  coalescingWindowMs?: number;
}

export interface DiscoveryResult {
  serverId: string;
  toolsDiscovered: number;
  toolsAdded: number;
  toolsUpdated: number;
  /** tools no longer offered by the server, now marked `available: false` */
  toolsRemoved: number;
  tools: Tool[];
}

/** What removing a server or a tool must also clear in the tool cache (the cache part implements it). */
export interface CacheCleaner {
  dropServer(tenantId: string, serverId: string): Promise<void>;
  dropTools(tenantId: string, toolIds: string[]): Promise<void>;
}

const bad = (message: string) => new ApiError("validation_error", message);

/**
 * What a refused MCP server address is told (docs/security.md, "Outbound URLs"): the operator's
 * switch that admits such addresses, and why the providers' base URLs are not checked the same way.
 */
/** refusals the operator's switches can lift (core/outbound.ts): the ranges `allow_private` admits, and localhost names */
const ADMITTABLE = / is a (loopback|private|uniqueLocal|linkLocal|carrierGradeNat) address|is not allowed: localhost /;
export const PRIVATE_ADDRESS_HINT =
  "MCP server URLs are registered by tenants, so they must be public addresses; the operator of this gateway can admit loopback and private addresses with SVC_OUTBOUND__ALLOW_PRIVATE=true (development) or named networks with SVC_OUTBOUND__ALLOW_CIDRS. Provider base URLs (SVC_PROVIDERS__<P>__BASE_URL) are the operator's configuration, not a tenant's, and are not held to this rule";
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** an HTTP header name (RFC 9110 token) */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The API record of a server (authConfig is request-only, doc2 §2). */
export const publicServer = ({ authConfig: _a, ...s }: ServerRecord): Server => s;
/** The API record of a tool. */
export const publicTool = ({ cacheManual: _c, ...t }: ToolRecord): Tool => t;

export class RegistryService {
  constructor(
    private readonly stores: ForTenant<RegistryStore>,
    private readonly d: { outbound: OutboundPolicy; config: McpConfig; clock: WallClock; pool: UpstreamPool; health: () => HealthService; cache: () => CacheCleaner },
  ) {}

  private nowIso() {
    return iso(this.d.clock.now());
  }

  // ------------------------------------------------------------------ servers

  /**
   * authConfig against authType (doc2 §2): only the type's fields, each of its kind; secrets by
   * environment-variable name under the operator's prefix; tokenUrl through the outbound policy;
   * MTLS paths inside the operator's directory.
   */
  private async checkAuth(authType: AuthType, raw: Record<string, unknown> | AuthConfig | undefined): Promise<AuthConfig> {
    if (!raw) {
      if (authType !== "NONE") throw bad(`authConfig is required for authType ${authType}`);
      return { type: "NONE" };
    }
    const a = raw as Record<string, unknown>;
    if (a.type !== authType) throw bad(`authConfig.type (${String(a.type)}) must match authType (${authType})`);
    const allowed: Record<AuthType, string[]> = {
      NONE: ["type"],
      API_KEY: ["type", "header", "valueEnv"],
      OAUTH: ["type", "tokenUrl", "clientId", "clientSecretEnv", "scopes"],
      MTLS: ["type", "certPath", "keyPath", "caPath"],
    };
    for (const k of Object.keys(a))
      if (!allowed[authType].includes(k))
        throw bad(`authConfig.${k} does not apply to authType ${authType} (fields: ${allowed[authType].join(", ")}; secrets are named by environment variable, never sent)`);
    const text = (k: string, max: number, required: boolean, pattern?: RegExp): string | undefined => {
      const v = a[k];
      if (v === undefined) {
        if (required) throw bad(`authConfig.${k} is required for authType ${authType}`);
        return undefined;
      }
      if (typeof v !== "string" || v.length === 0 || v.length > max) throw bad(`authConfig.${k} must be a string of 1 to ${max} characters`);
      if (pattern && !pattern.test(v)) throw bad(`authConfig.${k} is not valid`);
      return v;
    };
    const envName = (k: "valueEnv" | "clientSecretEnv") => {
      const v = text(k, 256, true)!;
      if (!ENV_NAME.test(v)) throw bad(`authConfig.${k} must be an environment variable name (letters, digits, _), not a secret value`);
      if (!v.startsWith(this.d.config.secret_env_prefix)) throw bad(`authConfig.${k} must name a variable starting with ${this.d.config.secret_env_prefix} (the gateway's secret prefix)`);
      return v;
    };
    if (authType === "NONE") return { type: "NONE" };
    if (authType === "API_KEY") return { type: authType, header: text("header", 256, true, HEADER_NAME)!, valueEnv: envName("valueEnv") };
    if (authType === "OAUTH") {
      const tokenUrl = text("tokenUrl", 2048, true)!;
      const { url } = await this.d.outbound.check(tokenUrl);
      if (url.protocol !== "https:" && !this.d.outbound.allowPrivate) throw bad("authConfig.tokenUrl must be https");
      const scopes = a.scopes;
      if (scopes !== undefined && (!Array.isArray(scopes) || scopes.length > 50 || scopes.some((x) => typeof x !== "string" || x.length === 0 || x.length > 256)))
        throw bad("authConfig.scopes must be a list of at most 50 scope names");
      return { type: authType, tokenUrl, clientId: text("clientId", 256, true)!, clientSecretEnv: envName("clientSecretEnv"), ...(scopes ? { scopes: scopes as string[] } : {}) };
    }
    const out: AuthConfig = { type: authType, certPath: text("certPath", 1024, true)!, keyPath: text("keyPath", 1024, true)! };
    const caPath = text("caPath", 1024, false);
    if (caPath) out.caPath = caPath;
    mtlsPath(this.d.config.mtls_dir, out.certPath!, "certPath");
    mtlsPath(this.d.config.mtls_dir, out.keyPath!, "keyPath");
    if (caPath) mtlsPath(this.d.config.mtls_dir, caPath, "caPath");
    return out;
  }

  /** The URL rules of a transport: STDIO names an allow-listed command; HTTP/SSE pass the outbound policy. */
  private async checkUrl(transport: Transport, url: string, authType: AuthType) {
    const entry = stdioEntryName(url);
    if (transport === "STDIO") {
      if (entry === undefined) throw bad(`a STDIO server's url must be ${STDIO_SCHEME}<name> of a command the operator allow-listed`);
      if (!Object.hasOwn(this.d.config.stdio_commands, entry)) throw bad(`stdio command "${entry}" is not in the gateway's allow-list (SVC_MCP__STDIO_COMMANDS)`);
      if (authType !== "NONE") throw bad("STDIO servers take no authType (credentials go in the allow-listed command's environment)");
      return;
    }
    if (entry !== undefined) throw bad(`${STDIO_SCHEME} urls need transport STDIO`);
    try {
      await this.d.outbound.check(url);
    } catch (e) {
      // an address refusal says what would allow it and why a provider's base URL is not held to it
      if (e instanceof ApiError && e.type === "validation_error" && ADMITTABLE.test(e.message)) throw bad(`${e.message}. ${PRIVATE_ADDRESS_HINT}`);
      throw e;
    }
  }

  /** A server definition checked as registration checks it (URL policy, STDIO allow-list, authConfig). */
  async definition(input: RegisterInput): Promise<{ transport: Transport; authType: AuthType; authConfig: AuthConfig }> {
    const transport = input.transport ?? "HTTP";
    const authType = input.authType ?? "NONE";
    await this.checkUrl(transport, input.url, authType);
    return { transport, authType, authConfig: await this.checkAuth(authType, input.authConfig) };
  }

  async register(tenantId: string, input: RegisterInput): Promise<Server> {
    const { transport, authType, authConfig } = await this.definition(input);
    const store = this.stores(tenantId);
    const at = this.nowIso();
    const server: ServerRecord = {
      id: uuid(),
      name: input.name,
      description: input.description ?? "",
      url: input.url,
      transport,
      authType,
      authConfig,
      status: "PENDING",
      healthLatencyP50Ms: null,
      healthLatencyP99Ms: null,
      lastHealthCheck: null,
      lastError: null,
      createdAt: at,
      updatedAt: at,
    };
    const taken = `a server named "${input.name}" already exists`;
    await uniqueOr409(() => store.db.tx(async () => {
      if (await store.serverByName(input.name)) throw conflict(taken);
      await store.insertServer(server);
    }), taken);
    store.changed();
    return publicServer(server);
  }

  async list(tenantId: string, f: ServerFilter, p: Page): Promise<Listed<Server>> {
    const { items, total } = await this.stores(tenantId).listServers(f, p);
    return { items: items.map(publicServer), total };
  }

  async server(tenantId: string, id: string): Promise<ServerRecord> {
    const s = await this.stores(tenantId).getServer(id);
    if (!s) throw notFound("server");
    return s;
  }

  async delete(tenantId: string, id: string): Promise<ServerRecord> {
    const store = this.stores(tenantId);
    const s = await this.server(tenantId, id);
    // the cached results first (they outlive nothing: a failed delete only loses cached answers)
    await this.d.cache().dropServer(tenantId, id);
    await store.deleteServer(id); // tools, mappings, rules and connections cascade
    this.d.pool.drop(id);
    return s;
  }

  /** DISABLED is set and cleared by an admin only; a disabled server is never checked nor called. */
  async setEnabled(tenantId: string, id: string, enabled: boolean): Promise<Server> {
    const store = this.stores(tenantId);
    const s = await this.server(tenantId, id);
    if (!enabled && s.status !== "DISABLED") {
      await store.setStatus(id, "DISABLED", this.nowIso());
      this.d.pool.drop(id);
    }
    if (enabled && s.status === "DISABLED") {
      await store.reenable(id, this.nowIso()); // PENDING until a check succeeds; earlier failures are forgotten
    }
    return publicServer(await this.server(tenantId, id));
  }

  // ------------------------------------------------------------------ discovery

  /** tools/list (every page): adds new tools, updates existing ones, marks vanished ones; 500 discovery_error when it fails. */
  async discover(tenantId: string, id: string): Promise<DiscoveryResult> {
    const server = await this.server(tenantId, id);
    if (server.status === "DISABLED") throw conflict("the server is DISABLED: enable it before discovering its tools");
    const started = performance.now();
    let listed: UpstreamTool[];
    try {
      listed = await this.d.pool.listTools(server);
    } catch (e) {
      const msg = errorText(e);
      this.d.pool.drop(server.id);
      await this.d.health().record(tenantId, server.id, false, performance.now() - started, msg);
      throw new ApiError("discovery_error", `discovery of ${server.name} failed: ${msg}`);
    }
    // a successful listing is a protocol round trip: it counts as a health sample
    await this.d.health().record(tenantId, server.id, true, performance.now() - started, null);
    return this.applyDiscovery(tenantId, server.id, listed);
  }

  /** Merge a tool listing into the registry (exported for tests of the merge itself). */
  async applyDiscovery(tenantId: string, serverId: string, listed: UpstreamTool[]): Promise<DiscoveryResult> {
    const store = this.stores(tenantId);
    const at = this.nowIso();
    let added = 0;
    let updated = 0;
    let removed: string[] = [];
    const tools = await store.db.tx(async () => {
      // counted afresh by every attempt (a PostgreSQL transaction may run again)
      added = 0;
      updated = 0;
      removed = [];
      const existing = new Map((await store.toolsOfServer(serverId)).map((t) => [t.name, t]));
      const seen = new Set<string>();
      const out: ToolRecord[] = [];
      for (const u of listed) {
        if (seen.has(u.name)) continue; // a server listing one name twice: the first wins
        seen.add(u.name);
        const annotations = annotationsOf(u.annotations);
        const description = u.description ?? "";
        const inputSchema = u.inputSchema && typeof u.inputSchema === "object" ? u.inputSchema : { type: "object" };
        const old = existing.get(u.name);
        if (!old) {
          const c = classify({ name: u.name, description, annotations });
          const t: ToolRecord = {
            id: uuid(),
            serverId,
            name: u.name,
            description,
            inputSchema,
            annotations,
            category: c.category,
            categoryConfidence: c.confidence,
            categoryManualOverride: false,
            cacheConfig: defaultCacheConfig(c.category),
            cacheManual: false,
            available: true,
            lastDiscoveredAt: at,
            createdAt: at,
            updatedAt: at,
          };
          await store.insertTool(t);
          added++;
          out.push(t);
          continue;
        }
        const t: ToolRecord = { ...old, description, inputSchema, annotations, available: true, lastDiscoveredAt: at, updatedAt: at };
        if (!old.categoryManualOverride) {
          const c = classify({ name: u.name, description, annotations });
          Object.assign(t, recategorised(old, c.category), { categoryConfidence: c.confidence });
        }
        await store.updateTool(t);
        updated++;
        out.push(t);
      }
      for (const old of existing.values())
        if (!seen.has(old.name) && old.available) {
          await store.updateTool({ ...old, available: false, updatedAt: at });
          removed.push(old.id);
        }
      return out;
    });
    store.changed();
    if (removed.length) await this.d.cache().dropTools(tenantId, removed);
    return { serverId, toolsDiscovered: tools.length, toolsAdded: added, toolsUpdated: updated, toolsRemoved: removed.length, tools: tools.map(publicTool) };
  }

  // ------------------------------------------------------------------ tools

  async listTools(tenantId: string, f: ToolFilter, p: Page): Promise<Listed<Tool>> {
    const { items, total } = await this.stores(tenantId).listTools(f, p);
    return { items: items.map(publicTool), total };
  }

  async tool(tenantId: string, id: string): Promise<ToolRecord> {
    const t = await this.stores(tenantId).getTool(id);
    if (!t) throw notFound("tool");
    return t;
  }

  /**
   * PATCH …/config: a category sets categoryManualOverride (auto-classification no longer
   * applies); cache fields mark the cacheConfig as set by hand. Only READ and IDEMPOTENT tools may
   * have their cache enabled; changing a tool to WRITE/UNKNOWN turns its cache off.
   */
  async configure(tenantId: string, id: string, input: ToolConfigInput): Promise<Tool> {
    const store = this.stores(tenantId);
    const out = await store.db.tx(async () => {
      const t = await this.tool(tenantId, id);
      let next: ToolRecord = { ...t, updatedAt: this.nowIso() };
      if (input.category !== undefined) next = { ...next, ...recategorised(next, input.category), categoryConfidence: 1, categoryManualOverride: true };
      const cache: Partial<CacheConfig> = {};
      if (input.cacheEnabled !== undefined) cache.enabled = input.cacheEnabled;
      if (input.cacheTtlSecs !== undefined) cache.ttlSecs = input.cacheTtlSecs;
      if (input.semanticThreshold !== undefined) cache.semanticThreshold = input.semanticThreshold;
      if (input.crossAgentEnabled !== undefined) cache.crossAgent = input.crossAgentEnabled;
      if (input.coalescingWindowMs !== undefined) cache.coalescingWindowMs = input.coalescingWindowMs;
      if (Object.keys(cache).length) next = { ...next, cacheConfig: { ...next.cacheConfig, ...cache }, cacheManual: true };
      if (next.cacheConfig.enabled && !CACHEABLE.includes(next.category))
        throw bad(`the cache can be enabled only for READ or IDEMPOTENT tools (this tool is ${next.category})`);
      if (next.category === "WRITE" && next.cacheConfig.coalescingWindowMs > 0 && input.coalescingWindowMs !== undefined)
        throw bad("WRITE tools are never coalesced (coalescingWindowMs must be 0)");
      await store.updateTool(next);
      return next;
    });
    store.changed();
    if (!out.cacheConfig.enabled) await this.d.cache().dropTools(tenantId, [id]);
    return publicTool(out);
  }
}

/** A tool moved to another category: its cacheConfig follows the category's defaults unless set by hand; WRITE/UNKNOWN never cache. */
export function recategorised(t: ToolRecord, category: Category): Pick<ToolRecord, "category" | "cacheConfig"> {
  if (category === t.category) return { category, cacheConfig: t.cacheConfig };
  if (!t.cacheManual) return { category, cacheConfig: defaultCacheConfig(category) };
  const cacheConfig = CACHEABLE.includes(category) ? t.cacheConfig : { ...t.cacheConfig, enabled: false, coalescingWindowMs: category === "WRITE" ? 0 : t.cacheConfig.coalescingWindowMs };
  return { category, cacheConfig };
}

function annotationsOf(a: Record<string, unknown> | undefined): ToolAnnotations | null {
  if (!a || typeof a !== "object") return null;
  const out: ToolAnnotations = {};
  if (typeof a.title === "string") out.title = a.title;
  for (const k of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const) if (typeof a[k] === "boolean") out[k] = a[k] as boolean;
  return Object.keys(out).length ? out : null;
}
