/**
 * How a live stream ends when its upstream misbehaves, seen through the official SDKs:
 * generate-content streams end with an error chunk in the API's own shape (which @google/genai
 * throws) when the upstream is cut mid-stream, answers a truncated non-SSE body, or drips; and
 * every style's stream has an idle bound counted in complete events (providers.<p>.stream_idle_ms),
 * so a provider dripping one byte per 500 ms cannot hold a stream open, and a total bound
 * (stream_max_ms). Nothing of a failed stream is cached.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { startProxyEnv, type ProxyEnv } from "./setup";

const IDLE_MS = 1_000;
/** one byte every 500 ms: without an event-based idle bound each byte would re-arm the timer */
const DRIP = { kind: "drip" as const, everyMs: 500, by: "byte" as const };
const STYLES = ["openai", "anthropic", "gemini", "cohere"] as const;

let env: ProxyEnv;
let ai: GoogleGenAI;

// each test waits out idle bounds and slow drips by design (a few seconds); room for a busy machine
setDefaultTimeout(30_000);

beforeAll(async () => {
  env = await startProxyEnv({ providers: Object.fromEntries(STYLES.map((p) => [p, { stream_idle_ms: IDLE_MS }])) });
  ai = new GoogleGenAI({ apiKey: env.token, apiVersion: "v1beta", httpOptions: { baseUrl: env.gw.url } });
});
afterAll(() => env.stop());

const sseData = (text: string) =>
  text
    .split(/\r?\n\r?\n/)
    .filter((b) => b.includes("data: "))
    .map((b) => JSON.parse(b.slice(b.indexOf("data: ") + 6)));

/** The SDK stream's text and the error it ended with (undefined = it completed). */
async function geminiStream(q: string): Promise<{ text: string; err: any; ms: number }> {
  const t0 = performance.now();
  let text = "";
  try {
    for await (const c of await ai.models.generateContentStream({ model: "gemini-2.0-flash", contents: q })) text += c.text ?? "";
    return { text, err: undefined, ms: performance.now() - t0 };
  } catch (err) {
    return { text, err, ms: performance.now() - t0 };
  }
}

/** The repeat of a failed request goes upstream again: nothing was cached. */
async function notCached(q: string) {
  const before = env.fake.received("/v1beta/models/gemini-2.0-flash:streamGenerateContent").length;
  const again = await geminiStream(q);
  expect(again.err).toBeUndefined();
  expect(again.text).toEndWith(q);
  expect(env.fake.received("/v1beta/models/gemini-2.0-flash:streamGenerateContent")).toHaveLength(before + 1);
}

describe("generate-content streams end with an in-band error", () => {
  test("upstream cut mid-stream: the SDK gets the chunks sent before, then throws the error chunk (502 UNAVAILABLE)", async () => {
    const q = "Tell me about the river Loire and its castles.";
    env.fake.failNext({ kind: "cut" });
    const r = await geminiStream(q);
    expect(r.text.length).toBeGreaterThan(0); // what came before the failure reached the client
    expect(r.err?.status).toBe(502);
    expect(String(r.err?.message)).toContain("UNAVAILABLE");
    await notCached(q);
  });

  test("a truncated non-SSE body: the SDK throws 'ended before completion' instead of returning nothing", async () => {
    const q = "Tell me about the river Rhone and its delta.";
    env.fake.failNext({ kind: "truncated" });
    const r = await geminiStream(q);
    expect(r.err?.status).toBe(502);
    expect(String(r.err?.message)).toContain("upstream stream ended before completion");
    // the raw stream: only the error chunk, at an event boundary (the truncated JSON never reaches the client)
    env.fake.failNext({ kind: "truncated" });
    const raw = await env.gw.api("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", { method: "POST", token: env.token, json: { contents: [{ parts: [{ text: q }] }] } });
    expect(sseData(await raw.text())).toEqual([{ error: { code: 502, message: "upstream stream ended before completion", status: "UNAVAILABLE" } }]);
    await notCached(q);
  });

  test("a provider dripping one byte per 500 ms: the stream ends with a timeout error chunk (504) after the idle bound", async () => {
    const q = "Tell me about the river Seine and the bridges of Paris.";
    const cancelled = env.fake.cancelled;
    env.fake.failNext(DRIP);
    const r = await geminiStream(q);
    expect(r.err?.status).toBe(504);
    expect(String(r.err?.message)).toContain("DEADLINE_EXCEEDED");
    expect(String(r.err?.message)).toContain(`did not answer within ${IDLE_MS} ms`);
    // the whole answer would take minutes at this rate; the bound cut it within about a second of the last event
    expect(r.ms).toBeLessThan(IDLE_MS + 4_000);
    for (let i = 0; i < 200 && env.fake.cancelled === cancelled; i++) await Bun.sleep(10);
    expect(env.fake.cancelled).toBe(cancelled + 1); // the upstream request was aborted, not left dripping
    await notCached(q);
  });

  test("the REST JSON-array form stays valid JSON: its last element is the error object (cut, drip)", async () => {
    for (const failure of [{ kind: "cut" as const }, DRIP]) {
      const q = `Tell me about the river Garonne (${failure.kind}).`;
      env.fake.failNext(failure);
      const r = await env.gw.api("/v1beta/models/gemini-2.0-flash:streamGenerateContent", { method: "POST", token: env.token, json: { contents: [{ parts: [{ text: q }] }] } });
      const array = JSON.parse(await r.text());
      expect(Array.isArray(array)).toBe(true);
      expect(array.length).toBeGreaterThan(1);
      expect(array[0].candidates[0].content.parts[0].text).toStartWith("answer");
      expect(array.at(-1)).toEqual({ error: failure.kind === "cut" ? { code: 502, message: expect.any(String), status: "UNAVAILABLE" } : { code: 504, message: expect.stringContaining("did not answer"), status: "DEADLINE_EXCEEDED" } });
      expect(array.slice(0, -1).some((c: any) => c.candidates?.[0]?.finishReason)).toBe(false);
    }
  });

  test("a stream that makes progress (one whole event every 300 ms) is not cut by the idle bound", async () => {
    const q = "Name three rivers of France, please, in order of their length.";
    env.fake.failNext({ kind: "drip", everyMs: 300, by: "frame" });
    const r = await geminiStream(q);
    expect(r.err).toBeUndefined();
    expect(r.text).toMatch(/^answer #\d+: /);
    expect(r.text).toEndWith(q);
    expect(r.ms).toBeGreaterThan(IDLE_MS); // longer in all than the idle bound
  });
});

describe("every style's stream has the idle bound", () => {
  test("openai SDK: a byte drip ends the stream with the style's error within the bound", async () => {
    const client = new OpenAI({ apiKey: env.token, baseURL: `${env.gw.url}/v1`, maxRetries: 0 });
    env.fake.failNext(DRIP);
    const t0 = performance.now();
    let text = "";
    const err: any = await (async () => {
      for await (const c of await client.chat.completions.create({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "Describe the Danube delta in detail." }] }))
        text += c.choices[0]?.delta?.content ?? "";
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toContain(`did not answer within ${IDLE_MS} ms`);
    expect(performance.now() - t0).toBeLessThan(IDLE_MS + 4_000);
  });

  test("anthropic SDK: a byte drip ends the stream with an error event within the bound", async () => {
    const client = new Anthropic({ apiKey: env.token, baseURL: env.gw.url, maxRetries: 0 });
    env.fake.failNext(DRIP);
    const t0 = performance.now();
    const err: any = await (async () => {
      for await (const _ of await client.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 50, stream: true, messages: [{ role: "user", content: "Describe the Alps in detail." }] })) {
      }
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toContain(`did not answer within ${IDLE_MS} ms`);
    expect(performance.now() - t0).toBeLessThan(IDLE_MS + 4_000);
  });

  test("chat style v1 (SSE and NDJSON), v2 and the Responses API: the drip ends with their error events within the bound", async () => {
    env.fake.failNext(DRIP);
    let t0 = performance.now();
    const chat = await env.gw.api("/v1/chat", { method: "POST", token: env.token, json: { message: "Describe the Rhine in detail.", model: "command-r", stream: true } });
    const events = sseData(await chat.text());
    expect(events.at(-1)).toMatchObject({ event_type: "stream-end", finish_reason: "ERROR", error: expect.stringContaining(`did not answer within ${IDLE_MS} ms`) });
    expect(performance.now() - t0).toBeLessThan(IDLE_MS + 4_000);

    // the v1 SDK's NDJSON framing, and the v2 API
    env.fake.failNext(DRIP);
    t0 = performance.now();
    const ndjson = await env.gw.api("/v1/chat", { method: "POST", token: env.token, headers: { accept: "application/stream+json" }, json: { message: "Describe the Oder in detail.", model: "command-r", stream: true } });
    const lines = (await ndjson.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.at(-1)).toMatchObject({ event_type: "stream-end", finish_reason: "ERROR", error: expect.stringContaining(`did not answer within ${IDLE_MS} ms`) });
    expect(performance.now() - t0).toBeLessThan(IDLE_MS + 4_000);
    env.fake.failNext(DRIP);
    t0 = performance.now();
    const v2 = await env.gw.api("/v2/chat", { method: "POST", token: env.token, json: { model: "command-r", stream: true, messages: [{ role: "user", content: "Describe the Weser in detail." }] } });
    expect(sseData(await v2.text()).at(-1)).toMatchObject({ type: "message-end", delta: { finish_reason: "ERROR", error: expect.stringContaining(`did not answer within ${IDLE_MS} ms`) } });
    expect(performance.now() - t0).toBeLessThan(IDLE_MS + 4_000);

    env.fake.failNext(DRIP);
    t0 = performance.now();
    const responses = await env.gw.api("/v1/responses", { method: "POST", token: env.token, json: { model: "gpt-4o-mini", input: "Describe the Elbe in detail.", stream: true } });
    expect(sseData(await responses.text()).at(-1)).toMatchObject({ type: "error", code: "timeout_error", message: expect.stringContaining(`did not answer within ${IDLE_MS} ms`) });
    expect(performance.now() - t0).toBeLessThan(IDLE_MS + 4_000);
  });
});

describe("stream_max_ms bounds a whole stream", () => {
  let env2: ProxyEnv;
  beforeAll(async () => {
    env2 = await startProxyEnv({ providers: { gemini: { stream_idle_ms: 1_000, stream_max_ms: 1_200 } } });
  });
  afterAll(() => env2.stop());

  test("a stream still making progress past stream_max_ms ends with a timeout error chunk naming the setting", async () => {
    const ai2 = new GoogleGenAI({ apiKey: env2.token, apiVersion: "v1beta", httpOptions: { baseUrl: env2.gw.url } });
    // one whole event every 300 ms, more than a dozen of them: progress, but longer in all than 1.2 s
    env2.fake.failNext({ kind: "drip", everyMs: 300, by: "frame" });
    let text = "";
    const err: any = await (async () => {
      for await (const c of await ai2.models.generateContentStream({ model: "gemini-2.0-flash", contents: "Tell me, in many words, about every river that flows through the city of Lyon." }))
        text += c.text ?? "";
    })().catch((e) => e);
    expect(text.length).toBeGreaterThan(0);
    expect(err?.status).toBe(504);
    expect(String(err?.message)).toContain("stream_max_ms");
  });
});
