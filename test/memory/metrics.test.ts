/**
 * Session metrics and their summary (formulas of docs/decisions.md), promotion to knowledge (rate
 * window on a fake clock, deduplication, embedding dimension), contributors and their activity.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { memoryEnv, expectError, milestone, ISO, UUID, type Env } from "./helpers";
import { FakeClock } from "../../src/ratelimit";

let e: Env;
const clock = new FakeClock(1_000_000);
beforeAll(async () => {
  // the fake clock drives the wall clock (promotion window); rate limits stay off
  e = await memoryEnv({}, {}, { clock });
  for (const p of ["m1", "m2", "pr"]) await e.call("POST", "/projects", { projectId: p, name: p, roadmap: "" });
});
afterAll(() => e.stop());

const session = (sessionId: string, extra: Record<string, unknown> = {}) => ({
  sessionId,
  agentId: "agent-1",
  milestonesRecalled: 0,
  toolCallsTotal: 10,
  sessionDurationSecs: 600,
  startedAt: "2026-03-01T10:00:00Z",
  endedAt: "2026-03-01T10:10:00Z",
  ...extra,
});

describe("session metrics", () => {
  test("record: every field with its default; the same sessionId replaces (200)", async () => {
    const r = await e.call("POST", "/projects/m1/metrics", session("s-defaults"));
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      sessionId: "s-defaults",
      projectId: "m1",
      branchName: "main",
      agentId: "agent-1",
      agentType: "",
      milestonesRecalled: 0,
      compactionCount: 0,
      toolCallsTotal: 10,
      toolCallsRead: 0,
      toolCallsSearch: 0,
      toolCallsEdit: 0,
      toolCallsExecute: 0,
      toolCallsAgent: 0,
      sessionDurationSecs: 600,
      startedAt: "2026-03-01T10:00:00.000Z",
      endedAt: "2026-03-01T10:10:00.000Z",
      createdAt: expect.stringMatching(ISO),
    });
    const again = await e.call("POST", "/projects/m1/metrics", session("s-defaults", { compactionCount: 2 }));
    expect(again.status).toBe(200);
    expect(again.body.compactionCount).toBe(2);
    expect((await e.call("GET", "/projects/m1/metrics/summary")).body.totalSessions).toBe(1);
  });

  test("validation: sessionId 128, required fields, integers ≥ 0, ISO timestamps, end before start, parts above total; unknown branch 404", async () => {
    expect((await e.call("POST", "/projects/m2/metrics", session("x".repeat(128)))).status).toBe(201);
    expectError(await e.call("POST", "/projects/m2/metrics", session("x".repeat(129))), 400, "validation_error", /sessionId/);
    for (const f of ["sessionId", "agentId", "milestonesRecalled", "toolCallsTotal", "sessionDurationSecs", "startedAt", "endedAt"]) {
      const b: Record<string, unknown> = session("v");
      delete b[f];
      expectError(await e.call("POST", "/projects/m2/metrics", b), 400, "validation_error", new RegExp(f));
    }
    expectError(await e.call("POST", "/projects/m2/metrics", session("v", { compactionCount: -1 })), 400, "validation_error", /compactionCount/);
    expectError(await e.call("POST", "/projects/m2/metrics", session("v", { toolCallsRead: 1.5 })), 400, "validation_error", /toolCallsRead/);
    expectError(await e.call("POST", "/projects/m2/metrics", session("v", { startedAt: "yesterday" })), 400, "validation_error", /startedAt/);
    expectError(await e.call("POST", "/projects/m2/metrics", session("v", { endedAt: "2026-03-01T09:00:00Z" })), 400, "validation_error", /endedAt/);
    expectError(await e.call("POST", "/projects/m2/metrics", session("v", { toolCallsRead: 8, toolCallsEdit: 5 })), 400, "validation_error", /toolCallsTotal/);
    expectError(await e.call("POST", "/projects/m2/metrics", session("v", { branchName: "ghost" })), 404, "not_found");
  });

  test("summary: zeros (never NaN) without sessions; then every field by the documented formulas", async () => {
    await e.call("POST", "/projects", { projectId: "sum", name: "sum", roadmap: "" });
    const empty = (await e.call("GET", "/projects/sum/metrics/summary")).body;
    expect(empty).toEqual({
      totalSessions: 0,
      sessionsWithMemory: 0,
      sessionsWithoutMemory: 0,
      avgCompactionsWithMemory: 0,
      avgCompactionsWithoutMemory: 0,
      compactionReductionPct: 0,
      avgContextToolsWithMemory: 0,
      avgContextToolsWithoutMemory: 0,
      contextToolReductionPct: 0,
      avgDurationWithMemorySecs: 0,
      avgDurationWithoutMemorySecs: 0,
      contextRecoveryRate: 0,
      sessionsByAgentType: [],
      recentSessions: [],
    });
    // with memory (milestonesRecalled > 0): compactions 1 and 0, context tools (read+search) 4 and 2, durations 300 and 500
    await e.call("POST", "/projects/sum/metrics", session("w1", { agentType: "claude-code", milestonesRecalled: 3, compactionCount: 1, toolCallsRead: 3, toolCallsSearch: 1, sessionDurationSecs: 300, endedAt: "2026-03-01T10:05:00Z" }));
    await e.call("POST", "/projects/sum/metrics", session("w2", { agentType: "codex", milestonesRecalled: 1, compactionCount: 0, toolCallsRead: 2, sessionDurationSecs: 500, endedAt: "2026-03-02T10:00:00Z", startedAt: "2026-03-02T09:00:00Z" }));
    // without: compactions 4 and 2, context tools 8 and 4, durations 900 and 700
    await e.call("POST", "/projects/sum/metrics", session("n1", { agentType: "claude-code", compactionCount: 4, toolCallsRead: 5, toolCallsSearch: 3, toolCallsEdit: 1, sessionDurationSecs: 900 }));
    await e.call("POST", "/projects/sum/metrics", session("n2", { agentType: "codex", compactionCount: 2, toolCallsSearch: 4, toolCallsExecute: 2, toolCallsAgent: 1, sessionDurationSecs: 700 }));
    const s = (await e.call("GET", "/projects/sum/metrics/summary")).body;
    expect(s).toMatchObject({
      totalSessions: 4,
      sessionsWithMemory: 2,
      sessionsWithoutMemory: 2,
      avgCompactionsWithMemory: 0.5,
      avgCompactionsWithoutMemory: 3,
      compactionReductionPct: 83.33, // (3 - 0.5) / 3
      avgContextToolsWithMemory: 3,
      avgContextToolsWithoutMemory: 6,
      contextToolReductionPct: 50,
      avgDurationWithMemorySecs: 400,
      avgDurationWithoutMemorySecs: 800,
      contextRecoveryRate: 0.5,
    });
    expect(s.sessionsByAgentType).toEqual([
      { agentType: "claude-code", sessionCount: 2, avgCompactionReductionPct: 75, avgContextToolReductionPct: 50 }, // 1 vs 4, 4 vs 8
      { agentType: "codex", sessionCount: 2, avgCompactionReductionPct: 100, avgContextToolReductionPct: 50 }, // 0 vs 2, 2 vs 4
    ]);
    expect(s.recentSessions.map((x: any) => x.sessionId)).toEqual(["w2", "n2", "n1", "w1"]); // ties on endedAt: the later recorded first
    expect(s.recentSessions[0]).toMatchObject({ sessionId: "w2", milestonesRecalled: 1, agentType: "codex" });
    expect(JSON.stringify(s)).not.toContain("NaN");
  });

  test("recentSessions is bounded to 20, newest first; tenant B cannot read the summary", async () => {
    await e.call("POST", "/projects", { projectId: "many", name: "many", roadmap: "" });
    for (let i = 0; i < 25; i++) await e.call("POST", "/projects/many/metrics", session(`s${i}`, { endedAt: `2026-03-01T11:${String(i).padStart(2, "0")}:00Z` }));
    const s = (await e.call("GET", "/projects/many/metrics/summary")).body;
    expect(s.totalSessions).toBe(25);
    expect(s.recentSessions.length).toBe(20);
    expect(s.recentSessions[0].sessionId).toBe("s24");
    expectError(await e.call("GET", "/projects/many/metrics/summary", undefined, e.B), 404, "not_found");
  });
});

describe("promote", () => {
  const promo = (summary: string, extra: Record<string, unknown> = {}) => ({ cacheKey: `ck-${summary.length}`, reuseScore: 0.8, summary, l2Collection: "answers", ...extra });

  test("answers {promoted, knowledgeId, reuseScore}; knowledge is stored with its embedding; the same content is deduplicated (200)", async () => {
    const r = await e.call("POST", "/projects/pr/promote", promo("How to rotate the JWT secret without logging users out", { blobKey: "blobs/abc" }));
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ promoted: true, knowledgeId: expect.stringMatching(UUID), reuseScore: 0.8, deduplicated: false });
    const row = e.gw.ctx.db.get<any>(`SELECT * FROM memory_knowledge WHERE knowledge_id = '${r.body.knowledgeId}'`);
    expect(row).toMatchObject({ tenant_id: "tenant-a", project_id: "pr", cache_key: "ck-54", l2_collection: "answers", blob_key: "blobs/abc", reuse_score: 0.8 });
    expect(row.vec.byteLength).toBe(e.gw.ctx.embedder.dimensions * 4);
    const dup = await e.call("POST", "/projects/pr/promote", promo("How to rotate the JWT secret without logging users out", { reuseScore: 0.1 }));
    expect(dup.status).toBe(200);
    expect(dup.body).toEqual({ promoted: true, knowledgeId: r.body.knowledgeId, reuseScore: 0.8, deduplicated: true });
  });

  test("limits: reuseScore 0-1, summary ≤10,000, required fields; summaryEmbedding dimension checked against the embedder", async () => {
    const dims = e.gw.ctx.embedder.dimensions;
    expect((await e.call("POST", "/projects/pr/promote", promo("z".repeat(10_000), { reuseScore: 1 }))).status).toBe(201);
    expect((await e.call("POST", "/projects/pr/promote", promo("zero score", { reuseScore: 0 }))).status).toBe(201);
    expectError(await e.call("POST", "/projects/pr/promote", promo("z".repeat(10_001))), 400, "validation_error", /summary/);
    expectError(await e.call("POST", "/projects/pr/promote", promo("over", { reuseScore: 1.01 })), 400, "validation_error", /reuseScore/);
    expectError(await e.call("POST", "/projects/pr/promote", promo("under", { reuseScore: -0.01 })), 400, "validation_error", /reuseScore/);
    for (const f of ["cacheKey", "reuseScore", "summary", "l2Collection"]) {
      const b: Record<string, unknown> = promo("missing");
      delete b[f];
      expectError(await e.call("POST", "/projects/pr/promote", b), 400, "validation_error", new RegExp(f));
    }
    expectError(await e.call("POST", "/projects/pr/promote", promo("wrong dims", { summaryEmbedding: [0.1, 0.2] })), 400, "validation_error", new RegExp(`summaryEmbedding.*${dims}`));
    const emb = Array.from({ length: dims }, (_, i) => (i === 0 ? 3 : 0));
    const ok = await e.call("POST", "/projects/pr/promote", promo("given embedding", { summaryEmbedding: emb }));
    expect(ok.status).toBe(201);
    const vec = new Float32Array(new Uint8Array(e.gw.ctx.db.get<any>(`SELECT vec FROM memory_knowledge WHERE knowledge_id = '${ok.body.knowledgeId}'`).vec).buffer);
    expect(vec[0]).toBeCloseTo(1, 6); // normalised
    // no direction or beyond float32: 400, nothing stored (it would index a NaN vector)
    const before = e.gw.ctx.db.get<any>(`SELECT COUNT(*) AS n FROM memory_knowledge`).n;
    expectError(await e.call("POST", "/projects/pr/promote", promo("zero vector", { summaryEmbedding: new Array(dims).fill(0) })), 400, "validation_error", /summaryEmbedding.*zero/);
    expectError(await e.call("POST", "/projects/pr/promote", promo("huge vector", { summaryEmbedding: Array.from({ length: dims }, (_, i) => (i === 0 ? 1e308 : 0.1)) })), 400, "validation_error", /summaryEmbedding.*finite/);
    expect(e.gw.ctx.db.get<any>(`SELECT COUNT(*) AS n FROM memory_knowledge`).n).toBe(before);
    expect((await e.call("POST", "/projects/pr/promote", promo("small but real", { summaryEmbedding: Array.from({ length: dims }, () => 1e-3) }))).status).toBe(201);
  });

  test("at most 10 promotions per project per minute → 429 rate_limit_error with retry_after_secs; duplicates not counted; the window slides", async () => {
    await e.call("POST", "/projects", { projectId: "rate", name: "rate", roadmap: "" });
    clock.advance(120_000);
    for (let i = 0; i < 10; i++) {
      expect((await e.call("POST", "/projects/rate/promote", promo(`distinct knowledge number ${i}`))).status).toBe(201);
      clock.advance(1_000);
    }
    const dup = await e.call("POST", "/projects/rate/promote", promo("distinct knowledge number 3"));
    expect(dup.status).toBe(200); // a duplicate passes and is not counted
    const over = await e.call("POST", "/projects/rate/promote", promo("the eleventh"));
    expectError(over, 429, "rate_limit_error");
    expect(over.body.error.retry_after_secs).toBe(50); // the first of the ten leaves the window 60 s after it was made (10 s ago)
    // another project has its own budget
    expect((await e.call("POST", "/projects/pr/promote", promo("another project is not limited"))).status).toBe(201);
    clock.advance(50_000);
    expect((await e.call("POST", "/projects/rate/promote", promo("the eleventh"))).status).toBe(201);
    expectError(await e.call("POST", "/projects/rate/promote", promo("the twelfth")), 429, "rate_limit_error");
  });
});

describe("contributors", () => {
  test("upsert (201 then 200), list, get, delete; limits", async () => {
    const c = await e.call("POST", "/contributors", { contributorId: "alice", displayName: "Alice", agentIds: ["agent-a1", "agent-a2"], role: "lead" });
    expect(c.status).toBe(201);
    expect(c.body).toEqual({ contributorId: "alice", tenantId: "tenant-a", displayName: "Alice", agentIds: ["agent-a1", "agent-a2"], role: "lead", createdAt: expect.stringMatching(ISO), updatedAt: c.body.createdAt });
    const u = await e.call("POST", "/contributors", { contributorId: "alice", displayName: "Alice L.", agentIds: ["agent-a1"] });
    expect(u.status).toBe(200);
    // an update keeps what the body leaves out (role here) and changes what it sends
    expect(u.body).toMatchObject({ displayName: "Alice L.", agentIds: ["agent-a1"], role: "lead", createdAt: c.body.createdAt });
    const renamed = await e.call("POST", "/contributors", { contributorId: "alice", displayName: "Alice Lovelace" });
    expect(renamed.body).toMatchObject({ displayName: "Alice Lovelace", agentIds: ["agent-a1"], role: "lead" });
    const cleared = await e.call("POST", "/contributors", { contributorId: "alice", displayName: "Alice Lovelace", agentIds: [], role: null });
    expect(cleared.body).toMatchObject({ agentIds: [], role: null });
    const min = await e.call("POST", "/contributors", { contributorId: "c".repeat(128), displayName: "d".repeat(256) });
    expect(min.status).toBe(201);
    expect(min.body).toMatchObject({ agentIds: [], role: null });
    expectError(await e.call("POST", "/contributors", { contributorId: "c".repeat(129), displayName: "x" }), 400, "validation_error", /contributorId/);
    expectError(await e.call("POST", "/contributors", { contributorId: "x", displayName: "d".repeat(257) }), 400, "validation_error", /displayName/);
    expectError(await e.call("POST", "/contributors", { contributorId: "x" }), 400, "validation_error", /displayName/);
    const list = await e.call("GET", "/contributors");
    expect(list.body.contributors.map((x: any) => x.contributorId)).toEqual(["alice", "c".repeat(128)]);
    expect((await e.call("GET", "/contributors", undefined, e.B)).body.contributors).toEqual([]);
    expect((await e.call("GET", "/contributors/alice")).body.displayName).toBe("Alice Lovelace");
    expectError(await e.call("GET", "/contributors/alice", undefined, e.B), 404, "not_found");
    expectError(await e.call("DELETE", "/contributors/alice", undefined, e.B), 404, "not_found");
    expect((await e.call("DELETE", "/contributors/" + "c".repeat(128))).body).toEqual({ deleted: true, id: "c".repeat(128) });
    expectError(await e.call("GET", "/contributors/" + "c".repeat(128)), 404, "not_found");
  });

  test("activity: milestones of the contributor's agents across projects, newest first, limit default 50, totalMilestones; never another tenant's", async () => {
    await e.call("POST", "/contributors", { contributorId: "bob", displayName: "Bob", agentIds: ["bob-1", "bob-2"] });
    await e.call("POST", "/projects", { projectId: "act", name: "act", roadmap: "" });
    for (let i = 0; i < 30; i++) await e.call("POST", "/projects/act/store", milestone(`bob ${i}`, { agentId: i % 2 ? "bob-1" : "bob-2" }));
    for (let i = 0; i < 25; i++) await e.call("POST", "/projects/m1/store", milestone(`bob m1 ${i}`, { agentId: "bob-1" }));
    await e.call("POST", "/projects/act/store", milestone("someone else", { agentId: "carol" }));
    // tenant B: the same agent id in its own project
    await e.call("POST", "/projects", { projectId: "act", name: "b", roadmap: "" }, e.B);
    await e.call("POST", "/projects/act/store", milestone("b's bob", { agentId: "bob-1" }), e.B);
    const r = await e.call("GET", "/contributors/bob/activity");
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["contributor", "limit", "milestones", "offset", "totalMilestones"]);
    expect(r.body.contributor.contributorId).toBe("bob");
    expect(r.body.totalMilestones).toBe(55);
    expect(r.body.milestones.length).toBe(50);
    expect(r.body.milestones.every((m: any) => ["bob-1", "bob-2"].includes(m.agentId))).toBe(true);
    expect(r.body.milestones.some((m: any) => m.thisContribution === "did step b's bob")).toBe(false);
    expect(r.body.milestones[0].thisContribution).toBe("did step bob m1 24");
    const page = await e.call("GET", "/contributors/bob/activity?limit=5&offset=50");
    expect(page.body.milestones.length).toBe(5);
    expectError(await e.call("GET", "/contributors/bob/activity?limit=0"), 400, "validation_error", /limit/);
    expectError(await e.call("GET", "/contributors/ghost/activity"), 404, "not_found");
    expectError(await e.call("GET", "/contributors/bob/activity", undefined, e.B), 404, "not_found");
  });
});
