/**
 * In-memory USearch indexes of cached tool results, one per (tenant, tool), built lazily from the
 * f32 vectors the database holds and updated as entries are stored and removed. At most `maxIndexes`
 * stay loaded (least recently used dropped; rebuilt from the database on next use). Index scores only
 * choose candidates: callers re-score with the exact cosine of the stored vector.
 *
 * A build reads the tool's vectors asynchronously: additions and removals that arrive while it
 * reads are replayed on the built index (a removal after an addition of the same key wins).
 */
import { DEFAULT_INDEX_PARAMS, VectorIndex, type Neighbour } from "../../core/vector-index";
import type { ToolCacheStore, Removed } from "./store";

type Change = { add: true; vecKey: number; vec: Float32Array } | { add: false; vecKey: number };

export class ToolVectors {
  private readonly indexes = new Map<string, VectorIndex>();
  /** builds in progress, with the changes they must replay */
  private readonly building = new Map<string, { done: Promise<VectorIndex>; changes: Change[] }>();

  constructor(private readonly maxIndexes = 2_000) {}

  private key(tenantId: string, toolId: string) {
    return `${tenantId}\u0000${toolId}`;
  }

  private async indexOf(store: ToolCacheStore, toolId: string, embedderId: string, dimensions: number): Promise<VectorIndex> {
    const k = this.key(store.db.tenantId, toolId);
    let idx = this.indexes.get(k);
    if (idx && idx.params.dimensions !== dimensions) idx = undefined;
    if (idx) {
      this.indexes.delete(k); // refresh LRU position
      this.indexes.set(k, idx);
      return idx;
    }
    const pending = this.building.get(k);
    if (pending) {
      const built = await pending.done;
      if (built.params.dimensions === dimensions) return built;
    }
    const changes: Change[] = [];
    const done = (async () => {
      const fresh = new VectorIndex({ ...DEFAULT_INDEX_PARAMS, dimensions, quantization: "f32" });
      fresh.addMany(await store.vectorsOfTool(toolId, embedderId));
      for (const c of changes) {
        if (c.add) {
          if (c.vec.length === dimensions) fresh.add(c.vecKey, c.vec);
        } else fresh.remove(c.vecKey);
      }
      return fresh;
    })();
    this.building.set(k, { done, changes });
    try {
      idx = await done;
    } finally {
      if (this.building.get(k)?.done === done) this.building.delete(k);
    }
    this.indexes.set(k, idx);
    while (this.indexes.size > this.maxIndexes) this.indexes.delete(this.indexes.keys().next().value!);
    return idx;
  }

  add(store: ToolCacheStore, toolId: string, _embedderId: string, vecKey: number, vec: Float32Array) {
    const k = this.key(store.db.tenantId, toolId);
    this.building.get(k)?.changes.push({ add: true, vecKey, vec });
    const idx = this.indexes.get(k);
    if (idx && idx.params.dimensions === vec.length) idx.add(vecKey, vec);
    // an index not loaded yet reads the vector from the database when it is built
  }

  async search(store: ToolCacheStore, toolId: string, embedderId: string, query: Float32Array, k: number): Promise<Neighbour[]> {
    return (await this.indexOf(store, toolId, embedderId, query.length)).search(query, k);
  }

  remove(tenantId: string, removed: Removed[]) {
    for (const r of removed) {
      const k = this.key(tenantId, r.toolId);
      this.building.get(k)?.changes.push({ add: false, vecKey: r.vecKey });
      this.indexes.get(k)?.remove(r.vecKey);
    }
  }

  clear() {
    this.indexes.clear();
  }
}
