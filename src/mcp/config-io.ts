/**
 * Configuration as YAML (doc2 §4.6): export, and an import that applies such a document — users
 * keep this file in git. Export → import into an empty tenant → export gives the same document.
 *
 *   servers:  [{name, url, transport, auth: {type, header, valueEnv}}]   (description when not empty;
 *              OAUTH/MTLS auth carries its own fields: tokenUrl, clientId, clientSecretEnv, scopes /
 *              certPath, keyPath, caPath — env-var names and paths, never secrets)
 *   tools:    {<tool name>: {category: read, cache: {enabled, ttlSecs, semanticThreshold, crossAgent},
 *              entities: [{param, type}]}}
 *   entities: {<entity name>: {parent: <name>} | {}}
 *
 * Only where those keys cannot say everything does an entry carry more (so the common document is
 * exactly the spec's, and nothing is lost): `server` on every tool when the tenant has several
 * servers (a tool key is `<server>/<tool>` when two servers offer the same name);
 * `cache.coalescingWindowMs` when it is not the category's default; `operation` on an entity item
 * when it is not the one the category implies (WRITE tools write, others read); `invalidates`
 * (the rules: tool keys, `{tool, enabled: false}` for a disabled rule) on a rule's write tool;
 * `description` on an entity or server when it is not empty.
 *
 * Import merges: servers, entities and tools are matched by name and created or updated; a tool
 * listed in the file gets exactly the file's mappings and rules. A tool not discovered yet is
 * created unavailable (not callable) and completed by the next discovery. Categories and cache
 * settings from a file count as set by hand (discovery keeps them). All or nothing: any error is a
 * 400 naming the entry, and nothing is applied.
 */
import * as YAML from "yaml";
import { load as loadYaml, CORE_SCHEMA } from "js-yaml";
import type { ForTenant } from "../storage/scoped";
import { ApiError } from "../core/errors";
import { boundedParse, YAML_FLOW_NESTING } from "../core/validation";
import { uuid } from "../core/ids";
import type { WallClock } from "./ports";
import type { RegistryStore, ToolRecord } from "./registry/store";
import type { EntityStore } from "./entities/store";
import { defaultCacheConfig } from "./registry/classify";
import type { RegistryService } from "./registry/service";
import type { UpstreamPool } from "./upstream/pool";
import { AUTH_TYPES, CATEGORIES, COALESCE_MAX, TRANSPORTS, TTL_MAX, iso, type AuthConfig, type AuthType, type CacheConfig, type Category, type ServerRecord, type Transport } from "./types";

type Obj = Record<string, unknown>;

/**
 * Bounds of an imported document, checked before parsing: 1 MiB, 32 nested flow collections (the
 * document's own shape nests 6), 20,000 lines and list items (a tenant with 1,000 tools exports ~10,000).
 */
export const IMPORT_BOUNDS = { what: "configuration", maxBytes: 1_048_576, maxDepth: 32, syntax: YAML_FLOW_NESTING, maxEntries: 20_000, separators: "\n," };

const bad = (where: string, m: string) => new ApiError("validation_error", `config ${where}: ${m}`);
const isObj = (v: unknown): v is Obj => !!v && typeof v === "object" && !Array.isArray(v);

const impliedOperation = (c: Category) => (c === "WRITE" ? "WRITE" : "READ");

export class ConfigIO {
  constructor(
    private readonly registry: ForTenant<RegistryStore>,
    private readonly entities: ForTenant<EntityStore>,
    private readonly service: RegistryService,
    private readonly pool: UpstreamPool,
    private readonly clock: WallClock,
  ) {}

  // ------------------------------------------------------------------ export

  async document(tenantId: string): Promise<Obj> {
    const reg = this.registry(tenantId);
    const es = this.entities(tenantId);
    const servers = (await reg.allServers()).sort((a, b) => a.name.localeCompare(b.name));
    const serverName = new Map(servers.map((s) => [s.id, s.name]));
    const tools = await reg.allTools();
    const entities = await es.all();
    const entityName = new Map(entities.map((e) => [e.id, e.name]));
    const nameCount = new Map<string, number>();
    for (const t of tools) nameCount.set(t.name, (nameCount.get(t.name) ?? 0) + 1);
    const keyOf = (t: ToolRecord) => (nameCount.get(t.name)! > 1 ? `${serverName.get(t.serverId)}/${t.name}` : t.name);
    const toolById = new Map(tools.map((t) => [t.id, t]));
    const mappings = await es.allMappings();
    const rules = await es.allRules();

    const toolsOut: Obj = {};
    for (const t of [...tools].sort((a, b) => keyOf(a).localeCompare(keyOf(b)))) {
      const entry: Obj = {};
      if (servers.length > 1) entry.server = serverName.get(t.serverId);
      entry.category = t.category.toLowerCase();
      const cache: Obj = { enabled: t.cacheConfig.enabled, ttlSecs: t.cacheConfig.ttlSecs, semanticThreshold: t.cacheConfig.semanticThreshold, crossAgent: t.cacheConfig.crossAgent };
      if (t.cacheConfig.coalescingWindowMs !== defaultCacheConfig(t.category).coalescingWindowMs) cache.coalescingWindowMs = t.cacheConfig.coalescingWindowMs;
      entry.cache = cache;
      entry.entities = mappings
        .filter((m) => m.toolId === t.id)
        .map((m) => {
          const item: Obj = { param: m.paramName, type: entityName.get(m.entityId) };
          if (m.operation !== impliedOperation(t.category)) item.operation = m.operation.toLowerCase();
          return item;
        })
        .sort((a, b) => String(a.type).localeCompare(String(b.type)));
      const inv = rules
        .filter((r) => r.writeToolId === t.id && toolById.has(r.invalidateToolId))
        .map((r) => ({ key: keyOf(toolById.get(r.invalidateToolId)!), enabled: r.enabled }))
        .sort((a, b) => a.key.localeCompare(b.key))
        .map((r) => (r.enabled ? r.key : { tool: r.key, enabled: false }));
      if (inv.length) entry.invalidates = inv;
      toolsOut[keyOf(t)] = entry;
    }

    const entitiesOut: Obj = {};
    for (const e of [...entities].sort((a, b) => a.name.localeCompare(b.name))) {
      const entry: Obj = {};
      if (e.parentId && entityName.has(e.parentId)) entry.parent = entityName.get(e.parentId);
      if (e.description) entry.description = e.description;
      entitiesOut[e.name] = entry;
    }

    return {
      servers: servers.map((s) => {
        const out: Obj = { name: s.name };
        if (s.description) out.description = s.description;
        out.url = s.url;
        out.transport = s.transport;
        out.auth = authOut(s.authConfig);
        return out;
      }),
      tools: toolsOut,
      entities: entitiesOut,
    };
  }

  async exportYaml(tenantId: string): Promise<string> {
    return YAML.stringify(await this.document(tenantId), { lineWidth: 0 });
  }

  // ------------------------------------------------------------------ import

  /**
   * Apply a YAML (or JSON) document; all or nothing. The text is bounded before it is parsed
   * (IMPORT_BOUNDS) and parsed by js-yaml, whose own depth bound backs the scan up and whose cost
   * is linear (the `yaml` package, kept for export, spent seconds on 100 KB of keys).
   */
  async importText(tenantId: string, text: string) {
    const doc = boundedParse(text, IMPORT_BOUNDS, (t) => {
      try {
        return loadYaml(t, { schema: CORE_SCHEMA, maxDepth: IMPORT_BOUNDS.maxDepth, maxAliases: 100 });
      } catch (e) {
        const first = (e as Error).message.split("\n")[0]!;
        // the parser's own depth bound (block nesting, which the scan cannot see) in the scan's words
        if (first.includes("maxDepth")) throw new ApiError("validation_error", `configuration nests deeper than ${IMPORT_BOUNDS.maxDepth} levels`);
        throw new ApiError("validation_error", `config: not valid YAML: ${first}`);
      }
    });
    if (!isObj(doc)) throw new ApiError("validation_error", "config: expected a mapping with servers, tools and entities");
    return this.apply(tenantId, doc);
  }

  async apply(tenantId: string, doc: Obj) {
    for (const k of Object.keys(doc)) if (!["servers", "tools", "entities"].includes(k)) throw bad(k, "unknown top-level key (expected servers, tools, entities)");
    const servers = await this.parseServers(doc.servers);
    const entities = parseEntities(doc.entities);
    const reg = this.registry(tenantId);
    const es = this.entities(tenantId);
    const nowMs = this.clock.now();
    const at = iso(nowMs);
    const fresh = () => ({ serversCreated: 0, serversUpdated: 0, entitiesCreated: 0, entitiesUpdated: 0, toolsCreated: 0, toolsUpdated: 0, mappings: 0, rules: 0 });
    let counts = fresh();
    let dropped: string[] = [];

    await reg.db.tx(async () => {
      // counted afresh by every attempt (a PostgreSQL transaction may run again)
      counts = fresh();
      dropped = [];
      // servers
      for (const s of servers) {
        const old = await reg.serverByName(s.name);
        if (!old) {
          await reg.insertServer({ id: uuid(), ...s, status: "PENDING", healthLatencyP50Ms: null, healthLatencyP99Ms: null, lastHealthCheck: null, lastError: null, createdAt: at, updatedAt: at });
          counts.serversCreated++;
        } else if (old.url !== s.url || old.transport !== s.transport || JSON.stringify(old.authConfig) !== JSON.stringify(s.authConfig) || old.description !== s.description) {
          await reg.updateServerDefinition({ ...old, ...s, updatedAt: at });
          dropped.push(old.id);
          counts.serversUpdated++;
        }
      }
      // entities: create all, then parents (a parent may come later in the file)
      for (const e of entities) {
        const old = await es.byName(e.name);
        if (!old) {
          await es.insert({ id: uuid(), name: e.name, description: e.description, parentId: null, createdAt: at, updatedAt: at });
          counts.entitiesCreated++;
        }
      }
      for (const e of entities) {
        const cur = (await es.byName(e.name))!;
        const parentId = e.parent === null ? null : ((await es.byName(e.parent))?.id ?? null);
        if (e.parent !== null && parentId === null) throw bad(`entities.${e.name}.parent`, `unknown entity "${e.parent}"`);
        if (parentId && (await es.withDescendants(cur.id)).includes(parentId)) throw bad(`entities.${e.name}.parent`, "a parent cycle");
        if (cur.parentId !== parentId || cur.description !== e.description) {
          await es.update({ ...cur, parentId, description: e.description, updatedAt: at });
          if (cur.createdAt !== at) counts.entitiesUpdated++;
        }
      }
      // tools
      const allServers = await reg.allServers();
      const tools = parseTools(doc.tools, allServers, new Set(servers.map((s) => s.name)));
      const byKey = new Map<string, ToolRecord>();
      for (const t of tools) {
        const server = allServers.find((s) => s.name === t.server)!;
        const old = (await reg.toolsOfServer(server.id)).find((x) => x.name === t.name);
        const rec: ToolRecord = old
          ? { ...old, category: t.category, categoryConfidence: 1, categoryManualOverride: true, cacheConfig: t.cache, cacheManual: true, updatedAt: at }
          : {
              id: uuid(),
              serverId: server.id,
              name: t.name,
              description: "",
              inputSchema: { type: "object" },
              annotations: null,
              category: t.category,
              categoryConfidence: 1,
              categoryManualOverride: true,
              cacheConfig: t.cache,
              cacheManual: true,
              available: false,
              lastDiscoveredAt: null,
              createdAt: at,
              updatedAt: at,
            };
        if (old) {
          await reg.updateTool(rec);
          counts.toolsUpdated++;
        } else {
          await reg.insertTool(rec);
          counts.toolsCreated++;
        }
        byKey.set(t.key, rec);
      }
      // mappings and rules of the listed tools: exactly the file's
      for (const t of tools) {
        const rec = byKey.get(t.key)!;
        for (const m of await es.mappingsOfTool(rec.id)) await es.deleteMapping(rec.id, m.entityId);
        for (const m of t.entities) {
          const entity = await es.byName(m.type);
          if (!entity) throw bad(`tools.${t.key}.entities`, `unknown entity type "${m.type}"`);
          await es.upsertMapping({ toolId: rec.id, entityId: entity.id, paramName: m.param, operation: m.operation ?? impliedOperation(rec.category), createdAt: at });
          counts.mappings++;
        }
        for (const r of (await es.allRules()).filter((r) => r.writeToolId === rec.id)) await es.deleteRule(r.id);
        for (const inv of t.invalidates) {
          const target = byKey.get(inv.tool) ?? (await findToolByKey(reg, allServers, inv.tool));
          if (!target) throw bad(`tools.${t.key}.invalidates`, `unknown tool "${inv.tool}"`);
          if (target.id === rec.id) throw bad(`tools.${t.key}.invalidates`, "a tool cannot invalidate itself");
          await es.insertRule({ id: uuid(), writeToolId: rec.id, invalidateToolId: target.id, enabled: inv.enabled, createdAt: at });
          counts.rules++;
        }
      }
    });
    reg.changed();
    for (const id of dropped) this.pool.drop(id);
    return { ...counts, message: `applied ${servers.length} server(s), ${entities.length} entit${entities.length === 1 ? "y" : "ies"}, ${counts.toolsCreated + counts.toolsUpdated} tool(s)` };
  }

  private async parseServers(v: unknown): Promise<Array<Pick<ServerRecord, "name" | "description" | "url" | "transport" | "authType" | "authConfig">>> {
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) throw bad("servers", "expected a list");
    const out = [];
    const names = new Set<string>();
    for (const [i, s] of v.entries()) {
      const where = `servers[${i}]`;
      if (!isObj(s)) throw bad(where, "expected a mapping");
      for (const k of Object.keys(s)) if (!["name", "description", "url", "transport", "auth"].includes(k)) throw bad(`${where}.${k}`, "unknown key");
      const name = str(s.name, `${where}.name`, 128);
      if (names.has(name)) throw bad(`${where}.name`, `"${name}" appears twice`);
      names.add(name);
      const url = str(s.url, `${where}.url`, 2048);
      const transport = (s.transport ?? "HTTP") as Transport;
      if (!TRANSPORTS.includes(transport)) throw bad(`${where}.transport`, `expected one of ${TRANSPORTS.join(", ")}`);
      const auth = (s.auth ?? { type: "NONE" }) as Obj;
      if (!isObj(auth)) throw bad(`${where}.auth`, "expected a mapping");
      const authType = String(auth.type ?? "NONE").toUpperCase() as AuthType;
      if (!AUTH_TYPES.includes(authType)) throw bad(`${where}.auth.type`, `expected one of ${AUTH_TYPES.join(", ")}`);
      const authConfig = { ...auth, type: authType } as AuthConfig;
      const description = s.description === undefined ? "" : str(s.description, `${where}.description`, 2000, true);
      try {
        const def = await this.service.definition({ name, url, transport, authType, authConfig });
        out.push({ name, description, url, ...def });
      } catch (e) {
        if (e instanceof ApiError) throw bad(where, e.message);
        throw e;
      }
    }
    return out;
  }
}

function authOut(a: AuthConfig): Obj {
  const out: Obj = { type: a.type };
  for (const k of ["header", "valueEnv", "tokenUrl", "clientId", "clientSecretEnv", "scopes", "certPath", "keyPath", "caPath"] as const) if (a[k] !== undefined) out[k] = a[k];
  return out;
}

function str(v: unknown, where: string, max: number, allowEmpty = false): string {
  if (typeof v !== "string" || (!allowEmpty && v.length === 0)) throw bad(where, "expected a non-empty string");
  if (v.length > max) throw bad(where, `longer than ${max} characters`);
  return v;
}

function parseEntities(v: unknown): Array<{ name: string; parent: string | null; description: string }> {
  if (v === undefined || v === null) return [];
  if (!isObj(v)) throw bad("entities", "expected a mapping from entity name to {parent}");
  return Object.entries(v).map(([name, e]) => {
    const where = `entities.${name}`;
    if (name.length === 0 || name.length > 128) throw bad(where, "an entity name has 1 to 128 characters");
    const entry = e ?? {};
    if (!isObj(entry)) throw bad(where, "expected a mapping ({} or {parent: <name>})");
    for (const k of Object.keys(entry)) if (!["parent", "description"].includes(k)) throw bad(`${where}.${k}`, "unknown key");
    const parent = entry.parent === undefined || entry.parent === null ? null : str(entry.parent, `${where}.parent`, 128);
    if (parent === name) throw bad(`${where}.parent`, "an entity cannot be its own parent");
    return { name, parent, description: entry.description === undefined ? "" : str(entry.description, `${where}.description`, 2000, true) };
  });
}

interface ToolEntry {
  key: string;
  server: string;
  name: string;
  category: Category;
  cache: CacheConfig;
  entities: Array<{ param: string; type: string; operation?: "READ" | "WRITE" }>;
  invalidates: Array<{ tool: string; enabled: boolean }>;
}

function parseTools(v: unknown, servers: ServerRecord[], inFile: Set<string>): ToolEntry[] {
  if (v === undefined || v === null) return [];
  if (!isObj(v)) throw bad("tools", "expected a mapping from tool name to its configuration");
  const serverNames = new Set(servers.map((s) => s.name));
  return Object.entries(v).map(([key, e]) => {
    const where = `tools.${key}`;
    if (!isObj(e)) throw bad(where, "expected a mapping");
    for (const k of Object.keys(e)) if (!["server", "category", "cache", "entities", "invalidates"].includes(k)) throw bad(`${where}.${k}`, "unknown key");
    let server: string;
    let name = key;
    const slash = key.indexOf("/");
    if (e.server !== undefined) server = str(e.server, `${where}.server`, 128);
    else if (slash > 0 && serverNames.has(key.slice(0, slash))) server = key.slice(0, slash);
    else if (inFile.size === 1) server = [...inFile][0]!;
    else if (servers.length === 1) server = servers[0]!.name;
    else throw bad(where, "name the tool's server (`server: <name>`): the configuration has several servers");
    if (slash > 0 && key.slice(0, slash) === server) name = key.slice(slash + 1);
    if (!serverNames.has(server)) throw bad(`${where}.server`, `unknown server "${server}"`);
    const category = String(e.category ?? "unknown").toUpperCase() as Category;
    if (!CATEGORIES.includes(category)) throw bad(`${where}.category`, `expected one of ${CATEGORIES.map((c) => c.toLowerCase()).join(", ")}`);
    const cache = cacheOf(e.cache, category, `${where}.cache`);
    const entities = listOf(e.entities, `${where}.entities`).map((m, i) => {
      const w = `${where}.entities[${i}]`;
      if (!isObj(m)) throw bad(w, "expected {param, type}");
      for (const k of Object.keys(m)) if (!["param", "type", "operation"].includes(k)) throw bad(`${w}.${k}`, "unknown key");
      const op = m.operation === undefined ? undefined : String(m.operation).toUpperCase();
      if (op !== undefined && op !== "READ" && op !== "WRITE") throw bad(`${w}.operation`, "expected read or write");
      return { param: str(m.param, `${w}.param`, 256), type: str(m.type, `${w}.type`, 128), operation: op as "READ" | "WRITE" | undefined };
    });
    const invalidates = listOf(e.invalidates, `${where}.invalidates`).map((r, i) => {
      const w = `${where}.invalidates[${i}]`;
      if (typeof r === "string") return { tool: r, enabled: true };
      if (!isObj(r) || typeof r.tool !== "string") throw bad(w, "expected a tool name or {tool, enabled}");
      if (r.enabled !== undefined && typeof r.enabled !== "boolean") throw bad(`${w}.enabled`, "expected true or false");
      return { tool: r.tool, enabled: r.enabled !== false };
    });
    return { key, server, name, category, cache, entities, invalidates };
  });
}

function listOf(v: unknown, where: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw bad(where, "expected a list");
  return v;
}

function cacheOf(v: unknown, category: Category, where: string): CacheConfig {
  const d = defaultCacheConfig(category);
  if (v === undefined || v === null) return d;
  if (!isObj(v)) throw bad(where, "expected a mapping");
  for (const k of Object.keys(v)) if (!["enabled", "ttlSecs", "semanticThreshold", "crossAgent", "coalescingWindowMs"].includes(k)) throw bad(`${where}.${k}`, "unknown key");
  const bool = (x: unknown, k: string, def: boolean) => {
    if (x === undefined) return def;
    if (typeof x !== "boolean") throw bad(`${where}.${k}`, "expected true or false");
    return x;
  };
  const int = (x: unknown, k: string, def: number, min: number, max: number) => {
    if (x === undefined) return def;
    if (typeof x !== "number" || !Number.isInteger(x) || x < min || x > max) throw bad(`${where}.${k}`, `expected an integer from ${min} to ${max}`);
    return x;
  };
  const threshold = v.semanticThreshold === undefined ? d.semanticThreshold : v.semanticThreshold;
  if (typeof threshold !== "number" || threshold < 0 || threshold > 1) throw bad(`${where}.semanticThreshold`, "expected a number from 0.0 to 1.0");
  const c: CacheConfig = {
    enabled: bool(v.enabled, "enabled", d.enabled),
    ttlSecs: int(v.ttlSecs, "ttlSecs", d.ttlSecs, 1, TTL_MAX),
    semanticThreshold: threshold,
    crossAgent: bool(v.crossAgent, "crossAgent", d.crossAgent),
    coalescingWindowMs: int(v.coalescingWindowMs, "coalescingWindowMs", d.coalescingWindowMs, 0, COALESCE_MAX),
  };
  if (c.enabled && category !== "READ" && category !== "IDEMPOTENT") throw bad(`${where}.enabled`, `the cache can be enabled only for read or idempotent tools`);
  if (category === "WRITE" && c.coalescingWindowMs > 0) throw bad(`${where}.coalescingWindowMs`, "write tools are never coalesced");
  return c;
}

async function findToolByKey(reg: RegistryStore, servers: ServerRecord[], key: string): Promise<ToolRecord | undefined> {
  const slash = key.indexOf("/");
  if (slash > 0) {
    const s = servers.find((x) => x.name === key.slice(0, slash));
    const hit = s && (await reg.toolsOfServer(s.id)).find((t) => t.name === key.slice(slash + 1));
    if (hit) return hit;
  }
  const all = (await reg.allTools()).filter((t) => t.name === key);
  return all.length === 1 ? all[0] : undefined;
}
