/**
 * The cache inside the full proxy pipeline: official openai SDK -> gateway -> fake upstream,
 * real local embedder. What is (and is never) written, and the embedder-failure contract.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, closedPort, type FakeUpstream } from "../fake-upstream/server";

let fake: FakeUpstream;
beforeAll(async () => {
  fake = await startFakeUpstream();
});
afterAll(() => fake.stop());

const start = (overrides: Record<string, any> = {}) =>
  startGateway({ rate_limits: { enabled: false }, providers: { openai: { base_url: fake.url, api_key: "sk-up", timeout_ms: 2000 } }, ...overrides });

const sdk = (gw: TestGateway, token: string) => new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const msg = (content: string) => [{ role: "user" as const, content }];

async function lookup(gw: TestGateway, token: string, content: string) {
  const r = await gw.api("/api/v1/query", { method: "POST", token, json: { model: "gpt-4o-mini", messages: msg(content) } });
  return ((await r.json()) as any) as { hit: boolean; tier: string | null };
}

describe("cache in the pipeline (local embedder)", () => {
  let gw: TestGateway;
  let token: string;
  beforeAll(async () => {
    gw = await start();
    token = await gw.token("tenant-p");
    await gw.ctx.embedder!.load();
  });
  afterAll(() => gw.stop());

  test("X-Svc-Skip-Cache: BYPASS, no lookup and nothing written", async () => {
    const c = sdk(gw, token);
    const q = "What is the difference between TCP and UDP?";
    const r1 = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q) }, { headers: { "X-Svc-Skip-Cache": "true" } }).withResponse();
    expect(r1.response.headers.get("x-cache-status")).toBe("BYPASS");
    expect((await lookup(gw, token, q)).hit).toBe(false);
    // a cached answer is not served when skipping either
    await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q) });
    const before = fake.received("/v1/chat/completions").length;
    const r2 = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q) }, { headers: { "X-Svc-Skip-Cache": "1" } }).withResponse();
    expect(r2.response.headers.get("x-cache-status")).toBe("BYPASS");
    expect(fake.received("/v1/chat/completions").length).toBe(before + 1);
  });

  test("a streamed miss fills the entry a non-streamed request hits, and the reverse", async () => {
    const c = sdk(gw, token);
    const q1 = "Explain what a hash table is.";
    const stream = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q1), stream: true });
    let streamed = "";
    for await (const ch of stream) streamed += ch.choices[0]?.delta?.content ?? "";
    const r = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q1) }).withResponse();
    expect(r.response.headers.get("x-cache-status")).toBe("HIT");
    expect(r.data.choices[0]!.message.content).toBe(streamed);

    const q2 = "Explain what a binary search tree is.";
    const plain = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q2) });
    const before = fake.received("/v1/chat/completions").length;
    const { data: s2, response } = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q2), stream: true }).withResponse();
    expect(response.headers.get("x-cache-status")).toBe("HIT");
    let text = "";
    for await (const ch of s2) text += ch.choices[0]?.delta?.content ?? "";
    expect(text).toBe(plain.choices[0]!.message.content!);
    expect(fake.received("/v1/chat/completions").length).toBe(before);
  });

  test("an upstream error is never cached", async () => {
    const c = sdk(gw, token);
    const q = "How many moons does Jupiter have?";
    fake.failNext({ kind: "status", status: 500 });
    const e1: any = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q) }).catch((e) => e);
    expect(e1.status).toBe(502);
    expect((await lookup(gw, token, q)).hit).toBe(false);
    fake.failNext({ kind: "status", status: 400 });
    const e2: any = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q) }).catch((e) => e);
    expect(e2.status).toBe(400);
    expect((await lookup(gw, token, q)).hit).toBe(false);
    const ok = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q) }).withResponse();
    expect(ok.response.headers.get("x-cache-status")).toBe("MISS");
    expect((await lookup(gw, token, q)).hit).toBe(true);
  });

  test("a stream cut mid-way is never cached", async () => {
    const c = sdk(gw, token);
    const q = "Describe the water cycle in detail.";
    fake.failNext({ kind: "cut" });
    const s = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q), stream: true });
    const err = await (async () => {
      for await (const _ of s);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect((await lookup(gw, token, q)).hit).toBe(false);
    const again = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg(q) }).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("MISS");
  });
});

describe("embedder failure", () => {
  test("remote embedder unreachable from the start: 503 embedding_error (fail-open off), /ready 503 (exact repeats during an outage: remote-embedder.test.ts)", async () => {
    const port = await closedPort();
    const gw = await start({ embedding: { provider: "openai", base_url: `http://127.0.0.1:${port}/v1`, model: "emb", timeout_ms: 500 } });
    try {
      const token = await gw.token("tenant-e");
      const r = await gw.api("/v1/chat/completions", { method: "POST", token, json: { model: "gpt-4o-mini", messages: msg("Is the embedder up?") } });
      expect(r.status).toBe(503);
      expect(((await r.json()) as any).error.type).toBe("embedding_error");
      const q = await gw.api("/api/v1/query", { method: "POST", token, json: { model: "gpt-4o-mini", messages: msg("Is the embedder up?") } });
      expect(q.status).toBe(503);
      expect(((await q.json()) as any).error.type).toBe("embedding_error");
      const ready = await gw.api("/ready");
      expect(ready.status).toBe(503);
    } finally {
      await gw.stop();
    }
  });

  test("fail-open on: the request is served uncached and nothing is written", async () => {
    const port = await closedPort();
    const gw = await start({ embedding: { provider: "openai", base_url: `http://127.0.0.1:${port}/v1`, model: "emb", timeout_ms: 500, fail_open: true } });
    try {
      const token = await gw.token("tenant-f");
      const c = sdk(gw, token);
      const r = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("Served while the embedder is down?") }).withResponse();
      expect(r.response.status).toBe(200);
      expect(r.response.headers.get("x-cache-status")).toBe("MISS");
      const again = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("Served while the embedder is down?") }).withResponse();
      expect(again.response.headers.get("x-cache-status")).toBe("MISS");
      expect((await gw.ctx.cache.stats("tenant-f")).entries).toBe(0);
    } finally {
      await gw.stop();
    }
  });
});
