/**
 * The embedding adapter (issue 14): the cache stores and compares normalise(u + U·(Vᵀ·u)) of the
 * local embedder's vectors u — in the index, similarity_threshold, doc1 §4.7's stages and the hand
 * rules — under its own embedder id; the learned pair model still judges the raw cosine, recovered
 * exactly from the adapted vectors. These tests run the model "with_rules" (the hand verifier at the
 * lookup's point, on adapted cosines, may also accept), the mode the adapter was measured in. Real shipped weights and the real local embedder throughout.
 */
import { describe, expect, test, afterAll } from "bun:test";
import { dot, type Embedder } from "../../src/embedding";
import { defaultAdapter } from "../../src/cache/adapter-default";
import { AdaptedEmbedder, EmbeddingAdapter } from "../../src/cache/adapter";
import { fuseContext } from "../../src/cache/context";
import { defaultLearnedModel } from "../../src/cache";
import { tempDir, openEngine, ask, fill, HashEmbedder, localEmbedderForFile } from "./helpers";

const real = localEmbedderForFile();
const dirs: Array<{ cleanup(): void }> = [];
afterAll(() => {
  for (const d of dirs) d.cleanup();
});
const adapter = defaultAdapter();
const adapted = async (texts: string[]) => (await real.embed(texts)).map((v) => adapter.apply(v));
function engine(adapt: boolean, embedder: Embedder = real, learned = true) {
  const t = tempDir();
  dirs.push(t);
  // the hand verifier alone at 0.85 (the floor the adapter was measured at before issue 25's cross-validation)
  return openEngine(t.dir, embedder, { cache: { adapt_embeddings: adapt, learned_decision: learned, learned_mode: "with_rules", similarity_threshold: learned ? 0.8 : 0.85 } });
}

// rewordings the raw embedding's cosine leaves to the rules and the model, which reject them;
// in the adapted space they clear the rules (measured with the shipped weights)
const REWORDED = [
  ["How can I get better at public speaking?", "How do I improve my public speaking skills?"],
  ["How do I stop procrastinating?", "How can I overcome procrastination?"],
] as const;
// a rewording the pair model accepts (on the raw cosine it was trained on)
const CAREER = ["When is it too late to change your career?", "When is too late for a career change?"] as const;
// near-misses: another instrument (the adapted cosine falls below the threshold), the opposite action
const NEAR_MISSES = [
  ["How do I learn to play the guitar?", "How do I learn to play the piano?"],
  ["How do I start a small business?", "How do I close a small business?"],
] as const;

describe("the shipped adapter", () => {
  test("loads for the local embedder, has its own id, gives unit vectors and inverts exactly", async () => {
    expect(adapter).toBeInstanceOf(EmbeddingAdapter);
    expect(adapter.baseEmbedderId).toBe(real.id);
    expect(adapter.dims).toBe(real.dimensions);
    expect(adapter.id).toMatch(/^local:use-lite-512\+adapter-[0-9a-f]{12}$/);
    const [u] = await real.embed(["How do I stop procrastinating?"]);
    const x = adapter.apply(u!);
    expect(dot(x, x)).toBeCloseTo(1, 5);
    expect(dot(x, u!)).toBeLessThan(0.9999); // it does change the vector
    const back = adapter.invert(x);
    for (let k = 0; k < u!.length; k++) expect(Math.abs(back[k]! - u![k]!)).toBeLessThan(1e-5);
    // the learned pair model was trained on the raw vectors
    expect(defaultLearnedModel().embedderId).toBe(real.id);
  });

  test("AdaptedEmbedder refuses an embedder the adapter was not trained on", () => {
    expect(() => new AdaptedEmbedder(new HashEmbedder(), adapter)).toThrow(/trained on local:use-lite-512/);
  });
});

describe("the cache compares adapted embeddings", () => {
  test("engine: the adapted embedder id; single-turn similarity is the adapted cosine; off = raw", async () => {
    const on = engine(true), off = engine(false);
    expect(on.engine.embedder.id).toBe(adapter.id);
    expect(off.engine.embedder.id).toBe(real.id);
    const [a, b] = ["How do I become a data scientist?", "What does it take to become a data scientist?"];
    const [xa, xb] = await adapted([a, b]);
    const [ua, ub] = await real.embed([a, b]);
    for (const [h, want] of [[on, dot(xa!, xb!)], [off, dot(ua!, ub!)]] as const) {
      await fill(h.engine, ask("t", a));
      const r = await h.engine.lookup(ask("t", b));
      if (!r.hit) throw new Error("expected a hit");
      expect(r.similarity).toBeCloseTo(want, 4);
    }
    expect(Math.abs(dot(xa!, xb!) - dot(ua!, ub!))).toBeGreaterThan(0.01);
    await on.close();
    await off.close();
  });

  test("a rewording the hand rules reject on the raw embedding clears them on the adapted one; near-misses are still refused", async () => {
    for (const [cached, asked] of REWORDED) {
      const off = engine(false, real, false), on = engine(true, real, false);
      await fill(off.engine, ask("t", cached));
      expect((await off.engine.lookup(ask("t", asked))).hit).toBe(false);
      await fill(on.engine, ask("t", cached));
      const hit = await on.engine.lookup(ask("t", asked));
      expect(hit).toMatchObject({ hit: true, tier: "semantic" });
      const [x, y] = await adapted([asked, cached]);
      if (!hit.hit) throw new Error("expected a hit");
      expect(hit.similarity).toBeCloseTo(dot(x!, y!), 4);
      await off.close();
      await on.close();
    }
    for (const [cached, asked] of NEAR_MISSES) {
      const on = engine(true, real, false);
      await fill(on.engine, ask("t", cached));
      const r = await on.engine.lookup(ask("t", asked));
      if (r.hit) throw new Error(`a near-miss hit: ${asked}`);
      expect(r.nearestSimilarity!).toBeGreaterThan(0.6);
      await on.close();
    }
  });

  test("context tier: stage 1 and the context vector are adapted (fused adapted turn embeddings)", async () => {
    const h = engine(true);
    const history = (reply: string) => [
      { role: "user" as const, text: "I keep putting off my work until the last minute." },
      { role: "assistant" as const, text: reply },
    ];
    const H1 = history("Procrastination is delaying tasks despite knowing the delay will hurt.");
    const H2 = history("Procrastination means delaying tasks even though you know the delay will hurt you.");
    await fill(h.engine, ask("t-ctx", CAREER[0], { history: H1 }));
    const r = await h.engine.lookup(ask("t-ctx", CAREER[1], { history: H2 }));
    expect(r).toMatchObject({ hit: true, tier: "l2_context" });
    if (!r.hit) throw new Error("expected a hit");
    const [c1, c2] = [await adapted(H1.map((t) => t.text)), await adapted(H2.map((t) => t.text))];
    const want = dot(fuseContext(c1, 512), fuseContext(c2, 512));
    expect(r.contextSimilarity!).toBeCloseTo(want, 4);
    const [q1, q2] = await adapted([CAREER[0], CAREER[1]]);
    expect(r.similarity).toBeCloseTo(dot(q1!, q2!), 4);
    const raw1 = await real.embed(H1.map((t) => t.text)), raw2 = await real.embed(H2.map((t) => t.text));
    expect(Math.abs(dot(fuseContext(raw1, 512), fuseContext(raw2, 512)) - want)).toBeGreaterThan(0.001);
    await h.close();
  });

  test("semantic entries stored under the raw embedder id are not found in the adapted space; the exact tier still is", async () => {
    const t = tempDir();
    dirs.push(t);
    const [cached, asked] = ["How do I become a data scientist?", "What does it take to become a data scientist?"];
    const raw = openEngine(t.dir, real, { cache: { adapt_embeddings: false, learned_decision: true, learned_mode: "with_rules", similarity_threshold: 0.8 } });
    await fill(raw.engine, ask("t-switch", cached));
    await raw.close();
    const ad = openEngine(t.dir, real, { cache: { adapt_embeddings: true, learned_decision: true, learned_mode: "with_rules", similarity_threshold: 0.8 } });
    expect(await ad.engine.lookup(ask("t-switch", cached))).toMatchObject({ hit: true, tier: "exact" });
    // the rewording hits in either space (above), but the entry's vector lives in the raw id's partition
    expect((await ad.engine.lookup(ask("t-switch", asked))).hit).toBe(false);
    await ad.close();
    const back = openEngine(t.dir, real, { cache: { adapt_embeddings: false, learned_decision: true, learned_mode: "with_rules", similarity_threshold: 0.8 } });
    expect(await back.engine.lookup(ask("t-switch", asked))).toMatchObject({ hit: true, tier: "semantic" });
    await back.close();
  });
});
