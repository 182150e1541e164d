/**
 * The cache's embedding adapter: x = normalise(u + U·(Vᵀ·u)) — the identity plus a learned rank-r
 * correction of the embedder's vector u, trained on labelled question pairs
 * (scripts/train-cache-adapter.ts) so that the cosines the vector index and doc1 §4.7's stages
 * compare put rewordings above stage1_threshold and near-misses below it more often than the raw
 * embedding does. The cache wraps its embedder in AdaptedEmbedder (a new embedder id, so entries
 * stored under the raw id are simply not found) when the adapter was trained on that embedder.
 */
import { createHash } from "node:crypto";
import { decodeF32 } from "../core/vectors";
import type { Embedder } from "./ports";

/** adapter-weights.json as written by the training script */
export interface AdapterWeightsFile {
  format: 1;
  /** the embedder whose vectors it adapts */
  baseEmbedderId: string;
  dims: number;
  rank: number;
  /** base64 little-endian float32, dims × rank row-major */
  u: string;
  v: string;
  report?: unknown;
}

export class EmbeddingAdapter {
  /** id of the adapted embedding space: the base id plus a hash of the weights */
  readonly id: string;
  private readonly h: Float64Array;
  /** (I_r + VᵀU)⁻¹, for invert() (Woodbury: (I + UVᵀ)⁻¹ = I − U (I_r + VᵀU)⁻¹ Vᵀ) */
  private readonly m: Float64Array;
  constructor(
    readonly rank: number,
    readonly dims: number,
    /** dims × rank, row-major */
    readonly u: Float32Array,
    readonly v: Float32Array,
    readonly baseEmbedderId: string,
  ) {
    if (u.length !== dims * rank || v.length !== dims * rank) throw new Error("embedding adapter: weight shapes do not match");
    this.h = new Float64Array(rank);
    const digest = createHash("sha256").update(new Uint8Array(u.buffer, u.byteOffset, u.byteLength)).update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)).digest("hex");
    this.id = `${baseEmbedderId}+adapter-${digest.slice(0, 12)}`;
    this.m = inverse(rank, (i, j) => {
      let s = i === j ? 1 : 0;
      for (let k = 0; k < dims; k++) s += v[k * rank + i]! * u[k * rank + j]!;
      return s;
    });
  }

  static fromFile(w: AdapterWeightsFile): EmbeddingAdapter {
    if (w.format !== 1) throw new Error(`embedding adapter: unknown weights format ${String(w.format)}`);
    return new EmbeddingAdapter(w.rank, w.dims, decodeF32(w.u), decodeF32(w.v), w.baseEmbedderId);
  }

  /** normalise(u + U·(Vᵀ·u)) as a new vector */
  apply(u: Float32Array): Float32Array {
    const { rank: r, dims: d, u: U, v: V, h } = this;
    h.fill(0);
    for (let k = 0; k < d; k++) {
      const uk = u[k]!;
      if (uk === 0) continue;
      const o = k * r;
      for (let j = 0; j < r; j++) h[j]! += V[o + j]! * uk;
    }
    const x = new Float32Array(d);
    let nn = 0;
    for (let k = 0; k < d; k++) {
      let s = u[k]!;
      const o = k * r;
      for (let j = 0; j < r; j++) s += U[o + j]! * h[j]!;
      x[k] = s;
      nn += s * s;
    }
    const inv = nn > 0 ? 1 / Math.sqrt(nn) : 0;
    for (let k = 0; k < d; k++) x[k]! *= inv;
    return x;
  }

  /**
   * The raw embedding (L2-normalised) an adapted vector came from: normalise((I + UVᵀ)⁻¹ x). The
   * learned pair model was trained on raw vectors; the cache stores and compares adapted ones.
   */
  invert(x: Float32Array): Float32Array {
    const { rank: r, dims: d, u: U, v: V, m: M } = this;
    const a = new Float64Array(r);
    for (let k = 0; k < d; k++) {
      const xk = x[k]!;
      const o = k * r;
      for (let j = 0; j < r; j++) a[j]! += V[o + j]! * xk;
    }
    const b = new Float64Array(r);
    for (let i = 0; i < r; i++) {
      let s = 0;
      for (let j = 0; j < r; j++) s += M[i * r + j]! * a[j]!;
      b[i] = s;
    }
    const out = new Float32Array(d);
    let nn = 0;
    for (let k = 0; k < d; k++) {
      let s = x[k]!;
      const o = k * r;
      for (let j = 0; j < r; j++) s -= U[o + j]! * b[j]!;
      out[k] = s;
      nn += s * s;
    }
    const inv = nn > 0 ? 1 / Math.sqrt(nn) : 0;
    for (let k = 0; k < d; k++) out[k]! *= inv;
    return out;
  }
}

/** Inverse of an n × n matrix given by entry (Gauss-Jordan with partial pivoting); throws when singular. */
function inverse(n: number, at: (i: number, j: number) => number): Float64Array {
  const a = new Float64Array(n * 2 * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) a[i * 2 * n + j] = at(i, j);
    a[i * 2 * n + n + i] = 1;
  }
  const w = 2 * n;
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let i = c + 1; i < n; i++) if (Math.abs(a[i * w + c]!) > Math.abs(a[p * w + c]!)) p = i;
    if (Math.abs(a[p * w + c]!) < 1e-9) throw new Error("embedding adapter: the adapted space is not invertible");
    if (p !== c) for (let j = 0; j < w; j++) [a[c * w + j], a[p * w + j]] = [a[p * w + j]!, a[c * w + j]!];
    const piv = a[c * w + c]!;
    for (let j = 0; j < w; j++) a[c * w + j]! /= piv;
    for (let i = 0; i < n; i++) {
      if (i === c) continue;
      const f = a[i * w + c]!;
      if (f === 0) continue;
      for (let j = 0; j < w; j++) a[i * w + j]! -= f * a[c * w + j]!;
    }
  }
  const out = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) out[i * n + j] = a[i * w + n + j]!;
  return out;
}

/** The cache's embedder seen through the adapter: same texts, adapted vectors, its own id. */
export class AdaptedEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  constructor(
    readonly base: Embedder,
    readonly adapter: EmbeddingAdapter,
  ) {
    if (base.id !== adapter.baseEmbedderId || base.dimensions !== adapter.dims) throw new Error(`embedding adapter: trained on ${adapter.baseEmbedderId}, not ${base.id}`);
    this.id = adapter.id;
    this.dimensions = base.dimensions;
  }
  isReady(): boolean {
    return this.base.isReady();
  }
  async embed(texts: string[]): Promise<Float32Array[]> {
    return (await this.base.embed(texts)).map((v) => this.adapter.apply(v));
  }
}
