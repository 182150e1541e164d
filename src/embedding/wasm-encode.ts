/**
 * A tiny WebAssembly binary encoder for the matmul kernels (simd-matmul.ts, simd-matmul-i16.ts):
 * LEB128 numbers, names, sections, vectors, the `env.mem` import and the opcodes the kernels use.
 * The kernels are assembled from these at load time (no binary blob, no toolchain).
 */
export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}
export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}
export const str = (s: string) => [...uleb(s.length), ...Array.from(new TextEncoder().encode(s))];
export const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body];
export const vec = (items: number[][]) => [...uleb(items.length), ...items.flat()];
/** Import of `env.mem`: a plain memory, or a shared one (threads; a shared import must declare a maximum). */
export const memImport = (shared: boolean) => [...str("env"), ...str("mem"), 0x02, ...(shared ? [0x03, ...uleb(1), ...uleb(65536)] : [0x00, ...uleb(1)])];

export const I32 = 0x7f;
export const V128 = 0x7b;
export const op = {
  get: (i: number) => [0x20, ...uleb(i)],
  set: (i: number) => [0x21, ...uleb(i)],
  tee: (i: number) => [0x22, ...uleb(i)],
  i32: (v: number) => [0x41, ...sleb(v)],
  add: [0x6a],
  shrU: [0x76],
  i32load: (offset: number) => [0x28, 2, ...uleb(offset)],
  i32splat: [0xfd, ...uleb(0x11)],
  load32splat: (offset: number) => [0xfd, ...uleb(0x09), 2, ...uleb(offset)], // v128.load32_splat
  i32add: [0xfd, ...uleb(0xae)],
  dot16: [0xfd, ...uleb(0xba)], // i32x4.dot_i16x8_s
  cvt: [0xfd, ...uleb(0xfa)], // f32x4.convert_i32x4_s
  mul: [0x6c],
  shl: [0x74],
  ltu: [0x49],
  block: [0x02, 0x40],
  loop: [0x03, 0x40],
  end: [0x0b],
  br: (d: number) => [0x0c, ...uleb(d)],
  brIf: (d: number) => [0x0d, ...uleb(d)],
  f32load: (offset: number) => [0x2a, 2, ...uleb(offset)],
  v128load: (offset: number) => [0xfd, ...uleb(0), 4, ...uleb(offset)],
  v128store: (offset: number) => [0xfd, ...uleb(11), 4, ...uleb(offset)],
  splat: [0xfd, ...uleb(0x13)],
  fadd: [0xfd, ...uleb(0xe4)],
  fmul: [0xfd, ...uleb(0xe6)],
  fmax: [0xfd, ...uleb(0xe9)],
  zero: [0xfd, ...uleb(12), ...new Array<number>(16).fill(0)], // v128.const 0
};

/** Whether a memory is shared (threads): its import must then say so. */
export function isShared(memory: WebAssembly.Memory): boolean {
  return typeof SharedArrayBuffer !== "undefined" && memory.buffer instanceof SharedArrayBuffer;
}
