/**
 * Preload for a gateway under a bench (`BUN_OPTIONS="--preload <this file>"`, cwd = the checkout's
 * root): counts the texts of every model call the local embedder makes, so a bench can show whether
 * micro-batching really forms batches under load. Works on any checkout whose
 * src/embedding/local.ts (in older checkouts such as 683d91c src/cache/embedding/local.ts) has
 * LocalEmbedder.runBatch: it wraps that method on the
 * prototype, no source change. At exit it writes {batches, texts, hist: {size: count}, workers (most
 * model workers seen loaded), growing (another worker was loading at the last call)} as JSON to
 * the file named by SVC_BENCH_BATCH_STATS. Used by embedding-miss.ts.
 */
import { existsSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

const file = process.env.SVC_BENCH_BATCH_STATS;
if (file) {
  // src/embedding/local.ts; in older checkouts (683d91c) the embedder lived in src/cache/embedding/
  const path = ["src/embedding/local.ts", "src/cache/embedding/local.ts"].map((p) => resolve(process.cwd(), p)).find((p) => existsSync(p));
  if (!path) throw new Error("embedding-batch-stats: no src/embedding/local.ts nor src/cache/embedding/local.ts in the working directory");
  const mod = (await import(path)) as { LocalEmbedder: { prototype: Record<string, unknown> } };
  const proto = mod.LocalEmbedder.prototype as { runBatch: (batch: Array<{ texts: string[] }>, ...rest: unknown[]) => Promise<void> };
  const orig = proto.runBatch;
  if (typeof orig !== "function") throw new Error("embedding-batch-stats: LocalEmbedder.runBatch not found");
  const hist: Record<number, number> = {};
  let batches = 0, texts = 0, workers = 1, growing = false;
  proto.runBatch = function (this: unknown, batch: Array<{ texts: string[] }>, ...rest: unknown[]) {
    const n = new Set(batch.flatMap((c) => c.texts)).size;
    hist[n] = (hist[n] ?? 0) + 1;
    batches++;
    texts += n;
    const self = this as { workersLoaded?: number; growing?: boolean }; // checkouts with several model workers
    if (typeof self.workersLoaded === "number" && self.workersLoaded > workers) workers = self.workersLoaded;
    growing = self.growing === true;
    return orig.call(this, batch, ...rest);
  };
  const write = () => writeFileSync(file, JSON.stringify({ batches, texts, hist, workers, growing }));
  process.on("exit", write);
  // the bench reads the file while the gateway runs (between loads): keep it current
  setInterval(write, 500).unref();
}
