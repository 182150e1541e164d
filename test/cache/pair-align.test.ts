/**
 * The pair model's alignment features (src/cache/verify/align.ts, issue 25): each content word and
 * each piece of one question aligned with its best counterpart in the other by USE-lite's static
 * token-embedding table, which the cache reads itself (through core) and tokenises with the embedding
 * domain's SentencePiece handed in as a port.
 */
import { describe, expect, test } from "bun:test";
import { installPieceTokenizer } from "../../scripts/bench/cache-piece-tokenizer";
import { ALIGN_FEATURES, ALIGN_FEATURE_COUNT, alignFeatures, alignSide, loadTokenTable, usePieceTokenizer } from "../../src/cache/verify/align";
import { useLitePieceTokenizer } from "../../src/embedding/pieces";
import { analyzePair, analyzeSide } from "../../src/cache/verify/analyze";
import { DEFAULT_WEIGHT_PARAMS } from "../../src/cache/verify/weights";
import { PAIR_ANALYZE_OPTIONS, PAIR_FEATURES, PAIR_FEATURE_COUNT, pairFeatureVector } from "../../src/cache/verify/pair-model";
import { readUseLiteFiles } from "../../src/embedding/use-lite-weights";
import { SentencePieceTokenizer } from "../../src/embedding/sentencepiece";

installPieceTokenizer();

function features(a: string, b: string): Record<(typeof ALIGN_FEATURES)[number], number> {
  const an = analyzePair(a, b, PAIR_ANALYZE_OPTIONS);
  const out = new Float64Array(ALIGN_FEATURE_COUNT);
  expect(alignFeatures(an.a, an.b, out, 0)).toBe(ALIGN_FEATURE_COUNT);
  return Object.fromEntries(ALIGN_FEATURES.map((n, i) => [n, out[i]!])) as Record<(typeof ALIGN_FEATURES)[number], number>;
}

const FAST = "What is the fastest way to learn French?";

describe("pair alignment features", () => {
  test("the table read through core is the embedder's own: a one-piece word's vector is its normalised row", async () => {
    const files = await readUseLiteFiles();
    const emb = files.tensors.get("module/Embeddings_en")!;
    const D = emb.shape[1]!;
    const sp = new SentencePieceTokenizer(files.vocabulary);
    const side = analyzePair("Where can I buy cheap flights?", "x", PAIR_ANALYZE_OPTIONS).a;
    const words = alignSide(side).words;
    side.content.forEach((t, i) => {
      const ids = sp.encode(t.lower);
      const v = new Float64Array(D);
      for (const id of ids) for (let c = 0; c < D; c++) v[c]! += emb.data[id * D + c]!;
      const n = Math.hypot(...v);
      for (let c = 0; c < D; c++) expect(words[i]![c]!).toBeCloseTo(v[c]! / n, 5);
    });
  });

  test("the table loaded ahead (async, as the cache's start-up does) gives the same features as the first decision's synchronous read", async () => {
    const pairs: Array<[string, string]> = [[FAST, "What is the quickest way to learn French?"], ["How do I buy a car?", "How do I paint a car?"]];
    const sync = pairs.map(([a, b]) => features(a, b));
    usePieceTokenizer(useLitePieceTokenizer); // forgets the table and the memoised sides
    await loadTokenTable();
    expect(pairs.map(([a, b]) => features(a, b))).toEqual(sync);
  });

  test("identical questions align perfectly", () => {
    const f = features(FAST, FAST.toUpperCase());
    for (const n of ["alignP", "alignR", "alignF", "alignWorstLo", "alignWorstHi", "pieceP", "pieceR", "pieceF", "pieceWorst"] as const) expect(f[n]).toBeCloseTo(1, 9);
    expect(f.alignDeficit).toBeCloseTo(0, 9);
    expect(f.pieceDeficit).toBeCloseTo(0, 9);
    expect([f.alignBelow3, f.alignBelow5, f.alignBelow7]).toEqual([0, 0, 0]);
  });

  test("a near-synonym aligns better than an unrelated word in its place", () => {
    const syn = features(FAST, "What is the quickest way to learn French?");
    const other = features(FAST, "What is the cheapest way to learn French?");
    expect(syn.alignWorstLo).toBeGreaterThan(other.alignWorstLo);
    expect(syn.alignF).toBeGreaterThan(other.alignF);
    expect(syn.alignDeficit).toBeLessThan(other.alignDeficit);
    expect(syn.pieceWorst).toBeGreaterThan(other.pieceWorst);
    const car = features("How do I buy a car?", "How do I purchase a car?");
    const paint = features("How do I buy a car?", "How do I paint a car?");
    expect(car.alignWorstLo).toBeGreaterThan(paint.alignWorstLo);
    expect(paint.alignBelow3).toBe(2); // "buy" and "paint": nothing like either on the other side
    expect(car.alignBelow3).toBe(0);
  });

  test("counts below a threshold nest, and words with no counterpart at all count", () => {
    const f = features("How can I lose weight quickly?", "What is the fastest way to reduce body fat?");
    expect(f.alignBelow3).toBeLessThanOrEqual(f.alignBelow5);
    expect(f.alignBelow5).toBeLessThanOrEqual(f.alignBelow7);
    expect(f.alignWorstLo).toBeLessThanOrEqual(f.alignWorstHi);
    expect(f.alignBelow7).toBeGreaterThan(0);
    // a side with no content word aligns nothing: the other side's words have best cosine 0
    const empty = features("What is it?", "What is photosynthesis?");
    expect(empty.alignR).toBe(0);
    expect(empty.alignWorstLo).toBe(0);
  });

  test("a text's alignment outlives its side analysis: a new analysis of a cached question reuses it, and texts share word vectors", () => {
    // the engine's side memo holds 4,096 texts; a candidate met again after that gets a new Side object
    const text = "Which museums in Lisbon are open on Mondays?";
    const first = alignSide(analyzeSide(text, DEFAULT_WEIGHT_PARAMS));
    const again = alignSide(analyzeSide(text, DEFAULT_WEIGHT_PARAMS));
    expect(again).toBe(first);
    // another text with a content word in common holds the same vector object for it
    const other = analyzeSide("Are museums free in Porto?", DEFAULT_WEIGHT_PARAMS);
    const i = other.content.findIndex((t) => t.lower === "museums");
    const j = analyzeSide(text, DEFAULT_WEIGHT_PARAMS).content.findIndex((t) => t.lower === "museums");
    expect(i).toBeGreaterThanOrEqual(0);
    expect(alignSide(other).words[i]).toBe(first.words[j]!);
    // the same words with other content (another analysis option) is another entry
    const polar = analyzeSide("Is it open before noon?", DEFAULT_WEIGHT_PARAMS, false, true);
    const plain = analyzeSide("Is it open before noon?", DEFAULT_WEIGHT_PARAMS, false, false);
    expect(polar.content.map((t) => t.lower)).toContain("before");
    expect(plain.content.map((t) => t.lower)).not.toContain("before");
    expect(alignSide(polar)).not.toBe(alignSide(plain));
    expect(alignSide(polar).words.length).toBe(polar.content.length);
    expect(alignSide(plain).words.length).toBe(plain.content.length);
  });

  test("the per-text part is memoised; repeated and reordered calls give the same values (the piece-pair memo is exact)", () => {
    const an = analyzePair(FAST, "Which is the quickest method to study French?", PAIR_ANALYZE_OPTIONS);
    expect(alignSide(an.a)).toBe(alignSide(analyzePair(FAST, "anything else", PAIR_ANALYZE_OPTIONS).a));
    const first = new Float64Array(ALIGN_FEATURE_COUNT);
    alignFeatures(an.a, an.b, first, 0);
    for (const q of ["How do I train a neural network?", "Why is the sky blue?"]) features(q, "What is deep learning used for?");
    const again = new Float64Array(ALIGN_FEATURE_COUNT);
    alignFeatures(an.a, an.b, again, 0);
    expect([...again]).toEqual([...first]);
    const swapped = features("Which is the quickest method to study French?", FAST);
    expect(swapped.alignP).toBeCloseTo(features(FAST, "Which is the quickest method to study French?").alignR, 12);
  });

  test("the pair model's feature vector ends with exactly these features", () => {
    const an = analyzePair(FAST, "Which is the quickest method to study French?", PAIR_ANALYZE_OPTIONS);
    const x = pairFeatureVector(an, 0.91, new Float64Array(PAIR_FEATURE_COUNT));
    const al = new Float64Array(ALIGN_FEATURE_COUNT);
    alignFeatures(an.a, an.b, al, 0);
    expect(PAIR_FEATURES.slice(-ALIGN_FEATURE_COUNT)).toEqual([...ALIGN_FEATURES]);
    expect([...x.subarray(PAIR_FEATURE_COUNT - ALIGN_FEATURE_COUNT)]).toEqual([...al]);
  });

  test("without the tokenizer port the features refuse to run, naming what is missing", () => {
    const code = `import { analyzePair } from "./src/cache/verify/analyze"; import { alignFeatures } from "./src/cache/verify/align";
      const an = analyzePair("a b c", "a b d"); try { alignFeatures(an.a, an.b, new Float64Array(14), 0); console.log("ran"); } catch (e) { console.log(String(e)); }`;
    const p = Bun.spawnSync([process.execPath, "-e", code], { cwd: `${import.meta.dir}/../..`, stdout: "pipe", stderr: "pipe" });
    expect(p.stdout.toString()).toMatch(/piece tokenizer \(usePieceTokenizer/);
  }, 30_000);
});
