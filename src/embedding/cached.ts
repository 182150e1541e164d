/**
 * LRU wrapper: repeated texts (exact string match) are served from memory
 * instead of being embedded again. Texts missing from the LRU are embedded in
 * one call to the inner embedder; concurrent requests for the same missing
 * text share one in-flight embedding.
 */
import { LRUCache } from "lru-cache";
import type { Embedder } from "./types";

export class CachedEmbedder implements Embedder {
  private readonly lru: LRUCache<string, Float32Array>;
  private readonly inflight = new Map<string, Promise<Float32Array>>();
  hits = 0;
  misses = 0;

  constructor(
    readonly inner: Embedder,
    size = 10_000,
  ) {
    this.lru = new LRUCache<string, Float32Array>({ max: Math.max(1, size) });
  }

  get id(): string {
    return this.inner.id;
  }
  get dimensions(): number {
    return this.inner.dimensions;
  }
  load(): Promise<void> {
    return this.inner.load();
  }
  isReady(): boolean {
    return this.inner.isReady();
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const result: (Float32Array | Promise<Float32Array>)[] = new Array(texts.length);
    const missing: string[] = [];
    const missingSet = new Set<string>();
    for (let i = 0; i < texts.length; i++) {
      const t = texts[i]!;
      const v = this.lru.get(t);
      if (v) {
        this.hits++;
        result[i] = v;
        continue;
      }
      const p = this.inflight.get(t);
      if (p) {
        this.hits++;
        result[i] = p;
        continue;
      }
      if (!missingSet.has(t)) {
        missingSet.add(t);
        missing.push(t);
      }
    }
    if (missing.length > 0) {
      this.misses += missing.length;
      const batch = this.inner.embed(missing);
      missing.forEach((t, k) => {
        const p = batch.then((vs) => {
          const v = vs[k]!;
          this.lru.set(t, v);
          return v;
        });
        p.catch(() => {}).finally(() => this.inflight.delete(t));
        this.inflight.set(t, p);
      });
      for (let i = 0; i < texts.length; i++) if (!result[i]) result[i] = this.inflight.get(texts[i]!)!;
    }
    // Callers may mutate what they get; hand out copies so the cache stays intact.
    const vs = await Promise.all(result);
    return vs.map((v) => v.slice());
  }

  async close(): Promise<void> {
    this.lru.clear();
    await this.inner.close();
  }
}
