/**
 * The local embedder's worker dying under load (a native crash, OOM in the worker, process.exit in
 * the model code) must never take the gateway with it: the death is detected from the worker's
 * close/error events (not by waiting for the call timeout), every in-flight and queued embed is
 * rejected with EmbeddingError, and the next call starts a new worker.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EmbeddingError, LocalEmbedder, dot } from "../../src/embedding/index";

type Backend = { worker: Worker | null };

describe("local embedder: worker crash", () => {
  let emb: LocalEmbedder;
  beforeAll(async () => {
    // a call timeout far above the test timeout: detection must come from the worker's events
    emb = new LocalEmbedder({ callTimeoutMs: 600_000 });
    await emb.load();
  }, 120_000);
  afterAll(() => emb.close());

  const worker = () => (emb as unknown as { backend: Backend }).backend.worker;

  test("in-flight embeds are rejected with EmbeddingError and the worker is restarted", async () => {
    const [before] = await emb.embed(["what is the capital of france"]);
    const first = worker();
    expect(first).not.toBeNull();
    // many distinct texts keep the worker busy; kill it while the batch runs
    const texts = Array.from({ length: 256 }, (_, i) => `question number ${i} about the history of the roman empire and its provinces`);
    const inflight = Promise.all(Array.from({ length: 8 }, (_, k) => emb.embed(texts.slice(k * 32, (k + 1) * 32)))).then(
      () => "resolved",
      (e: unknown) => e,
    );
    await Bun.sleep(5);
    first!.terminate();
    const outcome = await inflight;
    expect(outcome).toBeInstanceOf(EmbeddingError);
    expect((outcome as Error).message).toMatch(/worker/);
    // next call: a new worker, same vectors
    const [after] = await emb.embed(["what is the capital of france"]);
    expect(worker()).not.toBeNull();
    expect(worker()).not.toBe(first);
    expect(dot(before!, after!)).toBeGreaterThan(0.9999);
    expect(emb.isReady()).toBe(true);
  }, 60_000);
});
