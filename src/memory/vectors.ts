/**
 * In-memory USearch indexes (core/vector-index.ts) of the Memory API's searchable items, one per
 * (tenant, project, kind) so a project's search never sees another's items and a deleted project
 * drops its whole index. Built lazily from the f32 vectors the database holds (the source of truth),
 * kept current as items are stored and removed; at most `maxIndexes` stay loaded (least recently
 * used dropped). With an index directory, an index is saved when it is dropped from memory and on
 * shutdown, and loaded instead of rebuilt when its fingerprint (count, max and sum of the item
 * keys) still matches SQLite — a restart then costs a file read, not an HNSW build (≈ 2 s per
 * 10,000 milestones on 2 cores). A stale or damaged file is ignored: SQLite stays the source of truth.
 *
 * On a database shared by replicas (`followDatabase`), another replica's writes change what a
 * search must find: before each search a loaded index compares the rows' fingerprint (one aggregate
 * query) with the one it last matched; new rows (keys above the last maximum) are added, and an
 * index that still differs (rows deleted or replaced elsewhere) is rebuilt from the database.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { DEFAULT_INDEX_PARAMS, VectorIndex, type Neighbour } from "../core/vector-index";
import type { ItemKind, MemoryStore } from "./store";

interface Fingerprint {
  count: number;
  maxKey: number;
  sumKey: number;
}

interface Loaded {
  idx: VectorIndex;
  store: MemoryStore;
  projectId: string;
  kind: ItemKind;
  embedderId: string;
  /** the database's fingerprint this index last matched (followDatabase) */
  seen?: Fingerprint;
}

export class MemoryVectors {
  private readonly indexes = new Map<string, Loaded>();
  /** indexes being built (read from the database), and the add/remove calls that arrived meanwhile */
  private readonly building = new Map<string, Promise<VectorIndex>>();
  private readonly queued = new Map<string, Array<{ key: number; vec?: Float32Array }>>();
  /** indexes read from a saved file (diagnostics and tests) */
  loadedFromDisk = 0;
  builtFromRows = 0;

  constructor(
    private readonly maxIndexes = 1_000,
    /** where indexes are saved; null = never (in-memory databases, tests) */
    private readonly dir: string | null = null,
    /** other replicas write to the same database: check each loaded index against it before a search */
    private readonly followDatabase = false,
  ) {}

  private file(tenantId: string, projectId: string, kind: ItemKind): string {
    const h = createHash("sha256").update(`${tenantId}\u0000${projectId}`).digest("hex").slice(0, 32);
    return join(this.dir!, `${h}-${kind}.usearch`);
  }

  private async save(l: Loaded) {
    if (!this.dir || !l.idx.dirty) return;
    try {
      l.idx.save(this.file(l.store.tenantId, l.projectId, l.kind), await l.store.fingerprint(l.kind, l.projectId, l.embedderId));
    } catch {
      // best effort: the next start rebuilds from SQLite
    }
  }

  private key(tenantId: string, projectId: string, kind: ItemKind) {
    return `${tenantId}\u0000${projectId}\u0000${kind}`;
  }

  private indexOf(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, dimensions: number): VectorIndex | Promise<VectorIndex> {
    const k = this.key(store.tenantId, projectId, kind);
    let l = this.indexes.get(k);
    if (l && l.idx.params.dimensions !== dimensions) l = undefined;
    if (l) {
      this.indexes.delete(k); // refresh LRU position
      this.indexes.set(k, l);
      return l.idx;
    }
    // one build per index at a time: concurrent searches of a cold project wait for the same one
    let p = this.building.get(k);
    if (!p) {
      this.queued.set(k, []);
      p = this.build(store, projectId, kind, embedderId, dimensions, k).finally(() => {
        this.building.delete(k);
        this.queued.delete(k);
      });
      this.building.set(k, p);
    }
    return p;
  }

  private async build(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, dimensions: number, k: string): Promise<VectorIndex> {
    const idx = new VectorIndex({ ...DEFAULT_INDEX_PARAMS, dimensions, quantization: "f32" });
    const seen = this.dir || this.followDatabase ? await store.fingerprint(kind, projectId, embedderId) : undefined;
    if (this.dir && idx.tryLoad(this.file(store.tenantId, projectId, kind), seen!)) this.loadedFromDisk++;
    else {
      idx.addMany(await store.vectors(kind, projectId, embedderId));
      this.builtFromRows++;
    }
    // items stored or removed while the rows were read: add()/remove() queued them (idempotent)
    for (const op of this.queued.get(k) ?? []) {
      if (op.vec) {
        if (op.vec.length === dimensions) idx.add(op.key, op.vec);
      } else idx.remove(op.key);
    }
    this.queued.delete(k);
    this.indexes.set(k, { idx, store, projectId, kind, embedderId, seen });
    while (this.indexes.size > this.maxIndexes) {
      const oldest = this.indexes.keys().next().value!;
      void this.save(this.indexes.get(oldest)!);
      this.indexes.delete(oldest);
    }
    return idx;
  }

  add(tenantId: string, projectId: string, kind: ItemKind, key: number, vec: Float32Array) {
    this.queued.get(this.key(tenantId, projectId, kind))?.push({ key, vec });
    const idx = this.indexes.get(this.key(tenantId, projectId, kind))?.idx;
    if (idx && idx.params.dimensions === vec.length) idx.add(key, vec);
    // an index not loaded yet reads the vector from SQLite when it is built
  }

  remove(tenantId: string, projectId: string, kind: ItemKind, key: number) {
    this.queued.get(this.key(tenantId, projectId, kind))?.push({ key });
    this.indexes.get(this.key(tenantId, projectId, kind))?.idx.remove(key);
  }

  async search(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, query: Float32Array, k: number): Promise<Neighbour[]> {
    return (await this.current(store, projectId, kind, embedderId, query.length)).search(query, k);
  }

  /** Items in a project's index (the searched scope's size: how rare a word is among them). */
  async size(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, dimensions: number): Promise<number> {
    return (await this.current(store, projectId, kind, embedderId, dimensions)).size;
  }

  /** The index, brought up to the database's rows when other replicas write to it (see the header). */
  private async current(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, dimensions: number): Promise<VectorIndex> {
    const idx = await this.indexOf(store, projectId, kind, embedderId, dimensions);
    if (!this.followDatabase) return idx;
    const k = this.key(store.tenantId, projectId, kind);
    const l = this.indexes.get(k);
    if (!l || l.idx !== idx) return idx;
    const fp = await store.fingerprint(kind, projectId, embedderId);
    const seen = l.seen;
    if (seen && fp.count === seen.count && fp.maxKey === seen.maxKey && fp.sumKey === seen.sumKey) return idx;
    for (const r of await store.vectorsAfter(kind, projectId, embedderId, seen?.maxKey ?? 0)) if (!idx.has(r.vecKey) && r.vec.length === dimensions) idx.add(r.vecKey, r.vec);
    if (idx.size === fp.count) {
      l.seen = fp;
      return idx;
    }
    // rows deleted or replaced by another replica: rebuild from the database
    if (this.indexes.get(k) === l) this.indexes.delete(k);
    return this.indexOf(store, projectId, kind, embedderId, dimensions);
  }

  dropProject(tenantId: string, projectId: string) {
    for (const kind of ["milestone", "knowledge", "document"] as ItemKind[]) {
      this.indexes.delete(this.key(tenantId, projectId, kind));
      if (this.dir) VectorIndex.removeFiles(this.file(tenantId, projectId, kind));
    }
  }

  /** Save every changed index (shutdown). */
  async saveAll() {
    for (const l of this.indexes.values()) await this.save(l);
  }

  /** Loaded indexes (diagnostics and tests). */
  get loaded(): number {
    return this.indexes.size;
  }

  clear() {
    this.indexes.clear();
  }
}
