/**
 * The shared pipeline, style by style (raw fetch, so the exact status, envelope and headers are
 * checked): upstream 5xx / timeout / refused / provider 4xx for JSON and streamed requests in all
 * four styles, nothing cached after a failure, usage rows per tenant/model/style, and connection
 * reuse (keep-alive) to the upstream.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { startProxyEnv, type ProxyEnv } from "./setup";
import { closedPort } from "../fake-upstream/server";
import { startGateway } from "../helpers/gateway";

let env: ProxyEnv;
beforeAll(async () => {
  env = await startProxyEnv({ providers: { openai: { timeout_ms: 300 }, anthropic: { timeout_ms: 300 }, gemini: { timeout_ms: 300 }, cohere: { timeout_ms: 300 } } });
});
afterAll(() => env.stop());

/** doc1 §7's error type for a provider status (rule 2: an unknown model is 404 not_found; rule 3: 429 rate_limit_error) */
const typeOf = (status: number) => ({ 400: "invalid_request_error", 404: "not_found", 422: "validation_error", 429: "rate_limit_error" })[status as 400 | 404 | 422 | 429];

/** What a client gets for a provider 4xx: the provider's body, its error object carrying doc1's message, type and (429) retry_after_secs. */
function doc1Fields(raw: any, status: number, retryAfterSecs: number): unknown {
  const error = { ...(raw.error ?? {}), message: raw.error?.message ?? raw.message, type: typeOf(status), ...(status === 429 ? { retry_after_secs: retryAfterSecs } : {}) };
  return { ...raw, error };
}

interface Style {
  name: string;
  path: (stream: boolean) => string;
  headers: (token: string) => Record<string, string>;
  body: (q: string, stream: boolean) => unknown;
  upstreamPath: string;
  /** the fake's own 4xx body for this provider (what the real API sends) */
  providerError: (status: number) => unknown;
}

const STYLES: Style[] = [
  {
    name: "chat-completions",
    path: () => "/v1/chat/completions",
    headers: (t) => ({ authorization: `Bearer ${t}` }),
    body: (q, stream) => ({ model: "gpt-4o-mini", messages: [{ role: "user", content: q }], ...(stream ? { stream: true } : {}) }),
    upstreamPath: "/v1/chat/completions",
    providerError: (s) => ({ error: { message: `fake openai error ${s}`, type: s === 429 ? "requests" : "invalid_request_error", param: null, code: "fake_error" } }),
  },
  {
    name: "messages",
    path: () => "/v1/messages",
    headers: (t) => ({ "x-api-key": t, "anthropic-version": "2023-06-01" }),
    body: (q, stream) => ({ model: "claude-3-5-haiku-latest", max_tokens: 50, messages: [{ role: "user", content: q }], ...(stream ? { stream: true } : {}) }),
    upstreamPath: "/v1/messages",
    providerError: (s) => ({ type: "error", error: { type: ({ 404: "not_found_error", 429: "rate_limit_error" } as Record<number, string>)[s] ?? "invalid_request_error", message: `fake anthropic error ${s}` } }),
  },
  {
    name: "generate-content",
    path: (stream) => (stream ? "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse" : "/v1beta/models/gemini-2.0-flash/generateContent"),
    headers: (t) => ({ "x-goog-api-key": t }),
    body: (q) => ({ contents: [{ role: "user", parts: [{ text: q }] }] }),
    upstreamPath: "/v1beta/models/gemini-2.0-flash:",
    providerError: (s) => ({ error: { code: s, message: `fake gemini error ${s}`, status: "INVALID_ARGUMENT" } }),
  },
  {
    name: "chat",
    path: () => "/v1/chat",
    headers: (t) => ({ authorization: `Bearer ${t}` }),
    body: (q, stream) => ({ message: q, model: "command-r", ...(stream ? { stream: true } : {}) }),
    upstreamPath: "/v1/chat",
    providerError: (s) => ({ message: `fake cohere error ${s}` }),
  },
  {
    name: "generate (legacy)",
    path: () => "/v1/generate",
    headers: (t) => ({ authorization: `Bearer ${t}` }),
    body: (q, stream) => ({ prompt: q, model: "command", ...(stream ? { stream: true } : {}) }),
    upstreamPath: "/v1/generate",
    providerError: (s) => ({ message: `fake cohere error ${s}` }),
  },
];

const send = (s: Style, q: string, stream = false, token = env.token, gwUrl = env.gw.url) =>
  fetch(gwUrl + s.path(stream), { method: "POST", headers: { ...s.headers(token), "content-type": "application/json" }, body: JSON.stringify(s.body(q, stream)) });

describe.each(STYLES)("$name", (s) => {
  test("upstream 5xx -> 502 proxy_error, timeout -> 504 timeout_error, JSON and streamed; nothing cached", async () => {
    env.fake.reset();
    const q = `Failure drill for the ${s.name} style: name a prime number.`;
    for (const stream of [false, true]) {
      env.fake.failNext({ kind: "status", status: 503 });
      let r = await send(s, q, stream);
      expect(r.status).toBe(502);
      expect(r.headers.get("content-type")).toContain("application/json");
      expect(await r.json()).toEqual({ error: { message: expect.stringContaining("answered 503"), type: "proxy_error" } });
      expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.headers.get("x-cache-status")).toBe("MISS");

      env.fake.failNext({ kind: "hang" });
      r = await send(s, q, stream);
      expect(r.status).toBe(504);
      expect(await r.json()).toEqual({ error: { message: expect.stringContaining("did not answer within 300 ms"), type: "timeout_error" } });
    }
    // nothing was cached: the next request is a MISS that reaches the upstream, then a HIT
    const ok = await send(s, q);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-cache-status")).toBe("MISS");
    await ok.text();
    const hit = await send(s, q);
    expect(hit.headers.get("x-cache-status")).toBe("HIT");
    await hit.text();
    expect(env.fake.received(s.upstreamPath)).toHaveLength(5);
  });

  test("provider 4xx passes through (status, the provider's body with doc1's error fields, content type), JSON and streamed; not cached", async () => {
    env.fake.reset();
    const q = `Provider rejection drill for the ${s.name} style: name a colour.`;
    const cases = [[400, false], [404, false], [429, true], [429, false, "2.5"], [422, false]] as const;
    for (const [status, stream, retryAfter] of cases as ReadonlyArray<readonly [number, boolean, string?]>) {
      env.fake.failNext({ kind: "status", status, retryAfter });
      const r = await send(s, q, stream);
      expect(r.status).toBe(status);
      expect(r.headers.get("content-type")).toContain("application/json");
      // doc1 §7: a 429 says when to retry, in the envelope and as Retry-After (the provider's, rounded up; at least 1 s)
      const secs = retryAfter ? 3 : 1;
      expect(await r.json()).toEqual(doc1Fields(s.providerError(status), status, secs) as any);
      expect(r.headers.get("retry-after")).toBe(status === 429 ? String(secs) : null);
      expect(r.headers.get("x-request-id")).toBeTruthy();
    }
    const ok = await send(s, q);
    expect(ok.headers.get("x-cache-status")).toBe("MISS");
    await ok.text();
  });

  test("usage rows: one per request, per tenant, with model, tokens, status and cost saved", async () => {
    env.fake.reset();
    const tenant = `usage-${s.name.replace(/\W+/g, "-")}`;
    const token = await env.gw.token(tenant);
    const q = `Usage drill for the ${s.name} style: name a tree.`;
    await (await send(s, q, false, token)).text();
    await (await send(s, q, true, token)).text();
    const usage = env.gw.ctx.usage;
    await usage.flush();
    const rows = await usage.store(tenant).list();
    expect(rows).toHaveLength(2);
    const [hit, miss] = rows; // newest first
    expect(miss).toMatchObject({ tenantId: tenant, cacheStatus: "MISS", streamed: false, costSavedUsd: 0 });
    expect(hit).toMatchObject({ tenantId: tenant, cacheStatus: "HIT", cacheTier: "exact", streamed: true });
    for (const r of rows) {
      expect(r.model).toBe((s.body(q, false) as any).model ?? "gemini-2.0-flash");
      expect(r.inputTokens).toBeGreaterThan(0);
      expect(r.outputTokens).toBeGreaterThan(0);
      expect(r.latencyMs).toBeGreaterThan(0);
    }
    expect(hit!.costSavedUsd).toBeGreaterThan(0);
    // another tenant sees none of them
    expect(await usage.store(`${tenant}-other`).list()).toHaveLength(0);
  });
});

describe("integer fields", () => {
  // doc1 §4.2-§4.5 type these fields `integer`; "5" is a string, which svc would otherwise forward upstream as sent
  const user = [{ role: "user", content: "Count to three." }];
  const cases: Array<[string, Record<string, unknown>, string, Record<string, string>?]> = [
    ["/v1/chat/completions", { model: "gpt-4o-mini", messages: user, max_tokens: "5" }, "max_tokens"],
    ["/v1/responses", { model: "gpt-4o-mini", input: "Count to three.", max_output_tokens: "16" }, "max_output_tokens"],
    ["/v1/messages", { model: "claude-3-5-haiku-latest", max_tokens: "5", messages: user }, "max_tokens", { "anthropic-version": "2023-06-01" }],
    ["/v1beta/models/gemini-2.0-flash/generateContent", { contents: [{ parts: [{ text: "Count to three." }] }], generationConfig: { maxOutputTokens: "5" } }, "generationConfig.maxOutputTokens"],
    ["/v1/chat", { message: "Count to three.", max_tokens: "5" }, "max_tokens"],
    ["/v1/chat", { message: "Count to three.", k: "3" }, "k"],
    ["/v1/generate", { prompt: "Count to three.", num_generations: "2" }, "num_generations"],
    ["/v1/generate", { prompt: "Count to three.", max_tokens: "5" }, "max_tokens"],
    ["/v1/generate", { prompt: "Count to three.", k: "3" }, "k"],
    ["/v2/chat", { model: "command-a-03-2025", messages: user, max_tokens: "5" }, "max_tokens"],
  ];

  test("a numeric string is 400 validation_error naming the field, and nothing goes upstream", async () => {
    env.fake.reset();
    for (const [path, json, field, headers] of cases) {
      const r = await env.gw.api(path, { method: "POST", token: env.token, json, headers });
      expect(`${path} ${field}: ${r.status}`).toBe(`${path} ${field}: 400`);
      const body = (await r.json()) as any;
      expect(body).toEqual({ error: { message: expect.stringContaining(`body field '${field}'`), type: "validation_error" } });
    }
    expect(env.fake.requests).toHaveLength(0);
  });

  test("through the official SDK (messages): a string max_tokens is refused by svc, a number is forwarded as a number", async () => {
    env.fake.reset();
    const client = new Anthropic({ apiKey: env.token, baseURL: env.gw.url, maxRetries: 0 });
    const req = { model: "claude-3-5-haiku-latest", messages: [{ role: "user" as const, content: "Count to four." }] };
    const err: any = await client.messages.create({ ...req, max_tokens: "5" as unknown as number }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error).toEqual({ error: { message: "body field 'max_tokens': Expected integer", type: "validation_error" } });
    expect(env.fake.requests).toHaveLength(0);
    await client.messages.create({ ...req, max_tokens: 5 });
    expect(env.fake.requests[0]!.body.max_tokens).toBe(5);
  });
});

describe("forwarded (never cached) calls", () => {
  test("embeddings are accounted with the provider's token usage; BYPASS; every repeat goes upstream", async () => {
    env.fake.reset();
    const tenant = "usage-embeddings";
    const token = await env.gw.token(tenant);
    for (let i = 0; i < 2; i++) {
      let r = await env.gw.api("/v1/embeddings", { method: "POST", token, json: { model: "text-embedding-3-small", input: ["a", "b"] } });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-cache-status")).toBe("BYPASS");
      r = await env.gw.api("/v1/embed", { method: "POST", token, json: { texts: ["x", "y", "z"], model: "embed-english-v3.0" } });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-cache-status")).toBe("BYPASS");
    }
    expect(env.fake.received("/v1/embeddings")).toHaveLength(2);
    expect(env.fake.requests.filter((r) => r.path === "/v1/embed")).toHaveLength(2);
    const usage = env.gw.ctx.usage;
    await usage.flush();
    const rows = await usage.store(tenant).list();
    const of = (endpoint: string) => rows.filter((r: any) => r.endpoint === endpoint);
    expect(of("openai.embeddings")).toHaveLength(2);
    expect(of("openai.embeddings").every((r: any) => r.inputTokens === 3 && r.outputTokens === 0 && r.cacheStatus === "BYPASS" && r.model === "text-embedding-3-small")).toBe(true);
    expect(of("cohere.embed").every((r: any) => r.inputTokens === 3 && r.model === "embed-english-v3.0" && r.costSavedUsd === 0)).toBe(true);
  });
});

describe("upstream connections", () => {
  test("sequential upstream requests reuse one keep-alive connection", async () => {
    env.fake.reset();
    for (let i = 0; i < 6; i++) {
      const r = await send(STYLES[0]!, `Keep-alive probe number ${i}: name a bird.`, false);
      expect(r.status).toBe(200);
      await r.text();
    }
    const ports = new Set(env.fake.received("/v1/chat/completions").map((r) => r.remotePort));
    expect(env.fake.received("/v1/chat/completions")).toHaveLength(6);
    expect(ports.size).toBe(1);
  });

  test("connection refused -> 502 proxy_error in every style, JSON and streamed", async () => {
    const port = await closedPort();
    const base = `http://127.0.0.1:${port}`;
    const gw = await startGateway({
      providers: { openai: { base_url: base }, anthropic: { base_url: base }, gemini: { base_url: base }, cohere: { base_url: base } },
      cache: { enabled: false },
    });
    try {
      const token = await gw.token("t-refused");
      for (const s of STYLES)
        for (const stream of [false, true]) {
          const r = await send(s, "Anyone there?", stream, token, gw.url);
          expect(r.status).toBe(502);
          expect(await r.json()).toEqual({ error: { message: expect.stringContaining("unreachable"), type: "proxy_error" } });
        }
    } finally {
      await gw.stop();
    }
  });
});
