/** Generate-content proxy through the official `@google/genai` SDK (apiVersion v1beta) and raw fetch. */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { GoogleGenAI } from "@google/genai";
import { startProxyEnv, KEYS, type ProxyEnv } from "./setup";

let env: ProxyEnv;
let ai: GoogleGenAI;

beforeAll(async () => {
  env = await startProxyEnv();
  ai = new GoogleGenAI({ apiKey: env.token, apiVersion: "v1beta", httpOptions: { baseUrl: env.gw.url } });
});
afterAll(() => env.stop());

const post = (path: string, json: unknown, headers: Record<string, string> = {}) =>
  env.gw.api(path, { method: "POST", headers: { "x-goog-api-key": env.token, ...headers }, json });

describe("generate-content proxy", () => {
  test("SDK generateContent: miss forwards to :generateContent with the configured key; repeat is a HIT", async () => {
    env.fake.reset();
    const req = { model: "gemini-2.0-flash", contents: "Which gas do plants absorb from the air?", config: { temperature: 0.2, maxOutputTokens: 40 } };
    const first = await ai.models.generateContent(req);
    expect(first.text).toBe("answer #1: Which gas do plants absorb from the air?");
    const up = env.fake.requests[0]!;
    expect(up.path).toBe("/v1beta/models/gemini-2.0-flash:generateContent");
    expect(up.headers["x-goog-api-key"]).toBe(KEYS.gemini);
    expect(up.body.contents).toEqual([{ role: "user", parts: [{ text: "Which gas do plants absorb from the air?" }] }]);
    expect(up.body.generationConfig).toEqual({ temperature: 0.2, maxOutputTokens: 40 });
    // the SDK keeps only known fields; headers are on sdkHttpResponse, the svc object is checked with fetch below
    expect(first.sdkHttpResponse?.headers?.["x-cache-status"]).toBe("MISS");

    const again = await ai.models.generateContent(req);
    expect(again.text).toBe(first.text);
    expect(again.sdkHttpResponse?.headers?.["x-cache-status"]).toBe("HIT");
    expect(env.fake.requests).toHaveLength(1);

    const raw = await post("/v1beta/models/gemini-2.0-flash:generateContent", {
      contents: [{ role: "user", parts: [{ text: "Which gas do plants absorb from the air?" }] }],
      generationConfig: { temperature: 0.2, maxOutputTokens: 40 },
    });
    const j = await raw.json();
    expect(j.svc).toEqual({ cache_hit: true, similarity: 1, source: "exact", latency_ms: expect.any(Number) });
    expect(Number.isInteger(j.svc.latency_ms)).toBe(true);
    expect(env.fake.requests).toHaveLength(1);
  });

  test("svc.similarity stays within 0.0-1.0 (doc1 §4.4) on semantic hits whose vectors are the same (float32 dot products overshoot 1)", async () => {
    env.fake.reset();
    // the upper-cased question embeds like the original: a semantic hit of cosine 1 (± float32 rounding)
    const questions = ["Which planet is largest?", "How do bees make honey?", "What causes the tides?", "How far is the moon?", "What is a black hole?"];
    for (const q of questions) {
      const body = (text: string) => ({ contents: [{ role: "user", parts: [{ text }] }] });
      expect((await (await post("/v1beta/models/gemini-2.0-flash/generateContent", body(q))).json()).svc.source).toBe("provider");
      const hit = await (await post("/v1beta/models/gemini-2.0-flash/generateContent", body(q.toUpperCase()))).json();
      expect(hit.svc).toMatchObject({ cache_hit: true, source: "semantic" });
      expect(`${q}: ${hit.svc.similarity >= 0.85 && hit.svc.similarity <= 1}`).toBe(`${q}: true`);
    }
    expect(env.fake.requests).toHaveLength(questions.length);
  });

  test("SDK stream: live chunks, then a rebuilt stream with the same text; non-stream hits the streamed entry", async () => {
    env.fake.reset();
    const req = { model: "gemini-2.0-flash", contents: "Name the longest river in Africa." };
    let live = "";
    for await (const c of await ai.models.generateContentStream(req)) live += c.text ?? "";
    expect(live).toBe("answer #1: Name the longest river in Africa.");
    expect(env.fake.requests[0]!.path).toBe("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse");

    let replay = "";
    let last: any;
    for await (const c of await ai.models.generateContentStream(req)) {
      replay += c.text ?? "";
      last = c;
    }
    expect(replay).toBe(live);
    expect(last.candidates[0].finishReason).toBe("STOP");
    expect(last.sdkHttpResponse?.headers?.["x-cache-status"]).toBe("HIT");
    const json = await ai.models.generateContent(req);
    expect(json.text).toBe(live);
    expect(env.fake.requests).toHaveLength(1);
  });

  test("function calls are forwarded and cached", async () => {
    env.fake.reset();
    const config = { tools: [{ functionDeclarations: [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } as any }] }] };
    const req = { model: "gemini-2.0-flash", contents: "What is the weather in Paris now?", config };
    const first = await ai.models.generateContent(req);
    expect(first.functionCalls?.[0]).toMatchObject({ name: "get_weather", args: { city: "Paris" } });
    expect(env.fake.requests[0]!.body.tools).toEqual(config.tools);
    let streamedCall: any;
    for await (const c of await ai.models.generateContentStream(req)) streamedCall ??= c.functionCalls?.[0];
    expect(streamedCall).toMatchObject({ name: "get_weather", args: { city: "Paris" } });
    expect(env.fake.requests).toHaveLength(1);
  });

  test("countTokens is never cached; embedContent goes through batchEmbedContents; models list/get", async () => {
    env.fake.reset();
    for (let i = 0; i < 2; i++) {
      const c = await ai.models.countTokens({ model: "gemini-2.0-flash", contents: "three little words" });
      expect(c.totalTokens).toBe(3);
    }
    const e = await ai.models.embedContent({ model: "text-embedding-004", contents: ["alpha", "beta"] });
    expect(e.embeddings).toHaveLength(2);
    const m = await ai.models.get({ model: "gemini-1.5-pro" });
    expect(m.name).toBe("models/gemini-1.5-pro");
    expect(m.inputTokenLimit).toBe(1048576);
    const names: string[] = [];
    for await (const model of await ai.models.list()) names.push(model.name!);
    expect(names).toEqual(["models/gemini-2.0-flash", "models/gemini-1.5-pro"]);
    expect(env.fake.requests.map((r) => r.path.split("?")[0])).toEqual([
      "/v1beta/models/gemini-2.0-flash:countTokens",
      "/v1beta/models/gemini-2.0-flash:countTokens",
      "/v1beta/models/text-embedding-004:batchEmbedContents",
      "/v1beta/models/gemini-1.5-pro",
      "/v1beta/models",
    ]);
  });

  test("spec path form /{model}/generateContent, the /v1/ prefix, inline data, X-Cache-Status and envelope", async () => {
    env.fake.reset();
    const body = { contents: [{ role: "user", parts: [{ text: "Describe this picture in one word." }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }] }] };
    let r = await post("/v1beta/models/gemini-1.5-pro/generateContent", body);
    expect(r.status).toBe(200);
    expect(r.headers.get("x-cache-status")).toBe("MISS");
    const j = await r.json();
    const answer: string = j.candidates[0].content.parts[0].text;
    const usage = structuredClone(j.usageMetadata);
    expect(j.candidates[0]).toMatchObject({ content: { role: "model", parts: [{ text: expect.stringContaining("answer #1") }] }, finishReason: "STOP", index: 0 });
    expect(j.usageMetadata).toEqual({ promptTokenCount: 8, candidatesTokenCount: expect.any(Number), totalTokenCount: expect.any(Number) });
    expect(env.fake.requests[0]!.body.contents[0].parts[1]).toEqual({ inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } });

    r = await post("/v1/models/gemini-1.5-pro:generateContent", body);
    expect(r.headers.get("x-cache-status")).toBe("HIT");
    // a different image is a different query
    r = await post("/v1beta/models/gemini-1.5-pro:generateContent", { contents: [{ parts: [{ text: "Describe this picture in one word." }, { inlineData: { mimeType: "image/png", data: "R0lGODlh" } }] }] });
    expect(r.headers.get("x-cache-status")).toBe("MISS");

    // the same question streamed: a hit rebuilt as SSE with the same text, usage and svc on the last event
    const upstreamCalls = env.fake.requests.length;
    r = await post("/v1beta/models/gemini-1.5-pro/streamGenerateContent?alt=sse", body);
    expect(r.headers.get("content-type")).toContain("text/event-stream");
    expect(r.headers.get("x-cache-status")).toBe("HIT");
    const events = (await r.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => JSON.parse(e.slice(6)));
    expect(events.map((e) => e.candidates?.[0]?.content?.parts?.map((p: any) => p.text).join("") ?? "").join("")).toBe(answer);
    expect(events.at(-1)).toMatchObject({ candidates: [{ finishReason: "STOP" }], usageMetadata: usage, svc: { cache_hit: true, source: "exact" } });
    expect(env.fake.requests).toHaveLength(upstreamCalls); // no upstream call for the hit

    r = await post("/v1beta/models/gemini-1.5-pro/generateContent", { contents: [{ role: "user", parts: [{ text: "A brand new question about owls." }] }] });
    // a miss: svc.similarity is the nearest cached question's (0.0-1.0), like svc_metadata's
    const owls = (await r.json()).svc;
    expect(owls).toEqual({ cache_hit: false, similarity: expect.any(Number), source: "provider", latency_ms: expect.any(Number) });
    expect(owls.similarity).toBeGreaterThan(0);
    expect(owls.similarity).toBeLessThan(0.85);
    r = await post("/v1beta/models/gemini-1.5-pro/generateContent", body, { "X-Svc-Skip-Cache": "true" });
    expect(r.headers.get("x-cache-status")).toBe("BYPASS");
    expect((await r.json()).svc).toEqual({ cache_hit: false, similarity: 0, source: "provider", latency_ms: 0 });
  });

  test("streamGenerateContent without alt=sse: the REST API's streamed JSON array, on miss and hit; shares entries with the SSE form", async () => {
    env.fake.reset();
    const body = { contents: [{ role: "user", parts: [{ text: "Which metal is liquid at room temperature?" }] }] };
    const textOf = (arr: any[]) => arr.map((c) => c.candidates?.[0]?.content?.parts?.map((p: any) => p.text ?? "").join("") ?? "").join("");
    let r = await post("/v1beta/models/gemini-2.0-flash:streamGenerateContent", body);
    expect(r.status).toBe(200);
    expect(r.headers.get("x-cache-status")).toBe("MISS");
    expect(r.headers.get("content-type")).toContain("application/json");
    const live = await r.text();
    expect(live.startsWith("[{")).toBe(true);
    expect(live).toContain("\n,\r\n"); // forwarded as the provider sent it
    const liveArr = JSON.parse(live);
    expect(textOf(liveArr)).toBe("answer #1: Which metal is liquid at room temperature?");
    expect(env.fake.requests[0]!.path).toBe("/v1beta/models/gemini-2.0-flash:streamGenerateContent");

    // hit, the colon form under both prefixes: a rebuilt JSON array with the same text, usage and svc on the last element
    for (const path of ["/v1beta/models/gemini-2.0-flash:streamGenerateContent", "/v1/models/gemini-2.0-flash:streamGenerateContent"]) {
      r = await post(path, body);
      expect(r.headers.get("x-cache-status")).toBe("HIT");
      expect(r.headers.get("content-type")).toContain("application/json");
      const arr = JSON.parse(await r.text());
      expect(Array.isArray(arr)).toBe(true);
      expect(textOf(arr)).toBe(textOf(liveArr));
      expect(arr.at(-1)).toMatchObject({ candidates: [{ finishReason: "STOP" }], usageMetadata: liveArr.at(-1).usageMetadata, svc: { cache_hit: true, source: "exact" } });
    }
    // the spec's slash form always streams Server-Sent Events (doc1 §4.4), from the same entry
    for (const path of ["/v1beta/models/gemini-2.0-flash/streamGenerateContent", "/v1/models/gemini-2.0-flash/streamGenerateContent"]) {
      r = await post(path, body);
      expect(r.headers.get("x-cache-status")).toBe("HIT");
      expect(r.headers.get("content-type")).toContain("text/event-stream");
      const events = (await r.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => JSON.parse(e.slice(6)));
      expect(textOf(events)).toBe(textOf(liveArr));
    }
    // the SSE form and the non-streamed call hit the same entry
    r = await post("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", body);
    expect(r.headers.get("x-cache-status")).toBe("HIT");
    expect(await r.text()).toStartWith("data: ");
    r = await post("/v1beta/models/gemini-2.0-flash:generateContent", body);
    expect(r.headers.get("x-cache-status")).toBe("HIT");
    expect(env.fake.requests).toHaveLength(1);

    // an SSE-streamed entry is served as a JSON array too
    const other = { contents: [{ role: "user", parts: [{ text: "Name the smallest planet in the solar system." }] }] };
    await (await post("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", other)).text();
    r = await post("/v1beta/models/gemini-2.0-flash:streamGenerateContent", other);
    expect(r.headers.get("x-cache-status")).toBe("HIT");
    expect(textOf(JSON.parse(await r.text()))).toBe("answer #2: Name the smallest planet in the solar system.");

    // a JSON-array stream cut mid-way: the array ends with the error object (still valid JSON), nothing is cached
    const cutBody = { contents: [{ role: "user", parts: [{ text: "How many moons does Mars have?" }] }] };
    env.fake.failNext({ kind: "cut" });
    r = await post("/v1beta/models/gemini-2.0-flash:streamGenerateContent", cutBody);
    const partial = JSON.parse(await r.text());
    expect(partial.at(-1)).toEqual({ error: { code: 502, message: expect.any(String), status: "UNAVAILABLE" } });
    r = await post("/v1beta/models/gemini-2.0-flash:streamGenerateContent", cutBody);
    expect(r.headers.get("x-cache-status")).toBe("MISS");
    expect(textOf(JSON.parse(await r.text()))).toBe("answer #4: How many moons does Mars have?");
  });

  test("validation, unknown action, provider 4xx pass-through", async () => {
    let r = await post("/v1beta/models/gemini-1.5-pro:generateContent", { generationConfig: {} });
    expect(r.status).toBe(400);
    expect((await r.json()).error.type).toBe("validation_error");
    r = await post("/v1beta/models/gemini-1.5-pro:generateContent", { contents: [{ role: "system", parts: [{ text: "x" }] }] });
    expect(r.status).toBe(400);
    r = await post("/v1beta/models/gemini-1.5-pro:doMagic", { contents: [] });
    expect(r.status).toBe(404);
    expect((await r.json()).error.type).toBe("not_found");
    env.fake.failNext({ kind: "status", status: 400 });
    const err: any = await ai.models.generateContent({ model: "gemini-2.0-flash", contents: "Trigger an error please." }).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toContain("fake gemini error 400");
  });
});
