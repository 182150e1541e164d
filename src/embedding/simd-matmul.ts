/**
 * Dense matrix product for the USE-lite forward pass: out[M,N] = act(x[M,K] · w[K,N] + bias[N]).
 *
 * Two implementations over the same memory (a WebAssembly.Memory, addressed by byte offsets):
 *  - `wasm`: a small WebAssembly SIMD (128-bit, f32x4) kernel, assembled here from opcodes at load
 *    time (no binary blob, no toolchain). Register tile of 4 rows × 8 columns: per k it loads two
 *    f32x4 of w, splats one x value per row and does 8 multiply-adds, so every w vector loaded is
 *    used for 4 rows. Rows left over (M mod 4) go through a 1 × 8 variant.
 *  - `js`: the same loops over Float32Arrays (portable fallback, ~1.4 GMAC/s under Bun).
 * Plus `createWasmMatmulI16` (the default for the model's dense layers, in simd-matmul-i16.ts and
 * re-exported here): 16-bit integer weights and activations with `i32x4.dot_i16x8_s`, ~1.8× the f32
 * kernel; see its comments and docs/notes/embedding-quality.md §8.1 for the error budget.
 * Both sum over k in increasing order with float32 rounding, like a plain float32 dot product;
 * results differ from TF.js (XNNPACK) only by summation order.
 *
 * Layout of w: "panels" of 8 columns, each stored contiguously as K rows of 8 floats (see
 * `packPanels`), so the kernel streams w sequentially. Requirements: N % 8 === 0; all offsets
 * 16-byte aligned.
 */

/** Copy a row-major [K, N] matrix into the panel layout the kernels read (dst.length === K * N). */
export function packPanels(src: Float32Array, K: number, N: number, dst: Float32Array): void {
  let o = 0;
  for (let j = 0; j < N; j += 8) {
    for (let k = 0; k < K; k++) {
      const r = k * N + j;
      for (let q = 0; q < 8; q++) dst[o++] = src[r + q]!;
    }
  }
}

export interface Matmul {
  readonly kind: "wasm" | "js";
  readonly memory: WebAssembly.Memory;
  /** All pointers are byte offsets into `memory`. `relu` applies max(0, ·) to the result. */
  run(x: number, w: number, bias: number, out: number, M: number, K: number, N: number, relu: boolean): void;
}

// ---- a tiny WebAssembly assembler (just what the kernel needs) ----

import { I32, V128, isShared, memImport, op, section, str, uleb, vec } from "./wasm-encode";
import { buildModuleI16 } from "./simd-matmul-i16";
export { Q16, createWasmMatmulI16, packPanelsI16, pairListBytes, type MatmulI16 } from "./simd-matmul-i16";

/**
 * Body of mm_R(x, w, b, out, M, K, N): rows [0, M) in tiles of R rows (M % R === 0).
 * Params 0..6; locals: i, j, k, xr (R row pointers), wp, ob, then 2R accumulators, w0, w1.
 */
function tileKernel(R: number, relu: boolean): number[] {
  const [X, W, B, OUT, M, K, N] = [0, 1, 2, 3, 4, 5, 6];
  let next = 7;
  const i = next++, j = next++, k = next++, wp = next++, rowK = next++, rowN = next++, xi = next++, oi = next++;
  const xr = Array.from({ length: R }, () => next++);
  const nI32 = next - 7;
  const acc = Array.from({ length: 2 * R }, () => next++);
  const w0 = next++, w1 = next++;
  const nV = next - 7 - nI32;
  const c: number[] = [];
  const emit = (...parts: number[][]) => parts.forEach((p) => c.push(...p));
  // rowK = K*4 bytes, rowN = N*4 bytes
  emit(op.get(K), op.i32(2), op.shl, op.set(rowK), op.get(N), op.i32(2), op.shl, op.set(rowN));
  // Column strips outside, row tiles inside: the K×8 strip of w stays in cache while every row tile uses it.
  emit(op.i32(0), op.set(j));
  emit(op.block, op.loop); // columns (8 at a time)
  emit(op.get(j), op.get(N), op.ltu, [0x45] /* i32.eqz */, op.brIf(1));
  emit(op.i32(0), op.set(i), op.get(X), op.set(xi), op.get(OUT), op.get(j), op.i32(2), op.shl, op.add, op.set(oi));
  emit(op.block, op.loop); // row tiles
  emit(op.get(i), op.get(M), op.ltu, [0x45], op.brIf(1));
  // accumulators = bias[j..j+8]
  emit(op.get(B), op.get(j), op.i32(2), op.shl, op.add, op.tee(wp), op.v128load(0), op.set(acc[0]!));
  emit(op.get(wp), op.v128load(16), op.set(acc[1]!));
  for (let r = 1; r < R; r++) emit(op.get(acc[0]!), op.set(acc[2 * r]!), op.get(acc[1]!), op.set(acc[2 * r + 1]!));
  // row pointers
  emit(op.get(xi), op.set(xr[0]!));
  for (let r = 1; r < R; r++) emit(op.get(xr[r - 1]!), op.get(rowK), op.add, op.set(xr[r]!));
  emit(op.get(W), op.get(j), op.get(rowK), op.mul, op.add, op.set(wp)); // panel j/8 starts at j*K floats
  emit(op.get(K), op.set(k));
  emit(op.loop); // k
  emit(op.get(wp), op.v128load(0), op.set(w0), op.get(wp), op.v128load(16), op.set(w1));
  for (let r = 0; r < R; r++) {
    emit(op.get(xr[r]!), op.f32load(0), op.splat, op.set(w1 + 1)); // splat temporary
    emit(op.get(acc[2 * r]!), op.get(w0), op.get(w1 + 1), op.fmul, op.fadd, op.set(acc[2 * r]!));
    emit(op.get(acc[2 * r + 1]!), op.get(w1), op.get(w1 + 1), op.fmul, op.fadd, op.set(acc[2 * r + 1]!));
    emit(op.get(xr[r]!), op.i32(4), op.add, op.set(xr[r]!));
  }
  emit(op.get(wp), op.i32(32), op.add, op.set(wp));
  emit(op.get(k), op.i32(-1), op.add, op.tee(k), op.brIf(0));
  emit(op.end); // k loop
  // store: out[(i+r)*N + j]
  emit(op.get(oi), op.set(wp));
  for (let r = 0; r < R; r++) {
    for (let h = 0; h < 2; h++) {
      emit(op.get(wp), op.get(acc[2 * r + h]!));
      if (relu) emit(op.zero, op.fmax);
      emit(op.v128store(16 * h));
    }
    if (r < R - 1) emit(op.get(wp), op.get(rowN), op.add, op.set(wp));
  }
  // next row tile
  emit(op.get(i), op.i32(R), op.add, op.set(i));
  emit(op.get(xi), op.get(rowK), op.i32(R), op.mul, op.add, op.set(xi));
  emit(op.get(oi), op.get(rowN), op.i32(R), op.mul, op.add, op.set(oi));
  emit(op.br(0), op.end, op.end); // row tiles
  emit(op.get(j), op.i32(8), op.add, op.set(j), op.br(0));
  emit(op.end, op.end); // columns
  emit(op.end); // function
  const locals = vec([
    [...uleb(nI32), I32],
    [...uleb(nV + 1), V128], // + the splat temporary (index w1 + 1)
  ]);
  return [...locals, ...c];
}

/** [rows per tile, relu]; index = (relu ? 4 : 0) + (4 - rows). */
const VARIANTS: Array<[number, boolean]> = [
  [4, false],
  [3, false],
  [2, false],
  [1, false],
  [4, true],
  [3, true],
  [2, true],
  [1, true],
];

function buildModule(shared = false): Uint8Array {
  const type = [0x60, ...uleb(7), ...new Array<number>(7).fill(I32), 0];
  const bodies = VARIANTS.map(([r, relu]) => {
    const b = tileKernel(r, relu);
    return [...uleb(b.length), ...b];
  });
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([type])),
    ...section(2, vec([memImport(shared)])),
    ...section(3, vec(VARIANTS.map(() => [0]))),
    ...section(7, vec(VARIANTS.map((_, f) => [...str(`mm${f}`), 0x00, ...uleb(f)]))),
    ...section(10, vec(bodies)),
  ];
  return new Uint8Array(bytes);
}

type Kernel = (x: number, w: number, b: number, out: number, m: number, k: number, n: number) => void;

export function createWasmMatmul(memory: WebAssembly.Memory): Matmul {
  const mod = new WebAssembly.Module(buildModule(isShared(memory)));
  const inst = new WebAssembly.Instance(mod, { env: { mem: memory } });
  const f = VARIANTS.map((_, i) => inst.exports[`mm${i}`] as Kernel);
  return {
    kind: "wasm",
    memory,
    run(x, w, bias, out, M, K, N, relu) {
      const m4 = M & ~3;
      const base = relu ? 4 : 0;
      if (m4 > 0) f[base]!(x, w, bias, out, m4, K, N);
      const rest = M - m4;
      if (rest > 0) f[base + 4 - rest]!(x + m4 * K * 4, w, bias, out + m4 * N * 4, rest, K, N);
    },
  };
}

export function createJsMatmul(memory: WebAssembly.Memory): Matmul {
  return {
    kind: "js",
    memory,
    run(x, w, bias, out, M, K, N, relu) {
      const f = new Float32Array(memory.buffer);
      const xo = x >> 2, wo = w >> 2, bo = bias >> 2, oo = out >> 2;
      const acc = new Float32Array(N);
      for (let i = 0; i < M; i++) {
        for (let n = 0; n < N; n++) acc[n] = f[bo + n]!;
        for (let k = 0; k < K; k++) {
          const a = f[xo + i * K + k]!;
          for (let n = 0; n < N; n += 8) {
            const wr = wo + n * K + k * 8;
            for (let q = 0; q < 8; q++) acc[n + q] = acc[n + q]! + a * f[wr + q]!;
          }
        }
        const orow = oo + i * N;
        if (relu) for (let n = 0; n < N; n++) f[orow + n] = acc[n]! > 0 ? acc[n]! : 0;
        else f.set(acc, orow);
      }
    },
  };
}

// ---- 16-bit integer kernel (i32x4.dot_i16x8_s) ----

/** True when this runtime accepts WebAssembly SIMD. */
export function wasmSimdSupported(): boolean {
  try {
    return WebAssembly.validate(buildModule());
  } catch {
    return false;
  }
}

/** True when this runtime accepts the 16-bit kernel (i32x4.dot_i16x8_s). */
export function wasmDotI16Supported(): boolean {
  try {
    return WebAssembly.validate(buildModuleI16());
  } catch {
    return false;
  }
}

/** True when this runtime can run the 16-bit kernel on a shared memory (several threads, one set of weights). */
export function wasmThreadsSupported(): boolean {
  try {
    if (typeof SharedArrayBuffer === "undefined") return false;
    new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    return WebAssembly.validate(buildModuleI16(true));
  } catch {
    return false;
  }
}
