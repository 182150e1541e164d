/**
 * The 16-bit dense product of the USE-lite forward pass (the default for the model's dense layers):
 * i16 weights and activations multiplied with `i32x4.dot_i16x8_s`, ~1.8× the f32 kernel of
 * simd-matmul.ts; a sparse variant skips the k pairs a relu zeroed. See the comments below and
 * docs/notes/embedding-quality.md §8.1 for the error budget.
 */
import { I32, V128, isShared, memImport, op, section, str, uleb, vec } from "./wasm-encode";

/**
 * Quantisation range of the 16-bit kernel: weights (per output column) and activations (per row)
 * are rounded to integers in [-Q16, Q16]. Products are summed in i32 over blocks of 32 k, then
 * converted to f32: 32 · Q16² < 2³¹, so the i32 sums cannot overflow, and the rounding error
 * (≤ 1/(2·Q16) of the row's / column's largest magnitude, ~6e-5) is far below what the 0.9999
 * cosine bar allows (measured: scripts/bench/embedding-equivalence.ts --kernel wasm-i16).
 */
export const Q16 = 8000;
const KBLOCK = 32;
/** i32 words per (row tile, block of 32 k) record of a sparse pair list: the count, then up to 16 pair offsets. */
const LIST_RECORD = 1 + KBLOCK / 2;
/** k pairs per inner-loop iteration (2 and 4 measured 15–25 % slower under Bun: register pressure). */
const UNROLL = 1;

/** Weights [K, N] row-major → i16 panels for the 16-bit kernel, plus one f32 scale per column. */
export function packPanelsI16(src: Float32Array, K: number, N: number, dst: Int16Array, colScale: Float32Array): void {
  if (K % KBLOCK !== 0 || N % 8 !== 0) throw new Error(`packPanelsI16: K must be a multiple of ${KBLOCK}, N of 8`);
  const mx = new Float32Array(N);
  for (let k = 0; k < K; k++) {
    const r = k * N;
    for (let n = 0; n < N; n++) {
      const a = Math.abs(src[r + n]!);
      if (a > mx[n]!) mx[n] = a;
    }
  }
  const inv = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    colScale[n] = mx[n]! > 0 ? mx[n]! / Q16 : 1;
    inv[n] = 1 / colScale[n]!;
  }
  // panel p (columns 8p..8p+7): for each k pair, 16 values [w[2k'][c], w[2k'+1][c]] for c = 0..7
  let o = 0;
  for (let j = 0; j < N; j += 8) {
    for (let k = 0; k < K; k += 2) {
      const r0 = k * N + j, r1 = r0 + N;
      for (let q = 0; q < 8; q++) {
        dst[o++] = Math.round(src[r0 + q]! * inv[j + q]!);
        dst[o++] = Math.round(src[r1 + q]! * inv[j + q]!);
      }
    }
  }
}

/**
 * Body of mm16_R(x16, w16, b, out, M, K, N, rowScale, colScale, outStride): rows in tiles of R, 8
 * columns at a time (N columns starting at `w`/`b`/`out`/`colScale`; rows of `out` are `outStride`
 * floats apart, so a call can compute a strip of columns of a wider product); per k pair one i32 splat of x's two values and two dot_i16x8_s per row (8 multiply-adds each).
 * The f32 partial sums live in `out` between blocks of 32 k (keeps 2R + 3 vector registers live).
 */
function tileKernelI16(R: number, relu: boolean, sparse = false): number[] {
  const [X, W, B, OUT, M, K, N, RS, CS, NS, LIST] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const nParams = sparse ? 11 : 10;
  let next = nParams;
  const i = next++, j = next++, kb = next++, k = next++, wp = next++, rowK = next++, rowN = next++, xi = next++, oi = next++, p = next++, rsp = next++;
  const lp = next++, ip = next++, cnt = next++, o = next++, wq = next++; // sparse: list pointers, pairs left, pair offset, weight pointer
  const xr = Array.from({ length: R }, () => next++);
  const nI32 = next - nParams;
  const acc = Array.from({ length: 2 * R }, () => next++);
  const w0 = next++, w1 = next++, sp = next++, s0 = next++, s1 = next++;
  const nV = next - nParams - nI32;
  const c: number[] = [];
  const emit = (...parts: number[][]) => parts.forEach((q) => c.push(...q));
  emit(op.get(K), op.i32(1), op.shl, op.set(rowK), op.get(NS), op.i32(2), op.shl, op.set(rowN));
  emit(op.i32(0), op.set(j));
  emit(op.block, op.loop); // columns
  emit(op.get(j), op.get(N), op.ltu, [0x45], op.brIf(1));
  emit(op.i32(0), op.set(i), op.get(X), op.set(xi), op.get(RS), op.set(rsp));
  if (sparse) emit(op.get(LIST), op.set(lp)); // every strip walks the row tiles' pair lists again
  emit(op.get(OUT), op.get(j), op.i32(2), op.shl, op.add, op.set(oi));
  emit(op.block, op.loop); // row tiles
  emit(op.get(i), op.get(M), op.ltu, [0x45], op.brIf(1));
  // zero the f32 partial sums in out
  emit(op.get(oi), op.set(p));
  for (let r = 0; r < R; r++) {
    emit(op.get(p), op.zero, op.v128store(0), op.get(p), op.zero, op.v128store(16));
    if (r < R - 1) emit(op.get(p), op.get(rowN), op.add, op.set(p));
  }
  emit(op.get(xi), op.set(xr[0]!));
  for (let r = 1; r < R; r++) emit(op.get(xr[r - 1]!), op.get(rowK), op.add, op.set(xr[r]!));
  emit(op.get(W), op.get(j), op.get(rowK), op.mul, op.add, op.set(wp)); // panel j/8 starts at j*K i16
  emit(op.get(K), op.i32(5), op.shrU, op.set(kb));
  emit(op.loop); // blocks of 32 k
  for (let a = 0; a < 2 * R; a++) emit(op.zero, op.set(acc[a]!));
  if (sparse) {
    // only the k pairs of this block that are non-zero in some row of the tile (the list's record:
    // count, then the pairs' byte offsets in the block's x); a skipped pair adds 0 to the i32 sums
    emit(op.get(lp), op.i32load(0), op.set(cnt), op.get(lp), op.i32(4), op.add, op.set(ip));
    emit(op.block, op.loop);
    emit(op.get(cnt), [0x45], op.brIf(1));
    emit(op.get(ip), op.i32load(0), op.set(o), op.get(ip), op.i32(4), op.add, op.set(ip));
    emit(op.get(wp), op.get(o), op.i32(3), op.shl, op.add, op.tee(wq), op.v128load(0), op.set(w0), op.get(wq), op.v128load(16), op.set(w1));
    for (let r = 0; r < R; r++) {
      emit(op.get(xr[r]!), op.get(o), op.add, op.load32splat(0), op.set(sp));
      emit(op.get(acc[2 * r]!), op.get(w0), op.get(sp), op.dot16, op.i32add, op.set(acc[2 * r]!));
      emit(op.get(acc[2 * r + 1]!), op.get(w1), op.get(sp), op.dot16, op.i32add, op.set(acc[2 * r + 1]!));
    }
    emit(op.get(cnt), op.i32(-1), op.add, op.set(cnt), op.br(0));
    emit(op.end, op.end); // pairs of the list
    emit(op.get(lp), op.i32(4 * LIST_RECORD), op.add, op.set(lp));
    for (let r = 0; r < R; r++) emit(op.get(xr[r]!), op.i32(2 * KBLOCK), op.add, op.set(xr[r]!));
    emit(op.get(wp), op.i32(16 * KBLOCK), op.add, op.set(wp));
  } else {
    emit(op.i32(KBLOCK / 2 / UNROLL), op.set(k));
    emit(op.loop); // k pairs, UNROLL per iteration
    for (let u = 0; u < UNROLL; u++) {
      emit(op.get(wp), op.v128load(32 * u), op.set(w0), op.get(wp), op.v128load(32 * u + 16), op.set(w1));
      for (let r = 0; r < R; r++) {
        emit(op.get(xr[r]!), op.load32splat(4 * u), op.set(sp));
        emit(op.get(acc[2 * r]!), op.get(w0), op.get(sp), op.dot16, op.i32add, op.set(acc[2 * r]!));
        emit(op.get(acc[2 * r + 1]!), op.get(w1), op.get(sp), op.dot16, op.i32add, op.set(acc[2 * r + 1]!));
      }
    }
    for (let r = 0; r < R; r++) emit(op.get(xr[r]!), op.i32(4 * UNROLL), op.add, op.set(xr[r]!));
    emit(op.get(wp), op.i32(32 * UNROLL), op.add, op.set(wp));
    emit(op.get(k), op.i32(-1), op.add, op.tee(k), op.brIf(0));
    emit(op.end); // k pairs
  }
  // flush: out += f32(acc)
  emit(op.get(oi), op.set(p));
  for (let r = 0; r < R; r++) {
    for (let h = 0; h < 2; h++) {
      emit(op.get(p), op.get(p), op.v128load(16 * h), op.get(acc[2 * r + h]!), op.cvt, op.fadd, op.v128store(16 * h));
    }
    if (r < R - 1) emit(op.get(p), op.get(rowN), op.add, op.set(p));
  }
  emit(op.get(kb), op.i32(-1), op.add, op.tee(kb), op.brIf(0));
  emit(op.end); // blocks
  // epilogue: out = out · (colScale · rowScale) + bias, relu
  emit(op.get(CS), op.get(j), op.i32(2), op.shl, op.add, op.tee(p), op.v128load(0), op.set(w0), op.get(p), op.v128load(16), op.set(w1));
  emit(op.get(B), op.get(j), op.i32(2), op.shl, op.add, op.tee(p), op.v128load(0), op.set(s0), op.get(p), op.v128load(16), op.set(s1));
  emit(op.get(oi), op.set(p));
  for (let r = 0; r < R; r++) {
    emit(op.get(rsp), op.f32load(4 * r), op.splat, op.set(sp));
    for (let h = 0; h < 2; h++) {
      emit(op.get(p), op.get(p), op.v128load(16 * h), op.get(h ? w1 : w0), op.get(sp), op.fmul, op.fmul, op.get(h ? s1 : s0), op.fadd);
      if (relu) emit(op.zero, op.fmax);
      emit(op.v128store(16 * h));
    }
    if (r < R - 1) emit(op.get(p), op.get(rowN), op.add, op.set(p));
  }
  emit(op.get(i), op.i32(R), op.add, op.set(i));
  emit(op.get(rsp), op.i32(4 * R), op.add, op.set(rsp));
  emit(op.get(xi), op.get(rowK), op.i32(R), op.mul, op.add, op.set(xi));
  emit(op.get(oi), op.get(rowN), op.i32(R), op.mul, op.add, op.set(oi));
  emit(op.br(0), op.end, op.end); // row tiles
  emit(op.get(j), op.i32(8), op.add, op.set(j), op.br(0));
  emit(op.end, op.end); // columns
  emit(op.end);
  const locals = vec([
    [...uleb(nI32), I32],
    [...uleb(nV), V128],
  ]);
  return [...locals, ...c];
}

/**
 * Body of quant(x, q, rowScale, M, K): per row, s = max|x| / Q16 (1 for an all-zero row),
 * q = round-to-nearest-even(x / s) as i16 (f32x4.nearest, i32x4.trunc_sat, i16x8.narrow).
 */
function quantKernel(): number[] {
  const [X, Q, RS, M, K] = [0, 1, 2, 3, 4];
  const r = 5, cnt = 6, p = 7, qp = 8, rsp = 9; // i32 locals
  const mx = 10, sv = 11; // v128
  const m = 12; // f32
  const f32c = (v: number) => [0x43, ...new Uint8Array(new Float32Array([v]).buffer)];
  const lane = (l: number) => [0xfd, 0x1f, l];
  const fmaxS = [0x97], fdivS = [0x95], fgtS = [0x5e], select = [0x1b];
  const fabs = [0xfd, ...uleb(0xe0)], nearest = [0xfd, ...uleb(0x6a)], truncSat = [0xfd, ...uleb(0xf8)], narrow = [0xfd, ...uleb(0x85)];
  const c: number[] = [];
  const emit = (...parts: number[][]) => parts.forEach((q) => c.push(...q));
  emit(op.get(X), op.set(p), op.get(Q), op.set(qp), op.get(RS), op.set(rsp), op.get(M), op.set(r));
  emit(op.block, op.loop); // rows
  emit(op.get(r), [0x45], op.brIf(1));
  // mx = max |x| over the row (lane-wise), then m = max of the 4 lanes
  emit(op.zero, op.set(mx), op.get(K), op.i32(2), op.shrU, op.set(cnt));
  emit(op.loop, op.get(mx), op.get(p), op.v128load(0), fabs, op.fmax, op.set(mx));
  emit(op.get(p), op.i32(16), op.add, op.set(p), op.get(cnt), op.i32(-1), op.add, op.tee(cnt), op.brIf(0), op.end);
  emit(op.get(mx), lane(0), op.get(mx), lane(1), fmaxS, op.get(mx), lane(2), op.get(mx), lane(3), fmaxS, fmaxS, op.set(m));
  // m = m > 0 ? m : Q16 (scale 1); rowScale = m / Q16; sv = splat(Q16 / m)
  emit(op.get(m), f32c(Q16), op.get(m), f32c(0), fgtS, select, op.set(m));
  emit(op.get(rsp), op.get(m), f32c(Q16), fdivS, [0x38, 2, 0]);
  emit(f32c(Q16), op.get(m), fdivS, op.splat, op.set(sv));
  // second pass over the row: p back to its start
  emit(op.get(p), op.get(K), op.i32(2), op.shl, [0x6b] /* i32.sub */, op.set(p), op.get(K), op.i32(3), op.shrU, op.set(cnt));
  emit(op.loop);
  emit(op.get(qp));
  emit(op.get(p), op.v128load(0), op.get(sv), op.fmul, nearest, truncSat);
  emit(op.get(p), op.v128load(16), op.get(sv), op.fmul, nearest, truncSat);
  emit(narrow, op.v128store(0));
  emit(op.get(p), op.i32(32), op.add, op.set(p), op.get(qp), op.i32(16), op.add, op.set(qp));
  emit(op.get(cnt), op.i32(-1), op.add, op.tee(cnt), op.brIf(0), op.end);
  emit(op.get(rsp), op.i32(4), op.add, op.set(rsp), op.get(r), op.i32(-1), op.add, op.set(r), op.br(0));
  emit(op.end, op.end, op.end);
  const locals = vec([
    [...uleb(5), I32],
    [...uleb(2), V128],
    [...uleb(1), 0x7d],
  ]);
  return [...locals, ...c];
}

/** Rows per register tile of the 16-bit kernel (2R + 3 vector registers live in the k loop). */
const R16 = 4; // 5 and 6 measured the same (~34 GMAC/s), 3 slower
/** [rows per tile, relu]; index = (relu ? R16 : 0) + (R16 - rows). */
const VARIANTS16: Array<[number, boolean]> = [false, true].flatMap((relu) => Array.from({ length: R16 }, (_, i): [number, boolean] => [R16 - i, relu]));

export function buildModuleI16(shared = false): Uint8Array {
  const type = [0x60, ...uleb(10), ...new Array<number>(10).fill(I32), 0];
  const qtype = [0x60, ...uleb(5), ...new Array<number>(5).fill(I32), 0];
  const stype = [0x60, ...uleb(11), ...new Array<number>(11).fill(I32), 0];
  const n = VARIANTS16.length;
  const bodies = [...VARIANTS16.map(([r, relu]) => tileKernelI16(r, relu)), ...VARIANTS16.map(([r, relu]) => tileKernelI16(r, relu, true)), quantKernel()].map((b) => [
    ...uleb(b.length),
    ...b,
  ]);
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([type, qtype, stype])),
    ...section(2, vec([memImport(shared)])),
    ...section(3, vec([...VARIANTS16.map(() => [0]), ...VARIANTS16.map(() => [2]), [1]])),
    ...section(
      7,
      vec([
        ...VARIANTS16.map((_, f) => [...str(`mm${f}`), 0x00, ...uleb(f)]),
        ...VARIANTS16.map((_, f) => [...str(`sp${f}`), 0x00, ...uleb(n + f)]),
        [...str("quant"), 0x00, ...uleb(2 * n)],
      ]),
    ),
    ...section(10, vec(bodies)),
  ]);
}

type KernelI16 = (x: number, w: number, b: number, out: number, m: number, k: number, n: number, rs: number, cs: number, ns: number) => void;
type SparseKernelI16 = (x: number, w: number, b: number, out: number, m: number, k: number, n: number, rs: number, cs: number, ns: number, list: number) => void;

/** Bytes of the pair list `pairList` writes for an M×K product (what runColsSparse reads). */
export function pairListBytes(M: number, K: number): number {
  return Math.ceil(M / R16) * (K / KBLOCK) * LIST_RECORD * 4;
}

export interface MatmulI16 {
  readonly memory: WebAssembly.Memory;
  /**
   * out[M,N] = act(x[M,K] · W + bias) with W packed by packPanelsI16 at `w` (scales at `colScale`).
   * x is f32 at `x`; it is quantised per row into `scratch` (M·K i16) and `rowScale` (M f32) first.
   */
  run(x: number, w: number, colScale: number, bias: number, out: number, M: number, K: number, N: number, relu: boolean, scratch: number, rowScale: number): void;
  /** The quantisation step of `run` alone: x (f32, M×K) → `scratch` (i16) and `rowScale`. */
  quantize(x: number, scratch: number, rowScale: number, M: number, K: number): void;
  /**
   * The product step of `run` alone, for columns [j0, j1) (multiples of 8) of an M×N product whose
   * rows were quantised by `quantize`: threads sharing the memory each compute strips of columns.
   * A column's values do not depend on the strip it was computed in (bit-identical to `run`).
   */
  runCols(scratch: number, rowScale: number, w: number, colScale: number, bias: number, out: number, M: number, K: number, N: number, relu: boolean, j0: number, j1: number): void;
  /**
   * For x with many exact zeros (the rows after a relu): lists at `list` (pairListBytes(M, K)
   * bytes), per row tile and block of 32 k, the k pairs that are non-zero in some row of the tile,
   * from the quantised rows in `scratch`; returns the fraction of pairs listed.
   */
  pairList(scratch: number, M: number, K: number, list: number): number;
  /**
   * `runCols` over the pairs `pairList` listed: the pairs left out are zero in every row of their
   * tile and add exactly 0 to the kernel's i32 sums, so every value is bit-identical to `runCols`.
   */
  runColsSparse(scratch: number, rowScale: number, w: number, colScale: number, bias: number, out: number, M: number, K: number, N: number, relu: boolean, j0: number, j1: number, list: number): void;
}

/**
 * MatmulI16.pairList over `memory` (plain JS on the quantised rows; the WebAssembly and the native
 * kernels read the same lists).
 */
export function pairLister(memory: WebAssembly.Memory): MatmulI16["pairList"] {
  let i32 = new Int32Array(memory.buffer);
  return (scratch: number, M: number, K: number, list: number): number => {
    if (i32.buffer !== memory.buffer) i32 = new Int32Array(memory.buffer);
    const pairs = K >> 1, blocks = K / KBLOCK, per = KBLOCK / 2;
    let rec = list >> 2, listed = 0;
    for (let r0 = 0; r0 < M; r0 += R16) {
      const r1 = Math.min(M, r0 + R16);
      for (let b = 0; b < blocks; b++, rec += LIST_RECORD) {
        let n = 0;
        for (let q = 0; q < per; q++) {
          let nz = 0;
          for (let r = r0, x = (scratch >> 2) + r0 * pairs + b * per + q; r < r1; r++, x += pairs) nz |= i32[x]!;
          if (nz !== 0) i32[rec + 1 + n++] = q * 4;
        }
        i32[rec] = n;
        listed += n;
      }
    }
    return listed / (Math.ceil(M / R16) * pairs);
  };
}

export function createWasmMatmulI16(memory: WebAssembly.Memory): MatmulI16 {
  const inst = new WebAssembly.Instance(new WebAssembly.Module(buildModuleI16(isShared(memory))), { env: { mem: memory } });
  const f = VARIANTS16.map((_, i) => inst.exports[`mm${i}`] as KernelI16);
  const fs = VARIANTS16.map((_, i) => inst.exports[`sp${i}`] as SparseKernelI16);
  const quant = inst.exports.quant as (x: number, q: number, rs: number, m: number, k: number) => void;
  const pairList = pairLister(memory);
  const runColsSparse = (scratch: number, rowScale: number, w: number, colScale: number, bias: number, out: number, M: number, K: number, N: number, relu: boolean, j0: number, j1: number, list: number) => {
    const rest = M % R16, full = M - rest;
    const base = relu ? R16 : 0;
    const wj = w + j0 * K * 2, bj = bias + j0 * 4, cj = colScale + j0 * 4, oj = out + j0 * 4, n = j1 - j0;
    if (full > 0) fs[base]!(scratch, wj, bj, oj, full, K, n, rowScale, cj, N, list);
    if (rest > 0) fs[base + R16 - rest]!(scratch + full * K * 2, wj, bj, oj + full * N * 4, rest, K, n, rowScale + full * 4, cj, N, list + pairListBytes(full, K));
  };
  const runCols = (scratch: number, rowScale: number, w: number, colScale: number, bias: number, out: number, M: number, K: number, N: number, relu: boolean, j0: number, j1: number) => {
    const rest = M % R16, full = M - rest;
    const base = relu ? R16 : 0;
    // panel j0/8 starts at j0*K i16 of w; bias, column scales and out at column j0
    const wj = w + j0 * K * 2, bj = bias + j0 * 4, cj = colScale + j0 * 4, oj = out + j0 * 4, n = j1 - j0;
    if (full > 0) f[base]!(scratch, wj, bj, oj, full, K, n, rowScale, cj, N);
    if (rest > 0) f[base + R16 - rest]!(scratch + full * K * 2, wj, bj, oj + full * N * 4, rest, K, n, rowScale + full * 4, cj, N);
  };
  return {
    memory,
    quantize: quant,
    runCols,
    pairList,
    runColsSparse,
    run(x, w, colScale, bias, out, M, K, N, relu, scratch, rowScale) {
      quant(x, scratch, rowScale, M, K);
      runCols(scratch, rowScale, w, colScale, bias, out, M, K, N, relu, 0, N);
    },
  };
}

