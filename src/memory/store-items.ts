/**
 * The Memory store's searchable items (store.ts extends this): knowledge entries, synced documents,
 * and what search needs over every item kind — full-text indexing, vectors for the indexes, their
 * fingerprints, BM25 matches and filters. Tenant-bound like every statement of the store; dialect
 * texts come from store-rows.ts (sqlFor), full-text search from lexical.ts.
 */
import type { AsyncTenantDb } from "../storage/async";
import type { Dialect } from "../storage/dialect";
import type { Lexical } from "./lexical";
import { MemoryOrgStore } from "./store-org";
import { TABLE, sqlFor, token, type DocumentRow, type ItemKind, type KnowledgeRow, type Sql } from "./store-rows";
import { blobF32, f32Blob, type DocumentInput } from "./types";

export class MemoryItemStore extends MemoryOrgStore {
  protected readonly sql: Sql;

  constructor(
    db: AsyncTenantDb,
    protected readonly lex: Lexical,
    dialect: Dialect,
  ) {
    super(db);
    this.sql = sqlFor(dialect);
  }

  /** FTS scope tokens: one for the tenant, one for the tenant's project (narrowing only; SQL still filters). */
  tenantToken(): string {
    return token("t_", this.tenantId);
  }
  projectToken(projectId: string): string {
    return token("p_", `${this.tenantId}\u0000${projectId}`);
  }

  // ---------------------------------------------------------------- knowledge

  knowledgeByHash(projectId: string, hash: bigint): Promise<KnowledgeRow | undefined> {
    return this.db.get<KnowledgeRow>(
      `SELECT key, knowledge_id, project_id, cache_key, reuse_score, summary, l2_collection, blob_key, created_at FROM memory_knowledge WHERE tenant_id = $tenant AND project_id = $p AND content_hash = $h`,
      { p: projectId, h: hash },
    );
  }

  /** Creation times of the project's promotions since `since` (oldest first). */
  async promotionsSince(projectId: string, since: string): Promise<string[]> {
    return (
      await this.db.all<{ created_at: string }>(`SELECT created_at FROM memory_knowledge WHERE tenant_id = $tenant AND project_id = $p AND created_at > $since ORDER BY created_at`, { p: projectId, since })
    ).map((r) => r.created_at);
  }

  async insertKnowledge(k: Omit<KnowledgeRow, "key">, hash: bigint, embedderId: string, vec: Float32Array): Promise<number> {
    const key = (await this.db.get<{ key: number }>(
      `INSERT INTO memory_knowledge (knowledge_id, tenant_id, project_id, cache_key, reuse_score, summary, l2_collection, blob_key, content_hash, embedder_id, vec, created_at)
       VALUES ($id, $tenant, $p, $cacheKey, $score, $summary, $l2, $blob, $hash, $embedder, $vec, $at) RETURNING key`,
      {
        id: k.knowledge_id,
        p: k.project_id,
        cacheKey: k.cache_key,
        score: k.reuse_score,
        summary: k.summary,
        l2: k.l2_collection,
        blob: k.blob_key,
        hash,
        embedder: embedderId,
        vec: f32Blob(vec),
        at: k.created_at,
      },
    ))!.key;
    await this.indexText("knowledge", key, k.summary, k.project_id);
    return key;
  }

  async knowledgeByKeys(keys: number[]): Promise<Map<number, KnowledgeRow>> {
    if (!keys.length) return new Map();
    const rows = await this.db.all<KnowledgeRow>(
      `SELECT key, knowledge_id, project_id, cache_key, reuse_score, summary, l2_collection, blob_key, created_at FROM memory_knowledge WHERE tenant_id = $tenant AND key IN ${this.sql.keys("$keys")}`,
      { keys: JSON.stringify(keys) },
    );
    return new Map(rows.map((r) => [r.key, r]));
  }

  // ---------------------------------------------------------------- documents

  /** Insert or replace a synced document; returns its key and whether an older version was replaced. */
  async upsertDocument(
    projectId: string,
    sourceId: string,
    d: DocumentInput,
    documentId: string,
    embedderId: string,
    vec: Float32Array,
    at: string,
  ): Promise<{ key: number; replaced: number | null }> {
    const old = await this.db.get<{ key: number }>(`SELECT key FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s AND external_id = $e`, { s: sourceId, e: d.externalId });
    if (old) {
      await this.db.run(`DELETE FROM memory_documents_fts WHERE rowid IN (SELECT key FROM memory_documents WHERE tenant_id = $tenant AND key = $k)`, { k: old.key });
      await this.db.run(`DELETE FROM memory_documents WHERE tenant_id = $tenant AND key = $k`, { k: old.key });
    }
    const key = (await this.db.get<{ key: number }>(
      `INSERT INTO memory_documents (document_id, tenant_id, project_id, source_id, external_id, kind, title, body, url, author, updated_at, embedder_id, vec, created_at)
       VALUES ($id, $tenant, $p, $s, $e, $kind, $title, $body, $url, $author, $updated, $embedder, $vec, $at) RETURNING key`,
      {
        id: documentId,
        p: projectId,
        s: sourceId,
        e: d.externalId,
        kind: d.kind,
        title: d.title,
        body: d.body,
        url: d.url,
        author: d.author,
        updated: d.updatedAt,
        embedder: embedderId,
        vec: f32Blob(vec),
        at,
      },
    ))!.key;
    await this.indexText("document", key, `${d.title}\n${d.body}`, projectId);
    return { key, replaced: old?.key ?? null };
  }

  async documentsByKeys(keys: number[]): Promise<Map<number, DocumentRow>> {
    if (!keys.length) return new Map();
    const rows = await this.db.all<DocumentRow>(
      `SELECT key, document_id, project_id, source_id, external_id, kind, title, body, url, author, updated_at, created_at FROM memory_documents WHERE tenant_id = $tenant AND key IN ${this.sql.keys("$keys")}`,
      { keys: JSON.stringify(keys) },
    );
    return new Map(rows.map((r) => [r.key, r]));
  }

  documentsOfSource(sourceId: string): Promise<DocumentRow[]> {
    return this.db.all<DocumentRow>(
      `SELECT key, document_id, project_id, source_id, external_id, kind, title, body, url, author, updated_at, created_at FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s ORDER BY key`,
      { s: sourceId },
    );
  }

  /** Remove a source's documents; returns their keys. */
  async deleteDocumentsOfSource(sourceId: string): Promise<Array<{ key: number; project_id: string }>> {
    const rows = await this.db.all<{ key: number; project_id: string }>(`SELECT key, project_id FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s`, { s: sourceId });
    await this.db.run(`DELETE FROM memory_documents_fts WHERE rowid IN (SELECT key FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s)`, { s: sourceId });
    await this.db.run(`DELETE FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s`, { s: sourceId });
    return rows;
  }

  // ---------------------------------------------------------------- search support

  protected async indexText(kind: ItemKind, key: number, text: string, projectId: string) {
    const t = TABLE[kind];
    await this.db.run(`INSERT INTO ${t}_fts (rowid, body, scope) SELECT key, CAST($body AS TEXT), CAST($scope AS TEXT) FROM ${t} WHERE tenant_id = $tenant AND key = $key`, {
      key,
      body: this.lex.bodyOf(text),
      scope: `${this.tenantToken()} ${this.projectToken(projectId)}`,
    });
  }

  /** Vectors of a project's items of one kind (to build its index), or only those with a key above `afterKey` (to catch up). */
  async vectors(kind: ItemKind, projectId: string, embedderId: string, afterKey = -1): Promise<Array<{ vecKey: number; vec: Float32Array }>> {
    return (await this.db.all<{ key: number; vec: Uint8Array }>(`SELECT key, vec FROM ${TABLE[kind]} WHERE tenant_id = $tenant AND project_id = $p AND embedder_id = $e AND key > $after`, { p: projectId, e: embedderId, after: afterKey })).map(
      (r) => ({ vecKey: r.key, vec: blobF32(r.vec) }),
    );
  }

  /** What a saved index must match to be loaded: count, max and sum of the keys of the rows it holds. */
  async fingerprint(kind: ItemKind, projectId: string, embedderId: string): Promise<{ count: number; maxKey: number; sumKey: number }> {
    return (await this.db.get<{ count: number; maxKey: number; sumKey: number }>(
      `SELECT COUNT(*) AS count, COALESCE(MAX(key), 0) AS "maxKey", COALESCE(SUM(key), 0) AS "sumKey" FROM ${TABLE[kind]} WHERE tenant_id = $tenant AND project_id = $p AND embedder_id = $e`,
      { p: projectId, e: embedderId },
    ))!;
  }

  /**
   * BM25 matches of any of `words` among the given projects' items of one kind, best first, with
   * optional filters (agent ids, created since); lexical.ts runs it on either backend. The match is
   * narrowed to the project's scope (the tenant's, for several projects; SQL keeps only the listed
   * ones); words in more than `maxDf` items of that scope are dropped, so the cost stays bounded.
   */
  lexical(kind: ItemKind, words: string[], projectIds: string[], k: number, filter: { agentIds?: string[]; since?: string } = {}): Promise<Array<{ key: number; bm25: number }>> {
    const time = kind === "document" ? "updated_at" : "created_at";
    const where: string[] = [];
    const params: Record<string, string> = {};
    if (filter.agentIds && kind === "milestone") {
      where.push(`i.agent_id IN ${this.sql.ids("$agents")}`);
      params.agents = JSON.stringify(filter.agentIds);
    }
    if (filter.since) {
      where.push(`i.${time} >= $since`);
      params.since = filter.since;
    }
    // one project: its token; several: the tenant's (an OR of project tokens makes FTS5 merge their doclists for every word)
    const scope = { tenantToken: this.tenantToken(), projectToken: projectIds.length === 1 ? this.projectToken(projectIds[0]!) : undefined, projectIds };
    return this.lex.search(this.db, { table: TABLE[kind], words, scope, k, where, params });
  }

  /** Keys (of the given set) that pass the filters. */
  async filterKeys(kind: ItemKind, keys: number[], filter: { agentIds?: string[]; since?: string }): Promise<Set<number>> {
    if (!keys.length) return new Set();
    const t = TABLE[kind];
    const time = kind === "document" ? "updated_at" : "created_at";
    const where = [`tenant_id = $tenant`, `key IN ${this.sql.keys("$keys")}`];
    const params: Record<string, string> = { keys: JSON.stringify(keys) };
    if (filter.agentIds && kind === "milestone") {
      where.push(`agent_id IN ${this.sql.ids("$agents")}`);
      params.agents = JSON.stringify(filter.agentIds);
    }
    if (filter.since) {
      where.push(`${time} >= $since`);
      params.since = filter.since;
    }
    return new Set((await this.db.all<{ key: number }>(`SELECT key FROM ${t} WHERE ${where.join(" AND ")}`, params)).map((r) => r.key));
  }
}
