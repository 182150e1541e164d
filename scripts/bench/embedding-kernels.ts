/**
 * A/B of the USE-lite dense-product kernels, in-process, interleaved so that both see the same box load.
 *
 *   ./node_modules/.bin/bun run scripts/bench/embedding-kernels.ts [--kernels wasm-i16,native-i16] [--rounds 20] [--batch 64]
 *
 * A kernel may carry a thread count: `wasm-i16:1,wasm-i16:2` compares the 16-bit kernel on the calling
 * thread alone with it plus one helper thread (parallel-dense.ts); without `:n` the default applies
 * (SVC_EMBEDDING__THREADS, else 1). `--batch n` also times one call of n
 * fresh 12-word texts per variant (the worker's batched forward pass), interleaved the same way.
 *
 * Per query length (5 / 12 / 48 words, the texts of embedding-queries.ts, shared with quality-embedding-latency.ts): each round embeds
 * 10 fresh single-text queries with every kernel in turn; reports p50 and min per kernel (min is the
 * least load-sensitive), the cosine between the kernels' vectors, and load time per kernel.
 *
 * A variant ending in `/dense` runs the layer-0 FFN's second product as a dense loop (UseLiteFast
 * sparseFfn = false): `--kernels wasm-i16/dense,wasm-i16` is the A/B of the sparse product alone.
 *
 * `--base DIR` (another installed checkout): a variant written `base:wasm-i16` (or `base:wasm-i16:2`)
 * is that checkout's own use-lite-fast.ts, so one query of this tree and of another commit are timed
 * in the same process, interleaved: the paired "embedding one query" comparison of BENCHMARKS.md.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { UseLiteFast, type UseLiteFastKernel } from "../../src/embedding/use-lite-fast";
import { query, pct } from "./embedding-queries";

const argv = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1]! : def;
};
const variants = opt("kernels", "wasm-i16,native-i16").split(",");
const kernels = variants as string[];
const batchN = Number(opt("batch", "0"));
const rounds = Number(opt("rounds", "20"));
const load = async () => (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");

const baseDir = opt("base", "");
// src/embedding/use-lite-fast.ts; in older checkouts (683d91c) the embedder lived in src/cache/embedding/
const baseFile = baseDir ? ["src/embedding/use-lite-fast.ts", "src/cache/embedding/use-lite-fast.ts"].map((f) => resolve(baseDir, f)).find((f) => existsSync(f)) : undefined;
if (baseDir && !baseFile) throw new Error(`${baseDir}: no src/embedding/use-lite-fast.ts nor src/cache/embedding/use-lite-fast.ts`);
const BaseFast: typeof UseLiteFast | null = baseFile ? ((await import(baseFile)) as { UseLiteFast: typeof UseLiteFast }).UseLiteFast : null;

const models: UseLiteFast[] = [];
const loadMs: number[] = [];
for (const k of variants) {
  const dense = k.endsWith("/dense");
  const parts = (dense ? k.slice(0, -"/dense".length) : k).split(":");
  const fromBase = parts[0] === "base";
  if (fromBase) parts.shift();
  if (fromBase && !BaseFast) throw new Error(`${k}: needs --base DIR`);
  const [kernel, threads] = parts;
  const Impl = fromBase ? BaseFast! : UseLiteFast;
  const m = new Impl(kernel as UseLiteFastKernel, threads ? Number(threads) : undefined);
  if (dense) {
    if (!("sparseFfn" in m)) throw new Error(`${k}: this use-lite-fast.ts has no sparse FFN product`);
    (m as { sparseFfn: boolean }).sparseFfn = false;
  }
  const t = performance.now();
  await m.load();
  loadMs.push(performance.now() - t);
  models.push(m);
}
console.log(`load avg ${await load()}; load ms: ${kernels.map((k, i) => `${k} ${loadMs[i]!.toFixed(0)}`).join(", ")}`);
console.log(`| words (tokens) | ${kernels.map((k) => `${k} p50 / min ms`).join(" | ")} | min cosine ${kernels[0]} vs others |`);
console.log(`|---|${kernels.map(() => "---|").join("")}---|`);
for (const n of [5, 12, 48]) {
  const times = kernels.map(() => [] as number[]);
  let minCos = 1, differing = 0;
  for (const m of models) for (let i = 0; i < 10; i++) m.embedFlat([query(n)]); // warm-up
  const sample = query(n);
  for (let r = 0; r < rounds; r++) {
    const qs = Array.from({ length: 10 }, () => query(n));
    models.forEach((m, mi) => {
      for (const q of qs) {
        const t = performance.now();
        m.embedFlat([q]);
        times[mi]!.push(performance.now() - t);
      }
    });
    const ref = models[0]!.embedFlat([qs[0]!]);
    for (const m of models.slice(1)) {
      const v = m.embedFlat([qs[0]!]);
      let s = 0;
      for (let c = 0; c < 512; c++) s += ref[c]! * v[c]!;
      minCos = Math.min(minCos, s);
      for (let c = 0; c < 512; c++) if (ref[c] !== v[c]) differing++;
    }
  }
  console.log(
    `| ${n} (${models[0]!.tokenize(sample).length}) | ${times.map((t) => `${pct(t, 0.5).toFixed(2)} / ${Math.min(...t).toFixed(2)}`).join(" | ")} | ${minCos.toFixed(7)}${differing ? ` (${differing} values differ)` : " (bit-identical)"} |`,
  );
}
if (batchN > 0) {
  const times = kernels.map(() => [] as number[]);
  for (let r = 0; r < Math.max(3, Math.ceil(rounds / 4)); r++) {
    const texts = Array.from({ length: batchN }, () => query(12));
    models.forEach((m, mi) => {
      const t = performance.now();
      m.embedFlat(texts);
      times[mi]!.push(performance.now() - t);
    });
  }
  console.log(`| batch of ${batchN} × 12 words, ms (texts/s at p50) | ${times.map((t) => `${pct(t, 0.5).toFixed(1)} / ${Math.min(...t).toFixed(1)} (${Math.round((batchN * 1000) / pct(t, 0.5))})`).join(" | ")} | |`);
}
console.log(`backends: ${models.map((m) => m.backend()).join(", ")}; load avg ${await load()}`);
process.exit(0);
