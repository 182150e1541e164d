/**
 * Prompt and chain execution end to end: real gateway (its own proxy pipeline, semantic cache,
 * upstream adapters chosen by model routing) against the fake upstream that speaks the
 * providers' wire formats and records what it receives.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, closedPort, type FakeUpstream } from "../fake-upstream/server";
import { body } from "./helpers";
import OpenAI from "openai";

let gw: TestGateway;
let fake: FakeUpstream;
let A: string;

beforeAll(async () => {
  fake = await startFakeUpstream();
  const base_url = fake.url;
  gw = await startGateway({
    rate_limits: { enabled: false },
    // cohere points at a closed port so a chain step routed there fails deterministically
    providers: {
      openai: { base_url, api_key: "sk-fake" },
      anthropic: { base_url, api_key: "sk-fake" },
      gemini: { base_url, api_key: "g-fake" },
      cohere: { base_url: `http://127.0.0.1:${await closedPort()}`, api_key: "c-fake" },
    },
  });
  A = await gw.token("tenant-exec", ["ManageConfig", "ViewMetrics", "ViewLogs"], "alice");
});
afterAll(async () => {
  await gw.stop();
  await fake.stop();
});

async function call(method: string, path: string, json?: unknown, token = A) {
  const r = await gw.api(path, { method, token, json });
  return { status: r.status, body: await body(r) };
}
const wordCount = (s: string) => (s.match(/\S+\s*/g) ?? [s]).length;

describe("prompt execute through the gateway", () => {
  test("the rendered prompt reaches the upstream verbatim; a second identical execute is a cache hit with no upstream call", async () => {
    const p = (
      await call("POST", "/api/v1/prompts", {
        name: "Product blurb",
        template: "Write a two-line blurb for {{product}}.\nAudience: {{audience=developers}}\nTone: {{tone:string=dry}} — \\{{not a var}}",
        model: "gpt-4o-mini",
        temperature: 0.4,
        maxTokens: 120,
      })
    ).body;
    const rendered = "Write a two-line blurb for a sqlite-backed LLM gateway.\nAudience: developers\nTone: dry — {{not a var}}";
    const before = fake.received("/v1/chat/completions").length;

    const first = await call("POST", `/api/v1/prompts/${p.id}/execute`, { variables: { product: "a sqlite-backed LLM gateway" } });
    expect(first.status).toBe(200);
    const sent = fake.received("/v1/chat/completions");
    expect(sent.length).toBe(before + 1);
    const req = sent.at(-1)!;
    expect(req.body.model).toBe("gpt-4o-mini");
    expect(req.body.messages).toEqual([{ role: "user", content: rendered }]);
    expect(req.body.temperature).toBe(0.4);
    // a non-reasoning model gets max_tokens, which every OpenAI-compatible server reads
    expect(req.body.max_tokens).toBe(120);
    expect(req.body).not.toHaveProperty("max_completion_tokens");
    expect(first.body).toMatchObject({ renderedPrompt: rendered, cacheHit: false, dryRun: false, estimatedTokens: Math.ceil(rendered.length / 4) });
    expect(first.body.response).toMatch(/^answer #\d+: /);
    expect(first.body.response.endsWith(rendered)).toBe(true);
    expect(first.body.usage).toEqual({ promptTokens: 10, completionTokens: wordCount(first.body.response), totalTokens: 10 + wordCount(first.body.response) });
    expect(Number.isInteger(first.body.durationMs)).toBe(true);

    const second = await call("POST", `/api/v1/prompts/${p.id}/execute`, { variables: { product: "a sqlite-backed LLM gateway" } });
    expect(second.status).toBe(200);
    expect(second.body.cacheHit).toBe(true);
    expect(second.body.response).toBe(first.body.response);
    expect(second.body.runId).not.toBe(first.body.runId);
    expect(fake.received("/v1/chat/completions").length).toBe(before + 1); // no upstream call

    const runs = (await call("GET", `/api/v1/prompts/${p.id}/runs`)).body;
    expect(runs.total).toBe(2);
    expect(runs.runs.map((r: any) => [r.status, r.cacheHit])).toEqual([
      ["COMPLETED", true],
      ["COMPLETED", false],
    ]);
    expect(runs.runs[1]).toMatchObject({ runId: first.body.runId, renderedPrompt: rendered, response: first.body.response, model: "gpt-4o-mini", variables: { product: "a sqlite-backed LLM gateway" } });
  });

  test("same cache as the proxies: an OpenAI SDK call with the rendered text is a HIT on the executed prompt's entry, and an execute after a proxy miss is a hit", async () => {
    const client = new OpenAI({ apiKey: A, baseURL: gw.url + "/v1", maxRetries: 0 });
    const p = (await call("POST", "/api/v1/prompts", { name: "Shared cache", template: "Summarise {{doc}} in one line.", model: "gpt-4o-mini", temperature: 0 })).body;
    const doc = `document ${crypto.randomUUID()}`;
    const before = fake.received("/v1/chat/completions").length;
    const exec = await call("POST", `/api/v1/prompts/${p.id}/execute`, { variables: { doc } });
    expect(exec.body.cacheHit).toBe(false);
    const viaSdk = await client.chat.completions
      .create({ model: "gpt-4o-mini", temperature: 0, messages: [{ role: "user", content: `Summarise ${doc} in one line.` }] })
      .withResponse();
    expect(viaSdk.response.headers.get("x-cache-status")).toBe("HIT");
    expect(viaSdk.data.choices[0]!.message.content).toBe(exec.body.response);
    // the other way round: the proxy fills the cache, the prompt execute is served from it
    const doc2 = `document ${crypto.randomUUID()}`;
    const miss = await client.chat.completions.create({ model: "gpt-4o-mini", temperature: 0, messages: [{ role: "user", content: `Summarise ${doc2} in one line.` }] }).withResponse();
    expect(miss.response.headers.get("x-cache-status")).toBe("MISS");
    const exec2 = await call("POST", `/api/v1/prompts/${p.id}/execute`, { variables: { doc: doc2 } });
    expect(exec2.body).toMatchObject({ cacheHit: true, response: miss.data.choices[0]!.message.content });
    expect(fake.received("/v1/chat/completions").length).toBe(before + 2); // one upstream call per distinct text
  });

  test("the request's model picks the provider style (messages style for claude-*)", async () => {
    const p = (await call("POST", "/api/v1/prompts", { name: "Routed", template: "Name three {{thing}}.", model: "gpt-4o-mini" })).body;
    const before = fake.received("/v1/messages").length;
    const r = await call("POST", `/api/v1/prompts/${p.id}/execute`, { variables: { thing: "rivers" }, model: "claude-3-5-haiku-latest", maxTokens: 32 });
    expect(r.status).toBe(200);
    const sent = fake.received("/v1/messages");
    expect(sent.length).toBe(before + 1);
    expect(sent.at(-1)!.body).toMatchObject({ model: "claude-3-5-haiku-latest", max_tokens: 32, messages: [{ role: "user", content: "Name three rivers." }] });
    expect(r.body.usage.promptTokens).toBe(12);
  });

  test("dryRun and /test never call the upstream", async () => {
    const p = (await call("POST", "/api/v1/prompts", { name: "Dry only", template: "Hello {{n}}", model: "gpt-4o-mini" })).body;
    const before = fake.requests.length;
    expect((await call("POST", `/api/v1/prompts/${p.id}/execute`, { variables: { n: "x" }, dryRun: true })).body).toMatchObject({ dryRun: true, renderedPrompt: "Hello x" });
    expect((await call("POST", `/api/v1/prompts/${p.id}/test`, { variables: { n: "y" } })).body).toMatchObject({ dryRun: true, renderedPrompt: "Hello y" });
    expect(fake.requests.length).toBe(before);
  });

  test("an upstream error is returned and recorded as a FAILED run", async () => {
    const p = (await call("POST", "/api/v1/prompts", { name: "Will fail", template: "fail please {{id}}", model: "gpt-4o-mini" })).body;
    fake.failNext({ kind: "status", status: 400 });
    const r = await call("POST", `/api/v1/prompts/${p.id}/execute`, { variables: { id: crypto.randomUUID() } });
    expect(r.status).toBe(400);
    expect(r.body.error.type).toBe("invalid_request_error");
    expect(r.body.error.message).toContain("fake openai error 400");
    const runs = (await call("GET", `/api/v1/prompts/${p.id}/runs?status=FAILED`)).body;
    expect(runs.total).toBe(1);
    expect(runs.runs[0].error).toContain("fake openai error 400");
  });

  test("an upstream rate limit is 429 rate_limit_error with retry_after_secs and Retry-After (doc1 §7 rule 3), not a 400", async () => {
    const p = (await call("POST", "/api/v1/prompts", { name: "Rate limited", template: "limit me {{id}}", model: "gpt-4o-mini" })).body;
    fake.failNext({ kind: "status", status: 429, retryAfter: "12" });
    const r = await gw.api(`/api/v1/prompts/${p.id}/execute`, { method: "POST", token: A, json: { variables: { id: crypto.randomUUID() } } });
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("12");
    expect(await r.json()).toEqual({ error: { message: "openai: fake openai error 429", type: "rate_limit_error", retry_after_secs: 12 } });
    // an unknown model is 404 not_found (rule 2)
    fake.failNext({ kind: "status", status: 404 });
    const nf = await call("POST", `/api/v1/prompts/${p.id}/execute`, { variables: { id: crypto.randomUUID() } });
    expect(nf).toEqual({ status: 404, body: { error: { message: "openai: fake openai error 404", type: "not_found" } } });
  });
});

describe("chain execute through the gateway", () => {
  test("three steps on three provider styles feed outputs forward with correct per-step token counts; a rerun is served from the cache", async () => {
    const chain = (
      await call("POST", "/api/v1/chains", {
        name: "Three providers",
        steps: [
          { modelId: "gpt-4o-mini", systemPrompt: "You summarise.", maxTokens: 50 },
          { modelId: "claude-3-5-haiku-latest", systemPrompt: "You translate.", maxTokens: 60 },
          { modelId: "gemini-2.0-flash", transform: "template", template: "Polish this: {{input}}", temperature: 0.1 },
        ],
      })
    ).body;
    const counts = (): number[] => [fake.received("/v1/chat/completions").length, fake.received("/v1/messages").length, fake.requests.filter((r) => r.path.includes(":generateContent")).length];
    const [o0 = 0, a0 = 0, g0 = 0] = counts();
    const question = `Explain semantic caching in one line (${crypto.randomUUID()})`;
    const r = await call("POST", `/api/v1/chains/${chain.id}/execute`, { messages: [{ role: "user", content: question }] });
    expect(r.status).toBe(200);
    expect(counts()).toEqual([o0 + 1, a0 + 1, g0 + 1]);

    const openaiReq = fake.received("/v1/chat/completions").at(-1)!.body;
    expect(openaiReq.messages).toEqual([
      { role: "system", content: "You summarise." },
      { role: "user", content: question },
    ]);
    const [s0, s1, s2] = r.body.steps;
    expect(s0).toMatchObject({ index: 0, model: "gpt-4o-mini", promptTokens: 10, completionTokens: wordCount(s0.output) });
    expect(s0.output.endsWith(question)).toBe(true);

    const anthropicReq = fake.received("/v1/messages").at(-1)!.body;
    expect(anthropicReq.system).toBe("You translate.");
    expect(anthropicReq.messages).toEqual([{ role: "user", content: s0.output }]);
    expect(s1).toMatchObject({ index: 1, model: "claude-3-5-haiku-latest", promptTokens: 12, completionTokens: wordCount(s1.output) });
    expect(s1.output.endsWith(s0.output)).toBe(true);

    const geminiReq = fake.requests.filter((x) => x.path.includes(":generateContent")).at(-1)!;
    expect(geminiReq.path).toContain("gemini-2.0-flash");
    expect(geminiReq.body.contents.at(-1).parts.map((p: any) => p.text).join("")).toBe(`Polish this: ${s1.output}`);
    expect(geminiReq.body.generationConfig?.temperature).toBe(0.1);
    expect(s2).toMatchObject({ index: 2, model: "gemini-2.0-flash", promptTokens: 8, completionTokens: wordCount(s2.output) });

    expect(r.body.steps.every((s: any) => Number.isInteger(s.durationMs) && s.durationMs >= 0)).toBe(true);
    expect(r.body.output).toBe(s2.output);
    expect(r.body.totalPromptTokens).toBe(10 + 12 + 8);
    expect(r.body.totalCompletionTokens).toBe(s0.completionTokens + s1.completionTokens + s2.completionTokens);

    // the same chain with the same input again: every step is a cache hit, nothing goes upstream
    const again = await call("POST", `/api/v1/chains/${chain.id}/execute`, { messages: [{ role: "user", content: question }] });
    expect(again.body.output).toBe(r.body.output);
    expect(again.body.steps.map((s: any) => s.cacheHit)).toEqual([true, true, true]);
    expect(counts()).toEqual([o0 + 1, a0 + 1, g0 + 1]);
  });

  test("extractField on a step whose input is not JSON stops the chain naming that step; it never calls upstream", async () => {
    const chain = (
      await call("POST", "/api/v1/chains", {
        name: "Wants JSON",
        steps: [{ modelId: "gpt-4o-mini" }, { modelId: "gpt-4o-mini", transform: "extractField", field: "$.summary" }],
      })
    ).body;
    const before = fake.requests.length;
    const r = await call("POST", `/api/v1/chains/${chain.id}/execute`, { messages: [{ role: "user", content: `plain ${crypto.randomUUID()}` }] });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ type: "invalid_request_error", step: 1 });
    expect(r.body.error.message).toStartWith("chain step 1 failed: extractField '$.summary'");
    expect(fake.requests.length).toBe(before + 1); // step 0 only
  });

  test("a failing step stops the chain with an error that names the step", async () => {
    const chain = (
      await call("POST", "/api/v1/chains", {
        name: "Breaks at step 1",
        steps: [{ modelId: "gpt-4o-mini" }, { modelId: "command-r" }, { modelId: "gemini-2.0-flash" }],
      })
    ).body;
    const before = fake.requests.length;
    const r = await call("POST", `/api/v1/chains/${chain.id}/execute`, { messages: [{ role: "user", content: `break me ${crypto.randomUUID()}` }] });
    expect(r.status).toBe(502);
    expect(r.body.error.type).toBe("proxy_error");
    expect(r.body.error.message).toStartWith("chain step 1 (model 'command-r') failed: ");
    expect(r.body.error.step).toBe(1);
    expect(fake.requests.length).toBe(before + 1); // step 0 only; step 2 never ran
  });
});
