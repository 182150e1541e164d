/**
 * The surface match of the hit decision (src/cache/verify/typo.ts, issue 25): the same question with
 * only case, punctuation, whitespace or one letter changed is the same question — whatever a hard rule
 * (a misspelt name looks like another name) or the model says — but a real word replaced by another real
 * word one letter away ("card"/"cart", "Iran"/"Iraq") is not a typo. The generator of the CV's surface
 * positives (scripts/bench/cache-surface-positives.ts) makes what the match takes.
 */
import { describe, expect, test } from "bun:test";
import { surfaceForm } from "../../src/cache/verify/text";
import { isTypo, isTypoToken, knownWord, oneEditApart, surfaceMatch, surfaceMatchTexts } from "../../src/cache/verify/typo";
import { defaultLearnedModel } from "../../src/cache/verify/learned-default";
import { installPieceTokenizer } from "../../scripts/bench/cache-piece-tokenizer";
import { SURFACE_KINDS, makeSurfacePositives } from "../../scripts/bench/cache-surface-positives";

installPieceTokenizer();
const words = (t: string) => surfaceForm(t).split(" ");
const match = (a: string, b: string) => surfaceMatch(words(a), words(b));

/** Damerau-Levenshtein (optimal string alignment), plain */
function osa(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

describe("surface form", () => {
  test("apostrophes inside words and thousands separators are dropped; decimals, C++ and C# are kept", () => {
    expect(surfaceForm("What's the best way to earn 30,000 a year?")).toBe(surfaceForm("whats the best way to earn 30000 a year"));
    expect(surfaceForm("Why doesn't my code compile?")).toBe(surfaceForm("Why doesnt my code compile"));
    expect(surfaceForm("Is 1,5 kg enough?")).not.toBe(surfaceForm("Is 15 kg enough?"));
    expect(surfaceForm("Should I learn C++?")).not.toBe(surfaceForm("Should I learn C?"));
    expect(surfaceForm("Should I learn C#?")).not.toBe(surfaceForm("Should I learn C?"));
  });

  test("signs, operators, units and currency symbols are words of the surface form; writing punctuation is not", () => {
    for (const [a, b] of <Array<[string, string]>>[
      ["What is -5 squared?", "What is 5 squared?"],
      ["Is x > y?", "Is x < y?"],
      ["What is 2 + 2?", "What is 2 - 2?"],
      ["What is 10% of 50?", "What is 10 of 50?"],
      ["How much is $5 in euros?", "How much is 5 in euros?"],
      ["Is salt & pepper enough?", "Is salt pepper enough?"],
    ])
      expect(`${a} / ${b}: ${surfaceMatchTexts(a, b)}`).toBe(`${a} / ${b}: null`);
    for (const [a, b] of <Array<[string, string]>>[
      ["Is it true that (a) works?", "is it true that a works"],
      ['"Hello" in French?', "Hello in French"],
      ["What is 3,000 + 5?", "what is 3000 + 5"],
      ["How is COVID-19 spread?", "how is covid-19 spread..."],
    ])
      expect(`${a} / ${b}: ${surfaceMatchTexts(a, b)}`).toBe(`${a} / ${b}: surface-identical`);
  });
});

describe("typo match", () => {
  test("oneEditApart is Damerau distance exactly 1", () => {
    const ws = ["best", "bset", "bes", "bestt", "beest", "vest", "west", "bets", "ebst", "abcd", "abdc", "bacd", "ab", "a", "", "quora", "qoura", "qura"];
    for (const a of ws) for (const b of ws) expect(`${a}/${b} ${oneEditApart(a, b)}`).toBe(`${a}/${b} ${osa(a, b) === 1}`);
  });

  test("a misspelling of a word of 4+ letters is a typo: transposed, substituted, dropped, doubled", () => {
    for (const [a, b] of [["learn", "laern"], ["benefits", "benfits"], ["market", "markett"], ["market", "marcet"], ["quora", "qoura"], ["python", "pyhton"], ["without", "witlout"], ["best", "bezt"]] as Array<[string, string]>)
      expect(`${a}/${b} ${isTypo(a, b)}`).toBe(`${a}/${b} true`);
  });

  test("a real word for another real word is not a typo; nor a short word, nor different digits", () => {
    expect(knownWord("cart") && knownWord("card") && knownWord("iran") && knownWord("iraq")).toBe(true);
    for (const [a, b] of [["card", "cart"], ["beer", "bear"], ["iran", "iraq"], ["pain", "paint"], ["lose", "loose"], ["cost", "cos"], ["sixth", "sixty"], ["cat", "car"], ["tea", "tae"]] as Array<[string, string]>)
      expect(`${a}/${b} ${isTypo(a, b)}`).toBe(`${a}/${b} false`);
    expect(isTypoToken("subjcet-wise", "subject-wise")).toBe(true);
    expect(isTypoToken("phase-1", "hpase-1")).toBe(true);
    for (const [a, b] of [["ps4", "ps5"], ["gtx1080", "rtx1080"], ["25-year-old", "25-years-old"], ["phase-1", "phase-2"]] as Array<[string, string]>) expect(`${a}/${b} ${isTypoToken(a, b)}`).toBe(`${a}/${b} false`);
  });

  test("surfaceMatch: identical surface forms, or exactly one misspelt word", () => {
    expect(match("How do I reverse a list in Python?", "HOW DO I  REVERSE A LIST IN PYTHON")).toBe("surface-identical");
    expect(match("Is Quora a good place to ask questions?", "is Qoura a good place to ask questions")).toBe("surface-typo");
    expect(match("Is Quora a good place to ask questions?", "Is Qoura a good plcae to ask questions?")).toBeNull(); // two typos
    expect(match("What is the population of Iran?", "What is the population of Iraq?")).toBeNull();
    expect(match("How do I remove a stain from my card?", "How do I remove a stain from my cart?")).toBeNull();
    expect(match("Is it good?", "Is it good or bad?")).toBeNull();
  });
});

describe("the pair model's decision", () => {
  const m = defaultLearnedModel();
  test("a one-letter typo is accepted even where a hard rule would veto it (a misspelt name, a misspelt negation)", () => {
    // before: entity-mismatch (Qura is not Quora) and negation-mismatch (witlout is no negation)
    expect(m.decide("Is political correctness valued more than factual correctness in Qura?", "Is political correctness valued more than factual correctness in Quora?", 0.948)).toMatchObject({ accept: true, reason: "surface-typo" });
    expect(m.decide("How can I gain weight witlout going to gym?", "How can I gain weight without going to gym?", 0.955)).toMatchObject({ accept: true, reason: "surface-typo" });
    expect(m.surfaceMatch("How do I laern French quickly?", "How do I learn French quickly?")).toBe("surface-typo");
  });

  test("a dropped apostrophe is a surface change, not a name (Ive) or a new word (Whats)", () => {
    // before: entity-mismatch:Ive, and the model's low score for "Whats"
    expect(m.decide("Should I read the book even though Ive watched the movie?", "Should I read the book even though I've watched the movie?", 0.993)).toMatchObject({ accept: true, reason: "surface-identical" });
    expect(m.decide("Whats the best way to manage multiple Google accounts?", "What's the best way to manage multiple Google accounts?", 0.996)).toMatchObject({ accept: true, reason: "surface-identical" });
  });

  test("the shipped weights carry the CV-chosen surface floor, below the model's own floor", () => {
    expect(m.surfaceMinCosine).toBeDefined();
    expect(m.surfaceMinCosine!).toBeGreaterThan(0);
    expect(m.surfaceMinCosine!).toBeLessThan(m.minCosine);
    // a surface match is accepted by decide at any cosine (the engine decides which candidates it judges)
    expect(m.decide("Why do peolpe walk?", "Why do people walk?", 0.755)).toMatchObject({ accept: true, reason: "surface-typo" });
    expect(m.surfaceMatch("Why do peolpe walk?", "Why do people walk?")).toBe("surface-typo");
  });

  test("a real word replaced by another one letter away is judged as any substitution (here: rejected)", () => {
    expect(m.surfaceMatch("What is the population of Iraq?", "What is the population of Iran?")).toBeNull();
    expect(m.decide("What is the population of Iraq?", "What is the population of Iran?", 0.95).accept).toBe(false);
    expect(m.decide("What is the best bear in Germany?", "What is the best beer in Germany?", 0.95).reason).not.toMatch(/^surface/);
  });
});

describe("surface positives (the CV's generator)", () => {
  const qs = [
    "How do I learn French quickly?", "What's the best way to save 1,000 dollars, if I earn little?", "Why is the sky blue?", "Is Quora a good place to ask questions?",
    "What are the health benefits of green tea?", "How can I improve my English speaking skills?", "Which is better, Python or Java?", "How do I start investing in the stock market?",
  ];
  const sp = makeSurfacePositives([...qs, ...qs.map((q) => q.replace("?", " today?"))], 4, 1);
  test("every kind is generated, deterministically", () => {
    for (const k of SURFACE_KINDS) expect(sp.some((s) => s.kind === k)).toBe(true);
    expect(makeSurfacePositives([...qs, ...qs.map((q) => q.replace("?", " today?"))], 4, 1)).toEqual(sp);
  });
  test("case, punctuation and whitespace edits are surface-identical; a typo changes one word by one edit", () => {
    for (const s of sp) {
      expect(s.edited).not.toBe(s.source);
      if (s.kind !== "typo") expect(`${s.kind}: ${match(s.source, s.edited)}`).toBe(`${s.kind}: surface-identical`);
      else {
        const a = words(s.source), b = words(s.edited);
        expect(a.length).toBe(b.length);
        const diff = a.map((w, i) => [w, b[i]!] as const).filter(([x, y]) => x !== y);
        expect(diff.length).toBe(1);
        expect(osa(diff[0]![0], diff[0]![1])).toBe(1);
      }
    }
  });
});

test("the word list is sorted (knownWord searches it by halving)", async () => {
  const { loadWordList } = await import("../../src/cache/verify/typo");
  const w = loadWordList();
  expect(w.length).toBeGreaterThan(200_000);
  let sorted = true;
  for (let i = 1; i < w.length && sorted; i++) sorted = w[i - 1]! < w[i]!;
  expect(sorted).toBe(true);
});
