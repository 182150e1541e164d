/** Vector arithmetic shared by every domain that compares embeddings. */

/** L2-normalise in place and return the same array (zero vectors are left as they are). */
export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  if (s > 0 && Math.abs(s - 1) > 1e-6) {
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < v.length; i++) v[i]! *= inv;
  }
  return v;
}

/** Dot product of two equal-length vectors (the cosine when both are L2-normalised). */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) s += a[i]! * b[i]!;
  return s;
}

/** float32 values as base64 of their little-endian bytes (how committed weight files store them) */
export function encodeF32(a: Float32Array): string {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("base64");
}

/** the inverse of encodeF32 (copied into an aligned buffer) */
export function decodeF32(b64: string): Float32Array {
  const bytes = Buffer.from(b64, "base64");
  const out = new Float32Array(bytes.length / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}
