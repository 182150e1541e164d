/**
 * Base URLs, retries and fallbacks, observed at the fake upstreams (they record every request and
 * inject failures): a `/v1` base URL reaches the provider's real paths once; 429/5xx/connection
 * failures are retried (Retry-After honoured within its bound); other 4xx are not; a stream is never
 * retried once it started; ordered fallback deployments (another base URL and key, or another provider
 * and model) take over; the usage record names the deployment that answered.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { startFakeUpstream, closedPort, type FakeUpstream } from "../fake-upstream/server";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { KEYS } from "./setup";
import { normaliseBaseUrl } from "../../src/core/base-url";
import { retryAfterMs } from "../../src/gateway/upstream";
import { embeddingsUrl } from "../../src/embedding/remote";

const chat = (content: string, extra: Record<string, unknown> = {}) => ({ model: "gpt-4o-mini", messages: [{ role: "user" as const, content }], ...extra });
const usageRows = async (gw: TestGateway, tenant = "tenant-a") => {
  await gw.ctx.usage.flush();
  return gw.ctx.db.all<any>("SELECT * FROM usage_records WHERE tenant_id = $t ORDER BY rowid", { t: tenant });
};

describe("base URL convention", () => {
  test("origin with or without the version segment mean the same, for every provider and the embedder", () => {
    for (const [given, want] of [
      ["http://127.0.0.1:9911/v1", "http://127.0.0.1:9911"],
      ["http://127.0.0.1:9911/v1/", "http://127.0.0.1:9911"],
      ["http://127.0.0.1:9911", "http://127.0.0.1:9911"],
      ["https://generativelanguage.googleapis.com/v1beta", "https://generativelanguage.googleapis.com"],
      ["https://api.cohere.com/v2", "https://api.cohere.com"],
      ["https://proxy.example.com/openai/v1", "https://proxy.example.com/openai"],
      ["https://proxy.example.com/v1/openai", "https://proxy.example.com/v1/openai"],
    ]) expect(`${given} -> ${normaliseBaseUrl(given!)}`).toBe(`${given} -> ${want}`);
    expect(embeddingsUrl("http://localhost:11434/v1")).toBe("http://localhost:11434/v1/embeddings");
    expect(embeddingsUrl("http://localhost:11434")).toBe("http://localhost:11434/v1/embeddings");
    expect(embeddingsUrl("http://localhost:11434/v1/embeddings")).toBe("http://localhost:11434/v1/embeddings");
  });

  test("a fake OpenAI-compatible server at a /v1 base URL gets /v1/chat/completions (not /v1/v1/...), and so do the other styles", async () => {
    const fake = await startFakeUpstream();
    const gw = await startGateway({
      providers: {
        openai: { base_url: `${fake.url}/v1`, api_key: KEYS.openai },
        anthropic: { base_url: `${fake.url}/v1/`, api_key: KEYS.anthropic },
        gemini: { base_url: `${fake.url}/v1beta`, api_key: KEYS.gemini },
        cohere: { base_url: `${fake.url}/v2`, api_key: KEYS.cohere },
      },
      cache: { enabled: false },
    });
    try {
      const token = await gw.token("tenant-a");
      const client = new OpenAI({ apiKey: token, baseURL: gw.url + "/v1", maxRetries: 0 });
      const r = await client.chat.completions.create(chat("Hello from vLLM land."));
      expect(r.choices[0]!.message.content).toBe("answer #1: Hello from vLLM land.");
      await client.models.list();
      const post = (path: string, json: unknown, headers: Record<string, string> = {}) => gw.api(path, { method: "POST", token, json, headers });
      expect((await post("/v1/messages", { model: "claude-3-5-haiku", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }, { "anthropic-version": "2023-06-01" })).status).toBe(200);
      expect((await post("/v1beta/models/gemini-2.0-flash:generateContent", { contents: [{ parts: [{ text: "hi" }] }] })).status).toBe(200);
      expect((await post("/v1/chat", { message: "hi" })).status).toBe(200);
      expect((await post("/v2/chat", { model: "command-a", messages: [{ role: "user", content: "hi" }] })).status).toBe(200);
      expect(fake.requests.map((q) => q.path)).toEqual(["/v1/chat/completions", "/v1/models", "/v1/messages", "/v1beta/models/gemini-2.0-flash:generateContent", "/v1/chat", "/v2/chat"]);
    } finally {
      await gw.stop();
      await fake.stop();
    }
  });
});

test("SVC_EMBEDDING__BASE_URL without /v1 reaches the server's /v1/embeddings", async () => {
  const fake = await startFakeUpstream();
  const gw = await startGateway({ providers: { openai: { base_url: fake.url, api_key: "k" } }, embedding: { provider: "openai", base_url: fake.url, model: "emb-3", timeout_ms: 2000 } });
  try {
    const r = await gw.api("/v1/chat/completions", { method: "POST", token: await gw.token("tenant-a"), json: chat("Embed me through the origin URL.") });
    expect(r.status).toBe(200);
    const emb = fake.received("/v1/embeddings");
    expect(emb.length).toBeGreaterThan(0);
    expect(emb[0]!.body.model).toBe("emb-3");
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

test("Retry-After: delta-seconds and HTTP dates", () => {
  expect(retryAfterMs("2")).toBe(2000);
  expect(retryAfterMs("0.5")).toBe(500);
  expect(retryAfterMs(null)).toBeUndefined();
  expect(retryAfterMs("soon")).toBeUndefined();
  expect(retryAfterMs(new Date(Date.UTC(2030, 0, 1, 0, 0, 10)).toUTCString(), Date.UTC(2030, 0, 1))).toBe(10_000);
});

describe("retries", () => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    fake = await startFakeUpstream();
    gw = await startGateway({
      providers: { openai: { base_url: fake.url, api_key: KEYS.openai, max_retries: 2, retry_backoff_ms: 5, retry_max_wait_ms: 1000, timeout_ms: 2000 } },
    });
    client = new OpenAI({ apiKey: await gw.token("tenant-a"), baseURL: gw.url + "/v1", maxRetries: 0 });
  });
  afterAll(async () => {
    await gw.stop();
    await fake.stop();
  });

  test("5xx twice then success: three upstream requests, one answer, the usage record counts the attempts", async () => {
    fake.reset();
    fake.failNext({ kind: "status", status: 503 });
    fake.failNext({ kind: "status", status: 500 });
    const r = await client.chat.completions.create(chat("Retry me twice."));
    expect(r.choices[0]!.message.content).toBe("answer #1: Retry me twice.");
    expect(fake.requests).toHaveLength(3);
    expect(fake.requests.every((q) => q.path === "/v1/chat/completions" && q.body.messages[0].content === "Retry me twice.")).toBe(true);
    expect((await usageRows(gw)).at(-1)).toMatchObject({ deployment: "openai", attempts: 3, cache_status: "MISS", upstream_model: "gpt-4o-mini" });
    const metrics = await (await fetch(gw.url + "/metrics")).text();
    expect(metrics).toContain('svc_upstream_retries_total{provider="openai",reason="5xx"} 2');
  });

  test("retries are bounded: max_retries + 1 attempts, then the error", async () => {
    fake.reset();
    for (let i = 0; i < 3; i++) fake.failNext({ kind: "status", status: 502 });
    const e: any = await client.chat.completions.create(chat("Always failing.")).catch((x) => x);
    expect(e.status).toBe(502);
    expect(fake.requests).toHaveLength(3);
  });

  test("429 with Retry-After within the bound is waited for and retried; beyond the bound the 429 is returned at once", async () => {
    fake.reset();
    fake.failNext({ kind: "status", status: 429, retryAfter: "0" });
    const ok = await client.chat.completions.create(chat("Rate limited once."));
    expect(ok.choices[0]!.message.content).toBe("answer #1: Rate limited once.");
    expect(fake.requests).toHaveLength(2);

    fake.reset();
    fake.failNext({ kind: "status", status: 429, retryAfter: "3600" });
    const e: any = await client.chat.completions.create(chat("Rate limited for an hour.")).catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e.status).toBe(429);
    expect(e.error.message).toBe("fake openai error 429");
    // doc1 §7: 429 rate_limit_error with retry_after_secs (OpenAI's own type is `requests`); the wait reaches the SDK as Retry-After
    expect(e.error).toMatchObject({ type: "rate_limit_error", retry_after_secs: 3600, code: "fake_error" });
    expect(e.headers.get("retry-after")).toBe("3600");
    expect(fake.requests).toHaveLength(1);
  });

  test("a 400 is the caller's: returned at once, never retried", async () => {
    fake.reset();
    fake.failNext({ kind: "status", status: 400 });
    const e: any = await client.chat.completions.create(chat("Bad request.")).catch((x) => x);
    expect(e.status).toBe(400);
    expect(fake.requests).toHaveLength(1);
  });

  test("a stream is retried before its first byte, never after: a cut stream is one upstream request", async () => {
    fake.reset();
    fake.failNext({ kind: "status", status: 503 });
    let text = "";
    for await (const c of await client.chat.completions.create({ ...chat("Stream after a 503."), stream: true })) text += c.choices[0]?.delta?.content ?? "";
    expect(text).toBe("answer #1: Stream after a 503.");
    expect(fake.requests).toHaveLength(2);

    fake.reset();
    fake.failNext({ kind: "cut" });
    const r = await gw.api("/v1/chat/completions", { method: "POST", token: await gw.token("tenant-a"), json: { ...chat("Cut me."), stream: true } });
    expect(r.status).toBe(200);
    await r.text().catch(() => "");
    expect(fake.requests).toHaveLength(1);
  });
});

describe("fallback deployments", () => {
  let primary: FakeUpstream;
  let backup: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;
  let refused: number;
  beforeAll(async () => {
    primary = await startFakeUpstream();
    backup = await startFakeUpstream();
    refused = await closedPort();
    gw = await startGateway({
      providers: {
        openai: { base_url: primary.url, api_key: KEYS.openai, max_retries: 1, retry_backoff_ms: 1 },
        anthropic: { base_url: backup.url, api_key: KEYS.anthropic, max_retries: 0 },
      },
      models: {
        fallbacks: {
          "gpt-4o-mini": [{ name: "backup-openai", provider: "openai", base_url: `${backup.url}/v1`, api_key: "sk-backup" }],
          "gpt-4o": [{ provider: "anthropic", model: "claude-3-5-haiku-latest" }],
          "gpt-4.1*": [
            { name: "dead", provider: "openai", base_url: `http://127.0.0.1:${refused}` },
            { name: "alive", provider: "openai", base_url: backup.url, model: "gpt-4o-mini" },
          ],
        },
      },
    });
    client = new OpenAI({ apiKey: await gw.token("tenant-a"), baseURL: gw.url + "/v1", maxRetries: 0 });
  });
  afterAll(async () => {
    await gw.stop();
    await primary.stop();
    await backup.stop();
  });
  const reset = () => {
    primary.reset();
    backup.reset();
  };

  test("the primary fails (after its retry): the backup deployment answers with its own key; the usage record names it", async () => {
    reset();
    primary.failNext({ kind: "status", status: 500 });
    primary.failNext({ kind: "status", status: 503 });
    const r = await client.chat.completions.create(chat("Fall back please."));
    expect(r.choices[0]!.message.content).toBe("answer #1: Fall back please.");
    expect(primary.requests).toHaveLength(2);
    expect(backup.requests).toHaveLength(1);
    expect(backup.requests[0]!.path).toBe("/v1/chat/completions");
    expect(backup.requests[0]!.headers.authorization).toBe("Bearer sk-backup");
    expect((await usageRows(gw)).at(-1)).toMatchObject({ deployment: "backup-openai", attempts: 3, model: "gpt-4o-mini", upstream_model: "gpt-4o-mini" });
    const metrics = await (await fetch(gw.url + "/metrics")).text();
    expect(metrics).toContain('svc_upstream_fallbacks_total{from="openai",to="backup-openai"} 1');
    // healthy primary: no fallback
    await client.chat.completions.create(chat("Primary is fine."));
    expect(primary.requests).toHaveLength(3);
    expect(backup.requests).toHaveLength(1);
    expect((await usageRows(gw)).at(-1)).toMatchObject({ deployment: "openai", attempts: 1 });
  });

  test("a stream falls back before its first byte", async () => {
    reset();
    primary.failNext({ kind: "status", status: 502 });
    primary.failNext({ kind: "status", status: 502 });
    let text = "";
    for await (const c of await client.chat.completions.create({ ...chat("Stream from the backup."), stream: true })) text += c.choices[0]?.delta?.content ?? "";
    expect(text).toBe("answer #1: Stream from the backup.");
    expect(backup.requests[0]!.body.stream).toBe(true);
  });

  test("a 400 from the primary is returned, not fallen back from", async () => {
    reset();
    primary.failNext({ kind: "status", status: 400 });
    const e: any = await client.chat.completions.create(chat("Invalid for everyone.")).catch((x) => x);
    expect(e.status).toBe(400);
    expect(backup.requests).toHaveLength(0);
  });

  test("ordered: a refused connection moves on to the next deployment, which names another model", async () => {
    reset();
    primary.failNext({ kind: "status", status: 500 });
    primary.failNext({ kind: "status", status: 500 });
    const r = await client.chat.completions.create({ ...chat("Third time lucky."), model: "gpt-4.1-mini" });
    expect(r.choices[0]!.message.content).toBe("answer #1: Third time lucky.");
    expect(backup.requests[0]!.body.model).toBe("gpt-4o-mini");
    // the provider's retry policy applies to each of its deployments: primary 2, dead 2 (refused, retried), alive 1
    expect((await usageRows(gw)).at(-1)).toMatchObject({ deployment: "alive", model: "gpt-4.1-mini", upstream_model: "gpt-4o-mini", attempts: 5 });
  });

  test("another provider and model: the conversation goes to the messages style and comes back as a chat completion (JSON and stream)", async () => {
    reset();
    primary.failNext({ kind: "status", status: 503 });
    primary.failNext({ kind: "status", status: 503 });
    const r = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "system", content: "Be kind." }, { role: "user", content: "Say hi to Claude." }], max_tokens: 20 });
    expect(r.object).toBe("chat.completion");
    expect(r.model).toBe("gpt-4o");
    expect(r.choices[0]!.message.content).toBe("answer #1: Say hi to Claude.");
    expect(r.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 6 });
    const up = backup.requests[0]!;
    expect(up.path).toBe("/v1/messages");
    expect(up.headers["x-api-key"]).toBe(KEYS.anthropic);
    expect(up.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(up.body).toMatchObject({ model: "claude-3-5-haiku-latest", system: "Be kind.", messages: [{ role: "user", content: "Say hi to Claude." }], max_tokens: 20 });
    expect((await usageRows(gw)).at(-1)).toMatchObject({ model: "gpt-4o", upstream_model: "claude-3-5-haiku-latest", deployment: "anthropic/claude-3-5-haiku-latest#1" });

    primary.failNext({ kind: "status", status: 503 });
    primary.failNext({ kind: "status", status: 503 });
    let text = "";
    for await (const c of await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "Stream via Claude." }], stream: true })) text += c.choices[0]?.delta?.content ?? "";
    expect(text).toBe("answer #2: Stream via Claude.");
    // a request the other provider cannot be asked exactly (logprobs) is not sent there (tool requests are: fallback-tools.test.ts)
    reset();
    primary.failNext({ kind: "status", status: 503 });
    primary.failNext({ kind: "status", status: 503 });
    const e: any = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "Give me logprobs." }], logprobs: true }).catch((x) => x);
    expect(e.status).toBe(502);
    expect(backup.requests).toHaveLength(0);
  });
});

test("a 404 from the upstream is passed back and logged with the URL that answered and a base-URL hint", async () => {
  const { Logger } = await import("../../src/core/log");
  const fake = await startFakeUpstream();
  const logs: string[] = [];
  const gw = await startGateway({ providers: { openai: { base_url: `${fake.url}/wrong-prefix/v1`, api_key: "k" } }, cache: { enabled: false } }, {}, { logger: new Logger("warn", (l) => logs.push(l)) });
  try {
    const r = await gw.api("/v1/chat/completions", { method: "POST", token: await gw.token("tenant-a"), json: chat("Where am I?") });
    expect(r.status).toBe(404);
    expect(fake.requests[0]!.path).toBe("/wrong-prefix/v1/chat/completions");
    const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg === "upstream answered 404");
    expect(line).toMatchObject({ level: "warn", provider: "openai", url: `${fake.url}/wrong-prefix/v1/chat/completions` });
    expect(line.hint).toContain("SVC_PROVIDERS__OPENAI__BASE_URL");
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

describe("fallback from the generate-content and chat styles to another provider", () => {
  let primary: FakeUpstream;
  let backup: FakeUpstream;
  let gw: TestGateway;
  let token: string;
  beforeAll(async () => {
    primary = await startFakeUpstream();
    backup = await startFakeUpstream();
    gw = await startGateway({
      providers: { gemini: { base_url: primary.url, api_key: KEYS.gemini }, cohere: { base_url: primary.url, api_key: KEYS.cohere } },
      models: {
        fallbacks: {
          "gemini-2.0-flash": [{ provider: "openai", model: "gpt-4o-mini", base_url: backup.url, api_key: "sk-backup" }],
          "command-r": [{ provider: "openai", model: "gpt-4o-mini", base_url: backup.url, api_key: "sk-backup" }],
        },
      },
    });
    token = await gw.token("tenant-a");
  });
  afterAll(async () => {
    await gw.stop();
    await primary.stop();
    await backup.stop();
  });
  const post = (path: string, json: unknown) => gw.api(path, { method: "POST", token, json });

  test("generate-content: answered by a chat-completions deployment, in the generate-content shape (JSON and SSE stream)", async () => {
    primary.failNext({ kind: "status", status: 503 });
    const r = await post("/v1beta/models/gemini-2.0-flash:generateContent", { systemInstruction: { parts: [{ text: "Be brief." }] }, contents: [{ role: "user", parts: [{ text: "Gemini is down?" }] }], generationConfig: { maxOutputTokens: 30 } });
    expect(r.status).toBe(200);
    const body: any = await r.json();
    expect(body.candidates[0]).toMatchObject({ content: { role: "model", parts: [{ text: "answer #1: Gemini is down?" }] }, finishReason: "STOP" });
    expect(body.usageMetadata).toEqual({ promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 });
    expect(backup.requests[0]).toMatchObject({ path: "/v1/chat/completions", body: { model: "gpt-4o-mini", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Gemini is down?" }], max_tokens: 30 } });
    expect(backup.requests[0]!.headers.authorization).toBe("Bearer sk-backup");

    primary.failNext({ kind: "status", status: 503 });
    const s = await post("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", { contents: [{ role: "user", parts: [{ text: "Stream while Gemini is down." }] }] });
    const frames = (await s.text()).trim().split(/\r?\n\r?\n/).map((f) => JSON.parse(f.replace(/^data: /, "")));
    expect(frames.map((f: any) => f.candidates[0].content.parts[0].text).join("")).toBe("answer #2: Stream while Gemini is down.");
  });

  test("chat (v1): answered by a chat-completions deployment, in the chat shape", async () => {
    primary.failNext({ kind: "status", status: 500 });
    const r = await post("/v1/chat", { model: "command-r", preamble: "Short.", chat_history: [{ role: "USER", message: "Hi" }, { role: "CHATBOT", message: "Hello" }], message: "Cohere is down?" });
    expect(r.status).toBe(200);
    const body: any = await r.json();
    expect(body).toMatchObject({ text: "answer #3: Cohere is down?", finish_reason: "COMPLETE", meta: { billed_units: { input_tokens: 10, output_tokens: 5 } } });
    expect(backup.received("/v1/chat/completions").at(-1)!.body.messages).toEqual([
      { role: "system", content: "Short." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello" },
      { role: "user", content: "Cohere is down?" },
    ]);
  });
});

test.each([false, true])("Responses API (stream: %p) and Cohere v2 fall back to another provider through their SDKs", async (stream) => {
  const primary = await startFakeUpstream();
  const backup = await startFakeUpstream();
  const gw = await startGateway({
    providers: { openai: { base_url: primary.url, api_key: KEYS.openai }, cohere: { base_url: primary.url, api_key: KEYS.cohere }, anthropic: { base_url: backup.url, api_key: KEYS.anthropic } },
    models: { fallbacks: { "gpt-4o": [{ provider: "anthropic", model: "claude-3-5-haiku-latest" }], "command-a": [{ provider: "anthropic", model: "claude-3-5-haiku-latest" }] } },
  });
  try {
    const token = await gw.token("tenant-a");
    const client = new OpenAI({ apiKey: token, baseURL: gw.url + "/v1", maxRetries: 0 });
    primary.failNext({ kind: "status", status: 503 });
    const req = { model: "gpt-4o", instructions: "Be brief.", input: "Responses while OpenAI is down?", max_output_tokens: 25 };
    const out = stream ? await client.responses.stream(req).finalResponse() : await client.responses.create(req);
    expect(out.output_text).toBe("answer #1: Responses while OpenAI is down?");
    expect(out.status).toBe("completed");
    expect(backup.requests[0]!.body).toMatchObject({ model: "claude-3-5-haiku-latest", system: "Be brief.", max_tokens: 25, messages: [{ role: "user", content: "Responses while OpenAI is down?" }] });

    const { CohereClientV2 } = await import("cohere-ai");
    const co = new CohereClientV2({ token, baseUrl: gw.url, maxRetries: 0 } as any);
    primary.failNext({ kind: "status", status: 503 });
    const v2 = { model: "command-a", messages: [{ role: "user" as const, content: "v2 while Cohere is down?" }] };
    let text = "";
    if (stream) {
      for await (const ev of await co.chatStream(v2)) if (ev.type === "content-delta") text += ev.delta?.message?.content?.text ?? "";
    } else text = ((await co.chat(v2)).message.content?.[0] as any).text;
    expect(text).toBe("answer #2: v2 while Cohere is down?");
  } finally {
    await gw.stop();
    await primary.stop();
    await backup.stop();
  }
});
