/**
 * Cache entries of one tenant, over the tenant-bound async handle (every statement scoped by
 * $tenant), one SQL text for bun:sqlite and PostgreSQL. Vectors are stored as raw little-endian
 * f32 (BLOB / BYTEA: vectorBytes / vectorOf); a new entry's vec_key comes back through
 * `INSERT … RETURNING`.
 */
import type { AsyncStorage, AsyncTenantDb, Params } from "../storage/async";
import { vectorBytes, vectorOf } from "../storage/dialect";
import { StorageConstraintError } from "../storage/errors";
import type { Mode } from "./partition";
import type { GroupCommit } from "./group-commit";

export interface NewEntry {
  id: string;
  exactKey: string;
  partition: string | null;
  mode: Mode | "exact";
  style: string;
  model: string;
  queryText: string | null;
  queryVec: Float32Array | null;
  contextVec: Float32Array | null;
  /** earlier user turns (context mode): texts and their vectors */
  contextUsers: Array<{ text: string; vec: Float32Array }> | null;
  codeScope: string | null;
  codeHash: string | null;
  payload: string;
  inputTokens: number;
  outputTokens: number;
  createdAt: number;
  expiresAt: number | null;
}

/** What removing rows hands back so the engine can drop them from its in-memory structures. */
export interface Removed {
  vecKey: number;
  partition: string | null;
  exactKey: string;
}

export interface Candidate {
  vecKey: number;
  id: string;
  queryText: string;
  queryVec: Float32Array;
  contextVec: Float32Array | null;
  contextUsers: Array<{ text: string; vec: Float32Array }> | null;
  expiresAt: number | null;
}

export interface ExactRow {
  vecKey: number;
  id: string;
  payload: string;
  inputTokens: number;
  outputTokens: number;
  expiresAt: number | null;
}

export interface EntrySummary {
  id: string;
  style: string;
  model: string;
  mode: string;
  query: string | null;
  createdAt: number;
  expiresAt: number | null;
  lastUsedAt: number;
  hits: number;
}

const toBlob = (v: Float32Array | null) => (v ? vectorBytes(v) : null);
/**
 * The vector a BLOB / BYTEA holds. `own`: the driver hands every value its own buffer (bun:sqlite
 * copies each blob out of SQLite into a new ArrayBuffer), so a view of it is already a private copy;
 * otherwise (PostgreSQL's client: a Buffer may be a view of a larger one it reuses) the bytes are
 * copied, so the vector neither pins nor aliases the driver's memory.
 */
const fromBlob = (b: Uint8Array | null, own: boolean): Float32Array | null => (b ? vectorOf(own ? b : new Uint8Array(b)) : null);

function concat(vs: Float32Array[]): Float32Array {
  const out = new Float32Array(vs.reduce((n, v) => n + v.length, 0));
  let o = 0;
  for (const v of vs) {
    out.set(v, o);
    o += v.length;
  }
  return out;
}

/** A tenant's own hit-decision settings (cache_settings; null = the default). */
export interface TenantCacheSettings {
  /** operating point of the learned stage: the probability a pair needs to hit (0..1) */
  decisionThreshold: number | null;
}

const INSERT_ENTRY = `INSERT INTO cache_entries (id, tenant_id, exact_key, partition, mode, style, model, query_text, query_vec, context_vec,
    context_users, context_user_vecs, code_scope, code_hash, payload, input_tokens, output_tokens, created_at, expires_at, last_used_at, hits)
  VALUES ($id, $tenant, $exact, $partition, $mode, $style, $model, $query, $qv, $cv, $users, $uv,
    $codeScope, $codeHash, $payload, $inTok, $outTok, $created, $expires, $created, 0)`;

function entryParams(e: NewEntry): Params {
  return {
    id: e.id,
    exact: e.exactKey,
    partition: e.partition,
    mode: e.mode,
    style: e.style,
    model: e.model,
    query: e.queryText,
    qv: toBlob(e.queryVec),
    cv: toBlob(e.contextVec),
    users: e.contextUsers ? JSON.stringify(e.contextUsers.map((u) => u.text)) : null,
    uv: e.contextUsers ? toBlob(concat(e.contextUsers.map((u) => u.vec))) : null,
    codeScope: e.codeScope,
    codeHash: e.codeHash,
    payload: e.payload,
    inTok: e.inputTokens,
    outTok: e.outputTokens,
    created: e.createdAt,
    expires: e.expiresAt,
  };
}

// camelCase aliases are quoted: PostgreSQL folds unquoted ones to lower case
const REMOVED = `RETURNING vec_key AS "vecKey", partition, exact_key AS "exactKey"`;

export class CacheStore {
  /**
   * @param ownBlobs the backend returns each blob in its own buffer (bun:sqlite): vectors are read
   * without a second copy (a cache-enabled miss reads the vectors of up to 8 candidates, 2 KB each)
   * @param group inserts go through it (group-commit.ts: the entries of one event-loop turn in one transaction)
   */
  constructor(
    private readonly t: AsyncTenantDb,
    private readonly ownBlobs = false,
    private readonly group?: GroupCommit,
  ) {}

  async settings(): Promise<TenantCacheSettings> {
    const r = await this.t.get<{ decisionThreshold: number | null }>(
      `SELECT decision_threshold AS "decisionThreshold" FROM cache_settings WHERE tenant_id = $tenant`,
      {},
    );
    return { decisionThreshold: r?.decisionThreshold ?? null };
  }

  async putSettings(s: TenantCacheSettings, now: number): Promise<void> {
    if (s.decisionThreshold === null) {
      await this.t.run("DELETE FROM cache_settings WHERE tenant_id = $tenant", {});
      return;
    }
    await this.t.run(
      `INSERT INTO cache_settings (tenant_id, decision_threshold, updated_at) VALUES ($tenant, $t, $now)
       ON CONFLICT (tenant_id) DO UPDATE SET decision_threshold = excluded.decision_threshold, updated_at = excluded.updated_at`,
      { t: s.decisionThreshold, now },
    );
  }

  findExact(exactKey: string, now: number): Promise<ExactRow | undefined> {
    return this.t.get<ExactRow>(
      `SELECT vec_key AS "vecKey", id, payload, input_tokens AS "inputTokens", output_tokens AS "outputTokens", expires_at AS "expiresAt"
       FROM cache_entries WHERE tenant_id = $tenant AND exact_key = $k AND (expires_at IS NULL OR expires_at > $now)`,
      { k: exactKey, now },
    );
  }

  async candidate(vecKey: number): Promise<Candidate | undefined> {
    const r = await this.t.get<{
      vecKey: number;
      id: string;
      queryText: string;
      q: Uint8Array;
      c: Uint8Array | null;
      users: string | null;
      uv: Uint8Array | null;
      expiresAt: number | null;
    }>(
      `SELECT vec_key AS "vecKey", id, query_text AS "queryText", query_vec AS q, context_vec AS c, context_users AS users,
         context_user_vecs AS uv, expires_at AS "expiresAt"
       FROM cache_entries WHERE tenant_id = $tenant AND vec_key = $k`,
      { k: vecKey },
    );
    if (!r || !r.q) return undefined;
    const own = this.ownBlobs;
    const queryVec = fromBlob(r.q, own)!;
    let contextUsers: Candidate["contextUsers"] = null;
    if (r.users !== null) {
      const texts = JSON.parse(r.users) as string[];
      const all = fromBlob(r.uv, own) ?? new Float32Array(0);
      const d = queryVec.length;
      contextUsers = texts.map((text, i) => ({ text, vec: all.subarray(i * d, (i + 1) * d) }));
    }
    return { vecKey: r.vecKey, id: r.id, queryText: r.queryText, queryVec, contextVec: fromBlob(r.c, own), contextUsers, expiresAt: r.expiresAt };
  }

  payload(vecKey: number): Promise<ExactRow | undefined> {
    return this.t.get<ExactRow>(
      `SELECT vec_key AS "vecKey", id, payload, input_tokens AS "inputTokens", output_tokens AS "outputTokens", expires_at AS "expiresAt"
       FROM cache_entries WHERE tenant_id = $tenant AND vec_key = $k`,
      { k: vecKey },
    );
  }

  /**
   * Store the entry, replacing the tenant's entry of this exact key if there is one. A new exact key
   * (every cache-enabled miss but a repeated one) is one statement that inserts unless the key
   * exists (no transaction, no DELETE); an existing key is replaced in one transaction. Two replicas
   * storing the same key at once on PostgreSQL: the second one's DELETE found no row yet and its
   * INSERT meets the first one's (unique violation): it runs again and replaces it.
   */
  insert(e: NewEntry): Promise<{ vecKey: number; replaced: Removed[] }> {
    return this.group ? this.group.run(() => this.insertNow(e)) : this.insertNow(e);
  }

  private async insertNow(e: NewEntry): Promise<{ vecKey: number; replaced: Removed[] }> {
    const params = entryParams(e);
    const fresh = await this.t.get<{ vecKey: number }>(`${INSERT_ENTRY} ON CONFLICT (tenant_id, exact_key) DO NOTHING RETURNING vec_key AS "vecKey"`, params);
    if (fresh) return { vecKey: Number(fresh.vecKey), replaced: [] };
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.replace(e.exactKey, params);
      } catch (err) {
        if (attempt >= 5 || !(err instanceof StorageConstraintError) || err.kind !== "unique") throw err;
      }
    }
  }

  private replace(exactKey: string, params: Params): Promise<{ vecKey: number; replaced: Removed[] }> {
    return this.t.tx(async () => {
      const replaced = await this.t.all<Removed>(`DELETE FROM cache_entries WHERE tenant_id = $tenant AND exact_key = $k ${REMOVED}`, { k: exactKey });
      const r = await this.t.get<{ vecKey: number }>(`${INSERT_ENTRY} RETURNING vec_key AS "vecKey"`, params);
      return { vecKey: Number(r!.vecKey), replaced };
    });
  }

  async touch(vecKeys: number[], at: number, hits: number[]): Promise<void> {
    if (!vecKeys.length) return;
    await this.t.tx(async () => {
      for (let i = 0; i < vecKeys.length; i++)
        await this.t.run(
          "UPDATE cache_entries SET last_used_at = CASE WHEN last_used_at > $at THEN last_used_at ELSE $at END, hits = hits + $h WHERE tenant_id = $tenant AND vec_key = $k",
          { at, h: hits[i] ?? 0, k: vecKeys[i]! },
        );
    });
  }

  async count(): Promise<number> {
    return (await this.t.get<{ n: number }>("SELECT COUNT(*) AS n FROM cache_entries WHERE tenant_id = $tenant"))!.n;
  }

  deleteById(id: string): Promise<Removed | undefined> {
    return this.t.get<Removed>(`DELETE FROM cache_entries WHERE tenant_id = $tenant AND id = $id ${REMOVED}`, { id });
  }

  deleteByVecKey(vecKey: number): Promise<Removed | undefined> {
    return this.t.get<Removed>(`DELETE FROM cache_entries WHERE tenant_id = $tenant AND vec_key = $k ${REMOVED}`, { k: vecKey });
  }

  deleteAll(): Promise<Removed[]> {
    return this.t.all<Removed>(`DELETE FROM cache_entries WHERE tenant_id = $tenant ${REMOVED}`);
  }

  /**
   * LRU eviction decided by the database: the coldest entries beyond `max`, counted in the same
   * statement, so replicas storing at once evict what is over the bound once, not once each.
   */
  evictOver(max: number): Promise<Removed[]> {
    return this.t.all<Removed>(
      `DELETE FROM cache_entries WHERE tenant_id = $tenant AND vec_key IN (
         SELECT vec_key FROM cache_entries WHERE tenant_id = $tenant ORDER BY last_used_at ASC, vec_key ASC
         LIMIT (SELECT CASE WHEN COUNT(*) > $max THEN COUNT(*) - $max ELSE 0 END FROM cache_entries WHERE tenant_id = $tenant))  ${REMOVED}`,
      { max },
    );
  }

  deleteExpired(now: number): Promise<Removed[]> {
    return this.t.all<Removed>(`DELETE FROM cache_entries WHERE tenant_id = $tenant AND expires_at IS NOT NULL AND expires_at <= $now ${REMOVED}`, { now });
  }

  deleteCodeScopeExcept(scope: string, hash: string): Promise<Removed[]> {
    return this.t.all<Removed>(
      `DELETE FROM cache_entries WHERE tenant_id = $tenant AND code_scope = $scope AND code_hash <> $hash ${REMOVED}`,
      { scope, hash },
    );
  }

  async partitionVectors(partition: string): Promise<Array<{ vecKey: number; vec: Float32Array }>> {
    return (
      await this.t.all<{ vecKey: number; q: Uint8Array }>(
        `SELECT vec_key AS "vecKey", query_vec AS q FROM cache_entries WHERE tenant_id = $tenant AND partition = $p AND query_vec IS NOT NULL ORDER BY vec_key`,
        { p: partition },
      )
    ).map((r) => ({ vecKey: r.vecKey, vec: fromBlob(r.q, this.ownBlobs)! }));
  }

  async partitionFingerprint(partition: string): Promise<{ count: number; maxKey: number; sumKey: number }> {
    const r = (await this.t.get<{ count: number; maxKey: number | null; sumKey: number | null }>(
      `SELECT COUNT(*) AS count, MAX(vec_key) AS "maxKey", SUM(vec_key) AS "sumKey" FROM cache_entries WHERE tenant_id = $tenant AND partition = $p AND query_vec IS NOT NULL`,
      { p: partition },
    ))!;
    return { count: r.count, maxKey: r.maxKey ?? 0, sumKey: r.sumKey ?? 0 };
  }

  async list(limit: number, offset: number): Promise<{ entries: EntrySummary[]; total: number }> {
    const entries = await this.t.all<EntrySummary>(
      `SELECT id, style, model, mode, query_text AS query, created_at AS "createdAt", expires_at AS "expiresAt", last_used_at AS "lastUsedAt", hits
       FROM cache_entries WHERE tenant_id = $tenant ORDER BY created_at DESC, vec_key DESC LIMIT $limit OFFSET $offset`,
      { limit, offset },
    );
    return { entries, total: await this.count() };
  }
}

/**
 * The partitions of the most recently used entries, across tenants, newest use first: what a
 * replica loads into its indexes at start (SemanticCacheEngine.warmUp).
 */
export function recentPartitions(storage: AsyncStorage, limit: number): Promise<Array<{ tenantId: string; partition: string }>> {
  return storage
    .global("cache warm-up at start: the partitions every tenant used last, to load their indexes before /ready")
    .all<{ tenantId: string; partition: string }>(
      `SELECT tenant_id AS "tenantId", partition FROM cache_entries WHERE partition IS NOT NULL AND query_vec IS NOT NULL
       GROUP BY tenant_id, partition ORDER BY MAX(last_used_at) DESC, tenant_id, partition LIMIT $limit`,
      { limit },
    );
}
