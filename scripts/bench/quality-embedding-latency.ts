/**
 * Latency / throughput of the local embedder (USE-lite).
 *
 *   ./node_modules/.bin/bun run scripts/bench/quality-embedding-latency.ts [--in-process] [--engine fast|tfjs]
 *
 * --engine: "fast" (default; TS + WASM SIMD, use-lite-fast.ts) or "tfjs" (the original TF.js graph).
 *
 * Reports p50/p90 of single-query latency for 5/12/48-word queries (sequential
 * calls, LRU off), throughput with N concurrent callers (micro-batching; model workers loaded:
 * SVC_EMBEDDING__WORKERS, the second starts when a batch has to wait), and RSS.
 */
import { LocalEmbedder } from "../../src/embedding/local";
import { query, pct } from "./embedding-queries";

const inProcess = process.argv.includes("--in-process");
const ei = process.argv.indexOf("--engine");
const engine = (ei > 0 ? process.argv[ei + 1] : "fast") as "fast" | "tfjs";

const rss0 = process.memoryUsage().rss;
const emb = new LocalEmbedder({ worker: !inProcess, engine });
const t0 = performance.now();
await emb.load();
console.log(
  `mode=${inProcess ? "in-process" : "worker"} engine=${emb.engine} backend=${emb.backendName} load=${(performance.now() - t0).toFixed(0)}ms ` +
    `rss after load=${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB (+${((process.memoryUsage().rss - rss0) / 2 ** 20).toFixed(0)})`,
);
console.log("| words | p50 ms | p90 ms |\n|---|---|---|");
for (const n of [5, 12, 48]) {
  for (let i = 0; i < 5; i++) await emb.embed([query(n)]);
  const ts: number[] = [];
  for (let i = 0; i < 60; i++) {
    const t = performance.now();
    await emb.embed([query(n)]);
    ts.push(performance.now() - t);
  }
  console.log(`| ${n} | ${pct(ts, 0.5).toFixed(1)} | ${pct(ts, 0.9).toFixed(1)} |`);
}
console.log("\n| concurrent callers (12 words) | texts/s | p50 ms | p90 ms | batches | mean batch | model workers |\n|---|---|---|---|---|---|---|");
for (const c of [1, 4, 16, 64]) {
  const b0 = emb.batchesRun, e0 = emb.textsEmbedded;
  const ts: number[] = [];
  const end = performance.now() + 4000;
  let done = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await emb.embed([query(12)]);
        ts.push(performance.now() - t);
        done++;
      }
    }),
  );
  const secs = (performance.now() - start) / 1000;
  const nb = emb.batchesRun - b0;
  console.log(`| ${c} | ${(done / secs).toFixed(0)} | ${pct(ts, 0.5).toFixed(1)} | ${pct(ts, 0.9).toFixed(1)} | ${nb} | ${((emb.textsEmbedded - e0) / nb).toFixed(1)} | ${emb.workersLoaded} |`);
}
// Event-loop responsiveness while embedding: max timer lag during a 64-caller burst.
let maxLag = 0;
let last = performance.now();
const iv = setInterval(() => {
  const now = performance.now();
  maxLag = Math.max(maxLag, now - last - 5);
  last = now;
}, 5);
await Promise.all(Array.from({ length: 256 }, () => emb.embed([query(12)])));
clearInterval(iv);
maxLag = Math.max(maxLag, performance.now() - last - 5);
console.log(`\nmax event-loop lag during a 256-query burst: ${maxLag.toFixed(1)} ms`);
console.log(`rss=${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`);
await emb.close();
