/**
 * External sources (doc1 §4.12): create / list / update / delete / status, and sync — the
 * connector's batches are embedded, then each batch's documents and the cursor it advances to are
 * committed in one transaction, so a failure mid-sync keeps every committed batch and the cursor
 * of the last one. One sync per source at a time (409 while one runs).
 */
import { ApiError, conflict, notFound } from "../../core/errors";
import { uuid } from "../../core/ids";
import type { OutboundPolicy } from "../../core/outbound";
import type { MemoryConfig } from "../config";
import type { Embedder } from "../ports";
import type { MemoryStore } from "../store";
import type { MemoryVectors } from "../vectors";
import type { ExternalSource, SourceType } from "../types";
import { CONNECTORS, baseUrlOf, checkConfig, isUnconfigured } from "./connectors";

export interface SourceDeps {
  stores: (tenantId: string) => MemoryStore;
  embedder: Embedder;
  vectors: MemoryVectors;
  outbound: OutboundPolicy;
  env: Record<string, string | undefined>;
  config: Pick<MemoryConfig, "secret_env_prefix" | "sync_page_size" | "sync_max_items" | "sync_timeout_ms">;
  clock?: () => number;
}

export interface SyncResult {
  sourceId: string;
  sourceType: SourceType;
  projectId: string;
  itemsSynced: number;
  syncCursor: string;
  lastSyncedAt: string | null;
  enabled: boolean;
  complete: boolean;
}

const EMBED_BATCH = 32;

export class SourceService {
  private readonly running = new Set<string>();

  constructor(private readonly d: SourceDeps) {}

  private at() {
    return new Date((this.d.clock ?? Date.now)()).toISOString();
  }

  private async checkUrl(type: SourceType, config: Record<string, unknown>) {
    if (isUnconfigured(config)) return;
    const base = baseUrlOf(type, config);
    if (!base) throw new ApiError("validation_error", "body field 'config.baseUrl': required");
    try {
      await this.d.outbound.check(base);
    } catch (e) {
      if (e instanceof ApiError) throw new ApiError("validation_error", `body field 'config.baseUrl': ${e.message}`);
      throw e;
    }
  }

  async create(tenantId: string, b: { sourceId: string; projectId: string; sourceType: SourceType; config?: Record<string, unknown> }): Promise<ExternalSource> {
    const s = this.d.stores(tenantId);
    const config = checkConfig(b.sourceType, b.config ?? {}, this.d.config.secret_env_prefix);
    await this.checkUrl(b.sourceType, config);
    await s.tx(async () => {
      if (!(await s.projectExists(b.projectId))) throw notFound(`project '${b.projectId}'`);
      if (await s.source(b.sourceId)) throw conflict(`source '${b.sourceId}' already exists`);
      const at = this.at();
      await s.insertSource({ sourceId: b.sourceId, tenantId, projectId: b.projectId, sourceType: b.sourceType, config, syncCursor: "", lastSyncedAt: null, enabled: true, createdAt: at, updatedAt: at, lastError: null, itemsSynced: 0 });
    });
    return (await s.source(b.sourceId))!;
  }

  list(tenantId: string, limit: number, offset: number, projectId?: string) {
    return this.d.stores(tenantId).listSources(limit, offset, projectId);
  }

  async get(tenantId: string, id: string): Promise<ExternalSource> {
    const src = await this.d.stores(tenantId).source(id);
    if (!src) throw notFound(`source '${id}'`);
    return src;
  }

  /**
   * Partial update. A new project, type or fetch-relevant config (anything but tokenEnv/email)
   * starts the source over: its documents are removed and the cursor reset.
   */
  async update(tenantId: string, id: string, b: { projectId?: string; sourceType?: SourceType; config?: Record<string, unknown>; enabled?: boolean }): Promise<ExternalSource> {
    const s = this.d.stores(tenantId);
    const cur = await this.get(tenantId, id);
    const type = b.sourceType ?? cur.sourceType;
    const config = checkConfig(type, b.config ?? cur.config, this.d.config.secret_env_prefix);
    await this.checkUrl(type, config);
    const fetchKeys = (c: Record<string, unknown>) => JSON.stringify(Object.entries(c).filter(([k]) => k !== "tokenEnv" && k !== "email").sort(([a], [z]) => a.localeCompare(z)));
    const restart = type !== cur.sourceType || (b.projectId !== undefined && b.projectId !== cur.projectId) || fetchKeys(config) !== fetchKeys(cur.config);
    if (restart && this.running.has(this.key(tenantId, id))) throw conflict(`source '${id}' is syncing; retry when the sync is done`);
    const removed = await s.tx(async () => {
      await this.get(tenantId, id);
      const projectId = b.projectId ?? cur.projectId;
      if (!(await s.projectExists(projectId))) throw notFound(`project '${projectId}'`);
      const gone = restart ? await s.deleteDocumentsOfSource(id) : [];
      await s.updateSource(id, { projectId, sourceType: type, config, enabled: b.enabled ?? cur.enabled, resetCursor: restart, at: this.at() });
      return gone;
    });
    for (const r of removed) this.d.vectors.remove(tenantId, r.project_id, "document", r.key);
    return (await s.source(id))!;
  }

  async delete(tenantId: string, id: string) {
    const s = this.d.stores(tenantId);
    const removed = await s.tx(async () => {
      await this.get(tenantId, id);
      const gone = await s.deleteDocumentsOfSource(id);
      await s.deleteSource(id);
      return gone;
    });
    for (const r of removed) this.d.vectors.remove(tenantId, r.project_id, "document", r.key);
  }

  async status(tenantId: string, id: string) {
    const src = await this.get(tenantId, id);
    return {
      sourceId: src.sourceId,
      lastSyncedAt: src.lastSyncedAt,
      syncCursor: src.syncCursor,
      enabled: src.enabled,
      sourceType: src.sourceType,
      projectId: src.projectId,
      itemsSynced: src.itemsSynced,
      lastError: src.lastError,
      syncing: this.running.has(this.key(tenantId, id)),
    };
  }

  private key(tenantId: string, id: string) {
    return `${tenantId}\u0000${id}`;
  }

  /** The credential a source names (config.tokenEnv), read from the environment at call time. */
  tokenOf(src: ExternalSource): string | undefined {
    const name = typeof src.config.tokenEnv === "string" ? src.config.tokenEnv : undefined;
    if (!name) return undefined;
    if (!name.startsWith(this.d.config.secret_env_prefix)) throw new ApiError("configuration_error", `source '${src.sourceId}': tokenEnv must start with ${this.d.config.secret_env_prefix}`);
    const v = this.d.env[name];
    if (!v) throw new ApiError("configuration_error", `source '${src.sourceId}': environment variable ${name} is not set`);
    return v;
  }

  async sync(tenantId: string, id: string): Promise<SyncResult> {
    const s = this.d.stores(tenantId);
    const src = await this.get(tenantId, id);
    if (!src.enabled) throw conflict(`source '${id}' is disabled`);
    if (isUnconfigured(src.config)) throw conflict(`source '${id}' is not configured: PUT /api/v1/memory/sources/${id} with its config (keys for '${src.sourceType}': ${CONNECTORS[src.sourceType].keys.join(", ")})`);
    const lock = this.key(tenantId, id);
    if (this.running.has(lock)) throw conflict(`source '${id}' is already syncing`);
    this.running.add(lock);
    let stored = 0;
    let complete = true;
    try {
      const token = this.tokenOf(src);
      const pages = CONNECTORS[src.sourceType].pages({
        config: src.config,
        cursor: src.syncCursor,
        fetch: this.d.outbound.fetch,
        token,
        pageSize: this.d.config.sync_page_size,
        timeoutMs: this.d.config.sync_timeout_ms,
      });
      for await (const batch of pages) {
        const vecs: Float32Array[] = [];
        for (let i = 0; i < batch.items.length; i += EMBED_BATCH)
          vecs.push(...(await this.d.embedder.embed(batch.items.slice(i, i + EMBED_BATCH).map((d) => `${d.title}\n${d.body}`.slice(0, 4_000)))));
        const at = this.at();
        const written = await s.tx(async () => {
          const now = await s.source(id);
          if (!now || now.projectId !== src.projectId || now.sourceType !== src.sourceType) throw conflict(`source '${id}' changed during the sync`);
          const keys: Array<{ key: number; replaced: number | null }> = [];
          for (const [i, d] of batch.items.entries()) keys.push(await s.upsertDocument(src.projectId, id, d, uuid(), this.d.embedder.id, vecs[i]!, at));
          if (batch.cursor !== undefined) await s.advanceCursor(id, batch.cursor, batch.items.length);
          else await s.addItemsSynced(id, batch.items.length);
          return keys;
        });
        written.forEach((w, i) => {
          if (w.replaced !== null) this.d.vectors.remove(tenantId, src.projectId, "document", w.replaced);
          this.d.vectors.add(tenantId, src.projectId, "document", w.key, vecs[i]!);
        });
        stored += batch.items.length;
        if (stored >= this.d.config.sync_max_items && batch.cursor !== undefined) {
          complete = false;
          break;
        }
      }
      await s.finishSync(id, this.at(), null);
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError("proxy_error", `sync failed: ${(e as Error)?.message ?? String(e)}`);
      await s.finishSync(id, this.at(), err.message);
      const after = await s.source(id);
      throw new ApiError(err.type, `sync of source '${id}' failed after ${stored} items: ${err.message}`, {
        source_id: id,
        items_synced: stored,
        sync_cursor: after?.syncCursor ?? src.syncCursor,
      });
    } finally {
      this.running.delete(lock);
    }
    const done = (await s.source(id))!;
    return { sourceId: id, sourceType: done.sourceType, projectId: done.projectId, itemsSynced: stored, syncCursor: done.syncCursor, lastSyncedAt: done.lastSyncedAt, enabled: done.enabled, complete };
  }
}
