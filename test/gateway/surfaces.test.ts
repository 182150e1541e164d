/**
 * The newer SDK surfaces through their official SDKs, against the fake upstream speaking the real
 * wire formats: the OpenAI Responses API (`client.responses.create`, JSON and stream, and the SDK's
 * `responses.stream()` helper) and Cohere's v2 API (`CohereClientV2`: chat, chatStream, embed).
 * Same pipeline and cache as the other surfaces: a miss is forwarded to the provider's own path, a
 * repeat is a HIT rebuilt in the surface's own format (streams included), with no upstream call.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { CohereClientV2 } from "cohere-ai";
import { startProxyEnv, KEYS, type ProxyEnv } from "./setup";

let env: ProxyEnv;
let client: OpenAI;
let co: CohereClientV2;

beforeAll(async () => {
  env = await startProxyEnv();
  client = new OpenAI({ apiKey: env.token, baseURL: env.gw.url + "/v1", maxRetries: 0 });
  co = new CohereClientV2({ token: env.token, baseUrl: env.gw.url, maxRetries: 0 } as any);
});
afterAll(() => env.stop());

describe("POST /v1/responses (OpenAI Responses API)", () => {
  test("SDK create: miss forwarded to /v1/responses with the configured key; repeat is a HIT with the stored Response", async () => {
    env.fake.reset();
    const req = { model: "gpt-4o-mini", instructions: "Be terse.", input: "Name the tallest mountain on Earth.", temperature: 0, max_output_tokens: 40 };
    const first = await client.responses.create(req).withResponse();
    expect(first.response.headers.get("x-cache-status")).toBe("MISS");
    expect(first.data.output_text).toBe("answer #1: Name the tallest mountain on Earth.");
    expect(first.data.id).toBe("resp_1");
    expect(first.data.status).toBe("completed");
    expect(first.data.usage).toMatchObject({ input_tokens: 11, output_tokens: 8, total_tokens: 19 });
    expect((first.data as any).svc_metadata).toEqual({ cache_hit: false, cache_tier: null, similarity: 0, context_similarity: null });
    expect(env.fake.requests).toHaveLength(1);
    const up = env.fake.requests[0]!;
    expect(up.path).toBe("/v1/responses");
    expect(up.headers.authorization).toBe(`Bearer ${KEYS.openai}`);
    expect(up.body).toEqual(req);

    const again = await client.responses.create(req).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("HIT");
    expect(again.data.id).toBe("resp_1");
    expect(again.data.output_text).toBe(first.data.output_text);
    expect((again.data as any).svc_metadata).toEqual({ cache_hit: true, cache_tier: "exact", similarity: 1, context_similarity: 1 });
    expect(env.fake.requests).toHaveLength(1);

    // other instructions are another entry
    const other = await client.responses.create({ ...req, instructions: "Be verbose." }).withResponse();
    expect(other.response.headers.get("x-cache-status")).toBe("MISS");
    expect(env.fake.requests).toHaveLength(2);
  });

  test("SDK stream: a live miss forwards the provider's events (svc_metadata on response.created) and caches; the repeat replays the same text from the cache", async () => {
    env.fake.reset();
    const req = { model: "gpt-4o-mini", input: [{ role: "user" as const, content: "List two noble gases." }] };
    const types: string[] = [];
    let text = "";
    let created: any;
    let completed: any;
    for await (const ev of await client.responses.create({ ...req, stream: true })) {
      types.push(ev.type);
      if (ev.type === "response.created") created = ev.response;
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") completed = ev.response;
    }
    expect(text).toBe("answer #1: List two noble gases.");
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe("response.completed");
    expect(types).toContain("response.output_item.added");
    expect(types).toContain("response.content_part.added");
    expect(created.svc_metadata).toEqual({ cache_hit: false, cache_tier: null, similarity: 0, context_similarity: null });
    expect(completed.status).toBe("completed");
    expect(env.fake.requests[0]!.body.stream).toBe(true);

    const replayed: string[] = [];
    let hitText = "";
    const hit = await client.responses.create({ ...req, stream: true }).withResponse();
    expect(hit.response.headers.get("x-cache-status")).toBe("HIT");
    const seqs: number[] = [];
    for await (const ev of hit.data) {
      replayed.push(ev.type);
      seqs.push(ev.sequence_number);
      if (ev.type === "response.output_text.delta") hitText += ev.delta;
      if (ev.type === "response.created") expect((ev.response as any).svc_metadata.cache_hit).toBe(true);
    }
    expect(hitText).toBe(text);
    expect(replayed[0]).toBe("response.created");
    expect(replayed.at(-1)).toBe("response.completed");
    expect(seqs).toEqual(seqs.map((_, i) => i));
    expect(env.fake.requests).toHaveLength(1);

    // the SDK's stream helper assembles the rebuilt events into the final Response
    const final = await client.responses.stream(req).finalResponse();
    expect(final.output_text).toBe(text);
    // and a non-streamed request hits the entry the stream stored
    const json = await client.responses.create(req).withResponse();
    expect(json.response.headers.get("x-cache-status")).toBe("HIT");
    expect(json.data.output_text).toBe(text);
    expect(env.fake.requests).toHaveLength(1);
  });

  test("function calls pass through and are cached; a cut stream is not cached", async () => {
    env.fake.reset();
    const tools = [{ type: "function" as const, name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false }];
    const first = await client.responses.create({ model: "gpt-4o-mini", input: "What is the weather in Paris?", tools });
    expect(first.output[0]).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Paris"}', call_id: "call_1" });
    const hit = await client.responses.stream({ model: "gpt-4o-mini", input: "What is the weather in Paris?", tools }).finalResponse();
    expect(hit.output[0]).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Paris"}' });
    expect(env.fake.requests).toHaveLength(1);

    env.fake.failNext({ kind: "cut" });
    const cut = await env.gw.api("/v1/responses", { method: "POST", token: env.token, json: { model: "gpt-4o-mini", input: "Spell river.", stream: true } });
    await cut.text().catch(() => "");
    const after = await env.gw.api("/v1/responses", { method: "POST", token: env.token, json: { model: "gpt-4o-mini", input: "Spell river." } });
    expect(after.headers.get("x-cache-status")).toBe("MISS");
    expect(env.fake.received("/v1/responses")).toHaveLength(3);
  });

  test("validation: model and input are required (400 in the doc1 envelope); a 4xx of the provider passes through", async () => {
    const noInput = await env.gw.api("/v1/responses", { method: "POST", token: env.token, json: { model: "gpt-4o-mini" } });
    expect(noInput.status).toBe(400);
    expect(((await noInput.json()) as any).error).toMatchObject({ type: "validation_error" });
    const empty = await env.gw.api("/v1/responses", { method: "POST", token: env.token, json: { model: "gpt-4o-mini", input: [] } });
    expect(empty.status).toBe(400);
    const unauth = await env.gw.api("/v1/responses", { method: "POST", json: { model: "gpt-4o-mini", input: "x" } });
    expect(unauth.status).toBe(401);
    env.fake.failNext({ kind: "status", status: 400 });
    const e: any = await client.responses.create({ model: "gpt-4o-mini", input: "Bad request please." }).catch((x) => x);
    expect(e.status).toBe(400);
    expect(e.error?.message ?? e.message).toContain("fake openai error 400");
  });
});

describe("CohereClientV2: POST /v2/chat and /v2/embed", () => {
  test("chat: miss forwarded to /v2/chat; repeat is a HIT with the v2 body and the svc object", async () => {
    env.fake.reset();
    const req = {
      model: "command-a-03-2025",
      messages: [
        { role: "system" as const, content: "Answer briefly." },
        { role: "user" as const, content: "Who painted the Mona Lisa?" },
      ],
      temperature: 0.2,
      maxTokens: 30,
    };
    const first = await co.chat(req);
    expect(first.id).toBe("v2-1");
    expect(first.finishReason).toBe("COMPLETE");
    expect(first.message.content?.[0]).toMatchObject({ type: "text", text: "answer #1: Who painted the Mona Lisa?" });
    expect(first.usage?.billedUnits).toMatchObject({ inputTokens: 7, outputTokens: 7 });
    expect((first as any).svc).toEqual({ cache_hit: false, similarity: 0, source: "provider", latency_ms: expect.any(Number) });
    const up = env.fake.requests[0]!;
    expect(up.path).toBe("/v2/chat");
    expect(up.headers.authorization).toBe(`Bearer ${KEYS.cohere}`);
    expect(up.body).toMatchObject({ model: "command-a-03-2025", messages: req.messages, temperature: 0.2, max_tokens: 30 });

    const hit = await co.chat(req).withRawResponse();
    expect(hit.rawResponse.headers.get("x-cache-status")).toBe("HIT");
    expect(hit.data.id).toBe("v2-1");
    expect(hit.data.message.content?.[0]).toMatchObject({ text: "answer #1: Who painted the Mona Lisa?" });
    expect((hit.data as any).svc).toMatchObject({ cache_hit: true, similarity: 1, source: "exact" });
    expect(env.fake.requests).toHaveLength(1);
  });

  test("chatStream: live miss streams the v2 events and caches; the repeat replays them from the cache", async () => {
    env.fake.reset();
    const req = { model: "command-a-03-2025", messages: [{ role: "user" as const, content: "Name a prime number above ten." }] };
    const types: string[] = [];
    let text = "";
    let end: any;
    for await (const ev of await co.chatStream(req)) {
      types.push(ev.type);
      if (ev.type === "content-delta") text += ev.delta?.message?.content?.text ?? "";
      if (ev.type === "message-end") end = ev.delta;
      if (ev.type === "message-start") expect((ev.delta?.message as any)?.svc).toMatchObject({ cache_hit: false, source: "provider" });
    }
    expect(text).toBe("answer #1: Name a prime number above ten.");
    expect(types[0]).toBe("message-start");
    expect(types.at(-1)).toBe("message-end");
    expect(end.finishReason).toBe("COMPLETE");
    expect(env.fake.requests[0]!.body.stream).toBe(true);

    let replayed = "";
    const hitTypes: string[] = [];
    for await (const ev of await co.chatStream(req)) {
      hitTypes.push(ev.type);
      if (ev.type === "content-delta") replayed += ev.delta?.message?.content?.text ?? "";
      if (ev.type === "message-start") expect((ev.delta?.message as any)?.svc).toMatchObject({ cache_hit: true, source: "exact" });
      if (ev.type === "message-end") expect(ev.delta?.usage?.billedUnits?.outputTokens).toBe(8);
    }
    expect(replayed).toBe(text);
    expect(hitTypes).toEqual(["message-start", "content-start", "content-delta", "content-end", "message-end"]);
    expect(env.fake.requests).toHaveLength(1);
    // the non-streamed request hits the entry the stream stored
    const json = await co.chat(req);
    expect(json.message.content?.[0]).toMatchObject({ text });
    expect(env.fake.requests).toHaveLength(1);
  });

  test("tool calls stream and cache (tool plan, call id, arguments)", async () => {
    env.fake.reset();
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const req = { model: "command-a-03-2025", messages: [{ role: "user" as const, content: "What is the weather in Paris?" }], tools };
    let args = "";
    for await (const ev of await co.chatStream(req)) if (ev.type === "tool-call-delta") args += ev.delta?.message?.toolCalls?.function?.arguments ?? "";
    expect(args).toBe('{"city":"Paris"}');
    const hit = await co.chat(req).withRawResponse();
    expect(hit.rawResponse.headers.get("x-cache-status")).toBe("HIT");
    expect(hit.data.finishReason).toBe("TOOL_CALL");
    expect(hit.data.message.toolCalls?.[0]).toMatchObject({ id: "call_1", function: { name: "get_weather", arguments: '{"city":"Paris"}' } });
    expect(hit.data.message.toolPlan).toBe("I will look up the weather.");
    expect(env.fake.requests).toHaveLength(1);
  });

  test("v1 and v2 answers never share an entry", async () => {
    env.fake.reset();
    await co.chat({ model: "command-r", messages: [{ role: "user", content: "Which planet is red?" }] });
    const v1 = await env.gw.api("/v1/chat", { method: "POST", token: env.token, json: { model: "command-r", message: "Which planet is red?" } });
    expect(v1.headers.get("x-cache-status")).toBe("MISS");
    expect(((await v1.json()) as any).text).toBe("answer #2: Which planet is red?");
  });

  test("embed: forwarded to /v2/embed, never cached", async () => {
    env.fake.reset();
    const r = await co.embed({ model: "embed-v4.0", texts: ["alpha", "beta"], inputType: "search_document", embeddingTypes: ["float"] });
    expect(r.embeddings.float).toEqual([
      [0.1, 0.2, 0.3],
      [0.2, 0.2, 0.3],
    ]);
    await co.embed({ model: "embed-v4.0", texts: ["alpha", "beta"], inputType: "search_document", embeddingTypes: ["float"] });
    expect(env.fake.received("/v2/embed")).toHaveLength(2);
    expect(env.fake.requests[0]!.body).toEqual({ model: "embed-v4.0", texts: ["alpha", "beta"], input_type: "search_document", embedding_types: ["float"] });
  });

  test("validation: messages and model required, roles checked, 97 texts rejected and 96 accepted", async () => {
    const post = (path: string, json: unknown) => env.gw.api(path, { method: "POST", token: env.token, json });
    expect((await post("/v2/chat", { messages: [{ role: "user", content: "x" }] })).status).toBe(400);
    expect((await post("/v2/chat", { model: "command-r", messages: [] })).status).toBe(400);
    const badRole = await post("/v2/chat", { model: "command-r", messages: [{ role: "robot", content: "x" }] });
    expect(badRole.status).toBe(400);
    expect(((await badRole.json()) as any).error.type).toBe("validation_error");
    const texts = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);
    expect((await post("/v2/embed", { model: "embed-v4.0", input_type: "search_query", texts: texts(97) })).status).toBe(400);
    expect((await post("/v2/embed", { model: "embed-v4.0", input_type: "search_query", texts: texts(96) })).status).toBe(200);
    expect((await post("/v2/embed", { model: "embed-v4.0", texts: ["x"] })).status).toBe(400);
  });
});

describe("limits and tenant isolation of the new surfaces", () => {
  test("max_output_tokens / max_tokens: 1 accepted, 0 rejected; 401 without a credential on /v2/chat", async () => {
    const post = (path: string, json: unknown) => env.gw.api(path, { method: "POST", token: env.token, json });
    expect((await post("/v1/responses", { model: "gpt-4o-mini", input: "limit one", max_output_tokens: 1 })).status).toBe(200);
    const zero = await post("/v1/responses", { model: "gpt-4o-mini", input: "limit zero", max_output_tokens: 0 });
    expect(zero.status).toBe(400);
    expect(((await zero.json()) as any).error.message).toContain("max_output_tokens");
    expect((await post("/v2/chat", { model: "command-r", messages: [{ role: "user", content: "limit one" }], max_tokens: 1 })).status).toBe(200);
    expect((await post("/v2/chat", { model: "command-r", messages: [{ role: "user", content: "limit zero" }], max_tokens: 0 })).status).toBe(400);
    expect((await env.gw.api("/v2/chat", { method: "POST", json: { model: "command-r", messages: [{ role: "user", content: "x" }] } })).status).toBe(401);
  });

  test("another tenant never hits this tenant's Responses or v2 entries", async () => {
    env.fake.reset();
    const other = await env.gw.token("tenant-b");
    const otherOpenai = new OpenAI({ apiKey: other, baseURL: env.gw.url + "/v1", maxRetries: 0 });
    const otherCo = new CohereClientV2({ token: other, baseUrl: env.gw.url, maxRetries: 0 } as any);
    const r = { model: "gpt-4o-mini", input: "Isolated question about tides." };
    await client.responses.create(r);
    const b = await otherOpenai.responses.create(r).withResponse();
    expect(b.response.headers.get("x-cache-status")).toBe("MISS");
    const c = { model: "command-r", messages: [{ role: "user" as const, content: "Isolated question about comets." }] };
    await co.chat(c);
    const d = await otherCo.chat(c).withRawResponse();
    expect(d.rawResponse.headers.get("x-cache-status")).toBe("MISS");
    expect(env.fake.requests).toHaveLength(4);
  });
});
