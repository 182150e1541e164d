/**
 * HTTP tests of the cache API: POST /api/v1/query, GET /api/v1/cache/{stats,entries},
 * DELETE /api/v1/cache/entries/:id, DELETE /api/v1/cache. Entries are filled through the real
 * chat-completions proxy (official SDK) in front of the fake upstream, with the real local embedder.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";

let gw: TestGateway;
let fake: FakeUpstream;
let admin: string; // tenant-a, ManageConfig + ViewMetrics
let plainA: string; // tenant-a, no permissions
let adminB: string; // tenant-b, ManageConfig + ViewMetrics

beforeAll(async () => {
  fake = await startFakeUpstream();
  gw = await startGateway({ rate_limits: { enabled: false }, providers: { openai: { base_url: fake.url, api_key: "sk-up" } } });
  admin = await gw.token("tenant-a", ["ManageConfig", "ViewMetrics"]);
  plainA = await gw.token("tenant-a");
  adminB = await gw.token("tenant-b", ["ManageConfig", "ViewMetrics"]);
  await gw.ctx.embedder!.load();
});
afterAll(async () => {
  await gw.stop();
  await fake.stop();
});

const client = (token: string) => new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1` });
const chat = (content: string, extra: Record<string, unknown> = {}) => ({ model: "gpt-4o-mini", messages: [{ role: "user", content }], ...extra });

async function ask(token: string, content: string) {
  const { data, response } = await client(token).chat.completions.create(chat(content) as any).withResponse();
  return { data, status: response.headers.get("x-cache-status") };
}

async function query(token: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await gw.api("/api/v1/query", { method: "POST", token, json: body, headers });
  return { status: r.status, body: ((await r.json()) as any) as any };
}

describe("POST /api/v1/query", () => {
  test("answers from the cache without calling upstream (miss, exact, semantic)", async () => {
    const before = fake.received("/v1/chat/completions").length;
    const miss = await query(plainA, chat("How do I reverse a list in Python?"));
    expect(miss.status).toBe(200);
    expect(miss.body).toMatchObject({ hit: false, tier: null, similarity: 0, contextSimilarity: null, entryId: null, response: null });
    expect(fake.received("/v1/chat/completions").length).toBe(before);

    const filled = await ask(plainA, "How do I reverse a list in Python?");
    expect(filled.status).toBe("MISS");
    const upstreamCalls = fake.received("/v1/chat/completions").length;

    const exact = await query(plainA, chat("How do I reverse a list in Python?"));
    expect(exact.body.hit).toBe(true);
    expect(exact.body.tier).toBe("exact");
    expect(exact.body.similarity).toBe(1);
    expect(exact.body.response.choices[0].message.content).toBe(filled.data.choices[0]!.message.content);

    const para = await query(plainA, chat("How can I reverse a list in Python?"));
    expect(para.body.hit).toBe(true);
    expect(para.body.tier).toBe("semantic");
    expect(para.body.similarity).toBeGreaterThan(0.9);
    expect(para.body.entryId).toBe(exact.body.entryId);

    // a query never writes: the same unseen question still misses afterwards
    await query(plainA, chat("What is the tallest mountain in Africa?"));
    expect((await query(plainA, chat("What is the tallest mountain in Africa?"))).body.hit).toBe(false);
    expect(fake.received("/v1/chat/completions").length).toBe(upstreamCalls);
  });

  test("workspace context header scopes the lookup", async () => {
    await client(plainA).chat.completions.create(chat("What does HTTP 418 mean?") as any, { headers: { "X-Svc-Workspace-Context": "ws-1" } });
    expect((await query(plainA, chat("What does HTTP 418 mean?"), { "X-Svc-Workspace-Context": "ws-1" })).body.hit).toBe(true);
    expect((await query(plainA, chat("What does HTTP 418 mean?"), { "X-Svc-Workspace-Context": "ws-2" })).body.hit).toBe(false);
    expect((await query(plainA, chat("What does HTTP 418 mean?"))).body.hit).toBe(false);
  });

  test("validation: 400 validation_error for a bad body or code-context header; 401 without a token", async () => {
    const r1 = await query(plainA, { model: "gpt-4o-mini" });
    expect(r1.status).toBe(400);
    expect(r1.body.error.type).toBe("validation_error");
    const r2 = await query(plainA, { model: "gpt-4o-mini", messages: [] });
    expect(r2.status).toBe(400);
    expect(r2.body.error.type).toBe("validation_error");
    const r3 = await query(plainA, chat("x"), { "X-Svc-Code-Context": "{not json" });
    expect(r3.status).toBe(400);
    expect(r3.body.error.type).toBe("validation_error");
    const r4 = await gw.api("/api/v1/query", { method: "POST", json: chat("x") });
    expect(r4.status).toBe(401);
    expect(((await r4.json()) as any).error.type).toBe("authentication_error");
  });

  test("tenant isolation: tenant B never sees tenant A's entries", async () => {
    await ask(plainA, "What is the boiling point of water at sea level?");
    expect((await query(plainA, chat("What is the boiling point of water at sea level?"))).body.hit).toBe(true);
    expect((await query(adminB, chat("What is the boiling point of water at sea level?"))).body.hit).toBe(false);
  });
});

describe("cache administration", () => {
  test("stats and entries need ViewMetrics and show only the caller's tenant", async () => {
    const denied = await gw.api("/api/v1/cache/entries", { token: plainA });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as any).error.type).toBe("authorization_error");

    await ask(plainA, "Who wrote the novel Moby Dick?");
    const list = (await (await gw.api("/api/v1/cache/entries?limit=100", { token: admin })).json()) as any;
    expect(list.total).toBeGreaterThan(0);
    expect(list.entries.some((e: any) => e.query === "Who wrote the novel Moby Dick?")).toBe(true);
    expect(list.entries[0].createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const listB = (await (await gw.api("/api/v1/cache/entries", { token: adminB })).json()) as any;
    expect(listB).toEqual({ entries: [], total: 0, limit: 20, offset: 0 });

    const bad = await gw.api("/api/v1/cache/entries?limit=1000", { token: admin });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.type).toBe("validation_error");

    const stats = (await (await gw.api("/api/v1/cache/stats", { token: admin })).json()) as any;
    expect(stats.entries).toBe(list.total);
    expect(stats.hits.exact + stats.hits.semantic).toBeGreaterThan(0);
    const statsB = (await (await gw.api("/api/v1/cache/stats", { token: adminB })).json()) as any;
    expect(statsB.entries).toBe(0);
  });

  test("DELETE /api/v1/cache/entries/:id: 403 without ManageConfig, 404 for another tenant's or an unknown id", async () => {
    await ask(plainA, "What is the speed of light in vacuum?");
    const hit = await query(plainA, chat("What is the speed of light in vacuum?"));
    const id = hit.body.entryId as string;
    expect((await gw.api(`/api/v1/cache/entries/${id}`, { method: "DELETE", token: plainA })).status).toBe(403);
    const other = await gw.api(`/api/v1/cache/entries/${id}`, { method: "DELETE", token: adminB });
    expect(other.status).toBe(404);
    expect(((await other.json()) as any).error.type).toBe("not_found");
    const ok = await gw.api(`/api/v1/cache/entries/${id}`, { method: "DELETE", token: admin });
    expect(ok.status).toBe(200);
    expect((await ok.json()) as any).toEqual({ id, deleted: true });
    expect((await query(plainA, chat("What is the speed of light in vacuum?"))).body.hit).toBe(false);
    expect((await gw.api(`/api/v1/cache/entries/${id}`, { method: "DELETE", token: admin })).status).toBe(404);
  });

  test("DELETE /api/v1/cache purges only the caller's tenant", async () => {
    await ask(adminB, "What is the capital of Japan?");
    await ask(plainA, "What is the capital of Japan?");
    expect((await gw.api("/api/v1/cache", { method: "DELETE", token: plainA })).status).toBe(403);
    const purgedB = await gw.api("/api/v1/cache", { method: "DELETE", token: adminB });
    expect(purgedB.status).toBe(200);
    expect((await purgedB.json()) as any).toEqual({ deleted: 1 });
    expect((await query(adminB, chat("What is the capital of Japan?"))).body.hit).toBe(false);
    expect((await query(plainA, chat("What is the capital of Japan?"))).body.hit).toBe(true);
    const purgedA = (await (await gw.api("/api/v1/cache", { method: "DELETE", token: admin })).json()) as any;
    expect(purgedA.deleted).toBeGreaterThan(0);
    expect((await query(plainA, chat("What is the capital of Japan?"))).body.hit).toBe(false);
    const again = await ask(plainA, "What is the capital of Japan?");
    expect(again.status).toBe("MISS");
  });
});
