/**
 * The remote embedder option end to end: SVC_EMBEDDING__PROVIDER=openai (+ BASE_URL, MODEL,
 * API_KEY) through a real gateway, against a fake OpenAI-compatible /v1/embeddings server (a
 * deterministic bag-of-words model), with the official openai SDK in front. Also: a restarted
 * gateway on the same database keeps its entries (saved index file + SQLite).
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { mkdtempSync, rmSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { loadConfig } from "../../src/config";
import { startServer } from "../../src/server";
import { Logger } from "../../src/core/log";
import { embeddingsAnswer } from "../fake-upstream/bag-of-words";

interface FakeEmbeddings {
  url: string;
  requests: Array<{ auth: string; model: string; input: string[] }>;
  down: boolean;
  stop(): void;
}

function startFakeEmbeddings(): FakeEmbeddings {
  const state: FakeEmbeddings = { url: "", requests: [], down: false, stop: () => server.stop(true) };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (new URL(req.url).pathname !== "/v1/embeddings") return new Response("not found", { status: 404 });
      if (state.down) return Response.json({ error: { message: "overloaded", type: "server_error" } }, { status: 500 });
      const body = (await req.json()) as { model: string; input: string[] };
      state.requests.push({ auth: req.headers.get("authorization") ?? "", model: body.model, input: body.input });
      return embeddingsAnswer(body);
    },
  });
  state.url = `http://127.0.0.1:${server.port}`;
  return state;
}

let fake: FakeUpstream;
let emb: FakeEmbeddings;
beforeAll(async () => {
  fake = await startFakeUpstream();
  emb = startFakeEmbeddings();
});
afterAll(async () => {
  emb.stop();
  await fake.stop();
});

const embeddingConfig = (extra: Record<string, unknown> = {}) => ({
  embedding: { provider: "openai", base_url: `${emb.url}/v1`, model: "bow-64", api_key: "sk-embed", timeout_ms: 2000, ...extra },
  providers: { openai: { base_url: fake.url, api_key: "sk-up" } },
});
const msg = (content: string) => [{ role: "user" as const, content }];

describe("SVC_EMBEDDING__PROVIDER=openai", () => {
  test("start-up names the missing variable: BASE_URL and MODEL are required", () => {
    expect(() => loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_EMBEDDING__PROVIDER: "openai", SVC_EMBEDDING__MODEL: "m" })).toThrow("SVC_EMBEDDING__BASE_URL");
    expect(() => loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_EMBEDDING__PROVIDER: "openai", SVC_EMBEDDING__BASE_URL: "http://127.0.0.1:9/v1" })).toThrow(
      "SVC_EMBEDDING__MODEL",
    );
    const ok = loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_EMBEDDING__PROVIDER: "openai", SVC_EMBEDDING__BASE_URL: "http://127.0.0.1:9/v1", SVC_EMBEDDING__MODEL: "m", SVC_EMBEDDING__API_KEY: "k" });
    expect(ok.embedding).toMatchObject({ provider: "openai", base_url: "http://127.0.0.1:9/v1", model: "m", api_key: "k", fail_open: false });
  });

  test("embeds through the configured endpoint (model, API key), serves exact hits and semantic hits of the same words (its bag-of-words vectors see no paraphrases), misses other meanings", async () => {
    emb.down = false;
    const gw = await startGateway(embeddingConfig());
    try {
      await gw.ctx.embedder!.load();
      expect((await gw.api("/ready")).status).toBe(200);
      const c = new OpenAI({ apiKey: await gw.token("tenant-r"), baseURL: `${gw.url}/v1`, maxRetries: 0 });
      const before = emb.requests.length;
      const miss = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("red green blue colors") }).withResponse();
      expect(miss.response.headers.get("x-cache-status")).toBe("MISS");
      expect(emb.requests.length).toBeGreaterThan(before);
      expect(emb.requests.at(-1)).toMatchObject({ auth: "Bearer sk-embed", model: "bow-64", input: ["red green blue colors"] });

      const exact = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("red green blue colors") }).withResponse();
      expect(exact.response.headers.get("x-cache-status")).toBe("HIT");
      expect((exact.data as any).svc_metadata.cache_tier).toBe("exact");

      const para = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("Red, green, blue colors?") }).withResponse();
      expect(para.response.headers.get("x-cache-status")).toBe("HIT");
      expect((para.data as any).svc_metadata.cache_tier).toBe("semantic");
      expect(para.data.choices[0]!.message.content).toBe(miss.data.choices[0]!.message.content);

      const other = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("north south east west") }).withResponse();
      expect(other.response.headers.get("x-cache-status")).toBe("MISS");
    } finally {
      await gw.stop();
    }
  });

  test("the endpoint failing after start: 503 embedding_error (the SDK sees a retryable status), exact repeats still served without an embedding call, /ready stays 200; fail-open serves uncached", async () => {
    emb.down = false;
    const gw = await startGateway(embeddingConfig());
    const open = await startGateway(embeddingConfig({ fail_open: true }));
    try {
      await gw.ctx.embedder!.load();
      await open.ctx.embedder!.load();
      const c = new OpenAI({ apiKey: await gw.token("tenant-d"), baseURL: `${gw.url}/v1`, maxRetries: 0 });
      await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("cached before the outage") });
      emb.down = true;
      const err: any = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("a brand new question") }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err.status).toBe(503);
      expect(err.error).toMatchObject({ type: "embedding_error" });
      const q = await gw.api("/api/v1/query", { method: "POST", token: await gw.token("tenant-d"), json: { model: "gpt-4o-mini", messages: msg("another new question") } });
      expect(q.status).toBe(503);
      expect(((await q.json()) as any).error.type).toBe("embedding_error");
      const calls = emb.requests.length;
      const exact = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("cached before the outage") }).withResponse();
      expect(exact.response.headers.get("x-cache-status")).toBe("HIT");
      expect(emb.requests.length).toBe(calls); // no embedding was needed
      // the model was loaded once: an outage of the remote endpoint does not take svc out of rotation
      expect((await gw.api("/ready")).status).toBe(200);

      const co = new OpenAI({ apiKey: await open.token("tenant-o"), baseURL: `${open.url}/v1`, maxRetries: 0 });
      const served = await co.chat.completions.create({ model: "gpt-4o-mini", messages: msg("asked during the outage") }).withResponse();
      expect(served.response.status).toBe(200);
      expect(served.response.headers.get("x-cache-status")).toBe("MISS");
      expect((await open.ctx.cache.stats("tenant-o")).entries).toBe(0);

      emb.down = false;
      const back = await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("a brand new question") }).withResponse();
      expect(back.response.headers.get("x-cache-status")).toBe("MISS");
    } finally {
      emb.down = false;
      await gw.stop();
      await open.stop();
    }
  });
});

describe("restart", () => {
  test("a gateway restarted on the same database serves exact, semantic and context hits (index file saved on stop)", async () => {
    emb.down = false;
    const dir = mkdtempSync(join(tmpdir(), "svc-restart-"));
    const boot = () =>
      startServer(
        loadConfig(
          { SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "test-secret-test-secret-test-secret" },
          { server: { host: "127.0.0.1", port: 0, request_log: false }, rate_limits: { enabled: false }, ...embeddingConfig() },
        ),
        { logger: new Logger("warn", () => {}) },
      );
    try {
      let s = await boot();
      const history = [
        { role: "user" as const, content: "count with me please" },
        { role: "assistant" as const, content: "one two" },
      ];
      let c = new OpenAI({ apiKey: await s.ctx.tokens.sign({ tenantId: "tenant-s", permissions: [] }), baseURL: `${s.url}/v1`, maxRetries: 0 });
      await c.chat.completions.create({ model: "gpt-4o-mini", messages: msg("red green blue colors") });
      await c.chat.completions.create({ model: "gpt-4o-mini", messages: [...history, { role: "user", content: "one two three four" }] });
      await s.stop();
      expect(readdirSync(join(dir, "cache-index"), { recursive: true }).filter((f) => String(f).endsWith(".usearch")).length).toBe(2);

      s = await boot();
      c = new OpenAI({ apiKey: await s.ctx.tokens.sign({ tenantId: "tenant-s", permissions: [] }), baseURL: `${s.url}/v1`, maxRetries: 0 });
      const tier = async (messages: any[]) => {
        const r = await c.chat.completions.create({ model: "gpt-4o-mini", messages }).withResponse();
        return [r.response.headers.get("x-cache-status"), (r.data as any).svc_metadata.cache_tier];
      };
      expect(await tier(msg("red green blue colors"))).toEqual(["HIT", "exact"]);
      expect(await tier(msg("Red, green, blue colors?"))).toEqual(["HIT", "semantic"]);
      expect(await tier([{ role: "user", content: "Count with me, please" }, history[1], { role: "user", content: "One, two, three, four?" }])).toEqual(["HIT", "l2_context"]);
      await s.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
