import { describe, expect, test } from "bun:test";
import { analyzePair, verifyPair, vocabularySize } from "../../src/cache/verify/index";

// The cosine passed in is what USE-lite typically gives such pairs (high), so
// these tests check that the verifier, not the threshold, makes the decision.
describe("verifyPair", () => {
  test("the general word-frequency table is available", () => {
    expect(vocabularySize()).toBeGreaterThan(4000);
  });

  test("entity swap is rejected", () => {
    const r = verifyPair("What is the capital of Germany?", "What is the capital of France?", 0.93);
    expect(r.accept).toBe(false);
    expect(r.reason).toStartWith("entity-mismatch");
  });

  test("entity swap in lower case is rejected (names known from general word statistics)", () => {
    expect(verifyPair("what is the capital of germany", "what is the capital of france", 0.93).accept).toBe(false);
  });

  test("number change is rejected", () => {
    const r = verifyPair("Who won the World Cup in 2014?", "Who won the World Cup in 2018?", 0.97);
    expect(r.accept).toBe(false);
    expect(r.reason).toStartWith("number-mismatch");
    expect(verifyPair("What are the best laptops under 500 dollars?", "What are the best laptops under 1,000 dollars?", 0.97).accept).toBe(false);
    expect(verifyPair("Is the iPhone 7 waterproof?", "Is the iPhone 8 waterproof?", 0.98).accept).toBe(false);
  });

  test("negation is rejected", () => {
    const r = verifyPair("Why don't cats like water?", "Why do cats like water?", 0.96);
    expect(r.accept).toBe(false);
    expect(r.reason).toBe("negation-mismatch");
    expect(verifyPair("Which foods are not safe for dogs?", "Which foods are safe for dogs?", 0.95).accept).toBe(false);
  });

  test("order swap of numbers / model numbers, and after an 'and' earlier in the sentence, is rejected (issue 25)", () => {
    // the swapped terms are model numbers (not content words) ...
    expect(verifyPair("How do I copy files from a PS4 to the USB?", "How do I copy files from a USB to the PS4?", 0.99).reason).toStartWith("order-swap");
    expect(verifyPair("Why do the margins increase from h6 to h1?", "Why do the margins increase from h1 to h6?", 0.99).reason).toStartWith("order-swap");
    // ... or an "and" three words before the first term made the pair look symmetric
    expect(
      verifyPair("Is there a way to transfer my WhatsApp messages and media from iPhone to Android?", "Is there a way to transfer my WhatsApp messages and media from Android to iPhone?", 0.99).reason,
    ).toStartWith("order-swap");
    // "between A and B" stays symmetric
    expect(verifyPair("What is the difference between Android and iPhone?", "What is the difference between iPhone and Android?", 0.99).accept).toBe(true);
  });

  test("order swap is rejected", () => {
    const r = verifyPair("How do I convert ethanoic acid to ethanol?", "How do I convert ethanol to ethanoic acid?", 0.99);
    expect(r.accept).toBe(false);
    expect(r.reason).toStartWith("order-swap");
    expect(verifyPair("Is a dolphin bigger than a shark?", "Is a shark bigger than a dolphin?", 0.99).accept).toBe(false);
  });

  test("symmetric relations and reordered compounds are not order swaps", () => {
    expect(analyzePair("What is the difference between tea and coffee?", "What is the difference between coffee and tea?").orderSwap).toBeNull();
    expect(analyzePair("How do I reset my Gmail account password?", "How can I reset the password for my Gmail account?").orderSwap).toBeNull();
  });

  test("asked-for attribute change is rejected", () => {
    const r = verifyPair("When was the Eiffel Tower built?", "Where was the Eiffel Tower built?", 0.95);
    expect(r.accept).toBe(false);
    expect(r.reason).toStartWith("asks-differ");
  });

  test("case/punctuation/whitespace-only change is accepted", () => {
    const r = verifyPair("  what are the best books about OFFICE politics  ", "What are the best books about office politics?", 0.9);
    expect(r.accept).toBe(true);
    expect(r.reason).toBe("surface-identical");
    expect(r.score).toBe(1);
  });

  test("a one-letter typo is accepted", () => {
    expect(verifyPair("What does a mentailst do and how?", "What does a mentalist do and how?", 0.95).accept).toBe(true);
  });

  test("plain paraphrase is accepted", () => {
    const r = verifyPair("How can I reset the password for my Gmail account?", "How do I reset my Gmail account password?", 0.95);
    expect(r.accept).toBe(true);
    expect(r.reason).toBe("ok");
    expect(verifyPair("What are some good books on machine learning?", "Which good books are there for machine learning?", 0.95).accept).toBe(true);
  });

  test("low cosine is never accepted", () => {
    const r = verifyPair("How do I learn Java?", "How can I learn Java?", 0.6);
    expect(r.accept).toBe(false);
    expect(r.reason).toBe("low-score");
  });

  test("extra content words need a very high cosine", () => {
    // 'quickly' and 'beginner' are on one side only.
    expect(verifyPair("How do I learn Java quickly as a beginner?", "How do I learn Java?", 0.9, { minScore: 0.85 }).accept).toBe(false);
    expect(verifyPair("How do I learn Java quickly as a beginner?", "How do I learn Java?", 0.97, { minScore: 0.85 }).accept).toBe(true);
  });

  test("words in another script and quoted terms must match", () => {
    expect(verifyPair("How do I translate '才' to English?", "How do I translate '竟然' to English?", 1).accept).toBe(false);
  });

  test("rewording rule: several different words on both sides pass at cosine >= minScore, a one-word swap does not", () => {
    // 3+ unmatched content words on each side: the cosine has seen through a rewording.
    const a = "What is the most effective way to lose belly fat quickly?";
    const b = "How can someone burn stomach flab fast?";
    const an = analyzePair(a, b);
    expect(Math.min(an.onlyA.length, an.onlyB.length)).toBeGreaterThanOrEqual(3);
    expect(verifyPair(a, b, 0.95).accept).toBe(true);
    expect(verifyPair(a, b, 0.95, { rephraseMinWords: 0 }).accept).toBe(false);
    // A single substituted word is still penalised (the cosine of such pairs is high whatever the word means).
    expect(verifyPair("Do introverts make good lawyers?", "Do introverts make good nurses?", 0.9).accept).toBe(false);
    // Hard rules still apply to rewordings.
    expect(verifyPair(`${a} In 2016?`, `${b} In 2018?`, 0.9).reason).toStartWith("number-mismatch");
    expect(verifyPair("What are the best ways to lose belly fat in Canada?", "How can someone burn stomach flab fast in Germany?", 0.9).reason).toStartWith("entity-mismatch");
  });

  test("request verbs are function words", () => {
    const an = analyzePair("Explain the causes of the Great Depression.", "What were the causes of the Great Depression?", { ignoreRequestVerbs: true });
    expect(an.onlyA.map((t) => t.lower)).toEqual([]);
    expect(verifyPair("Explain the causes of the Great Depression.", "What were the causes of the Great Depression?", 0.95).accept).toBe(true);
    expect(analyzePair("Explain the causes.", "The causes?", { ignoreRequestVerbs: false }).onlyA.map((t) => t.lower)).toEqual(["explain"]);
  });

  test("an acronym matches the words it abbreviates, but not other capitalised words", () => {
    const an = analyzePair("Why did the UK return HK to China?", "Why did the UK return Hong Kong to China?", { acronyms: true });
    expect(an.entityMismatch).toEqual([]);
    expect(an.unmatched).toBe(0);
    expect(verifyPair("How much RAM does a laptop need?", "How much random access memory does a laptop need?", 0.95).accept).toBe(true);
    expect(verifyPair("Why did the UK return HK to China?", "Why did the UK return Macau to China?", 0.95).reason).toStartWith("entity-mismatch");
  });

  test("thousands written with k equal the full number", () => {
    expect(analyzePair("Best laptop under 60k?", "Best laptop under 60,000?").numberMismatch).toBe(false);
    expect(analyzePair("Best laptop under 60k?", "Best laptop under 50,000?").numberMismatch).toBe(true);
    expect(analyzePair("Best phone under 15k?", "Best phone under 15000?").numberMismatch).toBe(false);
  });
});
