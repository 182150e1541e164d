/**
 * One USearch HNSW index (cosine) over L2-normalised embeddings, keyed by integers (the cache uses
 * an entry's vec_key; memory search and the tool cache their own row keys). Parameters: M=16,
 * efConstruction=128, efSearch=128 (configurable) — measured in BENCHMARKS.md ("Cache performance").
 * Scores from the index only choose candidates: callers recompute the exact cosine from the f32
 * vector stored in SQLite, so f16 quantization costs at most candidate recall, never a wrong similarity.
 *
 * Persistence: save() writes `<file>` and `<file>.json` (a fingerprint of the partition's rows:
 * count, max and sum of vec_key). open() loads the file only when the fingerprint still matches
 * SQLite, otherwise rebuilds from SQLite (the source of truth) — so a crash costs a rebuild, not data.
 */
import type * as USearch from "usearch";
import type { Index } from "usearch";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

export type Quantization = "f32" | "f16" | "i8";

export interface IndexParams {
  dimensions: number;
  quantization: Quantization;
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
}

export const DEFAULT_INDEX_PARAMS: Omit<IndexParams, "dimensions" | "quantization"> = {
  connectivity: 16,
  expansionAdd: 128,
  expansionSearch: 128,
};

export interface Fingerprint {
  count: number;
  maxKey: number;
  sumKey: number;
}

export interface Neighbour {
  key: number;
  /** cosine similarity as the index computed it (approximate under f16) */
  similarity: number;
}

// usearch loads its native addon when its module is evaluated (~2.5 ms, and the compiled binary
// first extracts the addon): loaded with the first index instead of at start-up.
let usearch: typeof USearch | undefined;
const lib = (): typeof USearch => (usearch ??= require("usearch") as typeof USearch);

export class VectorIndex {
  private index: Index;
  /** mutated since load/save */
  dirty = false;

  constructor(readonly params: IndexParams) {
    this.index = VectorIndex.create(params);
  }

  private static create(p: IndexParams): Index {
    const { Index, MetricKind, ScalarKind } = lib();
    return new Index({
      dimensions: p.dimensions,
      metric: MetricKind.Cos,
      quantization: p.quantization === "f16" ? ScalarKind.F16 : p.quantization === "i8" ? ScalarKind.I8 : ScalarKind.F32,
      connectivity: p.connectivity,
      expansion_add: p.expansionAdd,
      expansion_search: p.expansionSearch,
      multi: false,
    });
  }

  get size(): number {
    return this.index.size();
  }

  add(key: number, vec: Float32Array) {
    const k = BigInt(key);
    if (this.index.contains(k)) this.index.remove(k);
    this.index.add(k, vec, 1);
    this.dirty = true;
  }

  /**
   * Bulk add (rebuild). One thread: usearch's multi-threaded batch insert lost nodes — a build of
   * 500 entries missed a near-duplicate (cosine 0.96, found one at 0.11 instead) in 4-10 of 150 f16
   * builds, 33 of 150 f32, 6 of 150 i8; sequential insertion missed none and is deterministic (the
   * same rows give the same graph), at about 20 % more build time on two cores
   * (scripts/bench/index-build-recall.ts, BENCHMARKS.md "Index builds").
   */
  addMany(items: Array<{ vecKey: number; vec: Float32Array }>) {
    if (!items.length) return;
    const d = this.params.dimensions;
    const keys = new BigUint64Array(items.length);
    const flat = new Float32Array(items.length * d);
    items.forEach((it, i) => {
      keys[i] = BigInt(it.vecKey);
      flat.set(it.vec.subarray(0, d), i * d);
    });
    this.index.add(keys, flat, 1);
    this.dirty = true;
  }

  has(key: number): boolean {
    return this.index.contains(BigInt(key)) === true;
  }

  remove(key: number) {
    const k = BigInt(key);
    if (this.index.contains(k)) {
      this.index.remove(k);
      this.dirty = true;
    }
  }

  search(vec: Float32Array, k: number): Neighbour[] {
    if (this.index.size() === 0) return [];
    const m = this.index.search(vec, Math.min(k, this.index.size()), 1);
    const out: Neighbour[] = [];
    for (let i = 0; i < m.keys.length; i++) {
      const d = m.distances[i]!;
      if (!Number.isFinite(d)) continue;
      out.push({ key: Number(m.keys[i]), similarity: 1 - d });
    }
    return out;
  }

  save(file: string, fp: Fingerprint) {
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.tmp`;
    this.index.save(tmp);
    renameSync(tmp, file);
    writeFileSync(`${file}.json`, JSON.stringify({ ...fp, ...this.params, v: 1 }));
    this.dirty = false;
  }

  /** Load a saved file if its manifest matches the expected fingerprint and parameters. */
  tryLoad(file: string, fp: Fingerprint): boolean {
    try {
      if (!existsSync(file) || !existsSync(`${file}.json`)) return false;
      const m = JSON.parse(readFileSync(`${file}.json`, "utf8"));
      const p = this.params;
      if (m.v !== 1 || m.count !== fp.count || m.maxKey !== fp.maxKey || m.sumKey !== fp.sumKey) return false;
      if (m.dimensions !== p.dimensions || m.quantization !== p.quantization || m.connectivity !== p.connectivity) return false;
      const idx = VectorIndex.create(p);
      idx.load(file);
      if (idx.size() !== fp.count) return false;
      this.index = idx;
      this.dirty = false;
      return true;
    } catch {
      return false;
    }
  }

  static removeFiles(file: string) {
    rmSync(file, { force: true });
    rmSync(`${file}.json`, { force: true });
  }
}
