/**
 * The 16-bit kernel (simd-matmul.ts) computes exactly what its comments say, bit for bit: a plain
 * TypeScript reference of the same integer arithmetic (per-row quantisation, i32 sums over blocks of
 * 32 k, f32 accumulation of the blocks, scales, bias, relu) must give the same f32 values. A change
 * to the kernel's layout or instruction choice that alters any value fails here; the vectors' claim
 * "bit-identical" (thread counts, row blocks of the forward pass) rests on it.
 */
import { describe, expect, test } from "bun:test";
import { Q16, createWasmMatmulI16, packPanelsI16, pairListBytes } from "../../src/embedding/simd-matmul";

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

describe("16-bit dense kernel", () => {
  test("equals the integer reference bit for bit (rows 1–9 and 64, K 64 and 256, strips of columns)", () => {
    let seed = 7;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
    const memory = new WebAssembly.Memory({ initial: 256 });
    const mm = createWasmMatmulI16(memory);
    for (const [M, K, N, relu] of [[1, 64, 16, false], [3, 64, 24, true], [5, 256, 32, false], [9, 256, 16, true], [64, 64, 8, false]] as const) {
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
    const mm = createWasmMatmulI16(memory);
    // rows 1–3 and 6, 9, 13 (full tiles of 4 and a partial one), K 64 and 256, with and without relu
    for (const [M, K, N, relu] of [[1, 64, 16, false], [3, 64, 24, true], [6, 256, 32, false], [9, 256, 16, true], [13, 128, 8, false]] as const) {
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
