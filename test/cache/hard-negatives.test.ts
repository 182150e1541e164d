/**
 * Hard negatives through the real gateway (issue 25): for each kind the cross-validation measures
 * (scripts/bench/cache-hard-negatives.ts), a pair of that kind must miss with the default settings —
 * arguments swapped, an entity or a number replaced, negation added, an antonym, another unit/time —
 * while rewordings of the same question still hit (so a cache that never hits fails this file too).
 * Each pair runs in its own tenant, the first question filling the cache from the fake upstream.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";

let gw: TestGateway;
let fake: FakeUpstream;

beforeAll(async () => {
  fake = await startFakeUpstream();
  gw = await startGateway({ rate_limits: { enabled: false }, providers: { openai: { base_url: fake.url, api_key: "sk-up" } } });
  await gw.ctx.embedder!.load();
}, 60_000);
afterAll(async () => {
  await gw.stop();
  await fake.stop();
});

let n = 0;
async function second(first: string, then: string) {
  const token = await gw.token(`tenant-hn-${n++}`);
  const c = new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const send = async (content: string) => {
    const { data, response } = await c.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content }] }).withResponse();
    return { status: response.headers.get("x-cache-status"), meta: (data as any).svc_metadata };
  };
  expect((await send(first)).status).toBe("MISS");
  return send(then);
}

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
};

describe("hard negatives miss through the gateway", () => {
  for (const [kind, pairs] of Object.entries(MUST_MISS))
    test(kind, async () => {
      for (const [a, b] of pairs) {
        const r = await second(a, b);
        expect(`${kind}: ${b} -> ${r.status}`).toBe(`${kind}: ${b} -> MISS`);
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
