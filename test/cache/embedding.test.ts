import { afterAll, beforeAll, describe, expect, test } from "bun:test";

import { CachedEmbedder, EmbeddingError, LocalEmbedder, RemoteEmbedder, createEmbedder, dot, prepareText, type Embedder } from "../../src/embedding/index";
import { UseLiteModel } from "../../src/embedding/use-lite";
import { UseLiteFast } from "../../src/embedding/use-lite-fast";
import { defaultBusyBatch, defaultWorkers } from "../../src/embedding/local";
import { ensureNativeKernel } from "../helpers/native-kernel";

ensureNativeKernel(); // what `npm install` builds: the default kernel below is the native one
const NATIVE = /^ts\+native-i16\((avx512-vnni|avx2)\)$/;

const norm = (v: Float32Array) => Math.sqrt(dot(v, v));

describe("local embedder (USE-lite)", () => {
  let emb: LocalEmbedder;
  beforeAll(async () => {
    emb = new LocalEmbedder();
    await emb.load();
  }, 120_000);
  afterAll(async () => {
    await emb.close();
  });

  test("loads and reports its shape", () => {
    expect(emb.isReady()).toBe(true);
    expect(emb.dimensions).toBe(512);
    expect(emb.id).toBe("local:use-lite-512");
    expect(emb.engine).toBe("fast"); // default: TS forward pass
    expect(emb.backendName).toMatch(NATIVE); // 16-bit integer dense products in native code, one thread by default
  });

  test("vectors are L2-normalised and paraphrases score higher than unrelated texts", async () => {
    const [a, b, c] = await emb.embed([
      "How do I reset my Gmail password?",
      "How can I change the password of my Gmail account?",
      "What is the boiling point of water at sea level?",
    ]);
    for (const v of [a!, b!, c!]) expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-3);
    expect(dot(a!, b!)).toBeGreaterThan(dot(a!, c!) + 0.2);
    expect(dot(a!, b!)).toBeGreaterThan(0.7);
  });

  test("case and whitespace do not change the vector", async () => {
    const [a, b] = await emb.embed(["What Is   The Capital of France?", "what is the capital of france?"]);
    expect(dot(a!, b!)).toBeGreaterThan(0.9999);
  });

  test("concurrent calls are micro-batched and every caller gets its own vectors in order", async () => {
    const texts = Array.from({ length: 12 }, (_, i) => `question number ${i} about topic ${String.fromCharCode(97 + i)}`);
    const [solo] = await Promise.all([emb.embed([texts[5]!])]);
    const before = emb.batchesRun;
    const results = await Promise.all(texts.map((t) => emb.embed([t])));
    expect(emb.batchesRun - before).toBeLessThan(texts.length); // batched
    expect(dot(results[5]![0]!, solo![0]!)).toBeGreaterThan(0.9999); // right vector for the right caller
    const multi = await emb.embed([texts[3]!, texts[7]!, texts[3]!]);
    expect(multi.length).toBe(3);
    expect(dot(multi[0]!, results[3]![0]!)).toBeGreaterThan(0.9999);
    expect(dot(multi[1]!, results[7]![0]!)).toBeGreaterThan(0.9999);
    expect(dot(multi[2]!, multi[0]!)).toBeGreaterThan(0.9999);
    expect(await emb.embed([])).toEqual([]);
  });

  test("a crashed worker is restarted on the next call", async () => {
    const [before] = await emb.embed(["restart check"]);
    const backend = (emb as unknown as { backend: { worker: Worker | null; fail(m: string): void } }).backend;
    backend.fail("simulated crash");
    expect(emb.isReady()).toBe(true);
    const [after] = await emb.embed(["restart check"]);
    expect(dot(before!, after!)).toBeGreaterThan(0.9999);
  }, 60_000);

  test("with workers: 2 a batch waiting for the busy worker starts a second one, batches then run side by side, vectors unchanged", async () => {
    const two = new LocalEmbedder({ workers: 2, busyBatch: 1 });
    try {
      await two.load();
      expect(two.workersLoaded).toBe(1); // the second worker starts only when a batch has to wait
      const texts = Array.from({ length: 64 }, (_, i) => `a longer question number ${i} about how the second worker of the embedder shares the load of a burst of distinct queries ${i}`);
      // first burst: the second call waits behind the first batch, which starts the second worker
      await Promise.all([two.embed(texts.slice(0, 32)), Bun.sleep(0).then(() => two.embed(texts.slice(32, 40)))]);
      const deadline = performance.now() + 60_000;
      while (two.workersLoaded < 2 && two.extraWorkerError === null && performance.now() < deadline) await Bun.sleep(20);
      expect(two.extraWorkerError).toBeNull();
      expect(two.workersLoaded).toBe(2);
      // a call made while a 64-text batch runs on one worker is handed to the other at once
      const big = two.embed(texts);
      await new Promise((r) => setImmediate(r));
      const small = two.embed(["what runs while the big batch is busy?"]);
      const [bigV, [smallV]] = await Promise.all([big, small]);
      expect(two.peakConcurrentBatches).toBe(2);
      // same model, same kernel: bit-identical to the single-worker embedder's vectors
      const ref = await emb.embed([...texts, "what runs while the big batch is busy?"]);
      for (let i = 0; i < texts.length; i++) expect(bigV[i]).toEqual(ref[i]!);
      expect(smallV).toEqual(ref[64]!);
    } finally {
      await two.close();
    }
  }, 120_000);

  test("a crashed second worker fails only its own batch, is dropped, and a later waiting batch starts a new one", async () => {
    const two = new LocalEmbedder({ workers: 2, busyBatch: 1 });
    const extras = () => (two as unknown as { extras: Array<{ fail(m: string): void; alive(): boolean }> }).extras;
    const grow = async () => {
      const texts = Array.from({ length: 48 }, (_, i) => `warm-up question ${i} for a second worker ${Math.random()}`);
      await Promise.all([two.embed(texts), Bun.sleep(0).then(() => two.embed(["a call that has to wait"]))]);
      const deadline = performance.now() + 60_000;
      while (two.workersLoaded < 2 && two.extraWorkerError === null && performance.now() < deadline) await Bun.sleep(20);
      expect(two.workersLoaded).toBe(2);
    };
    try {
      await two.load();
      await grow();
      // a batch in flight on the second worker when it dies is rejected, the first worker's is not
      const big = two.embed(Array.from({ length: 64 }, (_, i) => `long batch text ${i} on the first worker`));
      await new Promise((r) => setImmediate(r));
      const onSecond = two.embed(["this one runs on the second worker"]);
      await new Promise((r) => setImmediate(r));
      extras()[0]!.fail("simulated crash");
      await expect(onSecond).rejects.toThrow(EmbeddingError);
      expect((await big).length).toBe(64);
      // the dead worker is dropped; calls keep working on the first; a batch that waits grows again
      const [v] = await two.embed(["after the crash"]);
      expect(Math.abs(norm(v!) - 1)).toBeLessThan(1e-3);
      expect(two.workersLoaded).toBe(1);
      await grow();
    } finally {
      await two.close();
    }
  }, 180_000);

  test("with busyBatch: 4 a free worker waits for 4 queued texts while the other computes a large batch, and starts at once beside a small one", async () => {
    const two = new LocalEmbedder({ workers: 2, busyBatch: 4 });
    try {
      await two.load();
      // a burst that has to wait starts the second worker
      await Promise.all([two.embed(Array.from({ length: 48 }, (_, i) => `warm-up ${i} for the second worker`)), Bun.sleep(0).then(() => two.embed(["a call that has to wait"]))]);
      const deadline = performance.now() + 60_000;
      while (two.workersLoaded < 2 && two.extraWorkerError === null && performance.now() < deadline) await Bun.sleep(20);
      expect(two.workersLoaded).toBe(2);
      const calls0 = two.batchesRun;
      const peak0 = two.peakConcurrentBatches;
      // a long batch runs on one worker; single calls made meanwhile wait until 4 texts are queued
      const long = Array.from({ length: 64 }, (_, i) => `a long batch text ${i} that keeps the first worker computing for a while, ${i}`);
      let bigDone = false;
      const big = two.embed(long).then((v) => ((bigDone = true), v));
      await new Promise((r) => setImmediate(r));
      const singles: Array<Promise<Float32Array[]>> = [];
      for (let i = 0; i < 3; i++) {
        singles.push(two.embed([`single question ${i} asked during the long batch`]));
        await new Promise((r) => setImmediate(r));
      }
      // the long batch takes far longer than these few turns of the event loop; while it runs, the
      // three single texts wait in the queue (below busyBatch: no call for them on the free worker)
      const early = !bigDone;
      if (early) expect((two as unknown as { queuedTexts: number }).queuedTexts).toBe(3);
      singles.push(two.embed(["the fourth single question reaches busyBatch"]));
      const got = await Promise.all(singles);
      await big;
      if (early) {
        // the four went out in one call on the free worker, beside the long batch
        expect(two.batchesRun - calls0).toBe(2);
        expect(two.peakConcurrentBatches).toBe(Math.max(peak0, 2));
      } else expect(two.batchesRun - calls0).toBeLessThanOrEqual(3);
      const ref = await emb.embed([...[0, 1, 2].map((i) => `single question ${i} asked during the long batch`), "the fourth single question reaches busyBatch"]);
      got.forEach(([v], i) => expect(v).toEqual(ref[i]!));
      // while the other worker computes a batch smaller than busyBatch (the embedder is not
      // saturated), a call starts at once on the free worker
      let smallDone = false;
      const small = two.embed(["a small batch, text one", "a small batch, text two"]).then((v) => ((smallDone = true), v));
      await new Promise((r) => setImmediate(r));
      const alone = two.embed(["a call beside the small batch"]);
      await new Promise((r) => setImmediate(r));
      const busy = (two as unknown as { busy: Set<unknown> }).busy;
      if (!smallDone) expect(busy.size).toBe(2);
      expect((two as unknown as { queuedTexts: number }).queuedTexts).toBe(0);
      await Promise.all([small, alone]);
      // with no worker computing, a lone call starts at once
      const before = two.batchesRun;
      await two.embed(["a lone call on an idle embedder"]);
      expect(two.batchesRun - before).toBe(1);
    } finally {
      await two.close();
    }
  }, 120_000);

  test("SVC_EMBEDDING__BUSY_BATCH: an integer from 1 to 64, else a clear error; unset: 8", () => {
    const saved = process.env.SVC_EMBEDDING__BUSY_BATCH;
    try {
      process.env.SVC_EMBEDDING__BUSY_BATCH = "3";
      expect(defaultBusyBatch()).toBe(3);
      for (const bad of ["0", "65", "1.5", "eight"]) {
        process.env.SVC_EMBEDDING__BUSY_BATCH = bad;
        expect(() => defaultBusyBatch()).toThrow("SVC_EMBEDDING__BUSY_BATCH must be an integer from 1 to 64");
      }
      delete process.env.SVC_EMBEDDING__BUSY_BATCH;
      expect(defaultBusyBatch()).toBe(8);
    } finally {
      if (saved === undefined) delete process.env.SVC_EMBEDDING__BUSY_BATCH;
      else process.env.SVC_EMBEDDING__BUSY_BATCH = saved;
    }
  });

  test("SVC_EMBEDDING__WORKERS: an integer from 1 to 8, else a clear error; unset: 2 on 2+ cores", () => {
    const saved = process.env.SVC_EMBEDDING__WORKERS;
    try {
      process.env.SVC_EMBEDDING__WORKERS = "3";
      expect(defaultWorkers()).toBe(3);
      for (const bad of ["0", "9", "1.5", "two"]) {
        process.env.SVC_EMBEDDING__WORKERS = bad;
        expect(() => defaultWorkers()).toThrow("SVC_EMBEDDING__WORKERS must be an integer from 1 to 8");
      }
      delete process.env.SVC_EMBEDDING__WORKERS;
      expect(defaultWorkers()).toBe(navigator.hardwareConcurrency >= 2 ? 2 : 1);
    } finally {
      if (saved === undefined) delete process.env.SVC_EMBEDDING__WORKERS;
      else process.env.SVC_EMBEDDING__WORKERS = saved;
    }
  });

  test("with workers: 1 concurrent batches queue behind the one worker", async () => {
    const one = new LocalEmbedder({ workers: 1 });
    try {
      await one.load();
      const big = one.embed(Array.from({ length: 32 }, (_, i) => `queued question ${i}`));
      await new Promise((r) => setImmediate(r));
      await Promise.all([big, one.embed(["a second call while the first batch runs"])]);
      expect(one.peakConcurrentBatches).toBe(1);
      expect(one.workersLoaded).toBe(1);
    } finally {
      await one.close();
    }
  }, 120_000);

  test("LRU wrapper prevents re-embedding the same text", async () => {
    let calls = 0;
    let texts = 0;
    const counting: Embedder = {
      id: emb.id,
      dimensions: emb.dimensions,
      load: () => emb.load(),
      isReady: () => emb.isReady(),
      embed: (t) => {
        calls++;
        texts += t.length;
        return emb.embed(t);
      },
      close: async () => {},
    };
    const cached = new CachedEmbedder(counting, 100);
    const first = await cached.embed(["alpha beta", "gamma delta"]);
    const second = await cached.embed(["gamma delta", "alpha beta", "epsilon"]);
    expect(calls).toBe(2);
    expect(texts).toBe(3); // only "epsilon" was new
    expect(dot(first[0]!, second[1]!)).toBeGreaterThan(0.9999);
    await Promise.all([cached.embed(["zeta"]), cached.embed(["zeta"])]); // concurrent duplicates share one call
    expect(texts).toBe(4);
    second[0]![0] = 42; // callers get copies
    expect((await cached.embed(["gamma delta"]))[0]![0]).not.toBe(42);
    expect(cached.hits).toBeGreaterThan(0);
  });
});

describe("USE-lite without TF.js (engine fast) matches the TF.js graph", () => {
  // Edge cases + the first dev pairs (50 texts in all when the dev set is present).
  const texts = [
    "",
    "?",
    "what is the capital of france?",
    "ünïcödé façade — naïve café ☕ 🚀 日本語のテキスト",
    "\u0000\u0001 tabs\tand\nnewlines",
    "1234567890 3.14159 $100 50% a+b=c",
    "the quick brown fox jumps over the lazy dog ".repeat(20), // > 128 tokens: clipped
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
  ];
  // 21 question pairs of the kind the cache sees (paraphrases, near-misses, numbers, entities),
  // written for this test so it needs no data set (the full dev-set comparison of all 2,000 texts
  // is scripts/bench/embedding-equivalence.ts)
  texts.push(
    "How do I reset my password?", "What are the steps to reset a forgotten password?",
    "What is the best way to learn Python quickly?", "How can I learn Python fast?",
    "How do I convert 5 miles to kilometres?", "How many kilometres are 50 miles?",
    "Why is the sky blue during the day?", "Why does the sky look red at sunset?",
    "Who wrote Pride and Prejudice?", "Who is the author of Sense and Sensibility?",
    "How do I flight from Paris to Berlin cheaply?", "Cheapest way to fly from Berlin to Paris?",
    "Is it safe to eat raw eggs?", "Can you eat raw eggs safely?",
    "What causes inflation in an economy?", "How does inflation affect savings accounts?",
    "How to sort a list of dictionaries by a key in Python?", "Sort list of dicts by value python",
    "What is the capital of Australia?", "Is Sydney the capital of Australia?",
    "How long does it take to boil an egg?", "How long should I boil an egg for a soft yolk?",
    "What are the symptoms of vitamin D deficiency?", "What happens if you take too much vitamin D?",
    "Can I use my phone abroad without roaming charges?", "How do I turn off data roaming on Android?",
    "How do I become a data scientist without a degree?", "Do data scientists need a PhD?",
    "What is the difference between a virus and bacteria?", "Are antibiotics effective against viruses?",
    "How many calories should I eat to lose weight?", "How many calories do I burn walking 10000 steps?",
    "Which is better for beginners: guitar or piano?", "Is piano harder to learn than guitar?",
    "How can I improve my credit score in 3 months?", "What is a good credit score in 2024?",
    "What does HTTP 404 mean?", "What does HTTP status 500 mean?",
    "How do I make my houseplants grow faster?", "Why are the leaves on my houseplant turning yellow?",
    "Where can I watch the 2022 World Cup final?", "Who won the 2018 World Cup final?",
  );
  const prepared = texts.map((t) => prepareText(t));
  let ref: UseLiteModel;
  let fast: UseLiteFast;
  let fastJs: UseLiteFast;
  let fastI16: UseLiteFast;
  let wasmI16: UseLiteFast;
  let fastPar: UseLiteFast;
  beforeAll(async () => {
    ref = new UseLiteModel();
    fast = new UseLiteFast("wasm");
    fastJs = new UseLiteFast("js");
    fastI16 = new UseLiteFast(undefined, 1); // default kernel: 16-bit integer weights/activations in native code; calling thread only
    wasmI16 = new UseLiteFast("wasm-i16", 1); // the same arithmetic in WebAssembly
    fastPar = new UseLiteFast("wasm-i16", 2); // the WebAssembly kernel with one helper thread on a shared memory
    await Promise.all([ref.load(), fast.load(), fastJs.load(), fastI16.load(), wasmI16.load(), fastPar.load()]);
  }, 120_000);
  afterAll(() => fastPar.close());

  const cosines = (a: Float32Array, b: Float32Array) =>
    Array.from({ length: a.length / 512 }, (_, i) => dot(a.subarray(i * 512, (i + 1) * 512), b.subarray(i * 512, (i + 1) * 512)));

  test("same SentencePiece ids as @energetic-ai/embeddings' tokenizer", () => {
    const tok = (ref as unknown as { model: { tokenizer: { encode(s: string): number[] } } }).model.tokenizer;
    for (const t of prepared) expect(fast.tokenize(t)).toEqual(tok.encode(t.length > 0 ? t : " ").slice(0, 128));
  });

  test("cosine >= 0.9999 with the TF.js vectors for every text (16-bit and f32 WASM kernels, JS fallback)", async () => {
    // one text per TF.js call: a batch is padded to its longest text (the 128-token one), which is slow
    const want = new Float32Array(prepared.length * 512);
    for (let i = 0; i < prepared.length; i++) want.set(await ref.embedFlat([prepared[i]!]), i * 512);
    const got = fast.embedFlat(prepared);
    const gotI16 = fastI16.embedFlat(prepared);
    const gotJs = fastJs.embedFlat(prepared.slice(0, 6)); // the scalar fallback is slow: short edge cases only
    expect(fast.backend()).toBe("ts+wasm");
    expect(fastJs.backend()).toBe("ts+js");
    expect(fastI16.backend()).toMatch(NATIVE);
    for (const c of cosines(want, got)) expect(c).toBeGreaterThan(0.9999);
    // 16-bit rounding (≤ 1/16000 of each row's / column's largest value) measured ≥ 0.9999993 on 2000 dev texts
    for (const c of cosines(want, gotI16)) expect(c).toBeGreaterThan(0.9999);
    for (const c of cosines(want.subarray(0, gotJs.length), gotJs)) expect(c).toBeGreaterThan(0.9999);
    for (let i = 0; i < got.length; i += 512) expect(Math.abs(Math.sqrt(dot(got.subarray(i, i + 512), got.subarray(i, i + 512))) - 1)).toBeLessThan(1e-5);
  }, 60_000);

  test("the native and the WebAssembly 16-bit kernels give bit-identical vectors (alone and in a batch)", () => {
    expect(wasmI16.backend()).toBe("ts+wasm-i16");
    expect(Array.from(fastI16.embedFlat(prepared))).toEqual(Array.from(wasmI16.embedFlat(prepared)));
    for (const i of [0, 2, 6, 9]) expect(Array.from(fastI16.embedFlat([prepared[i]!]))).toEqual(Array.from(wasmI16.embedFlat([prepared[i]!])));
  });

  test("a text gets the same vector alone and inside a batch", () => {
    const batch = fastI16.embedFlat(prepared); // quantisation scales are per row, so batch-independent
    for (const i of [0, 3, 6, prepared.length - 1]) {
      const solo = fastI16.embedFlat([prepared[i]!]);
      expect(dot(solo, batch.subarray(i * 512, (i + 1) * 512))).toBeGreaterThan(0.99999);
    }
  });

  test("with a helper thread the vectors are bit-identical to one thread's, and the helper computes column strips", async () => {
    expect(fastPar.backend()).toBe("ts+wasm-i16x2");
    // no helper thread is started by loading (warm-up) or by a short query: it would cost start-up CPU
    fastPar.embedFlat([prepared[0]!]);
    expect(fastPar.parallelStats().helperThreads).toBe(0);
    const long = prepared.reduce((a, b) => (b.length > a.length ? b : a)); // 128 tokens: products large enough to share
    const one = fastI16.embedFlat(prepared);
    const two = fastPar.embedFlat(prepared);
    expect(Array.from(two)).toEqual(Array.from(one));
    // the helper starts asynchronously and may not be scheduled on a busy machine: poll until it took part
    const deadline = Date.now() + 60_000;
    while (fastPar.parallelStats().helperStrips === 0 && Date.now() < deadline) {
      expect(Array.from(fastPar.embedFlat([long]))).toEqual(Array.from(fastI16.embedFlat([long])));
      await Bun.sleep(5);
    }
    expect(fastPar.parallelStats().helperStrips).toBeGreaterThan(0);
    expect(fastPar.parallelStats().helperThreads).toBe(1);
    expect(Array.from(fastPar.embedFlat(prepared))).toEqual(Array.from(one));
  }, 90_000);

  test("the TF.js engine stays selectable and agrees with the default", async () => {
    const a = new LocalEmbedder({ engine: "tfjs", worker: false });
    const b = new LocalEmbedder({ worker: false });
    try {
      const [va] = await a.embed(["How do I reset my Gmail password?"]);
      const [vb] = await b.embed(["How do I reset my Gmail password?"]);
      expect(a.backendName).toBe("wasm");
      expect(b.backendName).toMatch(NATIVE);
      expect(dot(va!, vb!)).toBeGreaterThan(0.9999);
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);
});

describe("remote embedder (OpenAI-compatible)", () => {
  let server: ReturnType<typeof Bun.serve>;
  let lastAuth = "";
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      async fetch(req) {
        const url = new URL(req.url);
        lastAuth = req.headers.get("authorization") ?? "";
        if (url.pathname === "/ok/v1/embeddings") {
          const body = (await req.json()) as { model: string; input: string[] };
          // Deterministic 3-d vectors, returned out of order to test the `index` handling.
          const data = body.input.map((t, i) => ({ object: "embedding", index: i, embedding: [t.length, 1, 0] }));
          return Response.json({ object: "list", model: body.model, data: data.reverse() });
        }
        if (url.pathname === "/fail/v1/embeddings") return new Response("upstream exploded", { status: 500 });
        if (url.pathname === "/bad/v1/embeddings") return Response.json({ data: [] });
        if (url.pathname === "/slow/v1/embeddings") {
          await Bun.sleep(500);
          return Response.json({ data: [] });
        }
        return new Response("not found", { status: 404 });
      },
    });
  });
  afterAll(() => {
    server.stop(true);
  });
  const base = (p: string) => `http://127.0.0.1:${server.port}/${p}/v1`;

  test("returns normalised vectors in input order and sends the API key", async () => {
    const emb = createEmbedder({ provider: "openai", baseUrl: base("ok"), model: "fake-embed", apiKey: "sk-test", lruSize: 0 });
    expect(emb).toBeInstanceOf(RemoteEmbedder);
    const vs = await emb.embed(["a", "abcd"]);
    expect(lastAuth).toBe("Bearer sk-test");
    expect(emb.dimensions).toBe(3);
    expect(emb.id).toBe("openai:fake-embed");
    expect(Math.abs(norm(vs[0]!) - 1)).toBeLessThan(1e-6);
    expect(vs[0]![0]).toBeCloseTo(1 / Math.sqrt(2), 5); // [1,1,0] normalised
    expect(vs[1]![0]).toBeCloseTo(4 / Math.sqrt(17), 5); // [4,1,0] normalised
    await emb.load();
    expect(emb.isReady()).toBe(true);
  });

  test("HTTP failure throws EmbeddingError", async () => {
    const emb = new RemoteEmbedder({ baseUrl: base("fail"), model: "m" });
    const err = await emb.embed(["x"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect((err as Error).message).toContain("500");
  });

  test("malformed body, timeout and unreachable host throw EmbeddingError", async () => {
    await expect(new RemoteEmbedder({ baseUrl: base("bad"), model: "m" }).embed(["x"])).rejects.toBeInstanceOf(EmbeddingError);
    await expect(new RemoteEmbedder({ baseUrl: base("slow"), model: "m", timeoutMs: 50 }).embed(["x"])).rejects.toBeInstanceOf(EmbeddingError);
    await expect(new RemoteEmbedder({ baseUrl: "http://127.0.0.1:1/v1", model: "m" }).embed(["x"])).rejects.toBeInstanceOf(EmbeddingError);
  });

  test("the cached wrapper passes errors through", async () => {
    const emb = createEmbedder({ provider: "openai", baseUrl: base("fail"), model: "m" });
    expect(emb).toBeInstanceOf(CachedEmbedder);
    await expect(emb.embed(["x"])).rejects.toBeInstanceOf(EmbeddingError);
  });
});
