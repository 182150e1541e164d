/**
 * Cached tool results and their entity tags over the tenant-bound handle. SQLite holds every
 * entry and its f32 vector (the source of truth for the in-memory indexes, vectors.ts).
 * cache_key is read back as text: bun:sqlite returns INTEGERs as JS numbers, which lose digits
 * beyond 2^53.
 */
import type { TenantDb } from "../../storage/scoped";

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

export class ToolCacheStore {
  constructor(readonly db: TenantDb) {}

  get(key: bigint): CacheEntry | undefined {
    const r = this.db.get<EntryRow>(`SELECT ${COLUMNS} FROM mcp_cache_entries WHERE tenant_id = $tenant AND cache_key = $key`, { key });
    return r && entryOf(r);
  }

  byVecKeys(vecKeys: number[]): CacheEntry[] {
    if (!vecKeys.length) return [];
    return this.db
      .all<EntryRow>(`SELECT ${COLUMNS} FROM mcp_cache_entries WHERE tenant_id = $tenant AND vec_key IN (SELECT value FROM json_each($keys))`, { keys: JSON.stringify(vecKeys) })
      .map(entryOf);
  }

  /** Store (or replace) an entry with its tags; returns its vec_key. */
  put(e: NewEntry, tags: Tag[]): number {
    return this.db.tx(() => {
      this.removeKeys([e.cacheKey]);
      const size = e.argsJson.length + e.resultJson.length;
      const r = this.db.run(
        `INSERT INTO mcp_cache_entries (cache_key, tenant_id, server_id, tool_id, agent_scope, args_json, struct_key, result_json, created_at_ms, expires_at_ms, upstream_ms, size_bytes)
         VALUES ($key, $tenant, $server_id, $tool_id, $agent_scope, $args_json, $struct_key, $result_json, $created, $expires, $upstream_ms, $size)`,
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
      for (const t of tags) this.db.run("INSERT INTO mcp_cache_tags (tenant_id, cache_key, entity_id, value) VALUES ($tenant, $key, $entity_id, $value)", { key: e.cacheKey, entity_id: t.entityId, value: t.value });
      return Number(r.lastInsertRowid);
    });
  }

  /** Attach the embedding of an entry (if it still exists). */
  setVector(key: bigint, embedderId: string, vec: Float32Array): number | undefined {
    const r = this.db.get<{ vec_key: number }>(
      "UPDATE mcp_cache_entries SET embedder_id = $embedder_id, vec = $vec, size_bytes = size_bytes + $bytes WHERE tenant_id = $tenant AND cache_key = $key RETURNING vec_key",
      { key, embedder_id: embedderId, vec: new Uint8Array(vec.buffer, vec.byteOffset, vec.byteLength), bytes: vec.byteLength },
    );
    return r?.vec_key;
  }

  vectorOf(vecKey: number): Float32Array | undefined {
    const r = this.db.get<{ vec: Uint8Array | null }>("SELECT vec FROM mcp_cache_entries WHERE tenant_id = $tenant AND vec_key = $vec_key", { vec_key: vecKey });
    return r?.vec ? new Float32Array(r.vec.buffer.slice(r.vec.byteOffset, r.vec.byteOffset + r.vec.byteLength)) : undefined;
  }

  /** Every stored vector of a tool under an embedder (index rebuilds). */
  vectorsOfTool(toolId: string, embedderId: string): Array<{ vecKey: number; vec: Float32Array }> {
    return this.db
      .all<{ vec_key: number; vec: Uint8Array }>("SELECT vec_key, vec FROM mcp_cache_entries WHERE tenant_id = $tenant AND tool_id = $tool_id AND embedder_id = $embedder_id AND vec IS NOT NULL", {
        tool_id: toolId,
        embedder_id: embedderId,
      })
      .map((r) => ({ vecKey: r.vec_key, vec: new Float32Array(r.vec.buffer.slice(r.vec.byteOffset, r.vec.byteOffset + r.vec.byteLength)) }));
  }

  /** Tools that have vectors under an embedder (search spans their indexes). */
  toolsWithVectors(embedderId: string): string[] {
    return this.db.all<{ tool_id: string }>("SELECT DISTINCT tool_id FROM mcp_cache_entries WHERE tenant_id = $tenant AND embedder_id = $embedder_id AND vec IS NOT NULL", { embedder_id: embedderId }).map((r) => r.tool_id);
  }

  /** Live entries without a vector of this embedder (oldest first). */
  unembedded(embedderId: string, nowMs: number, limit: number): Array<{ cacheKey: bigint; toolId: string; argsJson: string }> {
    return this.db
      .all<{ key_text: string; tool_id: string; args_json: string }>(
        "SELECT CAST(cache_key AS TEXT) AS key_text, tool_id, args_json FROM mcp_cache_entries WHERE tenant_id = $tenant AND (vec IS NULL OR embedder_id <> $embedder_id) AND expires_at_ms > $now ORDER BY vec_key LIMIT $limit",
        { embedder_id: embedderId, now: nowMs, limit },
      )
      .map((r) => ({ cacheKey: BigInt(r.key_text), toolId: r.tool_id, argsJson: r.args_json }));
  }

  /** Count hits on the entries they were answered from (by vec_key: an entry removed or replaced since is left alone). */
  recordHits(hits: Array<{ vecKey: number; atMs: number }>) {
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
      this.db.run("UPDATE mcp_cache_entries SET hits = hits + $n, last_hit_at_ms = MAX(COALESCE(last_hit_at_ms, 0), $at) WHERE tenant_id = $tenant AND vec_key = $vec_key", {
        vec_key: vecKey,
        n: e.n,
        at: e.atMs,
      });
  }

  tags(key: bigint): Tag[] {
    return this.db.all<{ entity_id: string; value: string | null }>("SELECT entity_id, value FROM mcp_cache_tags WHERE tenant_id = $tenant AND cache_key = $key ORDER BY entity_id", { key }).map((r) => ({ entityId: r.entity_id, value: r.value }));
  }

  // ---- deletions (each returns what it removed) ----

  private removeWhere(where: string, params: Record<string, string | number | bigint | null>): Removed[] {
    return this.db.tx(() => {
      const rows = this.db.all<{ vec_key: number; tool_id: string; key_text: string }>(
        `DELETE FROM mcp_cache_entries WHERE tenant_id = $tenant AND ${where} RETURNING vec_key, tool_id, CAST(cache_key AS TEXT) AS key_text`,
        params,
      );
      if (rows.length)
        this.db.run("DELETE FROM mcp_cache_tags WHERE tenant_id = $tenant AND cache_key IN (SELECT CAST(value AS INTEGER) FROM json_each($keys))", { keys: JSON.stringify(rows.map((r) => r.key_text)) });
      return rows.map((r) => ({ vecKey: r.vec_key, toolId: r.tool_id }));
    });
  }

  removeKeys(keys: bigint[]): Removed[] {
    if (!keys.length) return [];
    return this.removeWhere("cache_key IN (SELECT CAST(value AS INTEGER) FROM json_each($keys))", { keys: JSON.stringify(keys.map(String)) });
  }

  removeTools(toolIds: string[]): Removed[] {
    if (!toolIds.length) return [];
    return this.removeWhere("tool_id IN (SELECT value FROM json_each($ids))", { ids: JSON.stringify(toolIds) });
  }

  removeServer(serverId: string): Removed[] {
    return this.removeWhere("server_id = $server_id", { server_id: serverId });
  }

  /** A server's entries except one tool's (the write that invalidates by default keeps its own cached result, if any). */
  removeServerExcept(serverId: string, toolId: string): Removed[] {
    return this.removeWhere("server_id = $server_id AND tool_id != $tool_id", { server_id: serverId, tool_id: toolId });
  }

  /** A tool's entries up to a vec_key (stored before a READ mapping existed: untagged for its entity). */
  removeToolUpTo(toolId: string, vecKey: number): Removed[] {
    if (vecKey <= 0) return [];
    return this.removeWhere("tool_id = $tool_id AND vec_key <= $seq", { tool_id: toolId, seq: vecKey });
  }

  /**
   * Entries tagged with any of the entities: with `value`, those tagged with that id or with the
   * entity in general (a call without the parameter: a list depends on every instance).
   */
  removeTagged(entityIds: string[], value?: string): Removed[] {
    if (!entityIds.length) return [];
    const ids = JSON.stringify(entityIds);
    if (value === undefined)
      return this.removeWhere("cache_key IN (SELECT cache_key FROM mcp_cache_tags WHERE tenant_id = $tenant AND entity_id IN (SELECT value FROM json_each($ids)))", { ids });
    return this.removeWhere(
      "cache_key IN (SELECT cache_key FROM mcp_cache_tags WHERE tenant_id = $tenant AND entity_id IN (SELECT value FROM json_each($ids)) AND (value = $value OR value IS NULL))",
      { ids, value },
    );
  }

  removeExpired(nowMs: number): Removed[] {
    return this.removeWhere("expires_at_ms <= $now", { now: nowMs });
  }

  // ---- figures ----

  totals(nowMs: number): { entries: number; expired: number; bytes: number; hits: number; withVectors: number } {
    return this.db.get<{ entries: number; expired: number; bytes: number; hits: number; withVectors: number }>(
      `SELECT COUNT(*) AS entries, COALESCE(SUM(expires_at_ms <= $now), 0) AS expired, COALESCE(SUM(size_bytes), 0) AS bytes,
              COALESCE(SUM(hits), 0) AS hits, COALESCE(SUM(vec IS NOT NULL), 0) AS withVectors
       FROM mcp_cache_entries WHERE tenant_id = $tenant`,
      { now: nowMs },
    )!;
  }
}
