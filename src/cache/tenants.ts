/**
 * The cache's per-tenant in-memory state and its lifecycle, apart from the hit decision
 * (engine.ts): which tenants are loaded (bounded, least recently used first out, idle ones
 * unloaded), their per-partition vector indexes (loaded from a saved file when it still matches
 * SQLite, otherwise rebuilt from SQLite; saved when a tenant unloads and on close), and the
 * batched hit bookkeeping (last-used times and hit counts written once a second, not per hit).
 */
import { join } from "node:path";
import { rmSync } from "node:fs";
import type { Logger } from "../core/log";
import type { CacheStore, TenantCacheSettings } from "./store";
import { VectorIndex, DEFAULT_INDEX_PARAMS, type Quantization } from "../core/vector-index";
import { sha256 } from "./partition";

export class TenantState {
  count: number;
  /** engine clock at the last use (idle unloading) */
  lastUsed = 0;
  readonly parts = new Map<string, VectorIndex>();
  readonly stats = { lookups: 0, hits: { exact: 0, semantic: 0, l2_context: 0 }, misses: 0, stores: 0, evictions: 0 };
  /** pending hit bookkeeping: vecKey -> hits since the last flush */
  readonly touches = new Map<number, number>();
  private own: TenantCacheSettings | undefined;
  constructor(
    readonly repo: CacheStore,
    readonly dirKey: string,
  ) {
    this.count = repo.count();
  }

  /** The tenant's own hit-decision settings, read from SQLite once while the tenant is loaded. */
  settings(): TenantCacheSettings {
    this.own ??= this.repo.settings();
    return this.own;
  }

  dropSettings() {
    this.own = undefined;
  }
}

export interface TenantRegistryOptions {
  store: (tenantId: string) => CacheStore;
  now: () => number;
  dimensions: () => number;
  index: { quantization: Quantization; efSearch: number; connectivity?: number; efConstruction?: number };
  /** directory for saved index files; null = never save (in-memory databases, tests) */
  indexDir: string | null;
  /** read at each use: a tenant's state is dropped after idleSecs without use (default 600 s); at most maxLoaded tenants are kept (default 10 000) */
  bounds: () => { idleSecs?: number; maxLoaded?: number };
  log?: Logger;
}

export class TenantRegistry {
  private readonly tenants = new Map<string, TenantState>();

  constructor(private readonly o: TenantRegistryOptions) {}

  /** The tenant's state, loaded on first use; marks it most recently used. */
  get(tenantId: string): TenantState {
    let ts = this.tenants.get(tenantId);
    if (ts) {
      // Map order = least recently used first (re-inserted on use), for the loaded-tenants bound
      this.tenants.delete(tenantId);
    } else {
      ts = new TenantState(this.o.store(tenantId), sha256(`tenant:${tenantId}`).slice(0, 32));
      const max = this.o.bounds().maxLoaded ?? 10_000;
      for (const id of this.tenants.keys()) {
        if (this.tenants.size < max) break;
        this.unload(id);
      }
    }
    ts.lastUsed = this.o.now();
    this.tenants.set(tenantId, ts);
    return ts;
  }

  /** The tenant's state when it is loaded (never loads it). */
  peek(tenantId: string): TenantState | undefined {
    return this.tenants.get(tenantId);
  }

  /** Drop a tenant's memory without saving it (another replica changed its entries wholesale): it reloads from the database. */
  drop(tenantId: string) {
    this.tenants.delete(tenantId);
  }

  /** Drop every tenant's memory without saving (changes may have been missed): each reloads from the database on its next use. */
  dropAll() {
    this.flushTouches(); // hit bookkeeping is this replica's own: kept
    this.tenants.clear();
  }

  /** Tenants whose state is in memory (diagnostics and tests). */
  loaded(): string[] {
    return [...this.tenants.keys()];
  }

  entries(): IterableIterator<[string, TenantState]> {
    return this.tenants.entries();
  }

  /** Vectors held in every loaded index (the svc_cache_entries gauge). */
  indexedVectors(): number {
    let n = 0;
    for (const ts of this.tenants.values()) for (const idx of ts.parts.values()) n += idx.size;
    return n;
  }

  /**
   * Drop the in-memory state of tenants unused for `idleSecs`. Their entries stay in SQLite; the
   * next request reloads the count and, per partition, the index from its saved file (or SQLite) —
   * memory follows the active tenants, not every tenant ever seen.
   */
  unloadIdle(): number {
    const cutoff = this.o.now() - (this.o.bounds().idleSecs ?? 600) * 1000;
    let n = 0;
    for (const [id, ts] of this.tenants) {
      if (ts.lastUsed > cutoff) continue;
      this.unload(id);
      n++;
    }
    return n;
  }

  private unload(tenantId: string) {
    const ts = this.tenants.get(tenantId);
    if (!ts) return;
    this.flushTouches(ts);
    this.saveIndexes(ts);
    this.tenants.delete(tenantId);
  }

  /** Forget a tenant whose entries were all deleted: its indexes and saved files go too. */
  forget(tenantId: string) {
    const ts = this.get(tenantId);
    ts.touches.clear();
    if (this.o.indexDir) {
      for (const p of ts.parts.keys()) VectorIndex.removeFiles(this.indexFile(ts, p));
      rmSync(join(this.o.indexDir, ts.dirKey), { recursive: true, force: true });
    }
    this.tenants.delete(tenantId);
  }

  /** Save dirty indexes and drop everything (shutdown). */
  close() {
    for (const ts of this.tenants.values()) {
      this.flushTouches(ts);
      this.saveIndexes(ts);
    }
    this.tenants.clear();
  }

  /** The only place indexes are saved: with the fingerprint of the rows they hold. */
  private saveIndexes(ts: TenantState) {
    if (!this.o.indexDir) return;
    for (const [p, idx] of ts.parts) {
      if (!idx.dirty) continue;
      try {
        idx.save(this.indexFile(ts, p), ts.repo.partitionFingerprint(p));
      } catch (e) {
        this.o.log?.warn("could not save cache index (it will be rebuilt from the database)", { error: String(e) });
      }
    }
  }

  private indexFile(ts: TenantState, partition: string) {
    return join(this.o.indexDir!, ts.dirKey, `${partition}.usearch`);
  }

  /** The partition's index: the saved file if it matches SQLite, else rebuilt from SQLite. */
  index(tenantId: string, ts: TenantState, partition: string): VectorIndex {
    let idx = ts.parts.get(partition);
    if (idx) return idx;
    const p = this.o.index;
    idx = new VectorIndex({
      dimensions: this.o.dimensions(),
      quantization: p.quantization,
      connectivity: p.connectivity ?? DEFAULT_INDEX_PARAMS.connectivity,
      expansionAdd: p.efConstruction ?? DEFAULT_INDEX_PARAMS.expansionAdd,
      expansionSearch: p.efSearch,
    });
    const fp = ts.repo.partitionFingerprint(partition);
    if (fp.count > 0) {
      const loaded = this.o.indexDir ? idx.tryLoad(this.indexFile(ts, partition), fp) : false;
      if (!loaded) {
        idx.addMany(ts.repo.partitionVectors(partition));
        this.o.log?.info("cache index rebuilt from the database", { tenant: tenantId, partition, entries: fp.count });
      }
    }
    ts.parts.set(partition, idx);
    return idx;
  }

  // ---------------------------------------------------------------- hit bookkeeping

  touch(ts: TenantState, vecKey: number) {
    ts.touches.set(vecKey, (ts.touches.get(vecKey) ?? 0) + 1);
  }

  /** Write pending last-used / hit counts of one tenant, or of every loaded tenant. */
  flushTouches(only?: TenantState) {
    const at = this.o.now();
    for (const ts of only ? [only] : this.tenants.values()) {
      if (!ts.touches.size) continue;
      const keys = [...ts.touches.keys()];
      const hits = [...ts.touches.values()];
      ts.touches.clear();
      try {
        ts.repo.touch(keys, at, hits);
      } catch (e) {
        this.o.log?.warn("could not record cache hits", { error: String(e) });
      }
    }
  }
}
