/** Chat-completions proxy through the official `openai` SDK (and raw fetch for headers/envelopes). */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { startProxyEnv, KEYS, type ProxyEnv } from "./setup";
import { closedPort } from "../fake-upstream/server";
import { startGateway } from "../helpers/gateway";

let env: ProxyEnv;
let client: OpenAI;

beforeAll(async () => {
  env = await startProxyEnv();
  client = new OpenAI({ apiKey: env.token, baseURL: env.gw.url + "/v1", maxRetries: 0 });
});
afterAll(() => env.stop());

const msgs = (q: string) => [
  { role: "system" as const, content: "You are terse." },
  { role: "user" as const, content: q },
];

describe("chat-completions proxy", () => {
  test("miss forwards exactly the provider request; repeat is a HIT with the first answer and no upstream call", async () => {
    env.fake.reset();
    const first = await client.chat.completions
      .create({ model: "gpt-4o-mini", messages: msgs("Name the largest planet in the solar system."), temperature: 0, max_tokens: 50, session_id: "sess-1" } as any)
      .withResponse();
    expect(first.response.headers.get("x-cache-status")).toBe("MISS");
    expect(first.response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const body: any = first.data;
    expect(body.choices[0].message.content).toBe("answer #1: Name the largest planet in the solar system.");
    expect(body.svc_metadata).toEqual({ cache_hit: false, cache_tier: null, similarity: 0, context_similarity: null, session_id: "sess-1" });

    const [up] = env.fake.requests;
    expect(env.fake.requests).toHaveLength(1);
    expect(up!.method).toBe("POST");
    expect(up!.path).toBe("/v1/chat/completions");
    expect(up!.headers.authorization).toBe(`Bearer ${KEYS.openai}`); // never the gateway credential
    expect(up!.body).toEqual({ model: "gpt-4o-mini", messages: msgs("Name the largest planet in the solar system."), temperature: 0, max_tokens: 50 });

    const again = await client.chat.completions.create({ model: "gpt-4o-mini", messages: msgs("Name the largest planet in the solar system."), temperature: 0, max_tokens: 50 }).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("HIT");
    const hit: any = again.data;
    expect(hit.choices[0].message.content).toBe(body.choices[0].message.content);
    expect(hit.id).toBe(body.id);
    expect(hit.svc_metadata.cache_hit).toBe(true);
    expect(hit.svc_metadata.cache_tier).toBe("exact");
    expect(hit.svc_metadata.similarity).toBe(1);
    expect(hit.svc_metadata.session_id).toMatch(/^[0-9a-f-]{36}$/); // generated when absent
    expect(env.fake.requests).toHaveLength(1);
  });

  test("every hit carries all five svc_metadata fields, typed as doc1 §4.2 says (a multi-turn identical conversation included)", async () => {
    env.fake.reset();
    const convo = [
      { role: "user" as const, content: "Plan a weekend in Lisbon." },
      { role: "assistant" as const, content: "Day one: Alfama and the castle." },
      { role: "user" as const, content: "What should I eat there?" },
    ];
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: convo });
    const again = await client.chat.completions.create({ model: "gpt-4o-mini", messages: convo, session_id: "sess-mt" } as any).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("HIT");
    const m = (again.data as any).svc_metadata;
    expect(m).toEqual({ cache_hit: true, cache_tier: "exact", similarity: 1, context_similarity: 1, session_id: "sess-mt" });
    for (const [k, type] of [["cache_hit", "boolean"], ["cache_tier", "string"], ["similarity", "number"], ["context_similarity", "number"], ["session_id", "string"]] as const)
      expect(`${k}: ${typeof m[k]}`).toBe(`${k}: ${type}`);
  });

  test("svc_metadata.similarity of a semantic hit is a cosine, never above 1 (float32 dot products of equal vectors overshoot it)", async () => {
    env.fake.reset();
    for (const q of ["How do bees make honey?", "What causes the tides?", "What is a black hole?"]) {
      await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: q }] });
      const hit: any = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: q.toUpperCase() }] });
      expect(hit.svc_metadata).toMatchObject({ cache_hit: true, cache_tier: "semantic" });
      expect(`${q}: ${hit.svc_metadata.similarity <= 1}`).toBe(`${q}: true`);
    }
  });

  test("different sampling parameters or system prompt do not share an entry", async () => {
    env.fake.reset();
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: msgs("Spell the word cat backwards."), temperature: 0 });
    const other = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "system", content: "You are verbose." }, { role: "user", content: "Spell the word cat backwards." }], temperature: 0 }).withResponse();
    expect(other.response.headers.get("x-cache-status")).toBe("MISS");
    const hot = await client.chat.completions.create({ model: "gpt-4o-mini", messages: msgs("Spell the word cat backwards."), temperature: 1.5 }).withResponse();
    expect(hot.response.headers.get("x-cache-status")).toBe("MISS");
    expect(env.fake.requests).toHaveLength(3);
  });

  test("streaming miss forwards chunks and caches; streamed hit rebuilds the same text; non-stream request hits a streamed entry", async () => {
    env.fake.reset();
    const q = msgs("List three primary colors for painters.");
    const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q, stream: true });
    let streamed = "";
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? "";
    expect(streamed).toBe("answer #1: List three primary colors for painters.");
    expect(env.fake.requests[0]!.body.stream).toBe(true);

    const hitStream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q, stream: true }).withResponse();
    expect(hitStream.response.headers.get("x-cache-status")).toBe("HIT");
    let replayed = "";
    for await (const chunk of hitStream.data) replayed += chunk.choices[0]?.delta?.content ?? "";
    expect(replayed).toBe(streamed);

    const json = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q }).withResponse();
    expect(json.response.headers.get("x-cache-status")).toBe("HIT");
    expect(json.data.choices[0]!.message.content).toBe(streamed);
    expect(env.fake.requests).toHaveLength(1);

    // stream helper of the SDK over a hit of a non-streamed entry, with include_usage
    const helper = client.chat.completions.stream({ model: "gpt-4o-mini", messages: q, stream_options: { include_usage: true } });
    const final = await helper.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(streamed);
    expect(final.usage?.total_tokens).toBeGreaterThan(0);
    expect(env.fake.requests).toHaveLength(1);
  });

  test("a live streamed miss carries svc_metadata (with the session id) on its first chunk; the rest is forwarded as the provider sent it", async () => {
    env.fake.reset();
    const body = { model: "gpt-4o-mini", messages: msgs("Name a river that flows through Vienna."), stream: true, session_id: "sess-live" };
    const r = await env.gw.api("/v1/chat/completions", { token: env.token, method: "POST", json: body });
    expect(r.headers.get("x-cache-status")).toBe("MISS");
    const frames = (await r.text()).trim().split("\n\n");
    const chunks = frames.filter((f) => f !== "data: [DONE]").map((f) => JSON.parse(f.replace(/^data: /, "")));
    const { similarity, decision_point, decision_point_source, ...rest } = chunks[0].svc_metadata;
    expect(rest).toEqual({ cache_hit: false, cache_tier: null, context_similarity: null, session_id: "sess-live" });
    // the operating point the nearest question was judged against (issue 25)
    expect(decision_point_source).toBe("config");
    expect(decision_point).toBeGreaterThan(0);
    // a miss reports the nearest cached question's similarity (the tenant holds other questions by now)
    expect(similarity).toBeGreaterThan(0);
    expect(similarity).toBeLessThan(0.8);
    expect(chunks.slice(1).every((c) => c.svc_metadata === undefined)).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("answer #1: Name a river that flows through Vienna.");
    expect(frames.at(-1)).toBe("data: [DONE]");
    expect(env.fake.requests[0]!.body.session_id).toBeUndefined();
    // without a session_id a fresh UUID is reported; BYPASS streams carry it too
    const b = await env.gw.api("/v1/chat/completions", { token: env.token, method: "POST", headers: { "x-svc-skip-cache": "1" }, json: { ...body, session_id: undefined } });
    expect(b.headers.get("x-cache-status")).toBe("BYPASS");
    const first = JSON.parse((await b.text()).split("\n\n")[0]!.replace(/^data: /, ""));
    expect(first.svc_metadata.session_id).toMatch(/^[0-9a-f-]{36}$/);
    // the SDK reads the decorated stream unchanged
    let text = "";
    for await (const c of await client.chat.completions.create({ model: "gpt-4o-mini", messages: msgs("Name a lake in Switzerland."), stream: true })) text += c.choices[0]?.delta?.content ?? "";
    expect(text).toBe("answer #3: Name a lake in Switzerland.");
  });

  test("tools: tool-call responses pass through and are cached by the query (JSON and stream)", async () => {
    env.fake.reset();
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const q = [{ role: "user" as const, content: "What is the weather in Paris today?" }];
    const first = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q, tools, tool_choice: "auto" });
    expect(first.choices[0]!.finish_reason).toBe("tool_calls");
    expect(first.choices[0]!.message.tool_calls![0]).toMatchObject({ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } });
    expect(env.fake.requests[0]!.body.tools).toEqual(tools);
    expect(env.fake.requests[0]!.body.tool_choice).toBe("auto");

    const streamed = await client.chat.completions.stream({ model: "gpt-4o-mini", messages: q, tools, tool_choice: "auto" }).finalChatCompletion();
    expect(streamed.choices[0]!.message.tool_calls![0]!.function).toEqual({ name: "get_weather", arguments: '{"city":"Paris"}' });
    expect(env.fake.requests).toHaveLength(1);

    // streaming miss with tool-call deltas is assembled and cached too
    const q2 = [{ role: "user" as const, content: "Is the weather in Rome sunny?" }];
    const s2 = await client.chat.completions.stream({ model: "gpt-4o-mini", messages: q2, tools }).finalChatCompletion();
    expect(s2.choices[0]!.message.tool_calls![0]!.function.arguments).toBe('{"city":"Paris"}');
    const j2 = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q2, tools }).withResponse();
    expect(j2.response.headers.get("x-cache-status")).toBe("HIT");
    expect(j2.data.choices[0]!.message.tool_calls![0]!.id).toBe(s2.choices[0]!.message.tool_calls![0]!.id);
    expect(env.fake.requests).toHaveLength(2);
  });

  test("X-Svc-Skip-Cache: no lookup, no write, BYPASS", async () => {
    env.fake.reset();
    const q = msgs("Give one synonym for quick.");
    for (const v of ["true", "1"]) {
      const r = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q }, { headers: { "X-Svc-Skip-Cache": v } }).withResponse();
      expect(r.response.headers.get("x-cache-status")).toBe("BYPASS");
    }
    const after = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q }).withResponse();
    expect(after.response.headers.get("x-cache-status")).toBe("MISS"); // nothing was written
    expect(env.fake.requests).toHaveLength(3);
  });

  test("tenant isolation: tenant B never hits tenant A's entry", async () => {
    env.fake.reset();
    const q = msgs("Which ocean is the deepest on Earth?");
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: q });
    const b = new OpenAI({ apiKey: await env.gw.token("tenant-b"), baseURL: env.gw.url + "/v1", maxRetries: 0 });
    const r = await b.chat.completions.create({ model: "gpt-4o-mini", messages: q }).withResponse();
    expect(r.response.headers.get("x-cache-status")).toBe("MISS");
    expect(r.data.choices[0]!.message.content).toContain("answer #2");
  });

  test("models list and model retrieve are forwarded; embeddings forwarded and never cached", async () => {
    env.fake.reset();
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual(["gpt-4o-mini", "gpt-4o"]);
    expect(list.data[0]).toEqual({ id: "gpt-4o-mini", object: "model", created: 1700000000, owned_by: "fake" });
    const one = await client.models.retrieve("gpt-4o");
    expect(one.id).toBe("gpt-4o");
    for (let i = 0; i < 2; i++) {
      const e = await client.embeddings.create({ model: "text-embedding-3-small", input: ["a", "b"] }).withResponse();
      expect(e.data.data).toHaveLength(2);
      expect(e.response.headers.get("x-cache-status")).toBe("BYPASS");
    }
    expect(env.fake.requests.map((r) => r.path)).toEqual(["/v1/models", "/v1/models/gpt-4o", "/v1/embeddings", "/v1/embeddings"]);
    expect(env.fake.requests[2]!.headers.authorization).toBe(`Bearer ${KEYS.openai}`);
  });

  test("provider 4xx reaches the SDK with the provider's status and body; nothing cached", async () => {
    env.fake.reset();
    env.fake.failNext({ kind: "status", status: 400 });
    const q = msgs("Translate hello into French.");
    const err: any = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.error).toEqual({ message: "fake openai error 400", type: "invalid_request_error", param: null, code: "fake_error" });
    expect(err.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const ok = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q }).withResponse();
    expect(ok.response.headers.get("x-cache-status")).toBe("MISS");
  });

  test("upstream 5xx -> 502 proxy_error, timeout -> 504 timeout_error, not cached", async () => {
    env.fake.reset();
    const q = msgs("What is two plus two?");
    env.fake.failNext({ kind: "status", status: 503 });
    let r = await env.gw.api("/v1/chat/completions", { token: env.token, method: "POST", json: { model: "gpt-4o-mini", messages: q } });
    expect(r.status).toBe(502);
    expect((await r.json()).error.type).toBe("proxy_error");
    expect(r.headers.get("x-request-id")).toBeTruthy();
    expect(r.headers.get("x-cache-status")).toBe("MISS");

    env.fake.failNext({ kind: "hang" });
    r = await env.gw.api("/v1/chat/completions", { token: env.token, method: "POST", json: { model: "gpt-4o-mini", messages: q } });
    expect(r.status).toBe(504);
    expect(await r.json()).toEqual({ error: { message: expect.stringContaining("did not answer within 2000 ms"), type: "timeout_error" } });

    const ok = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q }).withResponse();
    expect(ok.response.headers.get("x-cache-status")).toBe("MISS");
  });

  test("a stream cut mid-way is reported to the SDK and not cached", async () => {
    env.fake.reset();
    const q = msgs("Describe the colour of the sky briefly.");
    env.fake.failNext({ kind: "cut" });
    const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q, stream: true });
    const err = await (async () => {
      for await (const _ of stream);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    const again = await client.chat.completions.create({ model: "gpt-4o-mini", messages: q }).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("MISS");
  });

  test("client disconnect aborts the upstream stream", async () => {
    env.fake.reset();
    const ac = new AbortController();
    const before = env.fake.cancelled;
    const stream = await client.chat.completions.create(
      { model: "gpt-4o-mini", messages: msgs("Count slowly from one to twenty in words please."), stream: true },
      { signal: ac.signal },
    );
    for await (const _ of stream) {
      ac.abort();
      break;
    }
    for (let i = 0; i < 100 && env.fake.cancelled === before; i++) await Bun.sleep(10);
    expect(env.fake.cancelled).toBeGreaterThan(before);
  });

  test("validation, auth and malformed JSON use the doc1 envelope", async () => {
    let r = await env.gw.api("/v1/chat/completions", { token: env.token, method: "POST", json: { model: "gpt-4o-mini" } });
    expect(r.status).toBe(400);
    expect((await r.json()).error.type).toBe("validation_error");
    r = await env.gw.api("/v1/chat/completions", { token: env.token, method: "POST", json: { model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }], max_tokens: "ten" } });
    expect(r.status).toBe(400);
    expect((await r.json()).error.message).toContain("max_tokens");
    r = await env.gw.api("/v1/chat/completions", { method: "POST", json: { model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] } });
    expect(r.status).toBe(401);
    expect((await r.json()).error.type).toBe("authentication_error");
    expect(r.headers.get("x-request-id")).toBeTruthy();
    r = await env.gw.api("/v1/chat/completions", { token: env.token, method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    expect(r.status).toBe(400);
    expect((await r.json()).error.type).toBe("invalid_request_error");
    r = await env.gw.api("/v1/chat/completions", { token: env.token, method: "POST", headers: { "x-svc-code-context": "{bad" }, json: { model: "m", messages: [{ role: "user", content: "x" }] } });
    expect(r.status).toBe(400);
  });

  test("usage records: tokens, cache status, cost and cost saved per tenant and model, written within ~200 ms without a flush call", async () => {
    const token = await env.gw.token("tenant-usage");
    const c = new OpenAI({ apiKey: token, baseURL: env.gw.url + "/v1", maxRetries: 0 });
    const q = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "Name three primary colours." }] };
    await c.chat.completions.create(q);
    await c.chat.completions.create(q);
    const usage = env.gw.ctx.usage;
    let rows = await usage.store("tenant-usage").list(500);
    for (let i = 0; i < 100 && rows.length < 2; i++) {
      await Bun.sleep(20); // the recorder writes its batch 200 ms after the first buffered row
      rows = await usage.store("tenant-usage").list(500);
    }
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.cacheStatus === "MISS")!.costUsd).toBeGreaterThan(0);
    expect(rows.find((r) => r.cacheStatus === "HIT")!.costUsd).toBe(0);
    const hits = rows.filter((r: any) => r.cacheStatus === "HIT" && r.endpoint === "openai.chat_completions" && !r.streamed);
    expect(hits.length).toBeGreaterThan(0);
    expect(hits[0]!.model).toBe("gpt-4o-mini");
    expect(hits.every((r: any) => r.inputTokens > 0 && r.outputTokens > 0)).toBe(true);
    expect(hits[0]!.costSavedUsd).toBeGreaterThan(0);
    const misses = rows.filter((r: any) => r.cacheStatus === "MISS");
    expect(misses.every((r: any) => r.costSavedUsd === 0)).toBe(true);
    expect((await usage.store("tenant-b").list()).every((r: any) => r.tenantId === "tenant-b")).toBe(true);
    expect((await usage.store("tenant-b").list()).some((r) => r.requestId === rows[0]!.requestId)).toBe(false);
  });
});

describe("upstream unreachable", () => {
  test("connection refused -> 502 proxy_error", async () => {
    const port = await closedPort();
    const gw = await startGateway({ providers: { openai: { base_url: `http://127.0.0.1:${port}` } }, cache: { enabled: false } });
    try {
      const c = new OpenAI({ apiKey: await gw.token("t"), baseURL: gw.url + "/v1", maxRetries: 0 });
      const err: any = await c.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
      expect(err.status).toBe(502);
      expect(err.error).toMatchObject({ type: "proxy_error" });
    } finally {
      await gw.stop();
    }
  });
});
