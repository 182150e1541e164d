/**
 * Intelligence queries end to end: retrieval from milestones, knowledge and documents with the
 * project / contributor / time-range / context-limit filters, the answer written by the configured
 * model through the gateway's own pipeline (fake upstream speaking the provider wire format; the
 * second identical question is a cache hit), the extractive answer without a model, limits and
 * tenant isolation of the sources.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { memoryEnv, expectError, milestone, type Env } from "./helpers";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { FakeClock } from "../../src/ratelimit";

let e: Env;
let plain: Env;
let fake: FakeUpstream;
const clock = new FakeClock(0);

beforeAll(async () => {
  fake = await startFakeUpstream();
  e = await memoryEnv({ memory: { intelligence_model: "gpt-4o-mini" }, providers: { openai: { base_url: fake.url, api_key: "sk-fake" } } }, {}, { clock });
  plain = await memoryEnv();
  for (const env of [e, plain]) {
    for (const p of ["web", "api"]) await env.call("POST", "/projects", { projectId: p, name: p, roadmap: "" });
    await env.call("POST", "/contributors", { contributorId: "ann", displayName: "Ann Lee", agentIds: ["ann-agent"] });
    await env.call("POST", "/projects/web/store", milestone("w1", { thisContribution: "Switched the web login form to passkeys (WebAuthn) with a password fallback", agentId: "ann-agent" }));
    await env.call("POST", "/projects/web/store", milestone("w2", { thisContribution: "Lazy-loaded the dashboard charts to cut first paint", agentId: "other-agent" }));
    await env.call("POST", "/projects/api/store", milestone("a1", { thisContribution: "API login endpoint now issues short-lived JWTs with refresh tokens", agentId: "bob-agent" }));
    await env.call("POST", "/projects/api/promote", { cacheKey: "ck1", reuseScore: 0.9, summary: "Login answers: passkeys are preferred, passwords remain as fallback for old browsers", l2Collection: "c" });
  }
  // tenant B owns a project with the same id and text: never a source of A's answers
  await e.call("POST", "/projects", { projectId: "web", name: "b", roadmap: "" }, e.B);
  await e.call("POST", "/projects/web/store", milestone("b", { thisContribution: "Tenant B secret: login via magic links" }), e.B);
});
afterAll(async () => {
  await e.stop();
  await plain.stop();
  await fake.stop();
});

describe("intelligence query", () => {
  test("the model writes the answer from exactly the returned excerpts, through the gateway's pipeline (cached)", async () => {
    const before = fake.received("/v1/chat/completions").length;
    const r = await e.call("POST", "/intelligence/query", { question: "How does login work now?" });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["answer", "cacheHit", "mode", "model", "projectsSearched", "question", "sources", "timeRange"]);
    expect(r.body).toMatchObject({ question: "How does login work now?", projectsSearched: ["api", "web"], mode: "llm", model: "gpt-4o-mini", cacheHit: false, timeRange: "30d" });
    const sent = fake.received("/v1/chat/completions");
    expect(sent.length).toBe(before + 1);
    const req = sent.at(-1)!.body;
    expect(req.model).toBe("gpt-4o-mini");
    expect(req.messages[0].role).toBe("system");
    const prompt: string = req.messages[1].content;
    expect(prompt).toStartWith("Question: How does login work now?");
    // every source is in the prompt, in order, and nothing else
    r.body.sources.forEach((s: any, i: number) => expect(prompt).toContain(`[${i + 1}] (${s.kind}, project ${s.projectId}`));
    expect(prompt).not.toContain(`[${r.body.sources.length + 1}]`);
    expect(prompt).not.toContain("Tenant B");
    expect(r.body.answer).toMatch(/^answer #\d+: /);
    for (const s of r.body.sources) {
      expect(Object.keys(s)).toEqual(expect.arrayContaining(["milestoneId", "projectId", "branchName", "excerpt", "createdAt"]));
      expect(["web", "api"]).toContain(s.projectId);
    }
    const kinds = new Set(r.body.sources.map((s: any) => s.kind));
    expect(kinds.has("milestone") && kinds.has("knowledge")).toBe(true);
    const top3 = r.body.sources.slice(0, 3).map((s: any) => s.excerpt).join(" ");
    expect(top3).toMatch(/login/i);
    const again = await e.call("POST", "/intelligence/query", { question: "How does login work now?" });
    expect(again.body.cacheHit).toBe(true);
    expect(again.body.answer).toBe(r.body.answer);
    expect(fake.received("/v1/chat/completions").length).toBe(before + 1);
  });

  test("filters: projectIds, contributorFilter (id or name), contextLimit, timeRange", async () => {
    const web = await e.call("POST", "/intelligence/query", { question: "login", projectIds: ["web"] });
    expect(web.body.projectsSearched).toEqual(["web"]);
    expect(web.body.sources.every((s: any) => s.projectId === "web")).toBe(true);
    const byId = await e.call("POST", "/intelligence/query", { question: "login", contributorFilter: "ann" });
    expect(byId.body.sources.length).toBe(1);
    expect(byId.body.sources[0].excerpt).toContain("passkeys (WebAuthn)");
    expect(byId.body.contributor).toEqual({ contributorId: "ann", displayName: "Ann Lee" });
    const byName = await e.call("POST", "/intelligence/query", { question: "login", contributorFilter: "ann lee" });
    expect(byName.body.sources.map((s: any) => s.milestoneId)).toEqual(byId.body.sources.map((s: any) => s.milestoneId));
    expectError(await e.call("POST", "/intelligence/query", { question: "login", contributorFilter: "nobody" }), 404, "not_found", /nobody/);
    const one = await e.call("POST", "/intelligence/query", { question: "login", contextLimit: 1 });
    expect(one.body.sources.length).toBe(1);
    // 31 days later nothing is within the default 30d, everything within 90d and all
    clock.advance(31 * 86_400_000);
    const stale = await e.call("POST", "/intelligence/query", { question: "login" });
    expect(stale.body.sources).toEqual([]);
    expect(stale.body.mode).toBe("none");
    expect((await e.call("POST", "/intelligence/query", { question: "login", timeRange: "90d" })).body.sources.length).toBeGreaterThan(0);
    expect((await e.call("POST", "/intelligence/query", { question: "login", timeRange: "all" })).body.sources.length).toBeGreaterThan(0);
    expect((await e.call("POST", "/intelligence/query", { question: "login", timeRange: "7d" })).body.sources).toEqual([]);
    clock.advance(-31 * 86_400_000);
  });

  test("limits and errors: question 1-2,000, contextLimit 1-200, timeRange values, unknown project 404, upstream failure 502", async () => {
    expect((await e.call("POST", "/intelligence/query", { question: "q".repeat(2_000), contextLimit: 200 })).status).toBe(200);
    expectError(await e.call("POST", "/intelligence/query", { question: "q".repeat(2_001) }), 400, "validation_error", /question/);
    expectError(await e.call("POST", "/intelligence/query", { question: "" }), 400, "validation_error", /question/);
    expectError(await e.call("POST", "/intelligence/query", { question: "q", contextLimit: 201 }), 400, "validation_error", /contextLimit/);
    expectError(await e.call("POST", "/intelligence/query", { question: "q", contextLimit: 0 }), 400, "validation_error", /contextLimit/);
    expectError(await e.call("POST", "/intelligence/query", { question: "q", timeRange: "2d" }), 400, "validation_error", /timeRange/);
    expectError(await e.call("POST", "/intelligence/query", { question: "q", projectIds: ["ghost"] }), 404, "not_found");
    expectError(await e.call("POST", "/intelligence/query", { question: "q", includeExternalSources: "yes" }), 400, "validation_error", /includeExternalSources/);
    fake.failNext({ kind: "status", status: 500 });
    expectError(await e.call("POST", "/intelligence/query", { question: "a question never asked before about dashboards" }), 502, "proxy_error");
  });

  test("tenant B's answers come only from B's memory", async () => {
    const b = await e.call("POST", "/intelligence/query", { question: "How does login work now?" }, e.B);
    expect(b.body.projectsSearched).toEqual(["web"]);
    expect(b.body.sources.length).toBe(1);
    expect(b.body.sources[0].excerpt).toContain("Tenant B secret");
  });
});

describe("without a model", () => {
  test("the answer is extractive and says so; sources are the excerpts it quotes", async () => {
    const r = await plain.call("POST", "/intelligence/query", { question: "How does login work now?" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ mode: "extractive", model: null, cacheHit: false });
    expect(r.body.answer).toStartWith("No intelligence model is configured (SVC_MEMORY__INTELLIGENCE_MODEL), so this answer is extractive");
    for (const s of r.body.sources.slice(0, 5)) expect(r.body.answer).toContain(s.excerpt.slice(0, 40));
  });
});
