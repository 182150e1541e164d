/**
 * The 16-bit kernels (simd-matmul.ts in WebAssembly, native-matmul.ts in native code with AVX-512
 * VNNI and with AVX2) compute exactly what their comments say, bit for bit: a plain
 * TypeScript reference of the same integer arithmetic (per-row quantisation, i32 sums over blocks of
 * 32 k, f32 accumulation of the blocks, scales, bias, relu) must give the same f32 values. A change
 * to the kernel's layout or instruction choice that alters any value fails here; the vectors' claim
 * "bit-identical" (thread counts, row blocks of the forward pass) rests on it.
 */
import { describe, expect, test } from "bun:test";
import { Q16, createWasmMatmulI16, packPanelsI16, pairListBytes, type MatmulI16 } from "../../src/embedding/simd-matmul";
import { createNativeMatmulI16, nativeKernel, type NativeIsa } from "../../src/embedding/native-matmul";
import { kernelFromEnv, resolveKernel } from "../../src/embedding/kernel-choice";
import { ensureNativeKernel } from "../helpers/native-kernel";
import { join } from "node:path";

ensureNativeKernel();
const native = nativeKernel();
if (!native.ok) throw new Error(native.reason);
/** Every kernel this CPU runs: the WebAssembly one, the native AVX2 one, and AVX-512 VNNI where the CPU has it. */
const isas: NativeIsa[] = native.isa === "avx512-vnni" ? ["avx512-vnni", "avx2"] : ["avx2"];
const KERNELS: Array<[string, (m: WebAssembly.Memory) => MatmulI16]> = [
  ["wasm-i16", createWasmMatmulI16],
  ...isas.map((isa): [string, (m: WebAssembly.Memory) => MatmulI16] => [
    `native-i16 ${isa}`,
    (m) => {
      const k = createNativeMatmulI16(m, { isa });
      if ("reason" in k) throw new Error(k.reason);
      return k;
    },
  ]),
];

const f = Math.fround;
/** Round half to even, as f32x4.nearest does. */
function nearest(v: number): number {
  const r = Math.round(v);
  return Math.abs(v - Math.trunc(v)) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function reference(x: Float32Array, W: Float32Array, bias: Float32Array, M: number, K: number, N: number, relu: boolean): Float32Array {
  const wq = new Int16Array(K * N), cs = new Float32Array(N);
  packPanelsI16(W, K, N, wq, cs); // the panels hold the rounded weights; read them back by (k, column)
  const wAt = (k: number, n: number) => wq[(n >> 3) * K * 8 + (k >> 1) * 16 + (n & 7) * 2 + (k & 1)]!;
  const out = new Float32Array(M * N);
  for (let i = 0; i < M; i++) {
    let m = 0;
    for (let k = 0; k < K; k++) m = Math.max(m, Math.abs(x[i * K + k]!));
    m = m > 0 ? m : Q16;
    const rs = f(m / Q16), sv = f(Q16 / m);
    const q = Array.from({ length: K }, (_, k) => nearest(f(x[i * K + k]! * sv)));
    for (let n = 0; n < N; n++) {
      let acc = f(0);
      for (let kb = 0; kb < K; kb += 32) {
        let s = 0;
        for (let k = kb; k < kb + 32; k++) s += q[k]! * wAt(k, n);
        acc = f(acc + f(s));
      }
      let v = f(f(acc * f(cs[n]! * rs)) + bias[n]!);
      if (relu && v < 0) v = 0;
      out[i * N + n] = v;
    }
  }
  return out;
}

describe.each(KERNELS)("16-bit dense kernel: %s", (_name, create) => {
  test("equals the integer reference bit for bit (rows 1–9 and 64, K 64 and 256, strips of columns)", () => {
    let seed = 7;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
    const memory = new WebAssembly.Memory({ initial: 256 });
    const mm = create(memory);
    // column counts 8–72: the native kernel's tiles of 4 panels, full and partial (N 40, 72)
    for (const [M, K, N, relu] of [[1, 64, 16, false], [3, 64, 24, true], [5, 256, 32, false], [9, 256, 16, true], [64, 64, 8, false], [6, 96, 40, true], [7, 64, 72, false]] as const) {
      const W = Float32Array.from({ length: K * N }, rnd), bias = Float32Array.from({ length: N }, rnd);
      const x = Float32Array.from({ length: M * K }, () => rnd() * 3);
      x[0] = 0; // exact zeros and a row of zeros take the scale-1 branch
      if (M > 2) x.fill(0, K, 2 * K);
      // memory layout: weights, column scales, bias, x, scratch (room for 8 bytes per value), row scales, out
      const w = 0, cs = w + K * N * 2, b = cs + N * 4, xo = b + N * 4, sc = xo + M * K * 4, rs = sc + M * K * 8, out = rs + M * 4, out2 = out + M * N * 4;
      packPanelsI16(W, K, N, new Int16Array(memory.buffer, w, K * N), new Float32Array(memory.buffer, cs, N));
      new Float32Array(memory.buffer, b, N).set(bias);
      new Float32Array(memory.buffer, xo, M * K).set(x);
      mm.run(xo, w, cs, b, out, M, K, N, relu, sc, rs);
      // the same product as two strips of columns (what helper threads compute)
      mm.quantize(xo, sc, rs, M, K);
      mm.runCols(sc, rs, w, cs, b, out2, M, K, N, relu, 0, 8);
      mm.runCols(sc, rs, w, cs, b, out2, M, K, N, relu, 8, N);
      const want = reference(x, W, bias, M, K, N, relu);
      expect(Array.from(new Float32Array(memory.buffer, out, M * N))).toEqual(Array.from(want));
      expect(Array.from(new Float32Array(memory.buffer, out2, M * N))).toEqual(Array.from(want));
    }
  });

  test("the sparse variant (pairs zero in a whole row tile skipped) equals the reference bit for bit", () => {
    let seed = 11;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
    const memory = new WebAssembly.Memory({ initial: 256 });
    const mm = create(memory);
    // rows 1–3 and 6, 9, 13 (full tiles of 4 and a partial one), K 64 and 256, with and without relu
    for (const [M, K, N, relu] of [[1, 64, 16, false], [3, 64, 24, true], [6, 256, 32, false], [9, 256, 16, true], [13, 128, 8, false], [10, 128, 48, true]] as const) {
      const W = Float32Array.from({ length: K * N }, rnd), bias = Float32Array.from({ length: N }, rnd);
      // like the rows after a relu: ~90 % exact zeros, plus a whole zero block of 32 k in every row
      // and a whole zero row tile, so records with no pair at all are read too
      const x = Float32Array.from({ length: M * K }, () => (rnd() > 0.8 ? rnd() * 3 : 0));
      for (let i = 0; i < M; i++) x.fill(0, i * K + 32, i * K + 64);
      if (M >= 8) x.fill(0, 4 * K, 8 * K);
      const w = 0, cs = w + K * N * 2, b = cs + N * 4, xo = b + N * 4, sc = xo + M * K * 4, rs = sc + M * K * 8, out = rs + M * 4, out2 = out + M * N * 4, list = out2 + M * N * 4;
      packPanelsI16(W, K, N, new Int16Array(memory.buffer, w, K * N), new Float32Array(memory.buffer, cs, N));
      new Float32Array(memory.buffer, b, N).set(bias);
      new Float32Array(memory.buffer, xo, M * K).set(x);
      new Uint8Array(memory.buffer, list, pairListBytes(M, K)).fill(0xee); // stale bytes must not be read as pairs
      mm.quantize(xo, sc, rs, M, K);
      const listed = mm.pairList(sc, M, K, list);
      expect(listed).toBeGreaterThan(0);
      expect(listed).toBeLessThan(0.9);
      mm.runColsSparse(sc, rs, w, cs, b, out, M, K, N, relu, 0, N, list);
      mm.runColsSparse(sc, rs, w, cs, b, out2, M, K, N, relu, 0, 8, list);
      if (N > 8) mm.runColsSparse(sc, rs, w, cs, b, out2, M, K, N, relu, 8, N, list);
      const want = reference(x, W, bias, M, K, N, relu);
      expect(Array.from(new Float32Array(memory.buffer, out, M * N))).toEqual(Array.from(want));
      expect(Array.from(new Float32Array(memory.buffer, out2, M * N))).toEqual(Array.from(want));
    }
  });
});

describe("choosing the kernel", () => {
  test("auto takes the native kernel when its library is built; SVC_EMBEDDING__KERNEL names it or fails clearly", () => {
    expect(resolveKernel("auto")).toBe("native-i16");
    expect(resolveKernel("wasm-i16")).toBe("wasm-i16");
    const saved = process.env.SVC_EMBEDDING__KERNEL;
    try {
      process.env.SVC_EMBEDDING__KERNEL = "native-i16";
      expect(kernelFromEnv()).toBe("native-i16");
      process.env.SVC_EMBEDDING__KERNEL = "avx";
      expect(() => kernelFromEnv()).toThrow('SVC_EMBEDDING__KERNEL must be "native-i16", "wasm-i16", "wasm", "js" or "auto", got "avx"');
    } finally {
      if (saved === undefined) delete process.env.SVC_EMBEDDING__KERNEL;
      else process.env.SVC_EMBEDDING__KERNEL = saved;
    }
  });

  test("a library that is missing or not a library is refused with the reason and the command that builds it", () => {
    const memory = new WebAssembly.Memory({ initial: 1 });
    const missing = createNativeMatmulI16(memory, { path: "/nonexistent/libsvc-dense-i16.so" });
    expect(missing).toEqual({ reason: "native kernel not built (/nonexistent/libsvc-dense-i16.so missing: run `npm run build:native`)" });
    const notALibrary = createNativeMatmulI16(memory, { path: join(import.meta.dir, "embedding-kernel.test.ts") });
    expect("reason" in notALibrary && notALibrary.reason).toContain("does not load");
    expect(nativeKernel("").ok).toBe(false); // a binary built without a compiler
  });

  test("`npm install` without a C compiler still succeeds: the build says so in one line and leaves the library alone", () => {
    const root = join(import.meta.dir, "../..");
    const r = Bun.spawnSync([process.execPath, "scripts/build-native.ts", "--optional"], { cwd: root, env: { PATH: "/nonexistent" }, stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString()).toContain("native embedding kernel not built (no C compiler (cc, gcc or clang) on PATH");
    expect(nativeKernel().ok).toBe(true);
    // what the tests run: a failure, naming the command (as root the install is tried first; apt-get is not on this PATH either)
    const strict = Bun.spawnSync([process.execPath, "scripts/build-native.ts"], { cwd: root, env: { PATH: "/nonexistent" }, stdout: "pipe", stderr: "pipe" });
    expect(strict.exitCode).toBe(1);
    expect(strict.stderr.toString()).toContain("run `apt-get update && apt-get install -y gcc libc6-dev` (as root), then `npm run build:native`");
  });
});
