/**
 * Chat/generate/embed proxy through the official `cohere-ai` SDK. Its `CohereClient` calls the
 * spec's v1 paths (/v1/chat, /v1/generate, /v1/embed); `CohereClientV2` calls /v2/* (not in the spec).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { CohereClient, CohereError } from "cohere-ai";
import { startProxyEnv, KEYS, type ProxyEnv } from "./setup";

let env: ProxyEnv;
let co: CohereClient;

beforeAll(async () => {
  env = await startProxyEnv();
  co = new CohereClient({ token: env.token, baseUrl: env.gw.url, maxRetries: 0 } as any);
});
afterAll(() => env.stop());

const post = (path: string, json: unknown, headers: Record<string, string> = {}) => env.gw.api(path, { method: "POST", token: env.token, headers, json });

describe("chat-style proxy", () => {
  test("SDK chat: miss forwards every field to /v1/chat with the configured key; repeat is a HIT", async () => {
    env.fake.reset();
    const req = {
      message: "Who wrote the novel Moby Dick?",
      model: "command-r",
      preamble: "Answer briefly.",
      chatHistory: [
        { role: "USER" as const, message: "Hello there." },
        { role: "CHATBOT" as const, message: "Hi! How can I help?" },
      ],
      temperature: 0.1,
      maxTokens: 30,
      k: 5,
      p: 0.9,
      stopSequences: ["END"],
      frequencyPenalty: 0.1,
      presencePenalty: 0.2,
    };
    const first = await co.chat(req as any);
    // the request number is not asserted: with test files in parallel workers, a request of another
    // file's gateway can reach this fake upstream when its port is reused (seen once in CI runs)
    expect(first.text).toMatch(/^answer #\d+: Who wrote the novel Moby Dick\?$/);
    const mine = env.fake.requests.filter((r) => r.path === "/v1/chat" && r.body?.message === req.message);
    expect(mine).toHaveLength(1);
    const up = mine[0]!;
    expect(up.path).toBe("/v1/chat");
    expect(up.headers.authorization).toBe(`Bearer ${KEYS.cohere}`);
    expect(up.body).toEqual({
      message: "Who wrote the novel Moby Dick?",
      model: "command-r",
      preamble: "Answer briefly.",
      chat_history: [
        { role: "USER", message: "Hello there." },
        { role: "CHATBOT", message: "Hi! How can I help?" },
      ],
      temperature: 0.1,
      max_tokens: 30,
      k: 5,
      p: 0.9,
      stop_sequences: ["END"],
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      stream: false, // the SDK sends it
    });
    const again = await co.chat(req as any);
    expect(again.text).toBe(first.text);
    expect(again.generationId).toBe(first.generationId);
    expect((again as any).svc).toMatchObject({ cache_hit: true, similarity: 1, source: "exact" });
    expect(env.fake.requests.filter((r) => r.path === "/v1/chat" && r.body?.message === req.message)).toHaveLength(1);
  });

  test("raw envelope: svc on a miss, headers, meta", async () => {
    env.fake.reset();
    const r = await post("/v1/chat", { message: "What colour are bananas when ripe?" });
    expect(r.headers.get("x-cache-status")).toBe("MISS");
    expect(r.headers.get("x-request-id")).toBeTruthy();
    const j = await r.json();
    expect(j).toMatchObject({ response_id: "resp-1", generation_id: "gen-1", finish_reason: "COMPLETE", meta: { api_version: { version: "1" }, billed_units: { input_tokens: 9 } } });
    // a miss reports the nearest cached question's similarity (earlier tests cached questions of this tenant)
    expect(j.svc).toEqual({ cache_hit: false, similarity: expect.any(Number), source: "provider", latency_ms: expect.any(Number) });
    expect(j.svc.similarity).toBeGreaterThanOrEqual(0);
    expect(j.svc.similarity).toBeLessThan(1);
    const b = await post("/v1/chat", { message: "What colour are bananas when ripe?" }, { "X-Svc-Skip-Cache": "1" });
    expect(b.headers.get("x-cache-status")).toBe("BYPASS");
    expect((await b.json()).svc).toEqual({ cache_hit: false, similarity: 0, source: "provider", latency_ms: 0 });
  });

  test("SDK chat miss: svc.similarity is the nearest cached question's, the same as chat-completions' svc_metadata reports", async () => {
    const token = await env.gw.token("tenant-nearest");
    const c = new CohereClient({ token, baseUrl: env.gw.url, maxRetries: 0 } as any);
    const ask = (message: string) => c.chat({ message, model: "command-r" } as any) as Promise<any>;
    // nothing cached for this tenant yet: nothing compared, 0
    const first = await ask("How tall is the Eiffel Tower in Paris?");
    expect(first.svc).toMatchObject({ cache_hit: false, similarity: 0, source: "provider" });
    // a related question that is not the same: a miss whose nearest candidate is the first question
    const related = await ask("What is the best time of year to visit Paris?");
    expect(related.svc.cache_hit).toBe(false);
    expect(related.svc.similarity).toBeGreaterThan(0.2);
    expect(related.svc.similarity).toBeLessThan(0.85);
    // the same comparison seen through the chat-completions style reports the same nearest similarity
    const oa = await env.gw.api("/v1/chat/completions", { method: "POST", token, json: { model: "gpt-4o-mini", messages: [{ role: "user", content: "How tall is the Eiffel Tower in Paris?" }] } });
    await oa.json();
    const oa2 = (await (await env.gw.api("/v1/chat/completions", { method: "POST", token, json: { model: "gpt-4o-mini", messages: [{ role: "user", content: "What is the best time of year to visit Paris?" }] } })).json()) as any;
    expect(oa2.svc_metadata.cache_hit).toBe(false);
    expect(oa2.svc_metadata.similarity).toBeCloseTo(related.svc.similarity, 4);
  });

  test("/v1/chat streams Server-Sent Events (doc1 §4.5) on a live miss and a rebuilt hit; newline-delimited JSON when asked", async () => {
    env.fake.reset();
    const req = { message: "Name a moon of Jupiter.", model: "command-r", stream: true };
    const sseEvents = async (r: Response) => {
      expect(r.headers.get("content-type")).toBe("text/event-stream");
      return (await r.text())
        .split("\n\n")
        .filter((b) => b.trim())
        .map((b) => {
          const lines = b.split("\n");
          const data = JSON.parse(lines.find((l) => l.startsWith("data: "))!.slice(6));
          expect(lines[0]).toBe(`event: ${data.event_type}`);
          return data;
        });
    };
    const textOf = (evs: any[]) => evs.filter((e) => e.event_type === "text-generation").map((e) => e.text).join("");
    const live = await post("/v1/chat", req);
    expect(live.headers.get("x-cache-status")).toBe("MISS");
    const liveEvents = await sseEvents(live);
    expect(liveEvents[0].event_type).toBe("stream-start");
    expect(liveEvents.at(-1)).toMatchObject({ event_type: "stream-end", finish_reason: "COMPLETE" });
    expect(textOf(liveEvents)).toBe("answer #1: Name a moon of Jupiter.");
    const hit = await post("/v1/chat", req);
    expect(hit.headers.get("x-cache-status")).toBe("HIT");
    const hitEvents = await sseEvents(hit);
    expect(textOf(hitEvents)).toBe(textOf(liveEvents));
    expect(hitEvents.at(-1).response.svc).toMatchObject({ cache_hit: true, source: "exact" });
    // a client asking for the provider's default framing gets newline-delimited JSON
    const nd = await post("/v1/chat", req, { accept: "application/stream+json" });
    expect(nd.headers.get("content-type")).toBe("application/stream+json");
    const lines = (await nd.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(textOf(lines)).toBe(textOf(liveEvents));
    expect(env.fake.requests).toHaveLength(1);
  });

  test("SDK chatStream: live events, then rebuilt events with the same text; JSON request hits the streamed entry", async () => {
    env.fake.reset();
    const req = { message: "Name a planet with rings.", model: "command-r" };
    const collect = async () => {
      let text = "";
      let end: any;
      for await (const ev of await co.chatStream(req)) {
        if (ev.eventType === "text-generation") text += ev.text;
        if (ev.eventType === "stream-end") end = ev;
      }
      return { text, end };
    };
    const live = await collect();
    expect(live.text).toBe("answer #1: Name a planet with rings.");
    expect(live.end.finishReason).toBe("COMPLETE");
    expect(env.fake.requests[0]!.body.stream).toBe(true);
    const replay = await collect();
    expect(replay.text).toBe(live.text);
    expect(replay.end.response.text).toBe(live.text);
    const json = await co.chat(req);
    expect(json.text).toBe(live.text);
    expect(env.fake.requests).toHaveLength(1);
  });

  test("documents with citations, connectors, conversation_id, tools", async () => {
    env.fake.reset();
    const documents = [{ id: "doc1", title: "Whales", text: "Blue whales are the largest animals." }];
    const r1 = await co.chat({ message: "Which animal is the largest?", documents, connectors: [{ id: "web-search" }], conversationId: "conv-1" } as any);
    expect(r1.citations?.[0]).toMatchObject({ start: 0, end: 6, documentIds: ["doc1"] });
    expect(env.fake.requests[0]!.body).toMatchObject({ documents, connectors: [{ id: "web-search" }], conversation_id: "conv-1" });
    // another conversation does not share the entry (the provider adds its own stored history)
    await co.chat({ message: "Which animal is the largest?", documents, connectors: [{ id: "web-search" }], conversationId: "conv-2" } as any);
    expect(env.fake.requests).toHaveLength(2);

    const tools = [{ name: "get_weather", description: "weather", parameterDefinitions: { city: { type: "str", required: true } } }];
    const t1 = await co.chat({ message: "What is the weather in Paris?", tools } as any);
    expect(t1.toolCalls?.[0]).toEqual({ name: "get_weather", parameters: { city: "Paris" } });
    let streamedCalls: any;
    for await (const ev of await co.chatStream({ message: "What is the weather in Paris?", tools } as any)) if (ev.eventType === "tool-calls-generation") streamedCalls = ev.toolCalls;
    expect(streamedCalls).toEqual(t1.toolCalls);
    expect(env.fake.requests).toHaveLength(3);
  });

  test("SDK generate: svc.source is provider on a miss; repeat is a HIT", async () => {
    env.fake.reset();
    const g1 = await co.generate({ prompt: "Write a haiku about rain.", maxTokens: 40, returnLikelihoods: "NONE" } as any);
    expect(g1.generations[0]!.text).toBe("answer #1: Write a haiku about rain.");
    expect(env.fake.requests[0]!.path).toBe("/v1/generate");
    expect(env.fake.requests[0]!.body).toEqual({ prompt: "Write a haiku about rain.", max_tokens: 40, return_likelihoods: "NONE", stream: false });
    const r = await post("/v1/generate", { prompt: "Write a haiku about snow." });
    expect((await r.json()).svc).toEqual({ cache_hit: false, similarity: 0, source: "provider", latency_ms: expect.any(Number) });
    const g2 = await co.generate({ prompt: "Write a haiku about rain.", maxTokens: 40, returnLikelihoods: "NONE" } as any);
    expect(g2.id).toBe(g1.id);
    expect(env.fake.requests).toHaveLength(2);
  });

  test("SDK generateStream: live events, stored; replayed as the provider's generate stream; JSON generate hits it; a cut stream is not cached", async () => {
    env.fake.reset();
    const req = { prompt: "Write a limerick about a cat.", maxTokens: 50 };
    const collect = async () => {
      let text = "";
      let end: any;
      for await (const ev of await co.generateStream(req)) {
        if (ev.eventType === "text-generation") text += ev.text;
        if (ev.eventType === "stream-end") end = ev;
      }
      return { text, end };
    };
    const live = await collect();
    expect(live.text).toBe("answer #1: Write a limerick about a cat.");
    expect(live.end.finishReason).toBe("COMPLETE");
    expect(env.fake.requests[0]!.body).toMatchObject({ prompt: req.prompt, max_tokens: 50, stream: true });
    const replay = await collect();
    expect(replay.text).toBe(live.text);
    expect(replay.end.finishReason).toBe("COMPLETE");
    expect(replay.end.response.generations[0].text).toBe(live.text);
    expect(env.fake.requests).toHaveLength(1);
    // the raw replay: provider content type, svc in stream-end.response, HIT header
    const raw = await post("/v1/generate", { prompt: req.prompt, max_tokens: 50, stream: true });
    expect(raw.headers.get("x-cache-status")).toBe("HIT");
    expect(raw.headers.get("content-type")).toBe("application/stream+json");
    const lines = (await raw.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.at(-1)).toMatchObject({ event_type: "stream-end", is_finished: true, response: { id: "gen-1", svc: { cache_hit: true, source: "exact" } } });
    const json = await co.generate(req);
    expect(json.generations[0]!.text).toBe(live.text);
    expect(env.fake.requests).toHaveLength(1);

    env.fake.failNext({ kind: "cut" });
    const cut = await post("/v1/generate", { prompt: "Write a sonnet about the sea.", stream: true });
    const cutLines = (await cut.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(cutLines.at(-1)).toMatchObject({ event_type: "stream-error", is_finished: true, finish_reason: "ERROR" });
    const again = await post("/v1/generate", { prompt: "Write a sonnet about the sea.", stream: true });
    expect(again.headers.get("x-cache-status")).toBe("MISS");
    await again.text();
    expect(env.fake.requests).toHaveLength(3);
  });

  test("SDK embed forwarded; more than 96 texts -> 400 validation_error", async () => {
    env.fake.reset();
    const e = await co.embed({ texts: ["a", "b"], model: "embed-english-v3.0", inputType: "search_document" });
    expect((e as any).embeddings).toHaveLength(2);
    expect(env.fake.requests[0]!.body).toEqual({ texts: ["a", "b"], model: "embed-english-v3.0", input_type: "search_document" });
    // doc1 §8 "texts (embed) | max 96 items", both sides of the boundary
    const at = await co.embed({ texts: Array.from({ length: 96 }, (_, i) => `t${i}`) });
    expect((at as any).embeddings).toHaveLength(96);
    expect(env.fake.requests).toHaveLength(2);
    const r = await post("/v1/embed", { texts: Array.from({ length: 97 }, (_, i) => `t${i}`) });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: { message: "body field 'texts': Expected array length to be less or equal to 96", type: "validation_error" } });
    expect(env.fake.requests).toHaveLength(2);
    const bad = await post("/v1/embed", { texts: ["x"], input_type: "poetry" });
    expect(bad.status).toBe(400);
    const err: any = await co.embed({ texts: Array.from({ length: 97 }, (_, i) => `t${i}`) }).catch((x) => x);
    expect(err).toBeInstanceOf(CohereError);
    expect(err.statusCode).toBe(400);
  });

  test("chat validation and provider 4xx pass-through", async () => {
    let r = await post("/v1/chat", { model: "command-r" });
    expect(r.status).toBe(400);
    r = await post("/v1/chat", { message: "x", chat_history: [{ role: "ROBOT", message: "y" }] });
    expect(r.status).toBe(400);
    env.fake.failNext({ kind: "status", status: 422 });
    const err: any = await co.chat({ message: "Please fail for me." }).catch((e) => e);
    expect(err.statusCode).toBe(422);
    expect(err.body).toEqual({ message: "fake cohere error 422", error: { message: "fake cohere error 422", type: "validation_error" } }); // doc1's fields added
  });
});
