/**
 * Proxy limits and failure paths: a stream that stalls mid-way (idle timeout), the
 * upstream.max_in_flight bound, tokens/minute charged from the response's usage, and an
 * embedder outage seen through the official SDKs.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { CohereClient } from "cohere-ai";
import { startProxyEnv, type ProxyEnv } from "./setup";
import { closedPort } from "../fake-upstream/server";

const chat = (q: string, extra: Record<string, unknown> = {}) => ({ model: "gpt-4o-mini", messages: [{ role: "user", content: q }], ...extra });

describe("stalled stream", () => {
  let env: ProxyEnv;
  beforeAll(async () => {
    env = await startProxyEnv({ providers: { openai: { timeout_ms: 500 }, anthropic: { timeout_ms: 500 }, cohere: { timeout_ms: 500 }, gemini: { timeout_ms: 500 } } });
  });
  afterAll(() => env.stop());

  test("chat-completions: the idle timeout ends the client's stream with an error frame, aborts the upstream, caches nothing", async () => {
    env.fake.reset();
    const before = env.fake.cancelled;
    env.fake.failNext({ kind: "stall" });
    const body = chat("Tell me about the river Danube.", { stream: true });
    const r = await env.gw.api("/v1/chat/completions", { method: "POST", token: env.token, json: body });
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).toContain('"delta"'); // the frames sent before the stall reached the client
    const frames = text.trim().split("\n\n");
    expect(JSON.parse(frames.at(-1)!.replace(/^data: /, ""))).toEqual({ error: { message: expect.stringContaining("did not answer within 500 ms"), type: "timeout_error" } });
    expect(text).not.toContain("[DONE]");
    for (let i = 0; i < 100 && env.fake.cancelled === before; i++) await Bun.sleep(10);
    expect(env.fake.cancelled).toBe(before + 1); // the upstream stream was cancelled, not left hanging
    const again = await env.gw.api("/v1/chat/completions", { method: "POST", token: env.token, json: body });
    expect(again.headers.get("x-cache-status")).toBe("MISS");
    expect(await again.text()).toContain("[DONE]");
    expect(env.fake.received("/v1/chat/completions")).toHaveLength(2);
  });

  test("messages via the SDK: the stall surfaces as an error event; the repeat goes upstream again", async () => {
    env.fake.reset();
    const client = new Anthropic({ apiKey: env.token, baseURL: env.gw.url, maxRetries: 0 });
    const req = { model: "claude-3-5-haiku-latest", max_tokens: 50, messages: [{ role: "user" as const, content: "Describe the Alps briefly." }] };
    env.fake.failNext({ kind: "stall" });
    const err: any = await (async () => {
      for await (const _ of await client.messages.create({ ...req, stream: true })) {
      }
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toContain("did not answer within 500 ms");
    const ok = await client.messages.create(req).withResponse();
    expect(ok.response.headers.get("x-cache-status")).toBe("MISS");
    expect(env.fake.received("/v1/messages")).toHaveLength(2);
  });

  // the chat style (SSE by default, NDJSON for the v1 SDK) and generate-content (SSE: an error chunk in the API's shape)
  const chatReq = (q: string, headers: Record<string, string> = {}) =>
    env.gw.api("/v1/chat", { method: "POST", token: env.token, headers, json: { message: q, model: "command-r", stream: true } });
  const geminiReq = (q: string) =>
    env.gw.api("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", { method: "POST", token: env.token, json: { contents: [{ role: "user", parts: [{ text: q }] }] } });

  for (const kind of ["stall", "cut"] as const) {
    test(`chat style, ${kind}: the stream ends with stream-end ERROR (SSE and NDJSON framings); nothing is cached`, async () => {
      env.fake.reset();
      for (const [framing, headers] of [["sse", {}], ["ndjson", { accept: "application/stream+json" }]] as const) {
        const q = `Tell me about the Rhine (${kind}, ${framing}).`;
        env.fake.failNext({ kind });
        const r = await chatReq(q, headers);
        expect(r.status).toBe(200);
        const text = await r.text();
        const events = framing === "sse" ? text.split("\n\n").filter((b) => b.includes("data: ")).map((b) => JSON.parse(b.slice(b.indexOf("data: ") + 6))) : text.trim().split("\n").map((l) => JSON.parse(l));
        expect(events.some((e) => e.event_type === "text-generation")).toBe(true); // what came before the failure reached the client
        expect(events.at(-1)).toMatchObject({ event_type: "stream-end", finish_reason: "ERROR", is_finished: true });
        if (kind === "stall") expect(events.at(-1).error).toContain("did not answer within 500 ms");
        const again = await chatReq(q, headers);
        expect(again.headers.get("x-cache-status")).toBe("MISS");
        await again.text();
      }
    });

    test(`generate-content, ${kind}: the stream ends with an error chunk (no completion chunk); nothing is cached`, async () => {
      env.fake.reset();
      const q = `Tell me about the Loire (${kind}).`;
      env.fake.failNext({ kind });
      const r = await geminiReq(q);
      expect(r.status).toBe(200);
      const body = await r.text();
      expect(body).not.toContain('"finishReason":"STOP"');
      const chunks = body.split("\n\n").filter((b) => b.startsWith("data: ")).map((b) => JSON.parse(b.slice(6)));
      expect(chunks.some((c) => c.candidates)).toBe(true); // what came before the failure reached the client
      expect(chunks.at(-1)).toEqual({ error: kind === "stall" ? { code: 504, message: expect.stringContaining("did not answer within 500 ms"), status: "DEADLINE_EXCEEDED" } : { code: 502, message: expect.any(String), status: "UNAVAILABLE" } });
      const again = await geminiReq(q);
      expect(again.headers.get("x-cache-status")).toBe("MISS");
      expect(await again.text()).toContain('"finishReason":"STOP"');
    });
  }
});

describe("upstream.max_in_flight", () => {
  let env: ProxyEnv;
  beforeAll(async () => {
    env = await startProxyEnv({ upstream: { max_in_flight: 1, queue_timeout_ms: 5_000 }, providers: { openai: { timeout_ms: 1_500 } } });
  });
  afterAll(() => env.stop());
  const post = (q: string) => env.gw.api("/v1/chat/completions", { method: "POST", token: env.token, json: chat(q) });
  /** until the hung request holds the only slot (it reached the upstream) */
  const slotTaken = async () => {
    for (let i = 0; i < 500 && env.fake.received("/v1/chat/completions").length === 0; i++) await Bun.sleep(5);
  };

  test("beyond the bound a request waits for a slot (FIFO) and is served once one frees", async () => {
    env.fake.reset();
    env.fake.failNext({ kind: "hang" });
    const [first, second] = await Promise.all([post("First question, it will hang."), slotTaken().then(() => post("Second question, it waits."))]);
    expect(first.status).toBe(504); // the hung one hit its deadline and released the slot
    expect(second.status).toBe(200);
    expect(((await second.json()) as any).choices[0].message.content).toBe("answer #1: Second question, it waits.");
    expect(env.fake.received("/v1/chat/completions").map((r) => r.body.messages[0].content)).toEqual(["First question, it will hang.", "Second question, it waits."]);
  });

  test("a request that gets no slot within upstream.queue_timeout_ms is 503 service_unavailable; the SDK sees a 503", async () => {
    env.fake.reset();
    env.gw.ctx.config.upstream.queue_timeout_ms = 50;
    try {
      env.fake.failNext({ kind: "hang" });
      const hung = post("This one holds the only slot.");
      await slotTaken();
      const r = await post("This one finds no slot.");
      expect(r.status).toBe(503);
      expect(await r.json()).toEqual({ error: { message: expect.stringContaining("too many upstream requests in flight (1)"), type: "service_unavailable" } });
      expect(r.headers.get("x-cache-status")).toBe("MISS");
      const client = new OpenAI({ apiKey: env.token, baseURL: env.gw.url + "/v1", maxRetries: 0 });
      const err: any = await client.chat.completions.create(chat("The SDK finds no slot either.") as any).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err.status).toBe(503);
      expect(err.error).toMatchObject({ type: "service_unavailable" });
      expect((await hung).status).toBe(504);
      // the slot is free again; queued requests never reached the upstream
      expect((await post("After the storm.")).status).toBe(200);
      expect(env.fake.received("/v1/chat/completions").map((x) => x.body.messages[0].content)).toEqual(["This one holds the only slot.", "After the storm."]);
    } finally {
      env.gw.ctx.config.upstream.queue_timeout_ms = 5_000;
    }
  });
});

describe("upstream queue order", () => {
  test("queued requests get the slot in arrival order (FIFO); one whose client left never reaches the upstream", async () => {
    const env = await startProxyEnv({ upstream: { max_in_flight: 1, queue_timeout_ms: 30_000 }, providers: { openai: { timeout_ms: 30_000 } } });
    try {
    const post = (q: string) => env.gw.api("/v1/chat/completions", { method: "POST", token: env.token, json: chat(q) });
    const slotTaken = async () => {
      for (let i = 0; i < 500 && env.fake.received("/v1/chat/completions").length === 0; i++) await Bun.sleep(5);
    };
    const gauge = async (name: string) => Number((await (await env.gw.api("/metrics")).text()).match(new RegExp(`^${name} (\\d+)`, "m"))?.[1] ?? -1);
    const queued = async (n: number) => {
      for (let i = 0; i < 500 && (await gauge("svc_upstream_queued")) !== n; i++) await Bun.sleep(5);
      expect(await gauge("svc_upstream_queued")).toBe(n);
    };
    let release!: () => void;
    env.fake.failNext({ kind: "hold", until: new Promise<void>((r) => (release = r)) });
    const hold = post("Holder of the only slot.");
    await slotTaken();
    const a = post("Queued first.");
    await queued(1);
    const leaving = new AbortController();
    const b = env.gw.api("/v1/chat/completions", { method: "POST", token: env.token, json: chat("Queued second, then gone."), signal: leaving.signal }).catch((e) => e);
    await queued(2);
    const c = post("Queued third.");
    await queued(3);
    leaving.abort();
    await queued(2); // the departed client left the queue at once
    release();
    expect((await hold).status).toBe(200);
    expect((await a).status).toBe(200);
    expect((await c).status).toBe(200);
    expect(await b).toBeInstanceOf(Error);
    expect(env.fake.received("/v1/chat/completions").map((r) => r.body.messages[0].content)).toEqual(["Holder of the only slot.", "Queued first.", "Queued third."]);
    expect(await gauge("svc_upstream_in_flight")).toBe(0);
    } finally {
      await env.stop();
    }
  }, 60_000);

});

describe("tokens per minute charged from the response's usage", () => {
  let env: ProxyEnv;
  beforeAll(async () => {
    env = await startProxyEnv({ rate_limits: { enabled: true } });
  });
  afterAll(() => env.stop());

  test("a JSON answer reporting more than the tier's tokens/min: the next proxy request is 429, admin routes still work", async () => {
    env.fake.reset();
    const token = await env.gw.token("tenant-tpm");
    env.fake.reportUsage(150_000); // starter: 100,000 tokens per minute
    const first = await env.gw.api("/v1/chat/completions", { method: "POST", token, json: chat("A very long document to summarise.") });
    expect(first.status).toBe(200);
    expect(((await first.json()) as any).usage.prompt_tokens).toBe(150_000);
    const client = new OpenAI({ apiKey: token, baseURL: env.gw.url + "/v1", maxRetries: 0 });
    const err: any = await client.chat.completions.create(chat("Anything else?") as any).catch((e) => e);
    expect(err.status).toBe(429);
    expect(err.error).toMatchObject({ type: "rate_limit_error" });
    expect(env.fake.received("/v1/chat/completions")).toHaveLength(1); // the rejected request never went upstream
    const admin = await env.gw.api("/api/v1/prompts", { token });
    expect(admin.status).toBe(200);
    // another tenant is not affected
    const other = await env.gw.api("/v1/chat/completions", { method: "POST", token: env.token, json: chat("Small question.") });
    expect(other.status).toBe(200);
  });

  test("a streamed answer's usage is charged too", async () => {
    env.fake.reset();
    const token = await env.gw.token("tenant-tpm-stream");
    env.fake.reportUsage(120_000);
    const r = await env.gw.api("/v1/chat/completions", { method: "POST", token, json: chat("Stream a long answer.", { stream: true, stream_options: { include_usage: true } }) });
    expect(await r.text()).toContain('"prompt_tokens":120000');
    const next = await env.gw.api("/v1/chat/completions", { method: "POST", token, json: chat("And another one.") });
    expect(next.status).toBe(429);
    expect(((await next.json()) as any).error.type).toBe("rate_limit_error");
  });
});

describe("embedder outage through the SDKs (fail-open off)", () => {
  let env: ProxyEnv;
  beforeAll(async () => {
    const port = await closedPort();
    env = await startProxyEnv({ embedding: { provider: "openai", base_url: `http://127.0.0.1:${port}/v1`, model: "m", timeout_ms: 500, fail_open: false } });
  });
  afterAll(() => env.stop());

  test("openai SDK: 503 embedding_error, nothing sent upstream", async () => {
    const client = new OpenAI({ apiKey: env.token, baseURL: env.gw.url + "/v1", maxRetries: 0 });
    const err: any = await client.chat.completions.create(chat("Which ocean is the largest?") as any).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect(err.error).toMatchObject({ type: "embedding_error" });
    expect(env.fake.received("/v1/chat/completions")).toHaveLength(0);
  });

  test("anthropic SDK: 503 embedding_error", async () => {
    const client = new Anthropic({ apiKey: env.token, baseURL: env.gw.url, maxRetries: 0 });
    const err: any = await client.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 20, messages: [{ role: "user", content: "Which desert is the largest?" }] }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(503);
    expect(JSON.stringify(err.error)).toContain("embedding_error");
    expect(env.fake.received("/v1/messages")).toHaveLength(0);
  });

  test("cohere SDK: 503 (stream and JSON)", async () => {
    const co = new CohereClient({ token: env.token, baseUrl: env.gw.url, maxRetries: 0 } as any);
    const err: any = await co.chat({ message: "Which mountain is the tallest?" }).catch((e) => e);
    expect(err.statusCode).toBe(503);
    expect(JSON.stringify(err.body)).toContain("embedding_error");
    expect(env.fake.received("/v1/chat")).toHaveLength(0);
  });
});
