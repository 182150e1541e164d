/**
 * The tool-result cache: exact and semantic lookup, storing results, write-invalidates-read with
 * the entity cascade, and the /api/v1/tool-cache operations (search, get, stats, invalidate,
 * metrics).
 *
 * Invalidation never races a store: each tenant has an epoch bumped by every invalidation; a
 * miss remembers the epoch before it calls upstream and its result is not stored when the epoch
 * moved meanwhile (a WRITE that ran during a READ's upstream call may have made it stale).
 */
import type { ForTenant } from "../../storage/scoped";
import type { AsyncStorage } from "../../storage/async";
import { ApiError, notFound } from "../../core/errors";
import type { Logger } from "../../core/log";
import { dot, l2normalize } from "../../core/vectors";
import type { McpConfig } from "../config";
import type { Embedder, WallClock } from "../ports";
import type { EventHub } from "../events";
import type { EntityStore } from "../entities/store";
import type { RegistryStore, ToolRecord } from "../registry/store";
import type { CallStore } from "../calls/store";
import { defaultCacheConfig } from "../registry/classify";
import { iso, CATEGORIES, type Entity } from "../types";
import { argsTextOf, entityValue, storableKey, valueAt } from "./key";
import type { CacheEntry, Removed, Tag, ToolCacheStore } from "./store";
import type { ToolVectors } from "./vectors";
import { TOPICS, type Bus } from "../../core/hotstate";

export interface SemanticHit {
  entry: CacheEntry;
  similarity: number;
}

export interface InvalidationCause {
  /** what triggered it: a tool execution (rules and entity mappings), the API, an entity deletion */
  reason: "write" | "manual" | "entity_deleted" | "config";
  toolId?: string;
  toolName?: string;
}

/** A cache entry as the API shows it. */
export interface EntryView {
  cacheKey: bigint;
  toolId: string;
  toolName: string | null;
  serverId: string;
  agentId: string | null;
  arguments: unknown;
  result: unknown;
  createdAt: string;
  expiresAt: string;
  ttlSecs: number;
  accessCount: number;
  lastAccessedAt: string | null;
  upstreamLatencyMs: number;
  sizeBytes: number;
  entities: Array<{ entityId: string; entityType: string | null; value: string | null }>;
}

export interface SearchInput {
  queryEmbedding?: number[];
  queryText?: string;
  limit?: number;
  threshold?: number;
  toolId?: string;
  serverId?: string;
}

export interface ToolCacheDeps {
  storage: AsyncStorage;
  stores: ForTenant<ToolCacheStore>;
  entities: ForTenant<EntityStore>;
  registry: ForTenant<RegistryStore>;
  /** a tenant's call records, its queued ones written first */
  calls: ForTenant<Promise<CallStore>>;
  /** the call log (calls/log.ts): its queued hit counts are written before an entry is shown */
  callLog: { flush(tenantId: string): Promise<void> };
  vectors: ToolVectors;
  embedder: Embedder;
  clock: WallClock;
  events: EventHub;
  config: McpConfig;
  log: Logger;
  /** several replicas: invalidations reach every replica's epochs and indexes (absent on a single node) */
  bus?: Bus;
}

const SEMANTIC_CANDIDATES = 8;

export class ToolCache {
  private readonly epochs = new Map<string, number>();
  /** bumped for every tenant at once (a bus outage: invalidations of other replicas may have been missed) */
  private everyone = 0;

  constructor(private readonly d: ToolCacheDeps) {
    d.bus?.subscribe(TOPICS.mcpToolCache, (payload) => {
      if (!payload) {
        this.everyone++;
        // additions of other replicas may have been missed too: indexes rebuild from the database on next use
        this.d.vectors.clear();
        return;
      }
      const m = JSON.parse(payload) as { t: string; b?: 1; r?: Array<[string, number]>; a?: [string, string, number, string] };
      if (m.b) this.epochs.set(m.t, (this.epochs.get(m.t) ?? 0) + 1);
      if (m.r) this.d.vectors.remove(m.t, m.r.map(([toolId, vecKey]) => ({ toolId, vecKey }) as Removed));
      if (m.a && m.a[1] === this.d.embedder.id) this.d.vectors.add(this.d.stores(m.t), m.a[0], m.a[1], m.a[2], vectorOfBase64(m.a[3]));
    });
  }

  epoch(tenantId: string): number {
    return (this.epochs.get(tenantId) ?? 0) + this.everyone;
  }

  /**
   * An invalidation begins: a read in flight (here, or on another replica through the bus) must not
   * store its result. The bus delivers to this replica synchronously, so there is one path.
   */
  private bump(tenantId: string) {
    if (this.d.bus) this.d.bus.publish(TOPICS.mcpToolCache, JSON.stringify({ t: tenantId, b: 1 }));
    else this.epochs.set(tenantId, (this.epochs.get(tenantId) ?? 0) + 1);
  }

  // ------------------------------------------------------------------ lookup and store

  /** A live entry under the key (an expired one is removed on the way). */
  async exact(tenantId: string, key: bigint): Promise<CacheEntry | undefined> {
    if (!storableKey(key)) return undefined;
    const store = this.d.stores(tenantId);
    const e = await store.get(key);
    if (!e) return undefined;
    if (e.expiresAtMs <= this.d.clock.now()) {
      this.d.vectors.remove(tenantId, await store.removeKeys([key]));
      return undefined;
    }
    return e;
  }

  /** Embed a call's argument text (undefined when the embedder is not ready or fails: lookups fall back to exact only). */
  async embedArgs(toolName: string, args: Record<string, unknown>): Promise<Float32Array | undefined> {
    if (!this.d.embedder.isReady()) return undefined;
    try {
      return (await this.d.embedder.embed([argsTextOf(toolName, args)]))[0];
    } catch (e) {
      this.d.log.warn("mcp tool cache: embedding failed, exact lookup only", { error: (e as Error).message });
      return undefined;
    }
  }

  /** The most similar live entry of the same tool, agent scope and argument structure, at or above the threshold. */
  async semantic(tenantId: string, tool: ToolRecord, agentScope: string, structKey: string, query: Float32Array, threshold: number): Promise<SemanticHit | undefined> {
    const store = this.d.stores(tenantId);
    const neighbours = await this.d.vectors.search(store, tool.id, this.d.embedder.id, query, SEMANTIC_CANDIDATES);
    if (!neighbours.length) return undefined;
    const now = this.d.clock.now();
    let best: SemanticHit | undefined;
    for (const e of await store.byVecKeys(neighbours.map((n) => n.key))) {
      if (e.agentScope !== agentScope || e.structKey !== structKey || e.expiresAtMs <= now || e.embedderId !== this.d.embedder.id) continue;
      const vec = await store.vectorOf(e.vecKey);
      if (!vec) continue;
      const similarity = dot(query, vec);
      if (similarity >= threshold && (!best || similarity > best.similarity)) best = { entry: e, similarity };
    }
    return best;
  }

  /**
   * Store a result (never an error). Tags come from the tool's READ mappings: the mapped
   * parameter's value, or the entity in general when the call lacks the parameter. Returns false
   * when nothing was stored (too large, or an invalidation happened since `epoch`).
   */
  async store(
    tenantId: string,
    tool: ToolRecord,
    call: { key: bigint; args: Record<string, unknown>; canonicalArgs: string; agentScope: string; structKey: string; result: unknown; upstreamMs: number; epoch: number; vector?: Float32Array },
  ): Promise<boolean> {
    if (this.epoch(tenantId) !== call.epoch) return false;
    const resultJson = JSON.stringify(call.result);
    if (resultJson.length > this.d.config.max_result_bytes) return false;
    const tags: Tag[] = (await this.d.entities(tenantId).mappingsOfTool(tool.id))
      .filter((m) => m.operation === "READ")
      .map((m) => ({ entityId: m.entityId, value: entityValue(valueAt(call.args, m.paramName)) }));
    const now = this.d.clock.now();
    const store = this.d.stores(tenantId);
    // an invalidation that ran while the mappings were read makes the result possibly stale
    if (this.epoch(tenantId) !== call.epoch) return false;
    await store.put(
      {
        cacheKey: call.key,
        serverId: tool.serverId,
        toolId: tool.id,
        agentScope: call.agentScope,
        argsJson: call.canonicalArgs,
        structKey: call.structKey,
        resultJson,
        createdAtMs: now,
        expiresAtMs: now + tool.cacheConfig.ttlSecs * 1000,
        upstreamMs: call.upstreamMs,
      },
      tags,
    );
    // the lookup's vector when semantic lookup ran; otherwise the entry is embedded when a search needs it
    if (call.vector) await this.attachVector(tenantId, tool.id, call.key, call.vector);
    return true;
  }

  private async attachVector(tenantId: string, toolId: string, key: bigint, vec: Float32Array) {
    const store = this.d.stores(tenantId);
    const vecKey = await store.setVector(key, this.d.embedder.id, vec);
    if (vecKey === undefined) return;
    // several replicas: every replica's loaded index of the tool learns the entry (semantic hits through any of them)
    if (this.d.bus) this.d.bus.publish(TOPICS.mcpToolCache, JSON.stringify({ t: tenantId, a: [toolId, this.d.embedder.id, vecKey, base64OfVector(vec)] }));
    else this.d.vectors.add(store, toolId, this.d.embedder.id, vecKey, vec);
  }

  /**
   * Embed the tenant's entries that have no vector yet (search by text or vector needs every
   * entry's). Done here, not when a result is stored, so a miss never pays for an embedding.
   */
  async embedMissing(tenantId: string, batch = 64): Promise<number> {
    const store = this.d.stores(tenantId);
    const names = new Map<string, string>();
    let n = 0;
    for (;;) {
      const rows = await store.unembedded(this.d.embedder.id, this.d.clock.now(), batch);
      if (!rows.length) return n;
      for (const r of rows) if (!names.has(r.toolId)) names.set(r.toolId, (await this.d.registry(tenantId).getTool(r.toolId))?.name ?? "");
      const vecs = await this.d.embedder.embed(rows.map((r) => argsTextOf(names.get(r.toolId)!, JSON.parse(r.argsJson))));
      for (const [i, r] of rows.entries()) await this.attachVector(tenantId, r.toolId, r.cacheKey, vecs[i]!);
      n += rows.length;
      if (rows.length < batch) return n;
    }
  }

  // ------------------------------------------------------------------ invalidation

  private removed(tenantId: string, removed: Removed[]): number {
    if (this.d.bus && removed.length) this.d.bus.publish(TOPICS.mcpToolCache, JSON.stringify({ t: tenantId, r: removed.map((r) => [r.toolId, r.vecKey]) }));
    else this.d.vectors.remove(tenantId, removed);
    return removed.length;
  }

  /** Drop every cached result of the tools. */
  async invalidateTools(tenantId: string, toolIds: string[], cause: InvalidationCause): Promise<number> {
    this.bump(tenantId);
    const n = this.removed(tenantId, await this.d.stores(tenantId).removeTools(toolIds));
    this.emit(tenantId, cause, { toolIds, invalidated: n });
    return n;
  }

  /**
   * Drop the cached results tagged with an entity (with `value`: that instance, plus results
   * that depend on the entity in general); with `cascade`, every result of its descendant
   * entities too (their instance ids are unknown from the parent's, so all of them).
   */
  async invalidateEntity(tenantId: string, entity: Entity, value: string | undefined, cascade: boolean, cause: InvalidationCause, emit = true): Promise<{ invalidated: number; entityIds: string[] }> {
    this.bump(tenantId);
    const store = this.d.stores(tenantId);
    let n = this.removed(tenantId, await store.removeTagged([entity.id], value));
    const entityIds = [entity.id];
    if (cascade) {
      const children = (await this.d.entities(tenantId).withDescendants(entity.id)).filter((id) => id !== entity.id);
      n += this.removed(tenantId, await store.removeTagged(children));
      entityIds.push(...children);
    }
    n += await this.removeUntagged(tenantId, entityIds);
    return this.emitEntity(tenantId, entity, value, cascade, cause, emit, entityIds, n);
  }

  /**
   * Results a READ tool cached before its mapping to one of the entities existed (or last changed)
   * carry no tag for it, so the tag queries above cannot find them: every such result of the mapped
   * tools goes (it may hold any instance of the entity). Results stored since then are tagged.
   */
  private async removeUntagged(tenantId: string, entityIds: string[]): Promise<number> {
    const es = this.d.entities(tenantId);
    const store = this.d.stores(tenantId);
    let n = 0;
    for (const id of entityIds) for (const m of await es.readMappingsOfEntity(id)) n += this.removed(tenantId, await store.removeToolUpTo(m.toolId, m.cacheSeq));
    return n;
  }

  private emitEntity(tenantId: string, entity: Entity, value: string | undefined, cascade: boolean, cause: InvalidationCause, emit: boolean, entityIds: string[], n: number) {
    if (emit) this.emit(tenantId, cause, { entityId: entity.id, entityType: entity.name, value: value ?? null, cascade, entityIds, invalidated: n });
    return { invalidated: n, entityIds };
  }

  /**
   * After a tool ran upstream. Configured precisely (any rule naming it as the write tool, enabled
   * or not, or a WRITE mapping): every enabled rule's read tool, and every entity it WRITE-maps
   * (the parameter's value; the whole entity when the call lacks it), cascading to child entities.
   * Not configured: the safe default (docs/decisions.md) — a tool that may change state (WRITE,
   * UNKNOWN, and IDEMPOTENT: repeating it has no further effect, the first call has one) drops
   * every cached result of its server; a READ tool drops nothing. Returns how many were dropped.
   */
  async afterExecution(tenantId: string, tool: ToolRecord, args: Record<string, unknown>): Promise<number> {
    const es = this.d.entities(tenantId);
    const rules = await es.enabledRulesOf(tool.id);
    const writes = (await es.mappingsOfTool(tool.id)).filter((m) => m.operation === "WRITE");
    if (!rules.length && !writes.length) {
      if (tool.category === "READ" || (await es.hasRulesOf(tool.id))) return 0; // a read, or only disabled rules: configured to invalidate nothing now
      return this.invalidateServerReads(tenantId, tool);
    }
    this.bump(tenantId);
    const store = this.d.stores(tenantId);
    let n = rules.length ? this.removed(tenantId, await store.removeTools(rules.map((r) => r.invalidateToolId))) : 0;
    const entities: Array<{ entityId: string; entityType: string; value: string | null }> = [];
    for (const m of writes) {
      const entity = await es.get(m.entityId);
      if (!entity) continue;
      const value = entityValue(valueAt(args, m.paramName));
      n += (await this.invalidateEntity(tenantId, entity, value ?? undefined, true, { reason: "write" }, false)).invalidated;
      entities.push({ entityId: entity.id, entityType: entity.name, value });
    }
    this.emit(tenantId, { reason: "write", toolId: tool.id, toolName: tool.name }, { rules: rules.map((r) => r.id), invalidatedToolIds: rules.map((r) => r.invalidateToolId), entities, invalidated: n });
    return n;
  }

  /** The default of a state-changing tool without rules or WRITE mappings: its server's cached results (its own kept). */
  private async invalidateServerReads(tenantId: string, tool: ToolRecord): Promise<number> {
    this.bump(tenantId);
    const n = this.removed(tenantId, await this.d.stores(tenantId).removeServerExcept(tool.serverId, tool.id));
    this.emit(tenantId, { reason: "write", toolId: tool.id, toolName: tool.name }, { scope: "server", serverId: tool.serverId, rules: [], invalidatedToolIds: [], entities: [], invalidated: n });
    return n;
  }

  private emit(tenantId: string, cause: InvalidationCause, data: Record<string, unknown>) {
    this.d.events.activity(tenantId, "invalidation", { reason: cause.reason, ...(cause.toolId ? { triggeredBy: { toolId: cause.toolId, toolName: cause.toolName } } : {}), ...data });
  }

  /** Registry hooks: a deleted server's or vanished tools' results go too (CacheCleaner). */
  async dropServer(tenantId: string, serverId: string) {
    this.bump(tenantId);
    this.removed(tenantId, await this.d.stores(tenantId).removeServer(serverId));
  }

  async dropTools(tenantId: string, toolIds: string[]) {
    this.bump(tenantId);
    this.removed(tenantId, await this.d.stores(tenantId).removeTools(toolIds));
  }

  /** Remove expired entries of every tenant (the domain's timer). */
  async sweepExpired(): Promise<number> {
    const now = this.d.clock.now();
    const tenants = await this.d.storage
      .global("tool cache sweep: expired entries of every tenant")
      .all<{ tenant_id: string }>("SELECT DISTINCT tenant_id FROM mcp_cache_entries WHERE expires_at_ms <= $now", { now });
    let n = 0;
    for (const { tenant_id } of tenants) n += this.removed(tenant_id, await this.d.stores(tenant_id).removeExpired(now));
    return n;
  }

  // ------------------------------------------------------------------ API

  async view(tenantId: string, e: CacheEntry): Promise<EntryView> {
    const tool = await this.d.registry(tenantId).getTool(e.toolId);
    const es = this.d.entities(tenantId);
    const entities: EntryView["entities"] = [];
    for (const t of await this.d.stores(tenantId).tags(e.cacheKey)) entities.push({ entityId: t.entityId, entityType: (await es.get(t.entityId))?.name ?? null, value: t.value });
    return {
      cacheKey: e.cacheKey,
      toolId: e.toolId,
      toolName: tool?.name ?? null,
      serverId: e.serverId,
      agentId: e.agentScope === "" ? null : e.agentScope,
      arguments: JSON.parse(e.argsJson),
      result: JSON.parse(e.resultJson),
      createdAt: iso(e.createdAtMs),
      expiresAt: iso(e.expiresAtMs),
      ttlSecs: Math.round((e.expiresAtMs - e.createdAtMs) / 1000),
      accessCount: e.hits,
      lastAccessedAt: e.lastHitAtMs === null ? null : iso(e.lastHitAtMs),
      upstreamLatencyMs: e.upstreamMs,
      sizeBytes: e.sizeBytes,
      entities,
    };
  }

  /** GET /tool-cache/{cache_key}: 404 when absent or expired. */
  async get(tenantId: string, key: bigint): Promise<EntryView> {
    await this.d.callLog.flush(tenantId);
    const e = await this.exact(tenantId, key);
    if (!e) throw notFound("cache entry");
    return this.view(tenantId, e);
  }

  /** POST /tool-cache/search: entries by similarity of their arguments to a vector or a text. */
  async search(tenantId: string, input: SearchInput) {
    const emb = this.d.embedder;
    let query: Float32Array;
    if (input.queryEmbedding) {
      if (input.queryEmbedding.length !== emb.dimensions)
        throw new ApiError("validation_error", `queryEmbedding has ${input.queryEmbedding.length} dimensions; the embedder ${emb.id} has ${emb.dimensions}`);
      query = l2normalize(Float32Array.from(input.queryEmbedding));
    } else {
      query = (await emb.embed([input.queryText!]))[0]!;
    }
    await this.embedMissing(tenantId);
    await this.d.callLog.flush(tenantId);
    const limit = input.limit ?? 10;
    const threshold = input.threshold ?? 0;
    const store = this.d.stores(tenantId);
    const now = this.d.clock.now();
    let toolIds = await store.toolsWithVectors(emb.id);
    if (input.toolId) toolIds = toolIds.filter((t) => t === input.toolId);
    const scored: Array<{ e: CacheEntry; similarity: number }> = [];
    for (const toolId of toolIds) {
      const neighbours = await this.d.vectors.search(store, toolId, emb.id, query, limit);
      for (const e of await store.byVecKeys(neighbours.map((n) => n.key))) {
        if (e.expiresAtMs <= now || (input.serverId && e.serverId !== input.serverId)) continue;
        const vec = await store.vectorOf(e.vecKey);
        if (!vec) continue;
        const similarity = dot(query, vec);
        if (similarity >= threshold) scored.push({ e, similarity });
      }
    }
    scored.sort((a, b) => b.similarity - a.similarity);
    const results = [];
    for (const { e, similarity } of scored.slice(0, limit)) results.push({ similarity: Math.round(similarity * 1e6) / 1e6, ...(await this.view(tenantId, e)) });
    return { results, total: results.length, embedder: { id: emb.id, dimensions: emb.dimensions } };
  }

  /** POST /tool-cache/stats: access count, hit rate and latency of one key (404 when neither cached nor ever called). */
  async stats(tenantId: string, key: bigint) {
    if (!storableKey(key)) throw notFound("cache entry");
    await this.d.callLog.flush(tenantId);
    const e = await this.exact(tenantId, key);
    const c = await (await this.d.calls(tenantId)).keyStats(key);
    if (!e && c.calls === 0) throw notFound("cache entry");
    return {
      cacheKey: key,
      cached: !!e,
      toolId: e?.toolId ?? c.toolId,
      accessCount: c.hits,
      misses: c.misses,
      totalCalls: c.calls,
      hitRate: c.calls ? round4(c.hits / c.calls) : 0,
      avgHitLatencyMs: c.avgHitLatencyMs,
      avgMissLatencyMs: c.avgMissLatencyMs,
      upstreamLatencyMs: e?.upstreamMs ?? null,
      createdAt: e ? iso(e.createdAtMs) : null,
      expiresAt: e ? iso(e.expiresAtMs) : null,
      lastAccessedAt: e?.lastHitAtMs ? iso(e.lastHitAtMs) : null,
    };
  }

  /** POST /tool-cache/invalidate: by entity type name (0 when the tenant has no such entity: nothing is cached under it). */
  async invalidateByApi(tenantId: string, input: { entityType: string; entityId?: string; cascade?: boolean }) {
    const entity = await this.d.entities(tenantId).byName(input.entityType);
    const cascade = input.cascade ?? false;
    // doc2 answers a count: an entity type this tenant never defined has nothing cached under it — 0, not 404
    if (!entity) return { invalidated: 0, entityType: input.entityType, entityId: input.entityId ?? null, cascade, entityTypes: [] as string[] };
    const r = await this.invalidateEntity(tenantId, entity, input.entityId, cascade, { reason: "manual" });
    const es = this.d.entities(tenantId);
    const entityTypes: string[] = [];
    for (const id of r.entityIds) entityTypes.push((await es.get(id))?.name ?? id);
    return {
      invalidated: r.invalidated,
      entityType: entity.name,
      entityId: input.entityId ?? null,
      cascade,
      entityTypes,
    };
  }

  /** GET /tool-cache/metrics: entries, memory, hit rate (over the recorded calls), configuration. */
  async metrics(tenantId: string) {
    const c = await (await this.d.calls(tenantId)).cacheTotals();
    const t = await this.d.stores(tenantId).totals(this.d.clock.now());
    return {
      totalEntries: t.entries - t.expired,
      expiredEntries: t.expired,
      entriesWithEmbeddings: t.withVectors,
      memoryUsageBytes: t.bytes,
      hits: c.hits,
      misses: c.misses,
      hitRate: c.hits + c.misses ? round4(c.hits / (c.hits + c.misses)) : 0,
      configuration: {
        embedder: { id: this.d.embedder.id, dimensions: this.d.embedder.dimensions, ready: this.d.embedder.isReady() },
        maxResultBytes: this.d.config.max_result_bytes,
        semanticCandidates: SEMANTIC_CANDIDATES,
        defaults: Object.fromEntries(CATEGORIES.map((c) => [c, defaultCacheConfig(c)])),
      },
    };
  }
}

const base64OfVector = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
const vectorOfBase64 = (b: string) => {
  const bytes = Buffer.from(b, "base64");
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
};

export const round4 = (x: number) => Math.round(x * 10_000) / 10_000;
