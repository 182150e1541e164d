/**
 * GET /api/v1/usage (ViewMetrics), the token and cost counters of /metrics and the request log's
 * gateway fields, checked against the requests made (their answers' own usage fields and the list
 * prices), through the official SDKs.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { KEYS } from "./setup";
import { Logger } from "../../src/core/log";
import { PriceTable, priceOf } from "../../src/gateway/prices";

let fake: FakeUpstream;
let gw: TestGateway;
let admin: string;
const logs: string[] = [];

beforeAll(async () => {
  fake = await startFakeUpstream();
  gw = await startGateway(
    {
      server: { request_log: true },
      providers: { openai: { base_url: fake.url, api_key: KEYS.openai }, anthropic: { base_url: fake.url, api_key: KEYS.anthropic } },
      prices: { overrides: { "claude-test": { input: 100, output: 200 } } },
    },
    {},
    { logger: new Logger("info", (l) => logs.push(l)) },
  );
  admin = await gw.token("tenant-a", ["ViewMetrics"]);
});
afterAll(async () => {
  await gw.stop();
  await fake.stop();
});

const usage = async (query = "", token = admin) => {
  const r = await gw.api(`/api/v1/usage${query}`, { token });
  return { status: r.status, body: (await r.json()) as any };
};
const cost = (model: string, input: number, output: number) => (input * priceOf(model)!.input + output * priceOf(model)!.output) / 1e6;

describe("usage and cost", () => {
  // what the requests below reported: the expectations are built from the answers, not from the table
  const seen = { openaiIn: 0, openaiOut: 0, anthropicIn: 0, anthropicOut: 0, hitIn: 0, hitOut: 0, cost: 0, saved: 0 };
  let keyId = "";

  test("requests of two providers, an API key and a JWT, a miss, a hit and a bypass", async () => {
    const key = await gw.ctx.identity.keys.create("tenant-a", { name: "usage-app" });
    keyId = key.id;
    const viaKey = new OpenAI({ apiKey: key.key, baseURL: gw.url + "/v1", maxRetries: 0 });
    const viaJwt = new OpenAI({ apiKey: await gw.token("tenant-a"), baseURL: gw.url + "/v1", maxRetries: 0 });
    const q = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "How many legs does a spider have?" }] };
    const miss = await viaKey.chat.completions.create(q);
    const hit = await viaKey.chat.completions.create(q).withResponse();
    expect(hit.response.headers.get("x-cache-status")).toBe("HIT");
    const bypass = await viaJwt.chat.completions.create(q, { headers: { "X-Svc-Skip-Cache": "true" } });
    for (const r of [miss, hit.data, bypass]) {
      seen.openaiIn += r.usage!.prompt_tokens;
      seen.openaiOut += r.usage!.completion_tokens;
    }
    seen.cost += cost("gpt-4o-mini", miss.usage!.prompt_tokens, miss.usage!.completion_tokens) + cost("gpt-4o-mini", bypass.usage!.prompt_tokens, bypass.usage!.completion_tokens);
    seen.saved += cost("gpt-4o-mini", hit.data.usage!.prompt_tokens, hit.data.usage!.completion_tokens);
    seen.hitIn += hit.data.usage!.prompt_tokens;
    seen.hitOut += hit.data.usage!.completion_tokens;

    const anthropic = new Anthropic({ apiKey: await gw.token("tenant-a"), baseURL: gw.url, maxRetries: 0 });
    const m = await anthropic.messages.create({ model: "claude-test-1", max_tokens: 20, messages: [{ role: "user", content: "Name a bird." }] });
    seen.anthropicIn += m.usage.input_tokens;
    seen.anthropicOut += m.usage.output_tokens;
    seen.cost += (m.usage.input_tokens * 100 + m.usage.output_tokens * 200) / 1e6; // the configured override
    expect(new PriceTable({ "claude-test": { input: 100, output: 200 } }).priceOf("claude-test-1")).toEqual({ input: 100, output: 200 });
  });

  test("totals and every breakdown match the requests made", async () => {
    const { status, body } = await usage();
    expect(status).toBe(200);
    const inTok = seen.openaiIn + seen.anthropicIn;
    const outTok = seen.openaiOut + seen.anthropicOut;
    expect(body.totals).toEqual({
      requests: 4,
      cacheHits: 1,
      cacheMisses: 2,
      cacheBypassed: 1,
      hitRatio: 1 / 3,
      inputTokens: inTok,
      outputTokens: outTok,
      totalTokens: inTok + outTok,
      costUsd: expect.any(Number),
      costSavedUsd: expect.any(Number),
      // the hit's tokens were served from the cache; the rest were bought upstream
      cacheHitInputTokens: seen.hitIn,
      cacheHitOutputTokens: seen.hitOut,
      cacheHitTokens: seen.hitIn + seen.hitOut,
      upstreamInputTokens: inTok - seen.hitIn,
      upstreamOutputTokens: outTok - seen.hitOut,
      upstreamTokens: inTok + outTok - seen.hitIn - seen.hitOut,
      unpricedRequests: 0,
      unpricedTokens: 0,
      costStatus: "known",
    });
    expect(seen.hitIn).toBeGreaterThan(0);
    expect(body.totals.costUsd).toBeCloseTo(seen.cost, 6);
    expect(body.totals.costSavedUsd).toBeCloseTo(seen.saved, 6);
    expect(Date.parse(body.to) - Date.parse(body.from)).toBe(30 * 86_400_000);
    const byModel = Object.fromEntries(body.breakdowns.model.map((g: any) => [g.key, g]));
    expect(byModel["gpt-4o-mini"]).toMatchObject({ requests: 3, cacheHits: 1, cacheMisses: 1, cacheBypassed: 1, hitRatio: 0.5, inputTokens: seen.openaiIn, outputTokens: seen.openaiOut, cacheHitInputTokens: seen.hitIn, upstreamInputTokens: seen.openaiIn - seen.hitIn });
    expect(byModel["claude-test-1"]).toMatchObject({ requests: 1, cacheMisses: 1, inputTokens: seen.anthropicIn, outputTokens: seen.anthropicOut });
    expect(body.breakdowns.model[0].key).toBe("claude-test-1"); // most expensive first
    const byProvider = Object.fromEntries(body.breakdowns.provider.map((g: any) => [g.key, g.requests]));
    expect(byProvider).toEqual({ openai: 3, anthropic: 1 });
    const byKey = Object.fromEntries(body.breakdowns.key.map((g: any) => [String(g.key), g.requests]));
    expect(byKey).toEqual({ [keyId]: 2, null: 2 });
    expect(body.breakdowns.day).toEqual([expect.objectContaining({ key: new Date().toISOString().slice(0, 10), requests: 4 })]);
    expect(body.breakdowns.deployment).toBeUndefined();
  });

  test("group_by picks breakdowns (deployment: who answered; hits have none); from/to bound the range", async () => {
    const dep = await usage("?group_by=deployment,provider");
    expect(Object.keys(dep.body.breakdowns).sort()).toEqual(["deployment", "provider"]);
    const byDep = Object.fromEntries(dep.body.breakdowns.deployment.map((g: any) => [String(g.key), g.requests]));
    expect(byDep).toEqual({ openai: 2, anthropic: 1, null: 1 });
    const future = await usage("?from=2100-01-01&to=2100-02-01");
    expect(future.body.totals).toMatchObject({ requests: 0, hitRatio: 0, costUsd: 0 });
    expect(future.body.from).toBe("2100-01-01T00:00:00.000Z");
    const today = new Date().toISOString().slice(0, 10);
    expect((await usage(`?from=${today}`)).body.totals.requests).toBe(4);
    expect((await usage(`?to=${today}`)).body.totals.requests).toBe(0);
  });

  test("validation: unreadable dates, an empty range and unknown groups are 400 in the doc1 envelope", async () => {
    for (const [q, says] of [
      ["?from=yesterday", "query 'from'"],
      ["?to=2026-13-45", "query 'to'"],
      ["?from=2026-02-01&to=2026-01-01", "must be before"],
      ["?from=2026-01-01&to=2026-01-01", "must be before"],
      ["?group_by=model,colour", "unknown group 'colour'"],
    ]) {
      const r = await usage(q!);
      expect(`${q} ${r.status}`).toBe(`${q} 400`);
      expect(r.body.error.type).toBe("validation_error");
      expect(r.body.error.message).toContain(says!);
    }
  });

  test("401 without a credential, 403 without ViewMetrics, and another tenant sees only its own", async () => {
    expect((await gw.api("/api/v1/usage")).status).toBe(401);
    const noPerm = await usage("", await gw.token("tenant-a", []));
    expect(noPerm.status).toBe(403);
    expect(noPerm.body.error.type).toBeDefined();
    const other = await usage("", await gw.token("tenant-b", ["ViewMetrics"]));
    expect(other.body.totals.requests).toBe(0);
    expect(other.body.breakdowns.model).toEqual([]);
  });

  test("/metrics: tokens and cost by provider and model (no tenant label by default)", async () => {
    const text = await (await fetch(gw.url + "/metrics")).text();
    expect(text).toContain(`svc_llm_tokens_total{provider="openai",model="gpt-4o-mini",direction="input"} ${seen.openaiIn}`);
    expect(text).toContain(`svc_llm_tokens_total{provider="openai",model="gpt-4o-mini",direction="output"} ${seen.openaiOut}`);
    expect(text).toContain(`svc_llm_tokens_total{provider="anthropic",model="claude-test-1",direction="input"} ${seen.anthropicIn}`);
    const costLine = text.split("\n").find((l) => l.startsWith('svc_llm_cost_usd_total{provider="anthropic",model="claude-test-1"}'))!;
    expect(Number(costLine.split(" ")[1])).toBeCloseTo((seen.anthropicIn * 100 + seen.anthropicOut * 200) / 1e6, 9);
    expect(text).toContain('svc_llm_cost_saved_usd_total{provider="openai",model="gpt-4o-mini"}');
    expect(text).not.toContain("tenant=");
  });

  test("request log lines carry model, provider, cache status and tier, tokens and cost", () => {
    const lines = logs.map((l) => JSON.parse(l)).filter((l) => l.msg === "request" && l.route === "/v1/chat/completions");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ model: "gpt-4o-mini", provider: "openai", cache: "MISS", deployment: "openai", attempts: 1, input_tokens: expect.any(Number), output_tokens: expect.any(Number), status: 200 });
    expect(lines[0].cost_usd).toBeGreaterThan(0);
    expect(lines[1]).toMatchObject({ model: "gpt-4o-mini", provider: "openai", cache: "HIT", cache_tier: "exact", cost_usd: 0 });
    expect(lines[1].cost_saved_usd).toBeGreaterThan(0);
    expect(lines[2]).toMatchObject({ cache: "BYPASS" });
  });

  test("a streamed miss is logged once the stream is over, with its tokens, cost and stream duration", async () => {
    const client = new OpenAI({ apiKey: await gw.token("tenant-log"), baseURL: gw.url + "/v1", maxRetries: 0 });
    let text = "";
    let usage: any;
    for await (const c of await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Stream me a log line." }], stream: true, stream_options: { include_usage: true } })) {
      text += c.choices[0]?.delta?.content ?? "";
      if (c.usage) usage = c.usage;
    }
    expect(text).toMatch(/^answer #\d+: Stream me a log line\.$/);
    const find = () => logs.map((l) => JSON.parse(l)).find((l) => l.msg === "request" && l.tenant === "tenant-log");
    for (let i = 0; i < 100 && !find(); i++) await Bun.sleep(10);
    const line = find();
    expect(line).toMatchObject({ model: "gpt-4o-mini", provider: "openai", cache: "MISS", deployment: "openai", attempts: 1, input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens, status: 200 });
    expect(line.cost_usd).toBeGreaterThan(0);
    expect(line.stream_ms).toBeGreaterThanOrEqual(line.latency_ms);
  });
});

describe("usage and cost of models with no known price", () => {
  test("a model with no known price (a local model) is charged nothing and reported as unpriced, never at a default price", async () => {
    const token = await gw.token("tenant-local");
    const viewer = await gw.token("tenant-local", ["ViewMetrics"]);
    const local = new OpenAI({ apiKey: token, baseURL: gw.url + "/v1", maxRetries: 0 });
    const q = { model: "llama3.1", messages: [{ role: "user" as const, content: "Which planet has rings?" }] };
    const miss = await local.chat.completions.create(q);
    const hit = await local.chat.completions.create(q).withResponse();
    expect(hit.response.headers.get("x-cache-status")).toBe("HIT");
    const tokens = (u: any) => u.prompt_tokens + u.completion_tokens;
    let r = await usage("", viewer);
    expect(r.body.totals).toMatchObject({ requests: 2, costUsd: 0, costSavedUsd: 0, unpricedRequests: 2, unpricedTokens: tokens(miss.usage) + tokens(hit.data.usage), costStatus: "unknown" });
    expect(r.body.totals.upstreamTokens).toBe(tokens(miss.usage));
    expect(r.body.totals.cacheHitTokens).toBe(tokens(hit.data.usage));
    // a priced model beside it: its cost is known, the total only partly
    await local.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Which planet is red?" }] });
    r = await usage("?group_by=model", viewer);
    expect(r.body.totals).toMatchObject({ requests: 3, costStatus: "partial" });
    expect(r.body.totals.costUsd).toBeGreaterThan(0);
    const byModel = Object.fromEntries(r.body.breakdowns.model.map((g: any) => [g.key, g]));
    expect(byModel["llama3.1"]).toMatchObject({ costUsd: 0, unpricedRequests: 2, costStatus: "unknown" });
    expect(byModel["gpt-4o-mini"]).toMatchObject({ unpricedRequests: 0, costStatus: "known" });
    // the request log and /metrics invent no cost either
    const text = await (await fetch(gw.url + "/metrics")).text();
    expect(text).not.toContain('svc_llm_cost_usd_total{provider="openai",model="llama3.1"}');
    const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg === "request" && l.tenant === "tenant-local" && l.model === "llama3.1");
    expect(line?.cost_usd).toBe(0);
  });
});

test("tenant labels are opt-in and bounded: beyond the limit, values count as 'other'", async () => {
  const f = await startFakeUpstream();
  const g = await startGateway({ providers: { openai: { base_url: f.url, api_key: "k" } }, usage: { metrics_tenant_label: true, metrics_max_label_values: 2 }, cache: { enabled: false } });
  try {
    for (const [tenant, model] of [["t1", "m-a"], ["t2", "m-b"], ["t3", "m-c"]]) {
      const r = await g.api("/v1/chat/completions", { method: "POST", token: await g.token(tenant!), json: { model, messages: [{ role: "user", content: "hi" }] } });
      expect(r.status).toBe(200);
    }
    const text = await (await fetch(g.url + "/metrics")).text();
    expect(text).toContain('svc_llm_tokens_total{provider="openai",model="m-a",tenant="t1",direction="input"} 10');
    expect(text).toContain('svc_llm_tokens_total{provider="openai",model="m-b",tenant="t2",direction="input"} 10');
    expect(text).toContain('svc_llm_tokens_total{provider="openai",model="other",tenant="other",direction="input"} 10');
    expect(text).not.toContain("m-c");
  } finally {
    await g.stop();
    await f.stop();
  }
});
