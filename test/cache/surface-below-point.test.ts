/**
 * Surface matches below the operating point (issue 25; the engine hunk of the surface task): a typo moves
 * USE-lite's vector more than many rewordings ("Why do people walk?" / "Why do peolpe walk?" is at cosine
 * 0.755), so the nearest cached question is judged below the point when it is the same question up to
 * case, punctuation, whitespace and one misspelt word (the pair model's surfaceMatch), down to the model's
 * surfaceMinCosine — never below a request's own X-Svc-Cache-Min-Similarity, and never for a real word
 * replaced by another ("beer"/"bear", cosine 0.688).
 */
import { describe, expect, test } from "bun:test";
import { gatewayPairs } from "./gateway-pairs";
import { defaultLearnedModel } from "../../src/cache/verify/learned-default";

const second = gatewayPairs("tenant-sb");

const BELOW = [
  ["Why do people walk?", "Why do peolpe walk?"],
  ["How do I get free Instagram followers fast?", "How do I get free Instargam followers fast?"],
  ["What is it like living in New Zealand?", "What is it like living in New Zeallnd?"],
] as const;

describe("surface matches below the point", () => {
  test("the model has a surface floor below its point", () => {
    const m = defaultLearnedModel();
    expect(m.surfaceMinCosine).toBeDefined();
    expect(m.surfaceMinCosine!).toBeLessThan(m.minCosine);
  });

  test("a one-letter typo hits though its cosine is below the point", async () => {
    for (const [a, b] of BELOW) {
      const r = await second(a, b);
      expect(`${b} -> ${r.status}`).toBe(`${b} -> HIT`);
      expect(r.meta.similarity).toBeLessThan(defaultLearnedModel().minCosine);
    }
  }, 60_000);

  test("a real word for another real word below the point still misses", async () => {
    const r = await second("What is the best beer in Germany?", "What is the best bear in Germany?");
    expect(r.status).toBe("MISS");
  }, 60_000);

  test("a request's X-Svc-Cache-Min-Similarity still binds a surface match", async () => {
    const [a, b] = BELOW[0];
    const r = await second(a, b, { "x-svc-cache-min-similarity": "0.9" });
    expect(r.status).toBe("MISS");
  }, 60_000);
});
