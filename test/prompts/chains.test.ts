/** /api/v1/chains CRUD over HTTP, and chain execution rules at the service level with a recording gateway double. */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import type { TestGateway } from "../helpers/gateway";
import { RecordingGateway, startTwoTenants, apiCaller, expectError } from "./helpers";
import { ChainService, applyTransform, parsePath } from "../../src/prompts/chains/service";
import { ChainStore } from "../../src/prompts/chains/store";
import { PROMPTS_MIGRATIONS } from "../../src/prompts/migrations";
import { openStorage } from "../../src/storage/open";
import { Db } from "../../src/storage/db";
import { ApiError } from "../../src/core/errors";

const chainStores = (db: Db) => {
  const storage = openStorage({ path: ":memory:", db });
  return (t: string) => new ChainStore(storage.tenant(t));
};

let gw: TestGateway;
let A: string;
let B: string;
const C = "/api/v1/chains";

beforeAll(async () => ({ gw, A, B } = await startTwoTenants()));
afterAll(() => gw.stop());

const call = apiCaller(() => gw);

const steps = [
  { modelId: "gpt-4o-mini", systemPrompt: "Summarise.", maxTokens: 100, temperature: 0.2 },
  { modelId: "claude-3-5-haiku", transform: "template", template: "Translate to French: {{input}}" },
];

describe("chains CRUD", () => {
  test("create 201 with workspaceId and default transform; get; list {chains,total,...}; PUT replaces steps; delete", async () => {
    const c = await call("POST", C, A, { name: "Summarise then translate", description: "two models", steps });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({
      name: "Summarise then translate",
      description: "two models",
      workspaceId: "tenant-a",
      createdBy: "alice",
      steps: [
        { modelId: "gpt-4o-mini", systemPrompt: "Summarise.", maxTokens: 100, temperature: 0.2, transform: "passThrough" },
        { modelId: "claude-3-5-haiku", transform: "template", template: "Translate to French: {{input}}" },
      ],
    });
    expect(c.body.createdAt).toBe(c.body.updatedAt);
    const id = c.body.id;
    expect((await call("GET", `${C}/${id}`, A)).body).toEqual(c.body);
    const list = (await call("GET", C, A)).body;
    expect(list).toMatchObject({ total: 1, page: 1, pageSize: 20, totalPages: 1 });
    expect(list.chains[0].id).toBe(id);
    const put = await call("PUT", `${C}/${id}`, A, { name: "Just one", steps: [{ modelId: "gemini-2.0-flash" }] });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ id, name: "Just one", description: "", steps: [{ modelId: "gemini-2.0-flash", transform: "passThrough" }] });
    expect(put.body.steps).toHaveLength(1);
    expect((await call("DELETE", `${C}/${id}`, A))).toEqual({ status: 200, body: { deleted: true, id } });
    expectError(await call("GET", `${C}/${id}`, A), 404, "not_found");
    expectError(await call("DELETE", `${C}/${id}`, A), 404, "not_found");
    expectError(await call("PUT", `${C}/${id}`, A, { name: "x", steps }), 404, "not_found");
  });

  test("list pagination", async () => {
    const t = await gw.token("tenant-many-chains", ["ManageConfig", "ViewMetrics", "ViewLogs"]);
    for (let i = 0; i < 5; i++) await call("POST", C, t, { name: `c${i}`, steps: [{ modelId: "m" }] });
    const p = (await call("GET", `${C}?page=2&pageSize=2`, t)).body;
    expect(p).toMatchObject({ total: 5, page: 2, pageSize: 2, totalPages: 3 });
    expect(p.chains).toHaveLength(2);
    expectError(await call("GET", `${C}?pageSize=101`, t), 400, "validation_error");
  });

  test("validation: required fields, limits, transform parameters", async () => {
    const bad: Array<[unknown, string]> = [
      [{ steps }, "name"],
      [{ name: "x" }, "steps"],
      [{ name: "x", steps: [] }, "steps"],
      [{ name: "x", steps: Array.from({ length: 21 }, () => ({ modelId: "m" })) }, "steps"],
      [{ name: "", steps }, "name"],
      [{ name: "n".repeat(257), steps }, "name"],
      [{ name: "x", description: "d".repeat(2001), steps }, "description"],
      [{ name: "x", steps: [{}] }, "modelId"],
      [{ name: "x", steps: [{ modelId: "" }] }, "modelId"],
      [{ name: "x", steps: [{ modelId: "m", transform: "uppercase" }] }, "transform"],
      [{ name: "x", steps: [{ modelId: "m", maxTokens: 0 }] }, "maxTokens"],
      [{ name: "x", steps: [{ modelId: "m", temperature: 2.1 }] }, "temperature"],
      [{ name: "x", steps: [{ modelId: "m", transform: "extractField" }] }, "field"],
      [{ name: "x", steps: [{ modelId: "m", transform: "extractField", field: "a..b" }] }, "JSON path"],
      [{ name: "x", steps: [{ modelId: "m", transform: "template" }] }, "{{input}}"],
      [{ name: "x", steps: [{ modelId: "m", transform: "template", template: "no placeholder" }] }, "{{input}}"],
      [{ name: "x", steps: [{ modelId: "m".repeat(129) }] }, "modelId"],
      [{ name: "x", steps: [{ modelId: "m", systemPrompt: "s".repeat(100_001) }] }, "systemPrompt"],
      [{ name: "x", steps: [{ modelId: "m", transform: "extractField", field: "f".repeat(257) }] }, "field"],
      [{ name: "x", steps: [{ modelId: "m", transform: "template", template: "{{input}}" + "t".repeat(100_000) }] }, "template"],
      [{ name: "x", steps: [{ modelId: "m", maxTokens: 1.5 }] }, "maxTokens"],
    ];
    for (const [json, field] of bad) expectError(await call("POST", C, A, json), 400, "validation_error", field);
    const ok = await call("POST", C, A, { name: "x", steps: [{ modelId: "m", transform: "extractField", field: "$.items[0].title" }] });
    expect(ok.status).toBe(201);
    expectError(await call("PUT", `${C}/${ok.body.id}`, A, { name: "x", steps: [] }), 400, "validation_error", "steps");
    expectError(await call("POST", `${C}/${ok.body.id}/execute`, A, {}), 400, "validation_error", "messages");
    expectError(await call("POST", `${C}/${ok.body.id}/execute`, A, { messages: [] }), 400, "validation_error", "messages");
    expectError(await call("POST", `${C}/${ok.body.id}/execute`, A, { messages: [{ role: "robot", content: "x" }] }), 400, "validation_error");
    expectError(await call("POST", `${C}/${ok.body.id}/execute`, A, { messages: Array.from({ length: 501 }, () => ({ role: "user", content: "x" })) }), 400, "validation_error", "messages");
    expectError(await call("POST", `${C}/${ok.body.id}/execute`, A, { messages: [{ role: "user" }] }), 400, "validation_error", "content");
    expectError(await call("POST", `${C}/${crypto.randomUUID()}/execute`, A, { messages: [{ role: "user", content: "x" }] }), 404, "not_found");
  });

  test("tenant isolation", async () => {
    const c = (await call("POST", C, A, { name: "A's chain", steps })).body;
    expect((await call("GET", C, B)).body.chains.some((x: any) => x.id === c.id)).toBe(false);
    expectError(await call("GET", `${C}/${c.id}`, B), 404, "not_found");
    expectError(await call("PUT", `${C}/${c.id}`, B, { name: "pwned", steps }), 404, "not_found");
    expectError(await call("DELETE", `${C}/${c.id}`, B), 404, "not_found");
    expectError(await call("POST", `${C}/${c.id}/execute`, B, { messages: [{ role: "user", content: "x" }] }), 404, "not_found");
    expect((await call("GET", `${C}/${c.id}`, A)).body.name).toBe("A's chain");
  });
});

describe("transforms", () => {
  test("JSON paths", () => {
    expect(parsePath("$.a.b[0].c")).toEqual(["a", "b", 0, "c"]);
    expect(parsePath("a.b.0")).toEqual(["a", "b", 0]);
    expect(parsePath(`$["key with space"].x`)).toEqual(["key with space", "x"]);
    expect(parsePath("$")).toEqual([]);
    expect(() => parsePath("a..b")).toThrow(ApiError);
  });
  test("extractField parses JSON (fenced too) and returns strings raw, other values as JSON", () => {
    const s = { modelId: "m", transform: "extractField" as const, field: "$.items[1]" };
    expect(applyTransform(s, '{"items":["a","b"]}', 1)).toBe("b");
    expect(applyTransform({ ...s, field: "items" }, '```json\n{"items":[1,{"x":true}]}\n```', 1)).toBe('[1,{"x":true}]');
    const notJson = (() => {
      try {
        applyTransform(s, "not json", 2);
      } catch (e) {
        return e as ApiError;
      }
    })()!;
    expect(notJson).toMatchObject({ type: "invalid_request_error", status: 400, extra: { step: 2 } });
    expect(notJson.message).toContain("chain step 2");
    expect(() => applyTransform({ ...s, field: "nope" }, "{}", 1)).toThrow("no value at that path");
  });
  test("template replaces every {{input}} (no $-pattern surprises)", () => {
    expect(applyTransform({ modelId: "m", transform: "template", template: "A {{input}} B {{ input }}" }, "$& x", 1)).toBe("A $& x B $& x");
  });
});

describe("chain execution (service level, recording gateway)", () => {
  let db: Db;
  beforeAll(() => {
    db = new Db(":memory:", [{ domain: "prompts", migrations: PROMPTS_MIGRATIONS }]);
  });
  afterAll(() => db.close());
  const actor = { tenantId: "t1", sub: "u1" };

  test("three steps feed outputs forward with per-step system prompts, models, settings and token counts", async () => {
    const replies = ['{"summary":"cats are great","score":9}', "Les chats sont super", "FINAL: les chats"];
    const double = new RecordingGateway((_req, n) => replies[n - 1]!);
    const svc = new ChainService(chainStores(db), double);
    const chain = await svc.create(actor, {
      name: "three",
      steps: [
        { modelId: "gpt-4o-mini", systemPrompt: "Return JSON.", maxTokens: 50, temperature: 0 },
        { modelId: "claude-3-5-haiku", transform: "extractField", field: "$.summary", systemPrompt: "Translate to French." },
        { modelId: "gemini-2.0-flash", transform: "template", template: "Shout this: {{input}}", maxTokens: 10, temperature: 1.5 },
      ],
    });
    const out = await svc.execute(actor, chain.id, [
      { role: "system", content: "be brief" },
      { role: "user", content: "tell me about cats" },
    ]);
    expect(double.calls.map((c) => [c.model, c.messages, c.maxTokens, c.temperature])).toEqual([
      [
        "gpt-4o-mini",
        [
          { role: "system", content: "Return JSON." },
          { role: "system", content: "be brief" },
          { role: "user", content: "tell me about cats" },
        ],
        50,
        0,
      ],
      [
        "claude-3-5-haiku",
        [
          { role: "system", content: "Translate to French." },
          { role: "user", content: "cats are great" },
        ],
        undefined,
        undefined,
      ],
      ["gemini-2.0-flash", [{ role: "user", content: "Shout this: Les chats sont super" }], 10, 1.5],
    ]);
    expect(double.calls.every((c) => c.tenantId === "t1")).toBe(true);
    // the double counts whitespace-separated words as tokens
    expect(out.steps).toEqual([
      { index: 0, model: "gpt-4o-mini", output: replies[0]!, promptTokens: 2 + 2 + 4, completionTokens: 3, cacheHit: false, durationMs: 1 },
      { index: 1, model: "claude-3-5-haiku", output: replies[1]!, promptTokens: 3 + 3, completionTokens: 4, cacheHit: false, durationMs: 1 },
      { index: 2, model: "gemini-2.0-flash", output: replies[2]!, promptTokens: 6, completionTokens: 3, cacheHit: false, durationMs: 1 },
    ]);
    expect(out.output).toBe("FINAL: les chats");
    expect(out.totalPromptTokens).toBe(8 + 6 + 6);
    expect(out.totalCompletionTokens).toBe(3 + 4 + 3);
  });

  test("a failing step stops the chain with an error naming the step; later steps are not called", async () => {
    const double = new RecordingGateway((req) => (req.model === "bad-model" ? new ApiError("proxy_error", "upstream returned 500") : "ok"));
    const svc = new ChainService(chainStores(db), double);
    const chain = await svc.create(actor, { name: "fails", steps: [{ modelId: "m1" }, { modelId: "bad-model" }, { modelId: "m3" }] });
    const err = await svc.execute(actor, chain.id, [{ role: "user", content: "hi" }]).then(() => undefined, (e) => e as ApiError);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ type: "proxy_error", status: 502, extra: { step: 1 } });
    expect(err!.message).toBe("chain step 1 (model 'bad-model') failed: upstream returned 500");
    expect(double.calls.map((c) => c.model)).toEqual(["m1", "bad-model"]);
  });

  test("an extractField on non-JSON output stops the chain naming the step", async () => {
    const double = new RecordingGateway(() => "plain text, not JSON");
    const svc = new ChainService(chainStores(db), double);
    const chain = await svc.create(actor, { name: "x", steps: [{ modelId: "m1" }, { modelId: "m2", transform: "extractField", field: "a" }] });
    const err = await svc.execute(actor, chain.id, [{ role: "user", content: "hi" }]).catch((e) => e as ApiError);
    expect(err).toMatchObject({ type: "invalid_request_error", extra: { step: 1 } });
    expect(double.calls).toHaveLength(1);
  });

  test("a transform on step 0 applies to the last user message", async () => {
    const double = new RecordingGateway(() => "done");
    const svc = new ChainService(chainStores(db), double);
    const chain = await svc.create(actor, { name: "x", steps: [{ modelId: "m1", transform: "template", template: "Q: {{input}}" }] });
    await svc.execute(actor, chain.id, [
      { role: "user", content: "first" },
      { role: "assistant", content: "reply" },
      { role: "user", content: "second" },
    ]);
    expect(double.calls[0]!.messages.map((m) => m.content)).toEqual(["first", "reply", "Q: second"]);
  });

  test("an unavailable model -> 503 service_unavailable naming the step", async () => {
    const svc = new ChainService(chainStores(db), { complete: () => Promise.reject(new ApiError("service_unavailable", "the model gateway is not available")) });
    const chain = await svc.create(actor, { name: "x", steps: [{ modelId: "m1" }] });
    await expect(svc.execute(actor, chain.id, [{ role: "user", content: "x" }])).rejects.toMatchObject({ type: "service_unavailable", status: 503 });
  });
});
