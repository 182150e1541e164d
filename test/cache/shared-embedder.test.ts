/**
 * Several gateways in one process share one local embedding model (reference-counted): both become
 * ready without anyone awaiting the load, closing one keeps the other's model working, and the
 * model is released with the last gateway.
 */
import { describe, test, expect } from "bun:test";
import { startGateway } from "../helpers/gateway";
import { CachedEmbedder, SharedLocalHandle, TimedEmbedder } from "../../src/embedding";

/** the embedder a gateway uses: timed (metrics) around the LRU around the shared model handle */
const lruOf = (e: unknown) => (e as TimedEmbedder).inner as CachedEmbedder;
const modelOf = (e: unknown) => (lruOf(e).inner as SharedLocalHandle).model;

async function waitReady(url: string): Promise<number> {
  let status = 0;
  for (let i = 0; i < 600; i++) {
    status = (await fetch(url + "/ready")).status;
    if (status === 200) break;
    await Bun.sleep(50);
  }
  return status;
}

describe("one local embedding model per process", () => {
  test("two gateways: same model, both /ready (not awaited), survives closing one, released with the last", async () => {
    const a = await startGateway();
    const b = await startGateway();
    const model = modelOf(a.ctx.embedder);
    try {
      expect(a.ctx.embedder).toBeInstanceOf(TimedEmbedder);
      expect(lruOf(a.ctx.embedder)).toBeInstanceOf(CachedEmbedder);
      expect(lruOf(a.ctx.embedder).inner).toBeInstanceOf(SharedLocalHandle);
      expect(modelOf(b.ctx.embedder)).toBe(model);
      expect(await waitReady(a.url)).toBe(200);
      expect(await waitReady(b.url)).toBe(200);

      await a.stop();
      expect(a.ctx.embedder!.isReady()).toBe(false);
      await expect(a.ctx.embedder!.embed(["closed handle"])).rejects.toThrow("embedder closed");
      // b still embeds with the shared model
      const [v] = await b.ctx.embedder!.embed(["Is the shared model still alive?"]);
      expect(v!.length).toBe(512);
      expect(model.isReady()).toBe(true);
      const c = await startGateway();
      expect(modelOf(c.ctx.embedder)).toBe(model);
      expect(await waitReady(c.url)).toBe(200);
      await c.stop();
      expect(model.isReady()).toBe(true);
    } finally {
      await a.stop();
      await b.stop();
    }
    expect(model.isReady()).toBe(false); // last handle closed: the worker is gone
  }, 60_000);
});
