/**
 * The pair model (issue 25): the default hit decision, gradient-boosted trees over pair features,
 * cross-validated per fold (scripts/bench/cache-pair-cv.ts). Serving and training evaluate the same
 * trees; weights that do not match are refused; side analyses are memoised without changing results.
 */
import { describe, expect, test } from "bun:test";
import weights from "../../src/cache/verify/pair-model-weights.json";
import { PAIR_FEATURES, PAIR_FEATURE_COUNT, PairModel, pairFeatureVector, type PairModelFile } from "../../src/cache/verify/pair-model";
import { analyzePair, analyzeSide } from "../../src/cache/verify/analyze";
import { DEFAULT_VERIFY_OPTIONS, verifyPair } from "../../src/cache/verify";
import { defaultLearnedModel } from "../../src/cache";
import { evalGbm } from "../../scripts/bench/cache-pair-gbm";
import { dot } from "../../src/embedding";
import { tempDir, openEngine, ask, fill, localEmbedderForFile } from "./helpers";

const file = weights as unknown as PairModelFile;
const model = defaultLearnedModel();
const real = localEmbedderForFile();
const CAREER = ["When is it too late to change your career?", "When is too late for a career change?"] as const;

describe("pair model", () => {
  test("serving evaluates exactly the trees the training script wrote", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const an = analyzePair("How do I learn French fast?", "What is the quickest way to learn French?");
    for (let k = 0; k < 200; k++) {
      const cos = 0.8 + 0.2 * rnd();
      const x = pairFeatureVector(an, cos, new Float64Array(PAIR_FEATURE_COUNT));
      for (let i = 3; i < x.length; i++) if (rnd() < 0.3) x[i] = x[i]! * (0.5 + rnd());
      // the model's logit runs on its own buffer: compare through the same features
      const direct = evalGbm({ base: file.base, trees: file.trees }, pairFeatureVector(an, cos, new Float64Array(PAIR_FEATURE_COUNT)));
      expect(model.logit(an, cos)).toBeCloseTo(direct, 9);
      expect(Number.isFinite(evalGbm({ base: file.base, trees: file.trees }, x))).toBe(true);
    }
  });

  test("features are finite and named; the shipped file matches them", () => {
    const x = pairFeatureVector(analyzePair("What is AI?", "What is artificial intelligence?"), 0.93, new Float64Array(PAIR_FEATURE_COUNT));
    expect(x.length).toBe(PAIR_FEATURES.length);
    for (const v of x) expect(Number.isFinite(v)).toBe(true);
    expect(file.features).toEqual([...PAIR_FEATURES]);
    expect(file.trees.length).toBeGreaterThan(0);
  });

  test("malformed or mismatched weights are refused", () => {
    expect(() => new PairModel({ ...file, format: 2 as 1 })).toThrow(/format/);
    expect(() => new PairModel({ ...file, features: file.features.slice(1) })).toThrow(/other pair features/);
    const bad = structuredClone(file);
    bad.trees[0]!.l[0] = 0; // a child pointing back at its parent would loop forever
    expect(() => new PairModel(bad)).toThrow(/malformed/);
  });

  test("hard rules veto before the model; below the floor nothing hits; surface-identical always does", () => {
    expect(model.decide("How many people live in Canada in 2020?", "How many people live in Canada in 2021?", 0.99, new Float32Array(0), new Float32Array(0))).toMatchObject({ accept: false, reason: expect.stringMatching(/^number-mismatch/) });
    expect(model.decide("Is Python faster than Java?", "Is Java faster than Python?", 0.99, new Float32Array(0), new Float32Array(0))).toMatchObject({ accept: false, reason: expect.stringMatching(/^order-swap/) });
    expect(model.decide(CAREER[0], CAREER[1], model.minCosine - 0.001, new Float32Array(0), new Float32Array(0))).toMatchObject({ accept: false, reason: "low-score" });
    expect(model.decide("what is ai", "What is AI?", 0.5, new Float32Array(0), new Float32Array(0))).toMatchObject({ accept: true, reason: "surface-identical" });
  });

  test("side analyses are memoised: same result as a fresh analysis, one object per text", () => {
    const q = "How can I improve my writing skills quickly?";
    const a1 = analyzePair(q, "How do I write better?", { ...DEFAULT_VERIFY_OPTIONS });
    const a2 = analyzePair(q, "What helps to write well?", { ...DEFAULT_VERIFY_OPTIONS });
    expect(a1.a).toBe(a2.a);
    expect(a1.a).toEqual(analyzeSide(q, DEFAULT_VERIFY_OPTIONS.weights, DEFAULT_VERIFY_OPTIONS.ignoreRequestVerbs, DEFAULT_VERIFY_OPTIONS.polarContent));
    // other options are other entries
    expect(analyzePair(q, "x", { polarContent: !DEFAULT_VERIFY_OPTIONS.polarContent, ignoreRequestVerbs: true }).a).not.toBe(a1.a);
  });

  test("the default engine decides with it: a rewording the hand verifier rejects hits at the default settings", async () => {
    const [u, v] = await real.embed([CAREER[1], CAREER[0]]);
    const cos = dot(u!, v!);
    expect(verifyPair(CAREER[1], CAREER[0], cos).accept).toBe(false); // the hand verifier at its default point
    const t = tempDir();
    const h = openEngine(t.dir, real, {});
    try {
      expect(h.engine.learned).toBe(model);
      expect(h.engine.singlePoint).toBe(model.minCosine);
      await fill(h.engine, ask("t", CAREER[0]));
      const r = await h.engine.lookup(ask("t", CAREER[1]));
      expect(r).toMatchObject({ hit: true, tier: "semantic" });
      if (r.hit) expect(r.learnedScore!).toBeGreaterThanOrEqual(model.threshold);
    } finally {
      await h.close();
      t.cleanup();
    }
  });
});
