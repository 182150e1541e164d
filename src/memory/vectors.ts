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
 * Several replicas share one database (PostgreSQL): before a search, an index compares the count,
 * max and sum of the keys it holds with the database's (one aggregate query) and, when another
 * replica stored items since, adds the rows above its highest key; when that does not account for
 * the difference (removed rows, keys committed out of order) it is rebuilt from the rows.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { DEFAULT_INDEX_PARAMS, VectorIndex, type Neighbour } from "../core/vector-index";
import type { ItemKind, MemoryStore } from "./store";
import { TOPICS, type Bus } from "../core/hotstate";

type IndexChange = { t: string; p: string; k?: ItemKind; a?: number; v?: string; r?: number; d?: 1 };

type Fingerprint = { count: number; maxKey: number; sumKey: number };
const sameKeys = (a: Fingerprint, b: Fingerprint) => a.count === b.count && a.maxKey === b.maxKey && a.sumKey === b.sumKey;
const keysOf = (rows: Array<{ vecKey: number }>): Fingerprint => ({ count: rows.length, maxKey: rows.reduce((m, r) => Math.max(m, r.vecKey), 0), sumKey: rows.reduce((n, r) => n + r.vecKey, 0) });

interface Loaded {
  idx: VectorIndex;
  store: MemoryStore;
  projectId: string;
  kind: ItemKind;
  embedderId: string;
  /** count, max and sum of the keys the index holds (maxKey -1: not known since the max was removed) */
  held: Fingerprint;
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
    /**
     * several replicas: every addition and removal reaches every replica's loaded indexes (the
     * vector travels in the message), so a search through any replica finds what was stored through
     * another; after a bus reconnect the loaded indexes are dropped (rebuilt from the database)
     */
    private readonly bus?: Bus,
  ) {
    bus?.subscribe(TOPICS.memoryIndex, (payload) => {
      if (!payload) return this.clear();
      const m = JSON.parse(payload) as IndexChange;
      if (m.d) this.dropLocal(m.t, m.p);
      else if (m.a !== undefined) {
        const b = Buffer.from(m.v!, "base64");
        this.addLocal(m.t, m.p, m.k!, m.a, new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));
      } else if (m.r !== undefined) this.removeLocal(m.t, m.p, m.k!, m.r);
    });
  }

  /** with a bus the change goes through it (delivered to this replica too, synchronously: one path) */
  private publish(m: IndexChange) {
    this.bus!.publish(TOPICS.memoryIndex, JSON.stringify(m));
  }

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
    const fp = await store.fingerprint(kind, projectId, embedderId);
    let held: Fingerprint;
    if (this.dir && idx.tryLoad(this.file(store.tenantId, projectId, kind), fp)) {
      this.loadedFromDisk++;
      held = { ...fp };
    } else {
      const rows = await store.vectors(kind, projectId, embedderId);
      idx.addMany(rows);
      held = keysOf(rows);
      this.builtFromRows++;
    }
    const l: Loaded = { idx, store, projectId, kind, embedderId, held };
    // items stored or removed while the rows were read: add()/remove() queued them (idempotent)
    for (const op of this.queued.get(k) ?? []) {
      if (op.vec) this.put(l, op.key, op.vec);
      else this.drop(l, op.key);
    }
    this.queued.delete(k);
    this.indexes.set(k, l);
    while (this.indexes.size > this.maxIndexes) {
      const oldest = this.indexes.keys().next().value!;
      void this.save(this.indexes.get(oldest)!);
      this.indexes.delete(oldest);
    }
    return idx;
  }

  private put(l: Loaded, key: number, vec: Float32Array) {
    if (vec.length !== l.idx.params.dimensions) return;
    if (!l.idx.has(key)) {
      l.held.count++;
      l.held.sumKey += key;
      if (l.held.maxKey >= 0) l.held.maxKey = Math.max(l.held.maxKey, key);
    }
    l.idx.add(key, vec);
  }

  private drop(l: Loaded, key: number) {
    if (!l.idx.has(key)) return;
    l.held.count--;
    l.held.sumKey -= key;
    if (key === l.held.maxKey) l.held.maxKey = -1;
    l.idx.remove(key);
  }

  add(tenantId: string, projectId: string, kind: ItemKind, key: number, vec: Float32Array) {
    if (this.bus) this.publish({ t: tenantId, p: projectId, k: kind, a: key, v: Buffer.from(vec.buffer, vec.byteOffset, vec.byteLength).toString("base64") });
    else this.addLocal(tenantId, projectId, kind, key, vec);
  }

  private addLocal(tenantId: string, projectId: string, kind: ItemKind, key: number, vec: Float32Array) {
    this.queued.get(this.key(tenantId, projectId, kind))?.push({ key, vec });
    const l = this.indexes.get(this.key(tenantId, projectId, kind));
    if (l) this.put(l, key, vec);
    // an index not loaded yet reads the vector from SQLite when it is built
  }

  remove(tenantId: string, projectId: string, kind: ItemKind, key: number) {
    if (this.bus) this.publish({ t: tenantId, p: projectId, k: kind, r: key });
    else this.removeLocal(tenantId, projectId, kind, key);
  }

  private removeLocal(tenantId: string, projectId: string, kind: ItemKind, key: number) {
    this.queued.get(this.key(tenantId, projectId, kind))?.push({ key });
    const l = this.indexes.get(this.key(tenantId, projectId, kind));
    if (l) this.drop(l, key);
  }

  /** What other replicas stored or removed since the index was built (see the header). */
  private async catchUp(l: Loaded) {
    const fingerprint = () => l.store.fingerprint(l.kind, l.projectId, l.embedderId);
    if (sameKeys(await fingerprint(), l.held)) return;
    if (l.held.maxKey >= 0) {
      for (const r of await l.store.vectors(l.kind, l.projectId, l.embedderId, l.held.maxKey)) this.put(l, r.vecKey, r.vec);
      if (sameKeys(await fingerprint(), l.held)) return;
    }
    const rows = await l.store.vectors(l.kind, l.projectId, l.embedderId);
    const idx = new VectorIndex({ ...DEFAULT_INDEX_PARAMS, dimensions: l.idx.params.dimensions, quantization: "f32" });
    idx.addMany(rows);
    l.idx = idx;
    l.held = keysOf(rows);
  }

  async search(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, query: Float32Array, k: number): Promise<Neighbour[]> {
    const loaded = this.indexOf(store, projectId, kind, embedderId, query.length);
    // an index this search waited to be built is as fresh as the rows it was built from
    if (loaded instanceof Promise) return (await loaded).search(query, k);
    const l = this.indexes.get(this.key(store.tenantId, projectId, kind));
    if (!l || l.idx !== loaded) return loaded.search(query, k);
    await this.catchUp(l);
    return l.idx.search(query, k);
  }

  /** Items in a project's index (the searched scope's size: how rare a word is among them). */
  async size(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, dimensions: number): Promise<number> {
    return (await this.indexOf(store, projectId, kind, embedderId, dimensions)).size;
  }

  dropProject(tenantId: string, projectId: string) {
    if (this.bus) this.publish({ t: tenantId, p: projectId, d: 1 });
    else this.dropLocal(tenantId, projectId);
  }

  private dropLocal(tenantId: string, projectId: string) {
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
