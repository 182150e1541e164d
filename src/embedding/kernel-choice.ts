/**
 * Which kernel runs the local model's dense products (setting embedding.kernel /
 * SVC_EMBEDDING__KERNEL), and building it over the model's WebAssembly.Memory:
 *  - "native-i16": 16-bit integer weights and activations in native code (native-matmul.ts),
 *    bit for bit the outputs of "wasm-i16", ~3× faster with AVX-512 VNNI;
 *  - "wasm-i16": the same arithmetic in WebAssembly SIMD (i32x4.dot_i16x8_s);
 *  - "wasm": f32x4 products; "js": portable fallback.
 * "auto" takes the first of these the process can run (native needs its library built and AVX2).
 * With "native-i16" the forward pass's attention and layer norms run natively too (same bits);
 * otherwise attention products run in f32 (wasm, or js for "js").
 */
import { createJsMatmul, createWasmMatmul, createWasmMatmulI16, wasmDotI16Supported, wasmSimdSupported, type Matmul, type MatmulI16 } from "./simd-matmul";
import { createNativeMatmulI16, nativeKernel, type NativeMatmulI16 } from "./native-matmul";

export type UseLiteFastKernel = "native-i16" | "wasm-i16" | "wasm" | "js";
export const KERNELS: readonly UseLiteFastKernel[] = ["native-i16", "wasm-i16", "wasm", "js"];

export function kernelFromEnv(): UseLiteFastKernel | "auto" {
  const v = process.env.SVC_EMBEDDING__KERNEL;
  if (v === undefined || v === "" || v === "auto") return "auto";
  if ((KERNELS as readonly string[]).includes(v)) return v as UseLiteFastKernel;
  throw new Error(`SVC_EMBEDDING__KERNEL must be ${KERNELS.map((k) => `"${k}"`).join(", ")} or "auto", got ${JSON.stringify(v)}`);
}

/** The kernel "auto" means in this process. */
export function resolveKernel(kernel: UseLiteFastKernel | "auto"): UseLiteFastKernel {
  if (kernel !== "auto") return kernel;
  if (!wasmSimdSupported()) return "js";
  if (!wasmDotI16Supported()) return "wasm";
  return nativeKernel().ok ? "native-i16" : "wasm-i16";
}

/** 16-bit integer weights (packPanelsI16) for this kernel? */
export const usesI16 = (kernel: UseLiteFastKernel): boolean => kernel === "native-i16" || kernel === "wasm-i16";

/**
 * The f32 kernel (attention, and every product unless 16-bit), the 16-bit one, and with "native-i16"
 * the native attention and layer norms (the same object as the 16-bit kernel).
 */
export function createKernels(kernel: UseLiteFastKernel, memory: WebAssembly.Memory): { mm: Matmul; mmq: MatmulI16 | null; native: NativeMatmulI16 | null; name: string } {
  const mm = kernel === "js" ? createJsMatmul(memory) : createWasmMatmul(memory);
  if (kernel === "native-i16") {
    const n = createNativeMatmulI16(memory);
    if ("reason" in n) throw new Error(`embedding kernel native-i16: ${n.reason}`);
    return { mm, mmq: n, native: n, name: `native-i16(${n.isa})` };
  }
  if (kernel === "wasm-i16") return { mm, mmq: createWasmMatmulI16(memory), native: null, name: "wasm-i16" };
  return { mm, mmq: null, native: null, name: mm.kind };
}
