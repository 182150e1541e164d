/**
 * Model endpoints of the chat-completions (GET /v1/models[/{id}]) and generate-content
 * (GET /v1beta/models[/{model}], and /v1/models with the Gemini SDK under apiVersion v1) styles:
 * the spec's object shapes exactly, also when the upstream leaves fields out; an unknown model is
 * the provider's own 404; an unreachable or failing upstream is 502; a `?key=` credential never
 * travels upstream.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { GoogleGenAI } from "@google/genai";
import { startProxyEnv, KEYS, type ProxyEnv } from "./setup";
import { closedPort } from "../fake-upstream/server";
import { startGateway } from "../helpers/gateway";

let env: ProxyEnv;
let client: OpenAI;
let ai: GoogleGenAI;

beforeAll(async () => {
  env = await startProxyEnv();
  client = new OpenAI({ apiKey: env.token, baseURL: env.gw.url + "/v1", maxRetries: 0 });
  ai = new GoogleGenAI({ apiKey: env.token, apiVersion: "v1beta", httpOptions: { baseUrl: env.gw.url } });
});
afterAll(() => env.stop());

const get = (path: string, headers: Record<string, string> = {}) => fetch(env.gw.url + path, { headers });

describe("GET /v1/models (chat-completions style)", () => {
  test("list and retrieve have exactly the spec's fields; BYPASS, request id", async () => {
    env.fake.reset();
    const r = await get("/v1/models", { authorization: `Bearer ${env.token}` });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-cache-status")).toBe("BYPASS");
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(await r.json()).toEqual({
      object: "list",
      data: [
        { id: "gpt-4o-mini", object: "model", created: 1700000000, owned_by: "fake" },
        { id: "gpt-4o", object: "model", created: 1700000000, owned_by: "fake" },
      ],
    });
    expect(env.fake.requests[0]!.headers.authorization).toBe(`Bearer ${KEYS.openai}`);
  });

  test("an upstream that leaves fields out still yields {object: list, data: [{id, object: model, created, owned_by}]}", async () => {
    env.fake.reset();
    env.fake.sparseModels(true);
    const list = await client.models.list();
    expect(list.data).toEqual([
      { id: "gpt-4o-mini", object: "model", created: 0, owned_by: "unknown" },
      { id: "gpt-4o", object: "model", created: 0, owned_by: "unknown" },
    ]);
    const raw = await (await get("/v1/models", { authorization: `Bearer ${env.token}` })).json();
    expect(raw.object).toBe("list");
    expect(await client.models.retrieve("gpt-4o")).toEqual({ id: "gpt-4o", object: "model", created: 0, owned_by: "unknown" } as any);
  });

  test("an unknown model is the provider's own 404 (status and body) with doc1's type not_found, as the SDK expects", async () => {
    env.fake.reset();
    const err: any = await client.models.retrieve("gpt-nonexistent").catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.status).toBe(404);
    // doc1 §7 rule 2: "An unknown project, model, or other resource returns 404 not_found" (OpenAI says invalid_request_error)
    expect(err.error).toMatchObject({ code: "model_not_found", type: "not_found", message: expect.stringContaining("gpt-nonexistent") });
    expect(err.type).toBe("not_found");
    // a model lookup is never cached: its error says BYPASS like its answer (decisions: X-Cache-Status)
    expect(err.headers.get("x-cache-status")).toBe("BYPASS");
    expect(err.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("the caller's query is forwarded; ?key= (the Gemini SDK's credential) picks the generate-content list and never travels upstream", async () => {
    env.fake.reset();
    let r = await get("/v1/models?limit=5", { authorization: `Bearer ${env.token}` });
    expect(r.status).toBe(200);
    expect(env.fake.requests[0]!.path).toBe("/v1/models?limit=5");
    r = await get(`/v1/models?key=${env.token}&pageSize=5`);
    expect(r.status).toBe(200);
    expect((await r.json()).models).toHaveLength(2);
    expect(env.fake.requests[1]!.path).toBe("/v1beta/models?pageSize=5");
    expect(JSON.stringify(env.fake.requests)).not.toContain(env.token);
  });

  test("upstream 5xx -> 502 proxy_error (doc1 envelope); without credentials 401", async () => {
    env.fake.reset();
    env.fake.failNext({ kind: "status", status: 500 });
    const r = await get("/v1/models", { authorization: `Bearer ${env.token}` });
    expect(r.status).toBe(502);
    expect(await r.json()).toEqual({ error: { message: expect.stringContaining("answered 500"), type: "proxy_error" } });
    const anon = await get("/v1/models");
    expect(anon.status).toBe(401);
    expect((await anon.json()).error.type).toBe("authentication_error");
  });
});

describe("GET /v1beta/models[/{model}] (generate-content style)", () => {
  const spec = (id: string) => ({ name: `models/${id}`, displayName: id, description: `fake ${id}`, inputTokenLimit: 1048576, outputTokenLimit: 8192 });

  test("list and get: {models: [{name: models/<id>, displayName, description, inputTokenLimit, outputTokenLimit}]}", async () => {
    env.fake.reset();
    let r = await get("/v1beta/models", { "x-goog-api-key": env.token });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-cache-status")).toBe("BYPASS");
    expect(await r.json()).toEqual({ models: [spec("gemini-2.0-flash"), spec("gemini-1.5-pro")] });
    r = await get("/v1beta/models/gemini-1.5-pro", { "x-goog-api-key": env.token });
    expect(await r.json()).toEqual(spec("gemini-1.5-pro"));
    // the models/ prefix in the path is accepted too
    r = await get("/v1beta/models/models%2Fgemini-1.5-pro", { "x-goog-api-key": env.token });
    expect(await r.json()).toEqual(spec("gemini-1.5-pro"));
    expect(env.fake.requests.every((q) => q.headers["x-goog-api-key"] === KEYS.gemini)).toBe(true);
  });

  test("an upstream that leaves fields out: name gets models/, displayName the id, description '', unknown limits null", async () => {
    env.fake.reset();
    env.fake.sparseModels(true);
    const sparse = (id: string) => ({ name: `models/${id}`, displayName: id, description: "", inputTokenLimit: null, outputTokenLimit: null });
    expect(await (await get("/v1beta/models", { "x-goog-api-key": env.token })).json()).toEqual({ models: [sparse("gemini-2.0-flash"), sparse("gemini-1.5-pro")] });
    expect(await (await get("/v1beta/models/gemini-2.0-flash", { "x-goog-api-key": env.token })).json()).toEqual(sparse("gemini-2.0-flash"));
    const m = await ai.models.get({ model: "gemini-2.0-flash" });
    expect(m.name).toBe("models/gemini-2.0-flash");
    expect(m.displayName).toBe("gemini-2.0-flash");
  });

  test("an unknown model is the provider's 404 through the SDK and raw fetch", async () => {
    env.fake.reset();
    const err: any = await ai.models.get({ model: "gemini-nonexistent" }).catch((e) => e);
    expect(err.status).toBe(404);
    expect(err.message).toContain("gemini-nonexistent");
    const r = await get("/v1beta/models/gemini-nonexistent", { "x-goog-api-key": env.token });
    expect(r.status).toBe(404);
    expect((await r.json()).error).toMatchObject({ code: 404, status: "NOT_FOUND", type: "not_found" });
    expect(r.headers.get("x-request-id")).toBeTruthy();
  });

  test("the official SDK under apiVersion v1: list at /v1/models and get at /v1/models/{model} are the generate-content ones", async () => {
    env.fake.reset();
    const v1 = new GoogleGenAI({ apiKey: env.token, apiVersion: "v1", httpOptions: { baseUrl: env.gw.url } });
    const names: string[] = [];
    for await (const model of await v1.models.list()) names.push(model.name!);
    expect(names).toEqual(["models/gemini-2.0-flash", "models/gemini-1.5-pro"]);
    const one = await v1.models.get({ model: "gemini-2.0-flash" });
    expect(one).toMatchObject(spec("gemini-2.0-flash"));
    expect(env.fake.requests.map((q) => q.path.split("?")[0])).toEqual(["/v1beta/models", "/v1beta/models/gemini-2.0-flash"]);
  });

  test("?key= authenticates and is stripped from the upstream query", async () => {
    env.fake.reset();
    const r = await get(`/v1beta/models?key=${env.token}&pageSize=2`);
    expect(r.status).toBe(200);
    expect(env.fake.requests[0]!.path).toBe("/v1beta/models?pageSize=2");
    expect(env.fake.requests[0]!.headers["x-goog-api-key"]).toBe(KEYS.gemini);
  });
});

describe("model endpoints with the upstream down", () => {
  test("connection refused -> 502 proxy_error on every model endpoint", async () => {
    const port = await closedPort();
    const base = `http://127.0.0.1:${port}`;
    const gw = await startGateway({ providers: { openai: { base_url: base }, gemini: { base_url: base } }, cache: { enabled: false } });
    try {
      const token = await gw.token("t");
      for (const [path, headers] of [
        ["/v1/models", { authorization: `Bearer ${token}` }],
        ["/v1/models/gpt-4o", { authorization: `Bearer ${token}` }],
        ["/v1beta/models", { "x-goog-api-key": token }],
        ["/v1beta/models/gemini-2.0-flash", { "x-goog-api-key": token }],
      ] as const) {
        const r = await fetch(gw.url + path, { headers });
        expect(r.status).toBe(502);
        expect(await r.json()).toEqual({ error: { message: expect.stringContaining("unreachable"), type: "proxy_error" } });
      }
    } finally {
      await gw.stop();
    }
  });
});
