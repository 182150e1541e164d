/** GatewayService.complete (used by prompts/chains) and the pipeline's small building blocks. */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { startProxyEnv, KEYS, type ProxyEnv } from "./setup";
import { providerFor } from "../../src/gateway/routing";
import { SseParser, NdjsonParser, chunkText } from "../../src/gateway/sse";
import { costOf, priceOf, PriceTable } from "../../src/gateway/prices";
import { splitModelPath } from "../../src/gateway/providers/gemini";
import { ApiError } from "../../src/core/errors";

let env: ProxyEnv;
beforeAll(async () => {
  env = await startProxyEnv({ models: { routes: { "my-local-*": "cohere", "exact-model": "anthropic" } } });
});
afterAll(() => env.stop());

describe("GatewayService.complete", () => {
  const messages = (q: string) => [
    { role: "system" as const, content: "Be brief." },
    { role: "user" as const, content: q },
  ];

  test("routes by model to each provider style, through the cache", async () => {
    env.fake.reset();
    const gw = env.gw.ctx.gateway!;
    const cases: Array<[string, string, string]> = [
      ["gpt-4o-mini", "openai", "/v1/chat/completions"],
      ["claude-3-5-haiku-latest", "anthropic", "/v1/messages"],
      ["gemini-2.0-flash", "gemini", "/v1beta/models/gemini-2.0-flash:generateContent"],
      ["command-r", "cohere", "/v1/chat"],
      ["my-local-llama", "cohere", "/v1/chat"],
      ["exact-model", "anthropic", "/v1/messages"],
    ];
    for (const [model, provider, path] of cases) {
      env.fake.reset();
      const r = await gw.complete({ tenantId: "tenant-svc", model, messages: messages(`Name one fruit that is ${model}.`), temperature: 0, maxTokens: 20 });
      expect(r.provider).toBe(provider);
      expect(r.text).toBe(`answer #1: Name one fruit that is ${model}.`);
      expect(r.cacheHit).toBe(false);
      expect(r.usage.inputTokens).toBeGreaterThan(0);
      expect(env.fake.requests[0]!.path).toBe(path);
      const again = await gw.complete({ tenantId: "tenant-svc", model, messages: messages(`Name one fruit that is ${model}.`), temperature: 0, maxTokens: 20 });
      expect(again.cacheHit).toBe(true);
      expect(again.text).toBe(r.text);
      expect(env.fake.requests).toHaveLength(1);
    }
    const anthropicReq = (await (async () => {
      env.fake.reset();
      await gw.complete({ tenantId: "tenant-svc", model: "claude-3", messages: messages("Say yes."), skipCache: true });
      return env.fake.requests[0]!;
    })());
    expect(anthropicReq.headers["x-api-key"]).toBe(KEYS.anthropic);
    expect(anthropicReq.headers["anthropic-version"]).toBe("2023-06-01");
    expect(anthropicReq.body).toEqual({ model: "claude-3", max_tokens: 4096, system: "Be brief.", messages: [{ role: "user", content: "Say yes." }] });
  });

  test("provider 4xx becomes invalid_request_error; 5xx proxy_error", async () => {
    const gw = env.gw.ctx.gateway!;
    env.fake.failNext({ kind: "status", status: 400 });
    const e1 = await gw.complete({ tenantId: "t", model: "gpt-4o", messages: messages("fail please") }).catch((e) => e);
    expect(e1).toBeInstanceOf(ApiError);
    expect(e1.type).toBe("invalid_request_error");
    expect(e1.message).toContain("fake openai error 400");
    env.fake.failNext({ kind: "status", status: 500 });
    const e2 = await gw.complete({ tenantId: "t", model: "gpt-4o", messages: messages("fail please") }).catch((e) => e);
    expect(e2.type).toBe("proxy_error");
  });

  test("doc1 §7 types for the provider's other answers: 404 not_found, 429 rate_limit_error with retry_after_secs, 401/403 configuration_error", async () => {
    const gw = env.gw.ctx.gateway!;
    const fail = async (status: number, retryAfter?: string) => {
      env.fake.failNext({ kind: "status", status, retryAfter });
      const e = await gw.complete({ tenantId: "t", model: "claude-3-5-haiku-latest", messages: messages(`fail with ${status}`) }).catch((x) => x);
      expect(e).toBeInstanceOf(ApiError);
      return e as ApiError;
    };
    // rule 2: "An unknown project, model, or other resource returns 404 not_found"
    expect(await fail(404)).toMatchObject({ status: 404, type: "not_found", message: "anthropic: fake anthropic error 404" });
    // rule 3: "Exceeding the rate limit returns 429 rate_limit_error with retry_after_secs" — retryable, so never a 400
    expect(await fail(429, "7")).toMatchObject({ status: 429, type: "rate_limit_error", extra: { retry_after_secs: 7 }, headers: { "retry-after": "7" } });
    expect(await fail(429)).toMatchObject({ status: 429, extra: { retry_after_secs: 1 } });
    // the provider refused svc's own key: an operator's fix, not the caller's credential (401 would say the caller's token is bad)
    for (const status of [401, 403]) {
      const e = await fail(status);
      expect(e).toMatchObject({ status: 500, type: "configuration_error" });
      expect(e.message).toContain(`anthropic refused svc's provider credentials (${status})`);
    }
    expect(await fail(422)).toMatchObject({ status: 400, type: "validation_error" });
  });
});

describe("building blocks", () => {
  test("model routing defaults and globs", () => {
    expect(providerFor("gpt-4o")).toBe("openai");
    expect(providerFor("o1-preview")).toBe("openai");
    expect(providerFor("o3-mini")).toBe("openai");
    expect(providerFor("o4-mini")).toBe("openai");
    expect(providerFor("claude-opus-4")).toBe("anthropic");
    expect(providerFor("gemini-2.5-pro")).toBe("gemini");
    expect(providerFor("command-r-plus")).toBe("cohere");
    expect(providerFor("llama-3")).toBe("openai");
    expect(providerFor("gpt-4o", { "gpt-4o": "anthropic" })).toBe("anthropic");
    expect(providerFor("mistral-large", { "mistral-*": "cohere" })).toBe("cohere");
  });

  test("SSE and NDJSON parsers handle split chunks, CRLF, named events", () => {
    const p = new SseParser();
    expect(p.push("event: message_start\r\ndata: {\"a\"")).toEqual([]);
    expect(p.push(":1}\r\n\r\ndata: x\n")).toEqual([{ event: "message_start", data: '{"a":1}' }]);
    expect(p.push("\n")).toEqual([{ event: undefined, data: "x" }]);
    expect(p.push("data: [DONE]")).toEqual([]);
    expect(p.end()).toEqual([{ event: undefined, data: "[DONE]" }]);
    const n = new NdjsonParser();
    expect(n.push('{"a":1}\n{"b"')).toEqual([{ data: '{"a":1}' }]);
    expect(n.end()).toEqual([{ data: '{"b"' }]);
    expect(chunkText("one two three four", 8).join("")).toBe("one two three four");
  });

  test("price table and cost estimate", () => {
    expect(priceOf("gpt-4o-mini-2024-07-18")).toEqual({ input: 0.15, output: 0.6 });
    expect(priceOf("gpt-4o")).toEqual({ input: 2.5, output: 10 });
    // no known price: none is invented; such a request costs nothing and is reported as unpriced
    expect(priceOf("llama3.1")).toBeUndefined();
    expect(costOf("llama3.1", 1_000, 1_000)).toBe(0);
    expect(new PriceTable().isPriced("llama3.1", 10, 0)).toBe(false);
    expect(new PriceTable().isPriced("llama3.1", 0, 0)).toBe(true);
    expect(new PriceTable({ llama: { input: 0, output: 0 } }).isPriced("llama3.1", 10, 0)).toBe(true);
    expect(costOf("gpt-4o", 1_000_000, 1_000_000)).toBeCloseTo(12.5);
  });

  test("generate-content model paths", () => {
    expect(splitModelPath("gemini-2.0-flash:generateContent")).toEqual({ model: "gemini-2.0-flash", action: "generateContent", colon: true });
    expect(splitModelPath("gemini-2.0-flash/streamGenerateContent")).toEqual({ model: "gemini-2.0-flash", action: "streamGenerateContent", colon: false });
    expect(splitModelPath("gemini-2.0-flash%3AcountTokens")).toEqual({ model: "gemini-2.0-flash", action: "countTokens", colon: true });
    expect(splitModelPath("gemini-1.5-pro")).toEqual({ model: "gemini-1.5-pro", colon: false });
    expect(splitModelPath("%E0%A4%A")).toBeUndefined(); // malformed percent-encoding: no model (404), never a URIError
  });
});

describe("serving the proxy routes without a socket (OpenAPI, app.fetch)", () => {
  test("documented in /openapi.json under their real path templates and served identically through app.fetch", async () => {
    const app = { handle: env.gw.ctx.fetch };
    const doc = await (await fetch(env.gw.url + "/openapi.json")).json();
    for (const p of ["/v1/chat/completions", "/v1/messages", "/v1/chat", "/v1/generate", "/v1/embed", "/v1beta/models/{model}/generateContent", "/v1/models"]) expect(Object.keys(doc.paths)).toContain(p);
    env.fake.reset();
    const req = () =>
      new Request("http://localhost/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${env.token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Which metal is liquid at room temperature?" }] }),
      });
    const r1 = await app.handle(req());
    expect(r1.status).toBe(200);
    expect(r1.headers.get("x-cache-status")).toBe("MISS");
    const r2 = await app.handle(req());
    expect(r2.headers.get("x-cache-status")).toBe("HIT");
    expect((await r2.json()).choices[0].message.content).toBe((await r1.json()).choices[0].message.content);
    expect(env.fake.requests).toHaveLength(1);
  });
});
