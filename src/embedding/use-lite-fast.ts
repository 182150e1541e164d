/**
 * USE-lite forward pass without TF.js: the same graph as the package's model.json, written out
 * as loops over Float32Arrays, with the dense products in a 16-bit integer kernel (native code
 * where built, else WebAssembly SIMD; kernel-choice.ts). Vectors match the TF.js backend (cosine
 * ≥ 0.9999 on every dev text, measured ≥ 0.9999993; see scripts/bench/embedding-equivalence.ts).
 *
 * The graph (KonaTransformer, 2 layers), per text of T SentencePiece ids (positions ≥ 128 dropped):
 *   x   = 2·emb[id] + [sin(t·τ), cos(t·τ)]                      (256; the graph adds the embedding
 *                                                               twice: once scattered, once with the timing signal)
 *   L0: h = LN(x); q,k,v = h·Wqkv + b (4 heads × 64, q·0.125); a = softmax(q·kᵀ)·v
 *       y = a·Wo + bo + (x·Wd + bd)                            (512; residual projected 256 → 512)
 *       y = y + relu(LN(y)·W1 + b1)·W2 + b2                    (FFN 512 → 1536 → 512)
 *   L1: y = y + attn(LN(y)) (4 heads × 128, q·1/√128);  y = y + FFN(LN(y))
 *   out = l2normalize(tanh(mean_t(y)·Wt + bt))
 * LN is layer norm over the last axis, eps 1e-6. Padding in the TF.js batch is masked with -1e9
 * before the softmax, so each text can be computed on its own; texts of a batch are stacked as
 * rows of the dense products (weights are read once per batch, not once per text).
 */
import { SentencePieceTokenizer } from "./sentencepiece";
import { packPanels, packPanelsI16, pairListBytes, wasmThreadsSupported, type Matmul, type MatmulI16 } from "./simd-matmul";
import { createKernels, kernelFromEnv, resolveKernel, usesI16, type UseLiteFastKernel } from "./kernel-choice";
import type { NativeMatmulI16 } from "./native-matmul";
import { readUseLiteFiles, type WeightTensor } from "./use-lite-weights";
import { CTL_WORDS, ParallelDense } from "./parallel-dense";
import { envInteger } from "./env";

const MAX_TOKENS = 128;
const D0 = 256;
const D = 512;
const FF = 1536;
const HEADS = 4;
const LN_EPS = 1e-6;
/** Rows (tokens over all texts) per pass through the layers; a batch is split into chunks of at most this. */
const MAX_ROWS = 512;
/** Texts per chunk (the per-text FFN means use a [texts, 1536] buffer of MAX_ROWS × 512 floats). */
const MAX_TEXTS = 128;
/** Rows of x per pass of the 16-bit kernel over the weights (see dense()). */
const ROW_BLOCK = 64; // kernel alone, 512 rows × 1536 → 512: 33.7 → 35.3 GMAC/s in blocks of 64

interface DenseW {
  /** byte offsets in the arena: weights (f32 panels, or i16 panels with the 16-bit kernel), bias, column scales (i16 only) */
  w: number;
  b: number;
  cs: number;
  K: number;
  N: number;
}

interface LayerW {
  lnG: Float32Array;
  lnB: Float32Array;
  qkv: DenseW;
  out: DenseW;
  /** Layer 0 only: projection of the residual from 256 to 512. */
  resid: DenseW | null;
  ffnG: Float32Array;
  ffnB: Float32Array;
  ff1: DenseW;
  ff2: DenseW;
  headDim: number;
  qScale: number;
}

/** Bump allocator over a WebAssembly.Memory (16-byte aligned). */
class Arena {
  readonly memory: WebAssembly.Memory;
  private top = 0;
  /** `shared`: a SharedArrayBuffer-backed memory that helper threads can work on. */
  constructor(bytes: number, shared = false) {
    const pages = Math.ceil(bytes / 65536);
    this.memory = shared ? new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }) : new WebAssembly.Memory({ initial: pages });
  }
  alloc(floats: number): number {
    const p = this.top;
    this.top += Math.ceil((floats * 4) / 16) * 16;
    if (this.top > this.memory.buffer.byteLength) throw new Error("arena overflow");
    return p;
  }
  f32(ptr: number, floats: number): Float32Array {
    return new Float32Array(this.memory.buffer, ptr, floats);
  }
}

export type { UseLiteFastKernel } from "./kernel-choice";

/**
 * Threads for the dense products (default env SVC_EMBEDDING__THREADS, else 1): 1 = the calling
 * thread only; n > 1 adds n - 1 helper threads on one shared copy of the weights (16-bit kernel
 * only; parallel-dense.ts). Not the default: on the shared 2-core machine it was measured on, a
 * second thread sped up long texts (48 words, min 9.5 → 6.9 ms) but not batches or the gateway's
 * cache-enabled miss (BENCHMARKS.md "Embedding latency").
 */
export function defaultThreads(): number {
  return envInteger("SVC_EMBEDDING__THREADS", 1, 16, () => 1);
}

export class UseLiteFast {
  private tokenizer: SentencePieceTokenizer | null = null;
  private emb: Float32Array | null = null;
  private timing: Float32Array | null = null; // [MAX_TOKENS, 256]
  private layers: LayerW[] = [];
  private tanhW: DenseW | null = null;
  private arena: Arena | null = null;
  private mm: Matmul | null = null;
  private mmq: MatmulI16 | null = null;
  /** the native kernel's layer norm and attention (same bits as the JS below), when the native kernel runs */
  private native: NativeMatmulI16 | null = null;
  private bufQ = 0; // [MAX_ROWS, 1536] i16 quantised rows (16-bit kernel)
  private bufQS = 0; // [MAX_ROWS] row scales
  private bufL = 0; // pair list of one row block of the layer-0 FFN's second product (16-bit kernel)
  // activation buffers (byte offsets) and their Float32Array views
  private bufX = 0; // [MAX_ROWS, 512] residual stream (layer-0 input uses the first 256 columns)
  private bufH = 0; // [MAX_ROWS, 512] layer-norm output / attention context
  private bufQKV = 0; // [MAX_ROWS, 1536]
  private bufA = 0; // [MAX_ROWS, 512]
  private bufR = 0; // [MAX_ROWS, 512]
  private bufF = 0; // [MAX_ROWS, 1536]
  private bufP = 0; // [MAX_ROWS, 512] pooled rows (one per text)
  private bufO = 0; // [MAX_ROWS, 512] output rows
  // attention scratch (per text and head): q rows, kᵀ panels, v panels, scores, context, zero bias
  private attQ = 0;
  private attK = 0;
  private attV = 0;
  private attS = 0;
  private attO = 0;
  private attZero = 0;
  private par: ParallelDense | null = null;
  /** The layer-0 FFN's second product skips the pairs its relu zeroed (false: the dense loop, for A/B benches and tests). */
  sparseFfn = true;
  private helpers: Worker[] = [];

  /**
   * `kernel` defaults to env SVC_EMBEDDING__KERNEL ("wasm-i16" | "wasm" | "js"), else "auto" (the
   * fastest this runtime supports); `threads` to `defaultThreads()` (used with the 16-bit kernel).
   */
  constructor(kernel?: UseLiteFastKernel | "auto", threads?: number) {
    this.kernel = kernel ?? kernelFromEnv();
    this.threads = threads ?? defaultThreads();
  }
  private readonly kernel: UseLiteFastKernel | "auto";
  private readonly threads: number;

  private kernelName = "";

  backend(): string {
    return this.mm ? `ts+${this.kernelName}${this.par ? `x${this.threads}` : ""}` : "ts";
  }

  /** Products run across threads and strips the helper threads computed (0 / 0 single-threaded). */
  parallelStats(): { products: number; helperStrips: number; helperThreads: number } {
    return { products: this.par?.products ?? 0, helperStrips: this.par?.helperStrips ?? 0, helperThreads: this.helpers.length };
  }

  /** Stop the helper threads (the model stays usable on the calling thread). */
  close(): void {
    this.par?.stop();
    this.par = null;
    for (const h of this.helpers) h.terminate();
    this.helpers = [];
  }

  async load(): Promise<void> {
    if (this.mm) return;
    const { tensors, vocabulary } = await readUseLiteFiles();
    const get = (suffix: string): WeightTensor => {
      let hit: WeightTensor | undefined;
      for (const [name, t] of tensors) {
        if (name.endsWith(suffix)) {
          if (hit) throw new Error(`USE-lite weights: ambiguous ${suffix}`);
          hit = t;
        }
      }
      if (!hit) throw new Error(`USE-lite weights: missing ${suffix}`);
      return hit;
    };
    const scalar = (suffix: string) => get(suffix).data[0]!;

    // Arena: dense weights + activations.
    const denseShapes: Array<[number, number]> = [
      [D0, 3 * D0], [D0, D], [D0, D], [D, FF], [FF, D], // layer 0: qkv, out, resid, ff1, ff2
      [D, 3 * D], [D, D], [D, FF], [FF, D], // layer 1
      [D, D], // tanh
    ];
    let floats = denseShapes.reduce((n, [k, m]) => n + k * m + m + 8, 0);
    floats += MAX_ROWS * (D * 6 + FF * 2 + 64) + MAX_TOKENS * (128 * 4 + MAX_TOKENS + 1) + 64;
    floats += MAX_ROWS * (FF / 2 + 1) + denseShapes.reduce((n, [, m]) => n + m + 4, 0); // i16 scratch, row and column scales
    floats += pairListBytes(ROW_BLOCK, FF) / 4 + 4;
    const kernel = resolveKernel(this.kernel);
    const i16 = usesI16(kernel);
    const parallel = i16 && this.threads > 1 && wasmThreadsSupported();
    const arena = new Arena(floats * 4 + CTL_WORDS * 4 + 65536, parallel);
    const dense = (wName: string, bName: string, K: number, N: number): DenseW => {
      const wt = get(wName), bt = get(bName);
      if (wt.data.length !== K * N || bt.data.length !== N) throw new Error(`USE-lite weights: unexpected shape for ${wName}`);
      // tfjs layout [.., K, N] row-major → 8-column panels (f32, or i16 with one scale per column)
      const w = arena.alloc(i16 ? K * N / 2 : K * N), b = arena.alloc(N), cs = i16 ? arena.alloc(N) : 0;
      if (i16) packPanelsI16(wt.data, K, N, new Int16Array(arena.memory.buffer, w, K * N), arena.f32(cs, N));
      else packPanels(wt.data, K, N, arena.f32(w, K * N));
      arena.f32(b, N).set(bt.data);
      return { w, b, cs, K, N };
    };
    const L = (i: number) => `Encode/Layer_${i}/TransformerLayer/`;
    const S = (i: number) => `Encode/TransformerStack/Layer_${i}/TransformerLayer/`;
    const ln = (i: number, ffn: boolean, what: "scale" | "bias") =>
      get(`${L(i)}${ffn ? "FFN/" : ""}layer_prepostprocess/layer_norm/layer_norm_${what}/ConcatPartitions/concat`).data;
    for (let i = 0; i < 2; i++) {
      const d = i === 0 ? D0 : D;
      this.layers.push({
        lnG: ln(i, false, "scale"),
        lnB: ln(i, false, "bias"),
        qkv: dense(`${L(i)}MultiheadAttention/qkv_transform_single/kernel/part_0`, `${L(i)}MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat`, d, 3 * d),
        out: dense(`${L(i)}MultiheadAttention/output_transform_single/kernel/part_0`, `${L(i)}MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat`, d, D),
        resid: i === 0 ? dense(`${L(0)}dense/kernel/ConcatPartitions/concat`, `${L(0)}dense/bias/ConcatPartitions/concat`, D0, D) : null,
        ffnG: ln(i, true, "scale"),
        ffnB: ln(i, true, "bias"),
        ff1: dense(`${S(i)}FFN/conv1/Tensordot/Reshape_1`, `${L(i)}FFN/conv1/bias/ConcatPartitions/concat`, D, FF),
        ff2: dense(`${S(i)}FFN/conv2/Tensordot/Reshape_1`, `${L(i)}FFN/conv2/bias/ConcatPartitions/concat`, FF, D),
        headDim: d / HEADS,
        qScale: scalar(`${S(i)}MultiheadAttention/mul/y`),
      });
      const headsConst = get(`${S(i)}MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/3`);
      if (headsConst.data[0] !== d / HEADS) throw new Error("USE-lite weights: unexpected head size");
    }
    this.tanhW = dense("Encoder_en/hidden_layers/tanh_layer_0/weights", "Encoder_en/hidden_layers/tanh_layer_0/bias", D, D);
    this.bufX = arena.alloc(MAX_ROWS * D);
    this.bufH = arena.alloc(MAX_ROWS * D);
    this.bufQKV = arena.alloc(MAX_ROWS * FF);
    this.bufA = arena.alloc(MAX_ROWS * D);
    this.bufR = arena.alloc(MAX_ROWS * D);
    this.bufF = arena.alloc(MAX_ROWS * FF);
    this.bufP = arena.alloc(MAX_ROWS * D);
    this.bufO = arena.alloc(MAX_ROWS * D);
    this.attQ = arena.alloc(MAX_TOKENS * 128);
    this.attK = arena.alloc(MAX_TOKENS * 128);
    this.attV = arena.alloc(MAX_TOKENS * 128);
    this.attS = arena.alloc(MAX_TOKENS * MAX_TOKENS);
    this.attO = arena.alloc(MAX_TOKENS * 128);
    this.attZero = arena.alloc(MAX_TOKENS); // zero-filled, never written
    this.bufQ = arena.alloc(MAX_ROWS * FF / 2);
    this.bufQS = arena.alloc(MAX_ROWS);
    this.bufL = arena.alloc(pairListBytes(ROW_BLOCK, FF) / 4);

    const embT = get("module/Embeddings_en");
    if (embT.shape[1] !== D0) throw new Error("USE-lite weights: unexpected embedding shape");
    this.emb = embT.data;
    const tau = get(`TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1`).data;
    this.timing = new Float32Array(MAX_TOKENS * D0);
    for (let t = 0; t < MAX_TOKENS; t++) {
      for (let c = 0; c < D0 / 2; c++) {
        const a = Math.fround(t * tau[c]!); // float32 product, as in the graph
        this.timing[t * D0 + c] = Math.sin(a);
        this.timing[t * D0 + D0 / 2 + c] = Math.cos(a);
      }
    }
    this.tokenizer = new SentencePieceTokenizer(vocabulary);
    this.arena = arena;
    ({ mm: this.mm, mmq: this.mmq, native: this.native, name: this.kernelName } = createKernels(kernel, arena.memory));
    if (parallel && this.mmq) {
      const ctl = arena.alloc(CTL_WORDS);
      // helpers start with the first product worth sharing, not here: the model loads while the
      // gateway starts, and a Worker's start-up is CPU that start-up does not need
      this.par = new ParallelDense(this.mmq, ctl, () => {
        for (let i = 1; i < this.threads; i++) this.helpers.push(spawnHelper(arena.memory, ctl));
      });
    }
    this.embedFlat(["warm up"]);
  }

  /** SentencePiece ids of an (already prepared) text, as the model sees them (empty → [0], cut at 128). */
  tokenize(text: string): number[] {
    if (!this.tokenizer) throw new Error("model not loaded");
    const ids = this.tokenizer.encode(text.length > 0 ? text : " ");
    if (ids.length === 0) return [0];
    return ids.length > MAX_TOKENS ? ids.slice(0, MAX_TOKENS) : ids;
  }

  /** Embed already-prepared texts; one flat Float32Array of texts.length * 512 values (L2-normalised rows). */
  embedFlat(texts: string[]): Float32Array {
    if (!this.mm) throw new Error("model not loaded");
    const out = new Float32Array(texts.length * D);
    const ids = texts.map((t) => this.tokenize(t));
    let start = 0;
    while (start < texts.length) {
      let rows = 0;
      let end = start;
      while (end < texts.length && (end === start || (rows + ids[end]!.length <= MAX_ROWS && end - start < MAX_TEXTS))) rows += ids[end++]!.length;
      this.forward(ids.slice(start, end), out.subarray(start * D, end * D));
      start = end;
    }
    return out;
  }

  /** One chunk: texts whose token counts sum to ≤ MAX_ROWS. */
  private forward(ids: number[][], out: Float32Array): void {
    const arena = this.arena!;
    const emb = this.emb!, timing = this.timing!;
    const rows = ids.reduce((n, a) => n + a.length, 0);
    // Layer-0 input x (256 wide), stored in bufR (the residual projection reads it).
    const x0 = arena.f32(this.bufR, rows * D0);
    let r = 0;
    for (const seq of ids) {
      for (let t = 0; t < seq.length; t++, r++) {
        const e = seq[t]! * D0, o = r * D0, tm = t * D0;
        for (let c = 0; c < D0; c++) x0[o + c] = Math.fround(emb[e + c]! + Math.fround(emb[e + c]! + timing[tm + c]!));
      }
    }
    const l0 = this.layers[0]!, l1 = this.layers[1]!;
    // ---- layer 0 ----
    this.layerNorm(this.bufR, this.bufH, rows, D0, l0.lnG, l0.lnB);
    this.dense(this.bufH, l0.qkv, this.bufQKV, rows, false);
    this.attention(ids, l0);
    this.dense(this.bufH, l0.out, this.bufA, rows, false); // bufH holds the attention context now
    this.dense(this.bufR, l0.resid!, this.bufX, rows, false);
    this.addInto(this.bufX, this.bufA, rows * D);
    this.ffn(rows, l0);
    // ---- layer 1 ----
    this.layerNorm(this.bufX, this.bufH, rows, D, l1.lnG, l1.lnB);
    this.dense(this.bufH, l1.qkv, this.bufQKV, rows, false);
    this.attention(ids, l1);
    this.dense(this.bufH, l1.out, this.bufA, rows, false);
    this.addInto(this.bufX, this.bufA, rows * D);
    // ---- layer-1 FFN, mean over tokens ----
    // mean_t(y_t + relu(LN(y_t)·W1 + b1)·W2 + b2) = mean_t(y_t) + mean_t(relu(LN(y_t)·W1 + b1))·W2 + b2:
    // W2 is linear, so it is applied once to the mean hidden row of each text instead of to every token.
    this.layerNorm(this.bufX, this.bufH, rows, D, l1.ffnG, l1.ffnB);
    this.dense(this.bufH, l1.ff1, this.bufF, rows, true);
    const X = arena.f32(this.bufX, rows * D);
    const F = arena.f32(this.bufF, rows * FF);
    const P = arena.f32(this.bufP, ids.length * D); // mean of y
    const G = arena.f32(this.bufH, ids.length * FF); // mean of the FFN hidden rows (bufH is free now)
    r = 0;
    for (let s = 0; s < ids.length; s++) {
      const n = ids[s]!.length;
      const po = s * D, go = s * FF;
      P.fill(0, po, po + D);
      G.fill(0, go, go + FF);
      for (let t = 0; t < n; t++, r++) {
        const xo = r * D, fo = r * FF;
        for (let c = 0; c < D; c++) P[po + c] = P[po + c]! + X[xo + c]!;
        for (let c = 0; c < FF; c++) G[go + c] = G[go + c]! + F[fo + c]!;
      }
      for (let c = 0; c < D; c++) P[po + c] = P[po + c]! / n;
      for (let c = 0; c < FF; c++) G[go + c] = G[go + c]! / n;
    }
    this.dense(this.bufH, l1.ff2, this.bufA, ids.length, false);
    this.addInto(this.bufP, this.bufA, ids.length * D);
    // ---- tanh layer, L2 normalisation ----
    this.dense(this.bufP, this.tanhW!, this.bufO, ids.length, false);
    const O = arena.f32(this.bufO, ids.length * D);
    for (let s = 0; s < ids.length; s++) {
      const o = s * D;
      let sq = 0;
      for (let c = 0; c < D; c++) {
        const v = Math.tanh(O[o + c]!);
        out[o + c] = v;
        sq += v * v;
      }
      const inv = 1 / Math.sqrt(Math.max(sq, 1e-12));
      for (let c = 0; c < D; c++) out[o + c] = out[o + c]! * inv;
    }
  }

  /**
   * out = act(x·W + b). `sparse`: x is a relu's output (most values exactly 0; the layer-0 FFN
   * hidden rows are ~91 % zeros): the 16-bit kernel reads only the k pairs non-zero in some row of
   * each register tile, bit-identical to the dense loop (simd-matmul.ts runColsSparse).
   */
  private dense(x: number, w: DenseW, out: number, rows: number, relu: boolean, sparse = false): void {
    if (this.mmq) {
      const mmq = this.mmq;
      mmq.quantize(x, this.bufQ, this.bufQS, rows, w.K);
      // Blocks of ROW_BLOCK rows: the kernel streams every row of x once per 8-column strip, so x
      // stays in cache (≤ ROW_BLOCK·K·2 bytes; a whole batch is 512 rows · 1536 · 2 = 1.5 MB): +5 %.
      for (let r0 = 0; r0 < rows; r0 += ROW_BLOCK) {
        const m = Math.min(ROW_BLOCK, rows - r0);
        const scratch = this.bufQ + r0 * w.K * 2, rowScale = this.bufQS + r0 * 4, o = out + r0 * w.N * 4;
        if (this.par) this.par.run({ scratch, rowScale, w: w.w, colScale: w.cs, bias: w.b, out: o, M: m, K: w.K, N: w.N, relu });
        else if (sparse) {
          mmq.pairList(scratch, m, w.K, this.bufL);
          mmq.runColsSparse(scratch, rowScale, w.w, w.cs, w.b, o, m, w.K, w.N, relu, 0, w.N, this.bufL);
        } else mmq.runCols(scratch, rowScale, w.w, w.cs, w.b, o, m, w.K, w.N, relu, 0, w.N);
      }
    } else this.mm!.run(x, w.w, w.b, out, rows, w.K, w.N, relu);
  }

  private addInto(dst: number, src: number, n: number): void {
    const a = this.arena!.f32(dst, n), b = this.arena!.f32(src, n);
    for (let i = 0; i < n; i++) a[i] = a[i]! + b[i]!;
  }

  /** FFN block with its residual: X += relu(LN(X)·W1 + b1)·W2 + b2. */
  private ffn(rows: number, l: LayerW): void {
    this.layerNorm(this.bufX, this.bufH, rows, D, l.ffnG, l.ffnB);
    this.dense(this.bufH, l.ff1, this.bufF, rows, true);
    this.dense(this.bufF, l.ff2, this.bufA, rows, false, this.sparseFfn);
    this.addInto(this.bufX, this.bufA, rows * D);
  }

  private layerNorm(src: number, dst: number, rows: number, d: number, g: Float32Array, b: Float32Array): void {
    if (this.native) return this.native.layerNorm(src, dst, rows, d, g, b);
    const X = this.arena!.f32(src, rows * d), Y = this.arena!.f32(dst, rows * d);
    for (let r = 0; r < rows; r++) {
      const o = r * d;
      let mean = 0;
      for (let c = 0; c < d; c++) mean += X[o + c]!;
      mean /= d;
      let v = 0;
      for (let c = 0; c < d; c++) {
        const z = X[o + c]! - mean;
        v += z * z;
      }
      const inv = 1 / Math.sqrt(v / d + LN_EPS);
      for (let c = 0; c < d; c++) Y[o + c] = (X[o + c]! - mean) * inv * g[c]! + b[c]!;
    }
  }

  /**
   * Multi-head self-attention within each text; reads bufQKV, writes the context (rows × d) to bufH.
   * Both products go through the matmul kernel: scores = (q·scale)·kᵀ with kᵀ packed as panels
   * (T padded to a multiple of 8 with zero keys whose scores are ignored), then softmax in JS, then
   * p·v with v packed as panels (padding rows zero, their weights zero).
   */
  private attention(ids: number[][], l: LayerW): void {
    const arena = this.arena!, mm = this.mm!;
    const hd = l.headDim, d = hd * HEADS, w3 = 3 * d;
    const rows = ids.reduce((n, a) => n + a.length, 0);
    const QKV = arena.f32(this.bufQKV, rows * w3);
    const C = arena.f32(this.bufH, rows * d);
    const Q = arena.f32(this.attQ, MAX_TOKENS * 128);
    const KT = arena.f32(this.attK, MAX_TOKENS * 128);
    const V = arena.f32(this.attV, MAX_TOKENS * 128);
    const S = arena.f32(this.attS, MAX_TOKENS * MAX_TOKENS);
    const O = arena.f32(this.attO, MAX_TOKENS * 128);
    let base = 0;
    for (const seq of ids) {
      const T = seq.length;
      if (this.native) {
        // the same arithmetic in native code; scratch: attQ, attK, attV, attS are allocated one after another
        this.native.attention(this.bufQKV + base * w3 * 4, this.bufH + base * d * 4, T, d, HEADS, l.qScale, this.attQ);
        base += T;
        continue;
      }
      const Tp = (T + 7) & ~7;
      for (let h = 0; h < HEADS; h++) {
        const qo = h * hd, ko = d + h * hd, vo = 2 * d + h * hd;
        // Q (scaled) as rows; kᵀ as panels: panel p holds keys 8p..8p+7, element [c][q] = k[8p+q][c].
        KT.fill(0, 0, hd * Tp);
        for (let t = 0; t < T; t++) {
          const src = (base + t) * w3;
          const qrow = t * hd;
          for (let c = 0; c < hd; c++) Q[qrow + c] = QKV[src + qo + c]! * l.qScale;
          const kp = (t >> 3) * hd * 8 + (t & 7);
          for (let c = 0; c < hd; c++) KT[kp + c * 8] = QKV[src + ko + c]!;
        }
        mm.run(this.attQ, this.attK, this.attZero, this.attS, T, hd, Tp, false);
        // softmax over the first T columns; padding columns get probability 0
        for (let i = 0; i < T; i++) {
          const o = i * Tp;
          let max = -Infinity;
          for (let j = 0; j < T; j++) if (S[o + j]! > max) max = S[o + j]!;
          let sum = 0;
          for (let j = 0; j < T; j++) {
            const e = Math.exp(S[o + j]! - max);
            S[o + j] = e;
            sum += e;
          }
          const inv = 1 / sum;
          for (let j = 0; j < T; j++) S[o + j] = S[o + j]! * inv;
          for (let j = T; j < Tp; j++) S[o + j] = 0;
        }
        // v as panels: panel p holds channels 8p..8p+7, element [t][q] = v[t][8p+q] (rows ≥ T zero)
        for (let t = 0; t < Tp; t++) {
          const src = (base + t) * w3 + vo;
          for (let c = 0; c < hd; c++) V[(c >> 3) * Tp * 8 + t * 8 + (c & 7)] = t < T ? QKV[src + c]! : 0;
        }
        mm.run(this.attS, this.attV, this.attZero, this.attO, T, Tp, hd, false);
        for (let t = 0; t < T; t++) {
          const dst = (base + t) * d + h * hd, src = t * hd;
          for (let c = 0; c < hd; c++) C[dst + c] = O[src + c]!;
        }
      }
      base += T;
    }
  }
}

/**
 * A helper thread for the dense products: the embedding worker's module in its "helper" role (one
 * worker file, so bundled builds need no extra entry point). It does not keep the process alive.
 */
function spawnHelper(memory: WebAssembly.Memory, ctl: number): Worker {
  const w = new Worker(new URL("./local-worker.ts", import.meta.url).href);
  w.postMessage({ type: "helper", memory, ctl });
  (w as Worker & { unref?: () => void }).unref?.();
  return w;
}
