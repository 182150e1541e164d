/**
 * In-memory USearch indexes (core/vector-index.ts) of the Memory API's searchable items, one per
 * (tenant, project, kind) so a project's search never sees another's items and a deleted project
 * drops its whole index. Built lazily from the f32 vectors SQLite holds (the source of truth),
 * kept current as items are stored and removed; at most `maxIndexes` stay loaded (least recently
 * used dropped, rebuilt on next use).
 */
import { DEFAULT_INDEX_PARAMS, VectorIndex, type Neighbour } from "../core/vector-index";
import type { ItemKind, MemoryStore } from "./store";

export class MemoryVectors {
  private readonly indexes = new Map<string, VectorIndex>();

  constructor(private readonly maxIndexes = 1_000) {}

  private key(tenantId: string, projectId: string, kind: ItemKind) {
    return `${tenantId}\u0000${projectId}\u0000${kind}`;
  }

  private indexOf(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, dimensions: number): VectorIndex {
    const k = this.key(store.tenantId, projectId, kind);
    let idx = this.indexes.get(k);
    if (idx && idx.params.dimensions !== dimensions) idx = undefined;
    if (idx) {
      this.indexes.delete(k); // refresh LRU position
      this.indexes.set(k, idx);
      return idx;
    }
    idx = new VectorIndex({ ...DEFAULT_INDEX_PARAMS, dimensions, quantization: "f32" });
    idx.addMany(store.vectors(kind, projectId, embedderId));
    this.indexes.set(k, idx);
    while (this.indexes.size > this.maxIndexes) this.indexes.delete(this.indexes.keys().next().value!);
    return idx;
  }

  add(tenantId: string, projectId: string, kind: ItemKind, key: number, vec: Float32Array) {
    const idx = this.indexes.get(this.key(tenantId, projectId, kind));
    if (idx && idx.params.dimensions === vec.length) idx.add(key, vec);
    // an index not loaded yet reads the vector from SQLite when it is built
  }

  remove(tenantId: string, projectId: string, kind: ItemKind, key: number) {
    this.indexes.get(this.key(tenantId, projectId, kind))?.remove(key);
  }

  search(store: MemoryStore, projectId: string, kind: ItemKind, embedderId: string, query: Float32Array, k: number): Neighbour[] {
    return this.indexOf(store, projectId, kind, embedderId, query.length).search(query, k);
  }

  dropProject(tenantId: string, projectId: string) {
    for (const kind of ["milestone", "knowledge", "document"] as ItemKind[]) this.indexes.delete(this.key(tenantId, projectId, kind));
  }

  /** Loaded indexes (diagnostics and tests). */
  get loaded(): number {
    return this.indexes.size;
  }

  clear() {
    this.indexes.clear();
  }
}
