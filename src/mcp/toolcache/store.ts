/**
 * Cached tool results and their entity tags over the tenant-bound handle. SQLite holds every
 * entry and its f32 vector (the source of truth for the in-memory indexes, vectors.ts).
 * cache_key is read back as text: bun:sqlite (and the PostgreSQL backend) return INTEGERs/BIGINTs as
 * JS numbers, which lose digits beyond 2^53.
 */
import type { AsyncTenantDb } from "../../storage/async";
import { vectorBytes, type Dialect } from "../../storage/dialect";
import { asInt } from "../sql";

export interface CacheEntry {
  cacheKey: bigint;
  vecKey: number;
  serverId: string;
  toolId: string;
  agentScope: string;
  argsJson: string;
  structKey: string;
  resultJson: string;
  createdAtMs: number;
  expiresAtMs: number;
  hits: number;
  lastHitAtMs: number | null;
  upstreamMs: number;
  sizeBytes: number;
  embedderId: string | null;
}

interface EntryRow {
  key_text: string;
  vec_key: number;
  server_id: string;
  tool_id: string;
  agent_scope: string;
  args_json: string;
  struct_key: string;
  result_json: string;
  created_at_ms: number;
  expires_at_ms: number;
  hits: number;
  last_hit_at_ms: number | null;
  upstream_ms: number;
  size_bytes: number;
  embedder_id: string | null;
}

const COLUMNS = `CAST(cache_key AS TEXT) AS key_text, vec_key, server_id, tool_id, agent_scope, args_json, struct_key, result_json,
  created_at_ms, expires_at_ms, hits, last_hit_at_ms, upstream_ms, size_bytes, embedder_id`;

const entryOf = (r: EntryRow): CacheEntry => ({
  cacheKey: BigInt(r.key_text),
  vecKey: r.vec_key,
  serverId: r.server_id,
  toolId: r.tool_id,
  agentScope: r.agent_scope,
  argsJson: r.args_json,
  structKey: r.struct_key,
  resultJson: r.result_json,
  createdAtMs: r.created_at_ms,
  expiresAtMs: r.expires_at_ms,
  hits: r.hits,
  lastHitAtMs: r.last_hit_at_ms,
  upstreamMs: r.upstream_ms,
  sizeBytes: r.size_bytes,
  embedderId: r.embedder_id,
});

/** What storing a result supplies (the rest is the store's bookkeeping). */
export type NewEntry = Pick<CacheEntry, "cacheKey" | "serverId" | "toolId" | "agentScope" | "argsJson" | "structKey" | "resultJson" | "createdAtMs" | "expiresAtMs" | "upstreamMs">;

export interface Tag {
  entityId: string;
  value: string | null;
}

/** What a deletion removed (the vector indexes drop the same keys). */
export interface Removed {
  vecKey: number;
  toolId: string;
}

const copyOf = (b: Uint8Array) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

export class ToolCacheStore {
  /** `(SELECT …)` of the 64-bit integers a JSON array parameter lists (as numbers or, exactly, as strings of digits) */
  private readonly intsOf: (param: string) => string;

  constructor(
    readonly db: AsyncTenantDb,
    private readonly d: Dialect,
  ) {
    this.intsOf = (param) => `(SELECT CAST(value AS BIGINT) FROM ${d.jsonEach(param)})`;
  }

  async get(key: bigint): Promise<CacheEntry | undefined> {
    const r = await this.db.get<EntryRow>(`SELECT ${COLUMNS} FROM mcp_cache_entries WHERE tenant_id = $tenant AND cache_key = $key`, { key });
    return r && entryOf(r);
  }

  async byVecKeys(vecKeys: number[]): Promise<CacheEntry[]> {
    if (!vecKeys.length) return [];
    const rows = await this.db.all<EntryRow>(`SELECT ${COLUMNS} FROM mcp_cache_entries WHERE tenant_id = $tenant AND vec_key IN ${this.intsOf("$keys")}`, { keys: JSON.stringify(vecKeys) });
    return rows.map(entryOf);
  }

  /** Store (or replace) an entry with its tags; returns its vec_key. */
  put(e: NewEntry, tags: Tag[]): Promise<number> {
    return this.db.tx(async () => {
      await this.deleteWhere("cache_key = $key", { key: e.cacheKey });
      const size = e.argsJson.length + e.resultJson.length;
      const r = await this.db.get<{ vec_key: number }>(
        `INSERT INTO mcp_cache_entries (cache_key, tenant_id, server_id, tool_id, agent_scope, args_json, struct_key, result_json, created_at_ms, expires_at_ms, upstream_ms, size_bytes)
         VALUES ($key, $tenant, $server_id, $tool_id, $agent_scope, $args_json, $struct_key, $result_json, $created, $expires, $upstream_ms, $size) RETURNING vec_key`,
        {
          key: e.cacheKey,
          server_id: e.serverId,
          tool_id: e.toolId,
          agent_scope: e.agentScope,
          args_json: e.argsJson,
          struct_key: e.structKey,
          result_json: e.resultJson,
          created: e.createdAtMs,
          expires: e.expiresAtMs,
          upstream_ms: e.upstreamMs,
          size,
        },
      );
      for (const t of tags) await this.db.run("INSERT INTO mcp_cache_tags (tenant_id, cache_key, entity_id, value) VALUES ($tenant, $key, $entity_id, $value)", { key: e.cacheKey, entity_id: t.entityId, value: t.value });
      return r!.vec_key;
    });
  }

  /** Attach the embedding of an entry (if it still exists). */
  async setVector(key: bigint, embedderId: string, vec: Float32Array): Promise<number | undefined> {
    const r = await this.db.get<{ vec_key: number }>(
      "UPDATE mcp_cache_entries SET embedder_id = $embedder_id, vec = $vec, size_bytes = size_bytes + $bytes WHERE tenant_id = $tenant AND cache_key = $key RETURNING vec_key",
      { key, embedder_id: embedderId, vec: vectorBytes(vec), bytes: vec.byteLength },
    );
    return r?.vec_key;
  }

  async vectorOf(vecKey: number): Promise<Float32Array | undefined> {
    const r = await this.db.get<{ vec: Uint8Array | null }>("SELECT vec FROM mcp_cache_entries WHERE tenant_id = $tenant AND vec_key = $vec_key", { vec_key: vecKey });
    return r?.vec ? copyOf(r.vec) : undefined;
  }

  /** Every stored vector of a tool under an embedder (index rebuilds). */
  async vectorsOfTool(toolId: string, embedderId: string): Promise<Array<{ vecKey: number; vec: Float32Array }>> {
    const rows = await this.db.all<{ vec_key: number; vec: Uint8Array }>(
      "SELECT vec_key, vec FROM mcp_cache_entries WHERE tenant_id = $tenant AND tool_id = $tool_id AND embedder_id = $embedder_id AND vec IS NOT NULL",
      { tool_id: toolId, embedder_id: embedderId },
    );
    return rows.map((r) => ({ vecKey: r.vec_key, vec: copyOf(r.vec) }));
  }

  /** Tools that have vectors under an embedder (search spans their indexes). */
  async toolsWithVectors(embedderId: string): Promise<string[]> {
    const rows = await this.db.all<{ tool_id: string }>("SELECT DISTINCT tool_id FROM mcp_cache_entries WHERE tenant_id = $tenant AND embedder_id = $embedder_id AND vec IS NOT NULL", { embedder_id: embedderId });
    return rows.map((r) => r.tool_id);
  }

  /** Live entries without a vector of this embedder (oldest first). */
  async unembedded(embedderId: string, nowMs: number, limit: number): Promise<Array<{ cacheKey: bigint; toolId: string; argsJson: string }>> {
    const rows = await this.db.all<{ key_text: string; tool_id: string; args_json: string }>(
      "SELECT CAST(cache_key AS TEXT) AS key_text, tool_id, args_json FROM mcp_cache_entries WHERE tenant_id = $tenant AND (vec IS NULL OR embedder_id <> $embedder_id) AND expires_at_ms > $now ORDER BY vec_key LIMIT $limit",
      { embedder_id: embedderId, now: nowMs, limit },
    );
    return rows.map((r) => ({ cacheKey: BigInt(r.key_text), toolId: r.tool_id, argsJson: r.args_json }));
  }

  /** Count hits on the entries they were answered from (by vec_key: an entry removed or replaced since is left alone). */
  async recordHits(hits: Array<{ vecKey: number; atMs: number }>) {
    const byEntry = new Map<number, { n: number; atMs: number }>();
    for (const h of hits) {
      const e = byEntry.get(h.vecKey);
      if (!e) byEntry.set(h.vecKey, { n: 1, atMs: h.atMs });
      else {
        e.n++;
        e.atMs = Math.max(e.atMs, h.atMs);
      }
    }
    for (const [vecKey, e] of byEntry)
      await this.db.run(
        "UPDATE mcp_cache_entries SET hits = hits + $n, last_hit_at_ms = CASE WHEN last_hit_at_ms > $at THEN last_hit_at_ms ELSE $at END WHERE tenant_id = $tenant AND vec_key = $vec_key",
        { vec_key: vecKey, n: e.n, at: e.atMs },
      );
  }

  async tags(key: bigint): Promise<Tag[]> {
    const rows = await this.db.all<{ entity_id: string; value: string | null }>("SELECT entity_id, value FROM mcp_cache_tags WHERE tenant_id = $tenant AND cache_key = $key ORDER BY entity_id", { key });
    return rows.map((r) => ({ entityId: r.entity_id, value: r.value }));
  }

  // ---- deletions (each returns what it removed) ----

  private removeWhere(where: string, params: Record<string, string | number | bigint | null>): Promise<Removed[]> {
    return this.db.tx(() => this.deleteWhere(where, params));
  }

  /** removeWhere's statements, for a caller already in a transaction (put: no savepoint of its own) */
  private async deleteWhere(where: string, params: Record<string, string | number | bigint | null>): Promise<Removed[]> {
    const rows = await this.db.all<{ vec_key: number; tool_id: string; key_text: string }>(
      `DELETE FROM mcp_cache_entries WHERE tenant_id = $tenant AND ${where} RETURNING vec_key, tool_id, CAST(cache_key AS TEXT) AS key_text`,
      params,
    );
    if (rows.length) await this.db.run(`DELETE FROM mcp_cache_tags WHERE tenant_id = $tenant AND cache_key IN ${this.intsOf("$keys")}`, { keys: JSON.stringify(rows.map((r) => r.key_text)) });
    return rows.map((r) => ({ vecKey: r.vec_key, toolId: r.tool_id }));
  }

  removeKeys(keys: bigint[]): Promise<Removed[]> {
    if (!keys.length) return Promise.resolve([]);
    return this.removeWhere(`cache_key IN ${this.intsOf("$keys")}`, { keys: JSON.stringify(keys.map(String)) });
  }

  removeTools(toolIds: string[]): Promise<Removed[]> {
    if (!toolIds.length) return Promise.resolve([]);
    return this.removeWhere(`tool_id IN ${this.d.inJsonArray("$ids")}`, { ids: JSON.stringify(toolIds) });
  }

  removeServer(serverId: string): Promise<Removed[]> {
    return this.removeWhere("server_id = $server_id", { server_id: serverId });
  }

  /** A server's entries except one tool's (the write that invalidates by default keeps its own cached result, if any). */
  removeServerExcept(serverId: string, toolId: string): Promise<Removed[]> {
    return this.removeWhere("server_id = $server_id AND tool_id != $tool_id", { server_id: serverId, tool_id: toolId });
  }

  /** A tool's entries up to a vec_key (stored before a READ mapping existed: untagged for its entity). */
  removeToolUpTo(toolId: string, vecKey: number): Promise<Removed[]> {
    if (vecKey <= 0) return Promise.resolve([]);
    return this.removeWhere("tool_id = $tool_id AND vec_key <= $seq", { tool_id: toolId, seq: vecKey });
  }

  /**
   * Entries tagged with any of the entities: with `value`, those tagged with that id or with the
   * entity in general (a call without the parameter: a list depends on every instance).
   */
  removeTagged(entityIds: string[], value?: string): Promise<Removed[]> {
    if (!entityIds.length) return Promise.resolve([]);
    const ids = JSON.stringify(entityIds);
    const tagged = `SELECT cache_key FROM mcp_cache_tags WHERE tenant_id = $tenant AND entity_id IN ${this.d.inJsonArray("$ids")}`;
    if (value === undefined) return this.removeWhere(`cache_key IN (${tagged})`, { ids });
    return this.removeWhere(`cache_key IN (${tagged} AND (value = $value OR value IS NULL))`, { ids, value });
  }

  removeExpired(nowMs: number): Promise<Removed[]> {
    return this.removeWhere("expires_at_ms <= $now", { now: nowMs });
  }

  // ---- figures ----

  async totals(nowMs: number): Promise<{ entries: number; expired: number; bytes: number; hits: number; withVectors: number }> {
    return (await this.db.get<{ entries: number; expired: number; bytes: number; hits: number; withVectors: number }>(
      `SELECT COUNT(*) AS entries, COALESCE(SUM(${asInt("expires_at_ms <= $now")}), 0) AS expired, COALESCE(SUM(size_bytes), 0) AS bytes,
              COALESCE(SUM(hits), 0) AS hits, COALESCE(SUM(${asInt("vec IS NOT NULL")}), 0) AS "withVectors"
       FROM mcp_cache_entries WHERE tenant_id = $tenant`,
      { now: nowMs },
    ))!;
  }
}
