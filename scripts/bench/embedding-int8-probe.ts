#!/usr/bin/env bun
/**
 * Would 8-bit weights make the local model faster on this runtime? The only 8-bit multiply-add that
 * WebAssembly offers is relaxed SIMD's i32x4.relaxed_dot_i8x16_i7x16_add_s (16 multiply-adds per
 * instruction, accumulate included), against the 16-bit kernel's i32x4.dot_i16x8_s + i32x4.add
 * (8 multiply-adds). This times both in the same register-only loop (8 independent accumulators,
 * no memory traffic: the instruction's own throughput), best of 20, alternating.
 *
 *   bun scripts/bench/embedding-int8-probe.ts
 *
 * On Bun 1.4.5 / x86-64 (AMD EPYC with AVX-512 VNNI) the relaxed dot runs ~2.6× slower per
 * multiply-add than the 16-bit dot (BENCHMARKS.md "Embedding latency"): an 8-bit kernel would be
 * slower whatever its accuracy, so none is shipped.
 */
function uleb(n: number): number[] {
  const o: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    o.push(b);
  } while (n);
  return o;
}
const section = (id: number, b: number[]) => [id, ...uleb(b.length), ...b];
const vec = (xs: number[][]) => [...uleb(xs.length), ...xs.flat()];
const str = (s: string) => [...uleb(s.length), ...new TextEncoder().encode(s)];
const DOT_I16 = 0xba, I32X4_ADD = 0xae, RELAXED_DOT_I8_ADD = 0x113;

/** f(n): n iterations of 8 multiply-adds into 8 accumulators; "i16": acc += dot_i16x8_s(w, x); "i8": acc = relaxed_dot_i8x16_i7x16_add_s(w, x, acc). */
function build(kind: "i16" | "i8"): Uint8Array {
  const N = 0, w0 = 1, w1 = 2, x = 3, acc = [4, 5, 6, 7, 8, 9, 10, 11];
  const c: number[] = [];
  const load = (off: number, local: number) => c.push(0x41, 0, 0xfd, 0, 4, off, 0x21, local); // local = v128.load(0 + off)
  load(0, w0);
  load(16, w1);
  load(32, x);
  c.push(0x03, 0x40); // loop
  for (let a = 0; a < 8; a++) {
    const w = a % 2 ? w1 : w0;
    if (kind === "i16") c.push(0x20, acc[a]!, 0x20, w, 0x20, x, 0xfd, ...uleb(DOT_I16), 0xfd, ...uleb(I32X4_ADD), 0x21, acc[a]!);
    else c.push(0x20, w, 0x20, x, 0x20, acc[a]!, 0xfd, ...uleb(RELAXED_DOT_I8_ADD), 0x21, acc[a]!);
  }
  c.push(0x20, N, 0x41, 0x7f, 0x6a, 0x22, N, 0x0d, 0, 0x0b); // n--; br_if n; end
  c.push(0x41, 0, 0x20, acc[0]!); // store the sum of the accumulators (keeps the loop live)
  for (let a = 1; a < 8; a++) c.push(0x20, acc[a]!, 0xfd, ...uleb(I32X4_ADD));
  c.push(0xfd, 11, 4, 48, 0x0b);
  const body = [...vec([[11, 0x7b]]), ...c];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([[0x60, 1, 0x7f, 0]])),
    ...section(2, vec([[...str("env"), ...str("mem"), 0x02, 0x00, 0x01]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...str("f"), 0x00, 0x00]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

const memory = new WebAssembly.Memory({ initial: 1 });
const iters = 1_000_000;
const best: Record<string, number> = { i16: Infinity, i8: Infinity };
const fns = Object.fromEntries(
  (["i16", "i8"] as const).map((k) => {
    if (!WebAssembly.validate(build(k))) throw new Error(`${k}: this runtime does not validate the instruction`);
    const f = new WebAssembly.Instance(new WebAssembly.Module(build(k)), { env: { mem: memory } }).exports.f as (n: number) => void;
    f(10_000); // tier up
    return [k, f];
  }),
);
for (let r = 0; r < 20; r++) {
  for (const k of ["i16", "i8"] as const) {
    const t = performance.now();
    fns[k]!(iters);
    best[k] = Math.min(best[k]!, performance.now() - t);
  }
}
const gmacs = (k: "i16" | "i8") => (8 * (k === "i8" ? 16 : 8) * iters) / best[k]! / 1e6;
console.log(`Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores; load ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}`);
console.log(`i32x4.dot_i16x8_s + i32x4.add:          ${best.i16!.toFixed(2)} ms per ${iters} × 8, ${gmacs("i16").toFixed(1)} G multiply-adds/s`);
console.log(`i32x4.relaxed_dot_i8x16_i7x16_add_s:    ${best.i8!.toFixed(2)} ms per ${iters} × 8, ${gmacs("i8").toFixed(1)} G multiply-adds/s`);
console.log(`8-bit / 16-bit multiply-add throughput: ${(gmacs("i8") / gmacs("i16")).toFixed(2)}`);
export {};
