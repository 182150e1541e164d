/** Messages proxy through the official `@anthropic-ai/sdk`. */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { startProxyEnv, KEYS, type ProxyEnv } from "./setup";

let env: ProxyEnv;
let client: Anthropic;

beforeAll(async () => {
  env = await startProxyEnv();
  client = new Anthropic({ apiKey: env.token, baseURL: env.gw.url, maxRetries: 0 });
});
afterAll(() => env.stop());

const user = (text: string) => [{ role: "user" as const, content: text }];

describe("messages proxy", () => {
  test("messages.countTokens is forwarded with the version and key, never cached, charged nothing", async () => {
    env.fake.reset();
    const req = { model: "claude-3-5-haiku-latest", system: "Be brief.", messages: user("three little words") };
    for (let i = 0; i < 2; i++) {
      const c = await client.messages.countTokens(req).withResponse();
      expect(c.data).toEqual({ input_tokens: 3 });
      expect(c.response.headers.get("x-cache-status")).toBe("BYPASS");
    }
    // the beta namespace works too; a query (the API's ?beta=true) goes upstream with the request
    expect((await client.beta.messages.countTokens(req)).input_tokens).toBe(3);
    const q = await env.gw.api("/v1/messages/count_tokens?beta=true", { method: "POST", token: env.token, headers: { "anthropic-version": "2023-06-01" }, json: req });
    expect(await q.json()).toEqual({ input_tokens: 3 });
    const ups = env.fake.received("/v1/messages/count_tokens");
    expect(ups.map((r) => r.path)).toEqual(["/v1/messages/count_tokens", "/v1/messages/count_tokens", "/v1/messages/count_tokens", "/v1/messages/count_tokens?beta=true"]);
    expect(ups[0]!.headers["x-api-key"]).toBe(KEYS.anthropic);
    expect(ups[0]!.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(ups[0]!.body).toEqual(req);
    // the messages style's checks: the version header and a body with messages
    const raw = (headers: Record<string, string>, json: unknown) => env.gw.api("/v1/messages/count_tokens", { method: "POST", token: env.token, headers, json });
    let r = await raw({}, req);
    expect(r.status).toBe(400);
    expect(((await r.json()) as any).error.message).toContain("anthropic-version");
    r = await raw({ "anthropic-version": "2023-06-01" }, { model: "claude-3-5-haiku-latest" });
    expect(r.status).toBe(400);
    expect(((await r.json()) as any).error).toMatchObject({ type: "validation_error", message: expect.stringContaining("messages") });
    // a provider refusal passes through in its own shape with doc1's fields
    env.fake.failNext({ kind: "status", status: 404 });
    const err: any = await client.messages.countTokens({ ...req, model: "claude-nope" }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(env.fake.received("/v1/messages/count_tokens")).toHaveLength(5);
    // nothing was charged: the counted model has requests but no tokens and no cost
    const viewer = await env.gw.token("tenant-a", ["ViewMetrics"]);
    const usage = (await (await env.gw.api("/api/v1/usage?group_by=model", { token: viewer })).json()) as any;
    expect(usage.breakdowns.model.find((g: any) => g.key === "claude-3-5-haiku-latest")).toMatchObject({ requests: 4, cacheBypassed: 4, totalTokens: 0, costUsd: 0 });
  });

  test("miss forwards the request with the configured key and version; repeat is a HIT", async () => {
    env.fake.reset();
    const system = [{ type: "text" as const, text: "You are a geography tutor.", cache_control: { type: "ephemeral" as const } }];
    const first = await client.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 64, system, messages: user("What is the capital of Japan?") }).withResponse();
    expect(first.response.headers.get("x-cache-status")).toBe("MISS");
    expect(first.data.content).toEqual([{ type: "text", text: "answer #1: What is the capital of Japan?" }] as any);
    expect(first.data.usage).toEqual({ input_tokens: 12, output_tokens: 8 } as any);
    const up = env.fake.requests[0]!;
    expect(up.path).toBe("/v1/messages");
    expect(up.headers["x-api-key"]).toBe(KEYS.anthropic);
    expect(up.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/); // the SDK's own version header, forwarded
    expect(up.headers.authorization).toBeUndefined();
    expect(up.body).toEqual({ model: "claude-3-5-haiku-latest", max_tokens: 64, system, messages: user("What is the capital of Japan?") });

    const again = await client.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 64, system, messages: user("What is the capital of Japan?") }).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("HIT");
    expect(again.data).toEqual(first.data);
    expect(env.fake.requests).toHaveLength(1);

    // the same system prompt as a plain string shares the entry (cache_control does not change the answer)
    const plain = await client.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 64, system: "You are a geography tutor.", messages: user("What is the capital of Japan?") }).withResponse();
    expect(plain.response.headers.get("x-cache-status")).toBe("HIT");
  });

  test("streaming miss then streamed hit through the SDK's stream helper give the same text", async () => {
    env.fake.reset();
    const params = { model: "claude-3-5-haiku-latest", max_tokens: 64, messages: user("Name a famous bridge in San Francisco.") };
    const live = client.messages.stream(params);
    const liveText = await live.finalText();
    expect(liveText).toBe("answer #1: Name a famous bridge in San Francisco.");
    const liveMsg = await live.finalMessage();
    expect(liveMsg.stop_reason).toBe("end_turn");

    const replay = client.messages.stream(params);
    const deltas: string[] = [];
    replay.on("text", (d) => deltas.push(d));
    expect(await replay.finalText()).toBe(liveText);
    expect(deltas.join("")).toBe(liveText);
    const final = await replay.finalMessage();
    expect(final.usage.output_tokens).toBe(liveMsg.usage.output_tokens);

    const json = await client.messages.create(params).withResponse();
    expect(json.response.headers.get("x-cache-status")).toBe("HIT");
    expect((json.data.content[0] as any).text).toBe(liveText);
    expect(env.fake.requests).toHaveLength(1);
  });

  test("tools: tool_use responses (JSON and streamed) are cached by the query", async () => {
    env.fake.reset();
    const tools = [{ name: "get_weather", description: "weather", input_schema: { type: "object" as const, properties: { city: { type: "string" } } } }];
    const params = { model: "claude-sonnet-4-0", max_tokens: 100, tools, messages: user("What's the weather like in Paris?") };
    const streamed = await client.messages.stream(params).finalMessage();
    expect(streamed.stop_reason).toBe("tool_use");
    expect(streamed.content[0]).toEqual({ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } } as any);
    expect(env.fake.requests[0]!.body.tools).toEqual(tools);
    const json = await client.messages.create(params).withResponse();
    expect(json.response.headers.get("x-cache-status")).toBe("HIT");
    expect(json.data.content[0]).toEqual(streamed.content[0]);
    const replay = await client.messages.stream(params).finalMessage();
    expect(replay.content[0]).toEqual(streamed.content[0]);
    expect(env.fake.requests).toHaveLength(1);
  });

  test("x-api-key pass-through when Authorization carries the gateway credential", async () => {
    env.fake.reset();
    // the SDK sends both headers when authToken is set and x-api-key is given as a default header
    const byok = new Anthropic({ authToken: env.token, defaultHeaders: { "x-api-key": "sk-ant-callers-own" }, baseURL: env.gw.url, maxRetries: 0 });
    await byok.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 10, messages: user("Say hi to the user."), temperature: 0.3 } as any, { headers: { "X-Svc-Skip-Cache": "1" } });
    expect(env.fake.requests[0]!.headers["x-api-key"]).toBe("sk-ant-callers-own");
    expect(env.fake.requests[0]!.headers.authorization).toBeUndefined();
  });

  test("missing anthropic-version -> 400; missing max_tokens -> 400 validation_error", async () => {
    let r = await env.gw.api("/v1/messages", { token: env.token, method: "POST", json: { model: "claude-3", max_tokens: 5, messages: user("hi") } });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: { message: expect.stringContaining("anthropic-version"), type: "validation_error" } });
    // the spec's "date-formatted version string": anything else is 400 too, and never reaches the upstream
    env.fake.reset();
    for (const v of ["latest", "2023-6-1", "2023-06-01x"]) {
      r = await env.gw.api("/v1/messages", { token: env.token, method: "POST", headers: { "anthropic-version": v }, json: { model: "claude-3", max_tokens: 5, messages: user("hi") } });
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ error: { message: expect.stringContaining("anthropic-version"), type: "validation_error" } });
      expect(r.headers.get("x-request-id")).toBeTruthy();
    }
    expect(env.fake.requests).toHaveLength(0);
    r = await env.gw.api("/v1/messages", { token: env.token, method: "POST", headers: { "anthropic-version": "2023-06-01" }, json: { model: "claude-3", messages: user("hi") } });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toMatchObject({ type: "validation_error", message: expect.stringContaining("max_tokens") });
    r = await env.gw.api("/v1/messages", {
      token: env.token,
      method: "POST",
      headers: { "anthropic-version": "2023-06-01" },
      json: { model: "claude-3", max_tokens: 5, messages: user("hi"), system: [{ type: "text", text: "x", cache_control: { type: "forever" } }] },
    });
    expect(r.status).toBe(400);
  });

  test("provider 4xx passes through with the provider's body; 5xx -> 502", async () => {
    env.fake.reset();
    env.fake.failNext({ kind: "status", status: 400 });
    const err: any = await client.messages.create({ model: "claude-3", max_tokens: 5, messages: user("Tell me a joke about owls.") }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error).toEqual({ type: "error", error: { type: "invalid_request_error", message: "fake anthropic error 400" } });
    env.fake.failNext({ kind: "status", status: 500 });
    const err5: any = await client.messages.create({ model: "claude-3", max_tokens: 5, messages: user("Tell me a joke about owls.") }).catch((e) => e);
    expect(err5.status).toBe(502);
    expect(err5.error.error.type).toBe("proxy_error");
  });

  test("a cut stream surfaces as an SDK error and is not cached", async () => {
    env.fake.reset();
    env.fake.failNext({ kind: "cut" });
    const params = { model: "claude-3", max_tokens: 50, messages: user("Write a short line about autumn leaves.") };
    const err = await client.messages.stream(params).finalText().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    const again = await client.messages.create(params).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("MISS");
  });
});
