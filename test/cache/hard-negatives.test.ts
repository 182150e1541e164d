/**
 * Hard negatives through the real gateway (issue 25): for each kind the cross-validation measures
 * (scripts/bench/cache-hard-negatives.ts), a pair of that kind must miss with the default settings —
 * arguments swapped, an entity or a number replaced, negation added, an antonym, another unit/time, a
 * word replaced by another real word one letter away — while each surface kind (case, punctuation,
 * whitespace, one misspelt word: scripts/bench/cache-surface-positives.ts) and rewordings of the same
 * question hit (so a cache that never hits fails this file too).
 * Each pair runs in its own tenant, the first question filling the cache from the fake upstream.
 */
import { describe, expect, test } from "bun:test";
import { gatewayPairs } from "./gateway-pairs";

const second = gatewayPairs("tenant-hn");

const MUST_MISS: Record<string, Array<[string, string]>> = {
  swap: [
    ["Is Cortana better than Siri?", "Is Siri better than Cortana?"],
    ["How do I copy files from a USB to the PS4?", "How do I copy files from a PS4 to the USB?"],
    ["How do I convert a PDF to a Word document?", "How do I convert a Word document to a PDF?"],
  ],
  entity: [["What is the capital of Germany?", "What is the capital of France?"]],
  number: [["How can I lose 10 kg in a month?", "How can I lose 15 kg in a month?"]],
  negation: [["Why do cats like water?", "Why don't cats like water?"]],
  antonym: [
    ["What are the best movies of all time?", "What are the worst movies of all time?"],
    ["How can I increase my metabolism?", "How can I decrease my metabolism?"],
  ],
  unit: [
    ["How many hours does a newborn baby sleep?", "How many minutes does a newborn baby sleep?"],
    ["What is the weather like in London today?", "What is the weather like in London tomorrow?"],
  ],
  // one letter changed, but into another real word: not a typo (src/cache/verify/typo.ts), a different question
  "real word for real word": [
    ["How do I remove a stain from my card?", "How do I remove a stain from my cart?"],
    ["What is the population of Iran?", "What is the population of Iraq?"],
  ],
  // only a sign, operator or unit symbol differs: a surface form keeps them (src/cache/verify/text.ts)
  symbol: [
    ["Why is x > y in this proof?", "Why is x < y in this proof?"],
    ["What is -40 degrees in Fahrenheit?", "What is 40 degrees in Fahrenheit?"],
  ],
};

/**
 * Surface positives (issue 25; the CV's kinds, scripts/bench/cache-surface-positives.ts): the same question
 * with only case, punctuation, whitespace or one letter changed must hit — before, a dropped apostrophe
 * read as a new word or name ("Whats", "Ive") and a typo as an unknown word the model rejected.
 */
const MUST_HIT: Record<string, Array<[string, string]>> = {
  case: [
    ["How do I reverse a list in Python?", "HOW DO I REVERSE A LIST IN PYTHON?"],
    ["What is the capital of Australia?", "what is the capital of australia?"],
    ["How do I learn to play the guitar?", "How Do I Learn To Play The Guitar?"],
  ],
  punct: [
    ["What are the best places to visit in Europe during the summer holidays?", "What are the best places to visit in Europe during the summer holidays"],
    ["What's the best way to save money, if I earn little?", "What's the best way to save money if I earn little?"],
    ["What's the best way to save money if I earn 30,000 dollars a year?", "Whats the best way to save money if I earn 30000 dollars a year?"],
    ['Should I read the book "Gone Girl" even though I\'ve watched the movie?', 'Should I read the book "Gone Girl" even though Ive watched the movie?'],
    ["How can I bond with my biological dad if my mom doesn't want me to have any contact with him?", "How can I bond with my biological dad if my mom doesnt want me to have any contact with him?"],
  ],
  space: [
    ["How can I improve my English speaking skills?", "  How can I improve  my English\tspeaking skills?\n"],
    ["How can I improve my English speaking skills?", "How can I improve my English speaking\nskills?"],
  ],
  typo: [
    ["What are the best places to visit in Europe during the summer holidays?", "What are the best places to visit in Europe durnig the summer holidays?"],
    ["What is the most effective way to prepare for a job interview at a big company?", "What is the most effective way to prepare for a job interview at a big compady?"],
    ["How do I start investing in the stock market with little money?", "How do I start investing in the stock market with litle money?"],
    ["How do I start investing in the stock market with little money?", "How do I start investing in the stock market with litttle money?"],
  ],
};

describe("hard negatives miss through the gateway", () => {
  for (const [kind, pairs] of Object.entries(MUST_MISS))
    test(kind, async () => {
      for (const [a, b] of pairs) {
        const r = await second(a, b);
        expect(`${kind}: ${b} -> ${r.status}`).toBe(`${kind}: ${b} -> MISS`);
      }
    }, 60_000);

  for (const [kind, pairs] of Object.entries(MUST_HIT))
    test(`surface change hits: ${kind}`, async () => {
      for (const [a, b] of pairs) {
        const r = await second(a, b);
        expect(`${kind}: ${JSON.stringify(b)} -> ${r.status}`).toBe(`${kind}: ${JSON.stringify(b)} -> HIT`);
      }
    }, 60_000);

  test("rewordings of the same question still hit", async () => {
    for (const [a, b] of [
      ["How do I reverse a list in Python?", "how do I reverse a list in python"],
      ["What is the best way to learn Python?", "What's the best way to learn Python?"],
    ] as const) {
      const r = await second(a, b);
      expect(`${b} -> ${r.status}`).toBe(`${b} -> HIT`);
      expect(r.meta.cache_tier).toBe("semantic");
    }
  }, 60_000);
});
