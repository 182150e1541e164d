/**
 * The cache's per-tenant in-memory state and its lifecycle, apart from the hit decision
 * (engine.ts): which tenants are loaded (bounded, least recently used first out, idle ones
 * unloaded), their per-partition vector indexes (loaded from a saved file when it still matches
 * the database, otherwise rebuilt from it; saved when a tenant unloads and on close), and the
 * batched hit bookkeeping (last-used times and hit counts written once a second, not per hit).
 *
 * Loading reads the database (async); a loaded tenant and a loaded partition index answer
 * synchronously (`use`, `loadedIndex`), so a cache hit on warm state awaits nothing extra.
 * Concurrent first uses share one load.
 */
import { join } from "node:path";
import { rmSync } from "node:fs";
import type { Logger } from "../core/log";
import type { CacheStore, TenantCacheSettings } from "./store";
import { VectorIndex, DEFAULT_INDEX_PARAMS, type Quantization } from "../core/vector-index";
import { sha256 } from "./partition";

export class TenantState {
  count = 0;
  /** engine clock at the last use (idle unloading) */
  lastUsed = 0;
  readonly parts = new Map<string, VectorIndex>();
  readonly stats = { lookups: 0, hits: { exact: 0, semantic: 0, l2_context: 0 }, misses: 0, stores: 0, evictions: 0 };
  /** pending hit bookkeeping: vecKey -> hits since the last flush */
  readonly touches = new Map<number, number>();
  /** the tenant's own settings, read with the tenant and again after a change (see settings()) */
  own: TenantCacheSettings = { decisionThreshold: null };
  private ownRead: Promise<void> | undefined;
  /** partition indexes being loaded (concurrent first uses share one load) */
  readonly loading = new Map<string, Promise<VectorIndex>>();
  constructor(
    readonly repo: CacheStore,
    readonly dirKey: string,
  ) {}

  /** Count and settings from the database (once, when the tenant loads). */
  async load(): Promise<this> {
    const [count] = await Promise.all([this.repo.count(), this.refreshSettings()]);
    this.count = count;
    return this;
  }

  /** The tenant's own hit-decision settings, as last read from the database (kept while the tenant is loaded). */
  settings(): TenantCacheSettings {
    return this.own;
  }

  /** Read the settings again (they changed, here or on another replica). */
  refreshSettings(): Promise<void> {
    const read = (this.ownRead = this.repo.settings().then((s) => {
      if (this.ownRead === read) this.own = s;
    }));
    return read;
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
  /** tenants being loaded (concurrent first uses share one load) */
  private readonly loading = new Map<string, Promise<TenantState>>();

  constructor(private readonly o: TenantRegistryOptions) {}

  /** The tenant's state, loaded on first use; marks it most recently used. */
  get(tenantId: string): Promise<TenantState> {
    const ts = this.use(tenantId);
    return ts ? Promise.resolve(ts) : this.load(tenantId);
  }

  /** The tenant's state when it is loaded, marked most recently used (no database, no promise); undefined: `get` loads it. */
  use(tenantId: string): TenantState | undefined {
    const ts = this.tenants.get(tenantId);
    if (!ts) return undefined;
    // Map order = least recently used first (re-inserted on use), for the loaded-tenants bound
    this.tenants.delete(tenantId);
    ts.lastUsed = this.o.now();
    this.tenants.set(tenantId, ts);
    return ts;
  }

  private load(tenantId: string): Promise<TenantState> {
    let p = this.loading.get(tenantId);
    if (p) return p.then((ts) => this.use(tenantId) ?? ts);
    p = new TenantState(this.o.store(tenantId), sha256(`tenant:${tenantId}`).slice(0, 32))
      .load()
      .then((ts) => {
        // a purge/drop while loading: this load may predate it; the next use loads again
        if (this.loading.get(tenantId) !== p) return ts;
        this.loading.delete(tenantId);
        const max = this.o.bounds().maxLoaded ?? 10_000;
        for (const id of this.tenants.keys()) {
          if (this.tenants.size < max) break;
          void this.unload(id);
        }
        ts.lastUsed = this.o.now();
        this.tenants.set(tenantId, ts);
        return ts;
      })
      .finally(() => {
        if (this.loading.get(tenantId) === p) this.loading.delete(tenantId);
      });
    this.loading.set(tenantId, p);
    return p;
  }

  /** The tenant's state when it is loaded (never loads it). */
  peek(tenantId: string): TenantState | undefined {
    return this.tenants.get(tenantId);
  }

  /** Drop a tenant's memory without saving it (another replica changed its entries wholesale): it reloads from the database. */
  drop(tenantId: string) {
    this.tenants.delete(tenantId);
    this.loading.delete(tenantId);
  }

  /** Drop every tenant's memory without saving (changes may have been missed): each reloads from the database on its next use. */
  dropAll() {
    void this.flushTouches(); // hit bookkeeping is this replica's own: kept (its rows are taken before the clear)
    this.tenants.clear();
    this.loading.clear();
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
  async unloadIdle(): Promise<number> {
    const cutoff = this.o.now() - (this.o.bounds().idleSecs ?? 600) * 1000;
    const gone: Promise<void>[] = [];
    for (const [id, ts] of [...this.tenants]) if (ts.lastUsed <= cutoff) gone.push(this.unload(id));
    await Promise.all(gone);
    return gone.length;
  }

  /** Out of memory at once; resolves when its pending hits and dirty indexes are written. */
  private async unload(tenantId: string): Promise<void> {
    const ts = this.tenants.get(tenantId);
    if (!ts) return;
    this.tenants.delete(tenantId);
    await this.flushTouches(ts);
    await this.saveIndexes(ts);
  }

  /** Forget a tenant whose entries were all deleted: its indexes and saved files go too. */
  forget(tenantId: string) {
    const ts = this.tenants.get(tenantId);
    this.tenants.delete(tenantId);
    this.loading.delete(tenantId);
    if (this.o.indexDir) {
      const dirKey = ts?.dirKey ?? sha256(`tenant:${tenantId}`).slice(0, 32);
      rmSync(join(this.o.indexDir, dirKey), { recursive: true, force: true });
    }
    ts?.touches.clear();
  }

  /** Save dirty indexes and drop everything (shutdown). */
  async close(): Promise<void> {
    const all = [...this.tenants.values()];
    this.tenants.clear();
    this.loading.clear();
    for (const ts of all) {
      await this.flushTouches(ts);
      await this.saveIndexes(ts);
    }
  }

  /** The only place indexes are saved: with the fingerprint of the rows they hold. */
  private async saveIndexes(ts: TenantState): Promise<void> {
    if (!this.o.indexDir) return;
    for (const [p, idx] of ts.parts) {
      if (!idx.dirty) continue;
      try {
        // the fingerprint and the index agree when no write lands between: nothing else runs in
        // between on SQLite; a mismatch only costs a rebuild at the next load
        const fp = await ts.repo.partitionFingerprint(p);
        idx.save(this.indexFile(ts, p), fp);
      } catch (e) {
        this.o.log?.warn("could not save cache index (it will be rebuilt from the database)", { error: String(e) });
      }
    }
  }

  private indexFile(ts: TenantState, partition: string) {
    return join(this.o.indexDir!, ts.dirKey, `${partition}.usearch`);
  }

  /** The partition's index when it is loaded (no promise); undefined: `index` loads it. */
  loadedIndex(ts: TenantState, partition: string): VectorIndex | undefined {
    return ts.parts.get(partition);
  }

  /** The partition's index: the saved file if it matches the database, else rebuilt from the database. */
  index(tenantId: string, ts: TenantState, partition: string): Promise<VectorIndex> {
    const have = ts.parts.get(partition);
    if (have) return Promise.resolve(have);
    let p = ts.loading.get(partition);
    if (!p) {
      p = this.loadIndex(tenantId, ts, partition).finally(() => ts.loading.delete(partition));
      ts.loading.set(partition, p);
    }
    return p;
  }

  private async loadIndex(tenantId: string, ts: TenantState, partition: string): Promise<VectorIndex> {
    const p = this.o.index;
    const idx = new VectorIndex({
      dimensions: this.o.dimensions(),
      quantization: p.quantization,
      connectivity: p.connectivity ?? DEFAULT_INDEX_PARAMS.connectivity,
      expansionAdd: p.efConstruction ?? DEFAULT_INDEX_PARAMS.expansionAdd,
      expansionSearch: p.efSearch,
    });
    // while this load awaits the database: an entry stored meanwhile is added after the load (its
    // store awaits this same load; adding a key twice replaces it); a removed row the snapshot
    // still held is dropped from the index on its first lookup (candidate() finds no row)
    const fp = await ts.repo.partitionFingerprint(partition);
    if (fp.count > 0) {
      const loaded = this.o.indexDir ? idx.tryLoad(this.indexFile(ts, partition), fp) : false;
      if (!loaded) {
        const rows = await ts.repo.partitionVectors(partition);
        idx.addMany(rows);
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

  /** Write pending last-used / hit counts of one tenant, or of every loaded tenant (taken from memory at once). */
  async flushTouches(only?: TenantState): Promise<void> {
    const at = this.o.now();
    const writes: Promise<void>[] = [];
    for (const ts of only ? [only] : this.tenants.values()) {
      if (!ts.touches.size) continue;
      // in key order: replicas updating the same rows at once take their row locks in one order (no deadlock on PostgreSQL)
      const pending = [...ts.touches].sort((x, y) => x[0] - y[0]);
      const keys = pending.map(([k]) => k);
      const hits = pending.map(([, n]) => n);
      ts.touches.clear();
      writes.push(ts.repo.touch(keys, at, hits).catch((e) => this.o.log?.warn("could not record cache hits", { error: String(e) })));
    }
    await Promise.all(writes);
  }
}
