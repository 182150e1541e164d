/**
 * In-memory USearch indexes of cached tool results, one per (tenant, tool), built lazily from the
 * f32 vectors SQLite holds and updated as entries are stored and removed. At most `maxIndexes`
 * stay loaded (least recently used dropped; rebuilt from SQLite on next use). Index scores only
 * choose candidates: callers re-score with the exact cosine of the stored vector.
 */
import { DEFAULT_INDEX_PARAMS, VectorIndex, type Neighbour } from "../../core/vector-index";
import type { ToolCacheStore, Removed } from "./store";

export class ToolVectors {
  private readonly indexes = new Map<string, VectorIndex>();

  constructor(private readonly maxIndexes = 2_000) {}

  private key(tenantId: string, toolId: string) {
    return `${tenantId}\u0000${toolId}`;
  }

  private indexOf(store: ToolCacheStore, toolId: string, embedderId: string, dimensions: number): VectorIndex {
    const k = this.key(store.db.tenantId, toolId);
    let idx = this.indexes.get(k);
    if (idx && idx.params.dimensions !== dimensions) idx = undefined;
    if (idx) {
      this.indexes.delete(k); // refresh LRU position
      this.indexes.set(k, idx);
      return idx;
    }
    idx = new VectorIndex({ ...DEFAULT_INDEX_PARAMS, dimensions, quantization: "f32" });
    idx.addMany(store.vectorsOfTool(toolId, embedderId));
    this.indexes.set(k, idx);
    while (this.indexes.size > this.maxIndexes) this.indexes.delete(this.indexes.keys().next().value!);
    return idx;
  }

  add(store: ToolCacheStore, toolId: string, embedderId: string, vecKey: number, vec: Float32Array) {
    const k = this.key(store.db.tenantId, toolId);
    const idx = this.indexes.get(k);
    if (idx && idx.params.dimensions === vec.length) idx.add(vecKey, vec);
    // an index not loaded yet reads the vector from SQLite when it is built
  }

  search(store: ToolCacheStore, toolId: string, embedderId: string, query: Float32Array, k: number): Neighbour[] {
    return this.indexOf(store, toolId, embedderId, query.length).search(query, k);
  }

  remove(tenantId: string, removed: Removed[]) {
    for (const r of removed) this.indexes.get(this.key(tenantId, r.toolId))?.remove(r.vecKey);
  }

  clear() {
    this.indexes.clear();
  }
}
