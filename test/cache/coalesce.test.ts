/**
 * Concurrent identical misses through the real proxy: one upstream call, every client gets its
 * answer (official openai SDK, a held upstream, the real engine). Another tenant's identical
 * request is never coalesced with them.
 */
import { describe, expect, test, afterAll, beforeAll } from "bun:test";
import OpenAI from "openai";
import { startGateway, type TestGateway } from "../helpers/gateway";

let held: Array<() => void> = [];
let calls = 0;
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as any;
    const n = ++calls;
    await new Promise<void>((r) => held.push(r));
    const content = `answer #${n}: ${body.messages.at(-1).content}`;
    return Response.json({
      id: `chatcmpl-${n}`,
      object: "chat.completion",
      created: 1700000000,
      model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
    });
  },
});

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ providers: { openai: { base_url: `http://127.0.0.1:${upstream.port}`, api_key: "sk-up" } } });
  await gw.ctx.embedder!.load();
});
afterAll(async () => {
  for (const r of held) r();
  await gw.stop();
  upstream.stop(true);
});

async function until(cond: () => boolean) {
  for (let i = 0; i < 1000 && !cond(); i++) await Bun.sleep(5);
  expect(cond()).toBe(true);
}

describe("single flight through the proxy", () => {
  test("5 concurrent identical misses make one upstream call; another tenant makes its own", async () => {
    const flights = (gw.ctx.cache as any).flights as { coalesced: number };
    const c = new OpenAI({ apiKey: await gw.token("tenant-sf"), baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const other = new OpenAI({ apiKey: await gw.token("tenant-sf-2"), baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const req = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "What is the airspeed of an unladen swallow?" }] };
    const before = flights.coalesced;
    const mine = Array.from({ length: 5 }, () => c.chat.completions.create(req).withResponse());
    await until(() => calls === 1 && flights.coalesced - before === 4);
    const theirs = other.chat.completions.create(req).withResponse();
    await until(() => calls === 2);
    for (const r of held.splice(0)) r();
    const got = await Promise.all(mine);
    expect(new Set(got.map((g) => g.data.choices[0]!.message.content)).size).toBe(1);
    expect(got.map((g) => g.response.headers.get("x-cache-status"))).toEqual(["MISS", "MISS", "MISS", "MISS", "MISS"]);
    const o = await theirs;
    expect(o.data.choices[0]!.message.content).not.toBe(got[0]!.data.choices[0]!.message.content);
    expect(calls).toBe(2);
    // and the answer was stored once: the next identical request is an exact hit
    const again = await c.chat.completions.create(req).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("HIT");
    expect(calls).toBe(2);
  });
});

describe("single flight with the cache disabled", () => {
  test("byte-identical concurrent requests share one upstream call; any difference in what is asked makes its own", async () => {
    const off = await startGateway({ providers: { openai: { base_url: `http://127.0.0.1:${upstream.port}`, api_key: "sk-up" } }, cache: { enabled: false } });
    try {
      const flights = (off.ctx.cache as any).flights as { coalesced: number };
      const c = new OpenAI({ apiKey: await off.token("tenant-off"), baseURL: `${off.url}/v1`, maxRetries: 0 });
      const other = new OpenAI({ apiKey: await off.token("tenant-off-2"), baseURL: `${off.url}/v1`, maxRetries: 0 });
      const ask = (content: string, extra: Record<string, unknown> = {}) => ({ model: "gpt-4o-mini", messages: [{ role: "user" as const, content }], ...extra });
      const q = "Which river flows through Vienna?";
      const start = calls;
      const before = flights.coalesced;
      const same = Array.from({ length: 3 }, () => c.chat.completions.create(ask(q)).withResponse());
      await until(() => calls - start === 1 && flights.coalesced - before === 2);
      // each of these differs from the three in one thing that can change the answer: each is its own call
      const differing = [
        c.chat.completions.create(ask(q, { temperature: 0.9 })),
        c.chat.completions.create(ask(q, { model: "gpt-4o" })),
        c.chat.completions.create(ask(`${q} `)),
        c.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "system", content: "Answer in French." }, { role: "user", content: q }] }),
        c.chat.completions.create(ask(q), { headers: { "x-svc-cache-namespace": "other-ns" } }),
        other.chat.completions.create(ask(q)),
      ];
      await until(() => calls - start === 7);
      expect(flights.coalesced - before).toBe(2);
      for (const r of held.splice(0)) r();
      const got = await Promise.all(same);
      expect(new Set(got.map((g) => g.data.choices[0]!.message.content)).size).toBe(1);
      expect(got.map((g) => g.response.headers.get("x-cache-status"))).toEqual(["MISS", "MISS", "MISS"]);
      const answers = (await Promise.all(differing)).map((d) => d.choices[0]!.message.content);
      expect(new Set([...answers, got[0]!.data.choices[0]!.message.content]).size).toBe(7);
    } finally {
      for (const r of held.splice(0)) r();
      await off.stop();
    }
  });
});
