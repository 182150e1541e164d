/**
 * What the cache key covers, end to end through the chat-completions proxy (official openai SDK)
 * and POST /api/v1/query: everything that can change the answer separates entries (exact tier AND
 * semantic partition), and nothing that cannot (stream flag, session_id, user, metadata, store,
 * stream_options, request ids) does. Real local embedder, fake upstream.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";

let gw: TestGateway;
let fake: FakeUpstream;
let token: string;

beforeAll(async () => {
  fake = await startFakeUpstream();
  gw = await startGateway({ providers: { openai: { base_url: fake.url, api_key: "sk-up" } } });
  token = await gw.token("tenant-keys");
  await gw.ctx.embedder!.load();
});
afterAll(async () => {
  await gw.stop();
  await fake.stop();
});

const sdk = () => new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const toolA = { type: "function" as const, function: { name: "lookup_docs", description: "search the docs", parameters: { type: "object", properties: { q: { type: "string" } } } } };
const toolB = { type: "function" as const, function: { name: "run_code", description: "run a snippet", parameters: { type: "object", properties: { src: { type: "string" } } } } };

async function query(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const r = await gw.api("/api/v1/query", { method: "POST", token, json: body, headers });
  expect(r.status).toBe(200);
  return (await r.json()) as { hit: boolean; tier: string | null };
}

describe("the exact key ignores what cannot change the answer", () => {
  const base = {
    model: "gpt-4o-mini",
    temperature: 0,
    messages: [
      { role: "system" as const, content: "Answer in one sentence." },
      { role: "user" as const, content: "What is a monad in functional programming?" },
    ],
  };

  test("stream flag, session_id, user, metadata, store, stream_options and X-Request-ID all hit the same exact entry", async () => {
    const c = sdk();
    const first = await c.chat.completions.create(base).withResponse();
    expect(first.response.headers.get("x-cache-status")).toBe("MISS");
    const calls = fake.received("/v1/chat/completions").length;

    const variants: Array<[string, Record<string, unknown>, Record<string, string>]> = [
      ["session_id", { session_id: "another-session" }, {}],
      ["user", { user: "someone-else" }, {}],
      ["metadata + store", { metadata: { trace: "x" }, store: false }, {}],
      ["X-Request-ID", {}, { "X-Request-ID": "7b1c2d3e-0000-4000-8000-000000000042" }],
    ];
    for (const [name, extra, headers] of variants) {
      const r = await c.chat.completions.create({ ...base, ...extra } as any, { headers }).withResponse();
      expect([name, r.response.headers.get("x-cache-status")]).toEqual([name, "HIT"]);
      expect([name, (r.data as any).svc_metadata.cache_tier]).toEqual([name, "exact"]);
      expect(r.data.choices[0]!.message.content).toBe(first.data.choices[0]!.message.content);
    }
    const { data: stream, response } = await c.chat.completions.create({ ...base, stream: true, stream_options: { include_usage: true } }).withResponse();
    expect(response.headers.get("x-cache-status")).toBe("HIT");
    let text = "";
    for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? "";
    expect(text).toBe(first.data.choices[0]!.message.content!);
    expect(fake.received("/v1/chat/completions").length).toBe(calls);
  });

  test("every parameter that can change the answer misses, for the identical question (exact key and partition)", async () => {
    expect(await query(base)).toMatchObject({ hit: true, tier: "exact" });
    const misses: Array<[string, Record<string, unknown>, Record<string, string>?]> = [
      ["model", { model: "gpt-4o" }],
      ["system prompt", { messages: [{ role: "system", content: "Answer like a pirate." }, base.messages[1]] }],
      ["no system prompt", { messages: [base.messages[1]] }],
      ["tools", { tools: [toolA] }],
      ["tool_choice", { tool_choice: "none" }],
      ["temperature bucket", { temperature: 1 }],
      ["top_p", { top_p: 0.1 }],
      ["max_tokens", { max_tokens: 5 }],
      ["seed", { seed: 7 }],
      ["n", { n: 2 }],
      ["response_format", { response_format: { type: "json_object" } }],
      ["stop", { stop: ["\n"] }],
      ["workspace context", {}, { "X-Svc-Workspace-Context": "ws-other" }],
      ["code context", {}, { "X-Svc-Code-Context": JSON.stringify({ repo: "acme/app", file: "src/a.ts" }) }],
    ];
    for (const [name, extra, headers] of misses) {
      const r = await query({ ...base, ...extra }, headers ?? {});
      expect([name, r.hit]).toEqual([name, false]);
    }
    // the temperature is bucketed for the semantic partition: 0.05 is not the same request (no exact
    // hit) but samples like 0, so the same question is served by the semantic tier
    expect(await query({ ...base, temperature: 0.05 })).toMatchObject({ hit: true, tier: "semantic" });
  });

  test("an empty X-Svc-Workspace-Context header is the same as none", async () => {
    expect(await query(base, { "X-Svc-Workspace-Context": "" })).toMatchObject({ hit: true, tier: "exact" });
  });
});

describe("partitions: a paraphrase under another tool set misses", () => {
  test("same tools hit, other tools or none miss", async () => {
    const c = sdk();
    const ask = (content: string) => [{ role: "user" as const, content }];
    await c.chat.completions.create({ model: "gpt-4o-mini", messages: ask("How do I reverse a list in Python?"), tools: [toolA] });
    const para = "How can I reverse a list in Python?";
    expect(await query({ model: "gpt-4o-mini", messages: ask(para), tools: [toolA] })).toMatchObject({ hit: true, tier: "semantic" });
    expect((await query({ model: "gpt-4o-mini", messages: ask(para), tools: [toolB] })).hit).toBe(false);
    expect((await query({ model: "gpt-4o-mini", messages: ask(para), tools: [toolA, toolB] })).hit).toBe(false);
    expect((await query({ model: "gpt-4o-mini", messages: ask(para) })).hit).toBe(false);
  });
});

describe("SVC_CACHE__ENABLED=false", () => {
  test("nothing is looked up or written; /api/v1/query answers 503 service_unavailable", async () => {
    const off = await startGateway({ cache: { enabled: false }, providers: { openai: { base_url: fake.url, api_key: "sk-up" } } });
    try {
      const tok = await off.token("tenant-off", ["ViewMetrics"]);
      const c = new OpenAI({ apiKey: tok, baseURL: `${off.url}/v1`, maxRetries: 0 });
      const req = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "Is the cache off?" }] };
      const before = fake.received("/v1/chat/completions").length;
      for (let i = 0; i < 2; i++) {
        const r = await c.chat.completions.create(req).withResponse();
        expect(r.response.headers.get("x-cache-status")).toBe("MISS");
      }
      expect(fake.received("/v1/chat/completions").length).toBe(before + 2);
      const q = await off.api("/api/v1/query", { method: "POST", token: tok, json: req });
      expect(q.status).toBe(503);
      expect(((await q.json()) as any).error.type).toBe("service_unavailable");
    } finally {
      await off.stop();
    }
  });
});
