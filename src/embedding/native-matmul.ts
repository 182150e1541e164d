/**
 * The 16-bit dense product in native code (native/dense-i16.c through bun:ffi): the same
 * MatmulI16 as simd-matmul-i16.ts's WebAssembly kernel, bit for bit the same outputs, ~3× its
 * speed with AVX-512 VNNI (BENCHMARKS.md "Embedding latency"), the rows' quantisation before it
 * (~10× the WebAssembly step's speed), and the forward pass's layer norms and attention (the same
 * operations in the same order as use-lite-fast.ts's JS, so the same bits). It works on the same
 * WebAssembly.Memory, whose address the library reads and writes; the pair lists stay in JS.
 *
 * Available when the library was built (`npm install` runs scripts/build-native.ts; the single
 * binary embeds it), its version matches this file, and the CPU has AVX2; otherwise
 * `nativeKernel()` says why and the embedder keeps the WebAssembly kernel.
 */
import { dlopen, FFIType, ptr, type Pointer } from "bun:ffi";
import { existsSync } from "node:fs";
import { pairLister, type MatmulI16 } from "./simd-matmul-i16";
import { nativeLibraryPath } from "./native/library-path";

/** SVC_DENSE_I16_ABI of dense-i16.c this file calls. */
const ABI = 3;
/** Instruction sets of the library's two kernels, by the level it reports. */
export type NativeIsa = "avx512-vnni" | "avx2";
const ISA: Record<number, NativeIsa> = { 2: "avx512-vnni", 1: "avx2" };
const LEVEL: Record<NativeIsa, number> = { "avx512-vnni": 2, avx2: 1 };

const P = FFIType.ptr, I = FFIType.i32;
const SYMBOLS = {
  svc_dense_i16_abi: { args: [], returns: I },
  svc_dense_i16_level: { args: [], returns: I },
  // x, rowScale, w, colScale, bias, out, M, K, N, outStride, relu, list, level
  svc_dense_i16: { args: [P, P, P, P, P, P, I, I, I, I, I, P, I], returns: FFIType.void },
  // x, q, rowScale, M, K
  svc_quant_i16: { args: [P, P, P, I, I], returns: FFIType.void },
  // x, y, rows, d, gain, bias
  svc_layer_norm: { args: [P, P, I, I, P, P], returns: FFIType.void },
  // qkv, context, T, d, heads, qScale, scratch
  svc_attention: { args: [P, P, I, I, I, FFIType.f64, P], returns: FFIType.void },
} as const;
type Lib = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];

export type NativeKernel = { ok: true; lib: Lib; isa: NativeIsa; path: string } | { ok: false; reason: string };

let loaded: NativeKernel | null = null;

/** The library, loaded once per thread, or why it cannot be used. `path` is for tests. */
export function nativeKernel(path: string = nativeLibraryPath): NativeKernel {
  if (path === nativeLibraryPath && loaded) return loaded;
  const r = load(path);
  if (path === nativeLibraryPath) loaded = r;
  return r;
}

function load(path: string): NativeKernel {
  if (process.platform !== "linux" || process.arch !== "x64") return { ok: false, reason: `native kernel is x86-64 Linux only (${process.platform}-${process.arch})` };
  if (path === "") return { ok: false, reason: "this binary was built without the native kernel (no C compiler at build time)" };
  // an embedded file (single binary) has a virtual path that only Bun's loader resolves
  if (!path.includes("$bunfs") && !existsSync(path)) return { ok: false, reason: `native kernel not built (${path} missing: run \`npm run build:native\`)` };
  let lib: Lib;
  try {
    lib = dlopen(path, SYMBOLS).symbols;
  } catch (e) {
    return { ok: false, reason: `native kernel ${path} does not load: ${(e as Error).message}` };
  }
  const abi = lib.svc_dense_i16_abi();
  if (abi !== ABI) return { ok: false, reason: `native kernel ${path} is version ${abi}, this svc needs ${ABI} (run \`npm run build:native\`)` };
  const isa = ISA[lib.svc_dense_i16_level()];
  if (!isa) return { ok: false, reason: "native kernel needs AVX2, which this CPU lacks" };
  return { ok: true, lib, isa, path };
}

export interface NativeMatmulI16 extends MatmulI16 {
  readonly isa: NativeIsa;
  /** use-lite-fast.ts layerNorm in native code, the same bits: rows of d floats at `src` → `dst` (byte offsets). */
  layerNorm(src: number, dst: number, rows: number, d: number, gain: Float32Array, bias: Float32Array): void;
  /**
   * use-lite-fast.ts attention for one text of T rows, the same bits: q, k, v rows of 3d floats at
   * `qkv` → context rows of d floats at `ctx` (d / heads a multiple of 64); `scratch`: T·hd + hd·⌈T⌉₃₂ + T·⌈T⌉₃₂ floats.
   */
  attention(qkv: number, ctx: number, T: number, d: number, heads: number, qScale: number, scratch: number): void;
}

/**
 * A MatmulI16 whose products run in the native library (`isa` may ask for the AVX2 kernel on an
 * AVX-512 VNNI CPU, for tests); `{ reason }` when the library cannot be used.
 */
export function createNativeMatmulI16(memory: WebAssembly.Memory, opts: { isa?: NativeIsa; path?: string } = {}): NativeMatmulI16 | { reason: string } {
  const k = nativeKernel(opts.path);
  if (!k.ok) return { reason: k.reason };
  if (opts.isa && LEVEL[opts.isa] > LEVEL[k.isa]) return { reason: `this CPU has no ${opts.isa}` };
  const isa = opts.isa ?? k.isa, level = LEVEL[isa];
  const dense = k.lib.svc_dense_i16, quant = k.lib.svc_quant_i16, norm = k.lib.svc_layer_norm, attend = k.lib.svc_attention;
  let buffer = memory.buffer, base: number = ptr(new Uint8Array(buffer));
  const at = () => {
    if (memory.buffer !== buffer) (buffer = memory.buffer), (base = ptr(new Uint8Array(buffer)));
    return base;
  };
  const p = (address: number) => address as Pointer;
  const runCols = (scratch: number, rowScale: number, w: number, colScale: number, bias: number, out: number, M: number, K: number, N: number, relu: boolean, j0: number, j1: number, list?: number) => {
    const b = at();
    // panel j0/8 starts at j0*K i16 of w; bias, column scales and out at column j0
    dense(p(b + scratch), p(b + rowScale), p(b + w + j0 * K * 2), p(b + colScale + j0 * 4), p(b + bias + j0 * 4), p(b + out + j0 * 4), M, K, j1 - j0, N, relu ? 1 : 0, list === undefined ? null : p(b + list), level);
  };
  const quantize = (x: number, scratch: number, rowScale: number, M: number, K: number) => {
    const b = at();
    quant(p(b + x), p(b + scratch), p(b + rowScale), M, K);
  };
  return {
    memory,
    isa,
    layerNorm(src, dst, rows, d, gain, bias) {
      const b = at();
      norm(p(b + src), p(b + dst), rows, d, gain, bias);
    },
    attention(qkv, ctx, T, d, heads, qScale, scratch) {
      const b = at();
      attend(p(b + qkv), p(b + ctx), T, d, heads, qScale, p(b + scratch));
    },
    quantize,
    pairList: pairLister(memory),
    runCols,
    runColsSparse: runCols,
    run(x, w, colScale, bias, out, M, K, N, relu, scratch, rowScale) {
      quantize(x, scratch, rowScale, M, K);
      runCols(scratch, rowScale, w, colScale, bias, out, M, K, N, relu, 0, N);
    },
  };
}
