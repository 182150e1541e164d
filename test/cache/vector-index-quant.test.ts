import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_INDEX_PARAMS, VectorIndex, type Quantization } from "../../src/core/vector-index";

// Deterministic pseudo-random unit vectors (no Math.random: the test must be reproducible).
function unit(seed: number, d = 512): Float32Array {
  let a = seed >>> 0;
  const v = new Float32Array(d);
  let s = 0;
  for (let i = 0; i < d; i++) {
    a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    v[i] = a / 4294967296 - 0.5;
    s += v[i]! * v[i]!;
  }
  for (let i = 0; i < d; i++) v[i]! /= Math.sqrt(s);
  return v;
}

const dir = mkdtempSync(join(tmpdir(), "svc-vindex-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("VectorIndex quantizations", () => {
  for (const q of ["f32", "f16", "i8"] as Quantization[]) {
    test(`${q}: a near-duplicate finds its entry first, and the saved file reloads only with the same quantization`, () => {
      const idx = new VectorIndex({ dimensions: 512, quantization: q, ...DEFAULT_INDEX_PARAMS });
      idx.addMany(Array.from({ length: 500 }, (_, i) => ({ vecKey: i + 1, vec: unit(i + 1) })));
      // every 7th entry, not three: the multi-threaded build this replaced lost about one node in
      // 500 in a few percent of builds (BENCHMARKS.md "Index builds")
      for (let k = 1; k <= 500; k += 7) {
        const v = unit(k), noise = unit(10_000 + k);
        const near = v.map((x, i) => x + 0.3 * noise[i]!);
        const top = idx.search(near, 3);
        expect(`${k} -> ${top[0]!.key}`).toBe(`${k} -> ${k}`);
        expect(top[0]!.similarity).toBeGreaterThan(0.85);
      }
      const file = join(dir, `${q}.usearch`);
      const fp = { count: 500, maxKey: 500, sumKey: 125_250 };
      idx.save(file, fp);
      const again = new VectorIndex({ dimensions: 512, quantization: q, ...DEFAULT_INDEX_PARAMS });
      expect(again.tryLoad(file, fp)).toBe(true);
      expect(again.search(unit(7), 1)[0]!.key).toBe(7);
      const other = new VectorIndex({ dimensions: 512, quantization: q === "i8" ? "f16" : "i8", ...DEFAULT_INDEX_PARAMS });
      expect(other.tryLoad(file, fp)).toBe(false); // a quantization change forces a rebuild
    });
  }
});

describe("bulk builds are deterministic", () => {
  test("the same rows give the same answers, build after build", () => {
    const items = Array.from({ length: 300 }, (_, i) => ({ vecKey: i + 1, vec: unit(i + 1) }));
    const answers = () => {
      const idx = new VectorIndex({ dimensions: 512, quantization: "f16", ...DEFAULT_INDEX_PARAMS });
      idx.addMany(items);
      return Array.from({ length: 30 }, (_, j) => idx.search(unit(50_000 + j), 5).map((n) => n.key).join(","));
    };
    const first = answers();
    for (let b = 0; b < 5; b++) expect(answers()).toEqual(first);
  });
});

describe("VectorIndex graph degree (SVC_CACHE__INDEX_M)", () => {
  test("M=32 finds near-duplicates, and a saved M=16 index is rebuilt rather than reused", () => {
    const fp = { count: 300, maxKey: 300, sumKey: 45_150 };
    const items = Array.from({ length: 300 }, (_, i) => ({ vecKey: i + 1, vec: unit(i + 1) }));
    const m16 = new VectorIndex({ dimensions: 512, quantization: "f16", ...DEFAULT_INDEX_PARAMS });
    m16.addMany(items);
    const file = join(dir, "m16.usearch");
    m16.save(file, fp);
    const m32 = new VectorIndex({ dimensions: 512, quantization: "f16", ...DEFAULT_INDEX_PARAMS, connectivity: 32 });
    expect(m32.tryLoad(file, fp)).toBe(false);
    m32.addMany(items);
    const near = unit(42).map((x, i) => x + 0.3 * unit(20_042)[i]!);
    expect(m32.search(near, 1)[0]!.key).toBe(42);
  });
});
