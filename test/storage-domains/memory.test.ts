/**
 * The Memory domain's store and services on both backends (SQLite, PostgreSQL — eachBackend): its
 * main operations, the transactions (gap-free sequence numbers and content-hash deduplication under
 * concurrent stores, atomic merge), the dialect-specific queries (JSON arrays, the derived
 * segments' aggregates, 64-bit content hashes, JSON-array key lists), tenant isolation, and
 * deleting a project with all it holds. A small deterministic embedder keeps it fast; ranking is
 * memory-search.test.ts's and memory-retrieval.test.ts's.
 */
import { afterAll, expect, test, beforeAll } from "bun:test";
import { createHash } from "node:crypto";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import { memoryOver, releaseEmbedder } from "../memory/backends";
import type { MemoryServices } from "../../src/memory";
import type { Embedder } from "../../src/memory/ports";
import type { AsyncStorage } from "../../src/storage/async";
import { contentHash } from "../../src/memory/hash";
import { ApiError } from "../../src/core/errors";

/** 16-d unit vectors from a text's hash: equal texts, equal vectors. */
const fakeEmbedder: Embedder = {
  id: "test:hash16",
  dimensions: 16,
  async embed(texts) {
    return texts.map((t) => {
      const h = createHash("sha256").update(t).digest();
      const v = Float32Array.from({ length: 16 }, (_, i) => h[i]! - 127.5);
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    });
  },
};

const ms = (n: number | string, extra: Record<string, unknown> = {}) => ({ branchPurpose: "ship it", cumulativeProgress: `progress ${n}`, thisContribution: `did ${n}`, agentId: "agent-1", ...extra });

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (e) {
    if (e instanceof ApiError) return e.status;
    throw e;
  }
}

afterAll(releaseEmbedder);

eachBackend("memory", (backend) => {
  let storage: AsyncStorage;
  let m: MemoryServices;
  const A = "tenant-a";
  const B = "tenant-b";

  beforeAll(async () => {
    storage = await backend.open();
    m = await memoryOver(storage, { embedder: fakeEmbedder });
  }, SETUP_TIMEOUT);

  test("projects: create (main branch active), conflict, list with total, roadmap; another tenant's same id is separate", async () => {
    const p = await m.memory.createProject(A, { projectId: "p1", name: "One", roadmap: "r" });
    expect(p).toMatchObject({ projectId: "p1", tenantId: A, name: "One", roadmap: "r", milestoneCount: 0, activeBranches: ["main"] });
    expect(await status(m.memory.createProject(A, { projectId: "p1", name: "x", roadmap: "" }))).toBe(409);
    await m.memory.createProject(A, { projectId: "p2", name: "Two", roadmap: "" });
    await m.memory.createProject(B, { projectId: "p1", name: "B's", roadmap: "" });
    const page = await m.memory.listProjects(A, 1, 1);
    expect(page.total).toBe(2);
    expect(page.items.map((x) => x.projectId)).toEqual(["p2"]);
    expect((await m.memory.updateRoadmap(A, "p1", "next")).roadmap).toBe("next");
    expect((await m.memory.getProject(B, "p1")).name).toBe("B's");
    expect(await status(m.memory.getProject(B, "p2"))).toBe(404);
  });

  test("milestones: gap-free sequence numbers, exact 64-bit content hashes (both signs), deduplication", async () => {
    const stored = [];
    for (let i = 0; i < 6; i++) stored.push((await m.memory.storeMilestone(A, "p1", ms(i))).milestone);
    expect(stored.map((x) => x.sequenceNumber)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const [i, x] of stored.entries()) expect(x.contentHash).toBe(contentHash("ship it", `progress ${i}`, `did ${i}`));
    expect(stored.some((x) => x.contentHash < 0n) && stored.some((x) => x.contentHash > 0n)).toBe(true);
    const again = await m.memory.storeMilestone(A, "p1", ms(3));
    expect(again).toMatchObject({ deduplicated: true, milestone: { milestoneId: stored[3]!.milestoneId, contentHash: stored[3]!.contentHash } });
    expect((await m.memory.getProject(A, "p1")).milestoneCount).toBe(6);
    const view = (await m.memory.recall(A, "p1", { view: "branch", limit: 2, offset: 1 })) as { milestones: Array<{ sequenceNumber: number }>; total: number };
    expect(view.milestones.map((x) => x.sequenceNumber)).toEqual([5, 4]);
    expect(view.total).toBe(6);
    const one = (await m.memory.recall(A, "p1", { view: "milestone", milestoneId: stored[0]!.milestoneId })) as { milestones: Array<{ contentHash: bigint }> };
    expect(one.milestones[0]!.contentHash).toBe(stored[0]!.contentHash);
    expect(await status(m.memory.storeMilestone(A, "p1", ms(99, { branchName: "ghost" })))).toBe(404);
  });

  test("transactions: concurrent stores get distinct gap-free numbers; the same content stored at once is stored once", async () => {
    await m.memory.createProject(A, { projectId: "conc", name: "c", roadmap: "" });
    const many = await Promise.all(Array.from({ length: 8 }, (_, i) => m.memory.storeMilestone(A, "conc", ms(`c${i}`))));
    expect(many.map((x) => x.milestone.sequenceNumber).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const same = await Promise.all(Array.from({ length: 4 }, () => m.memory.storeMilestone(A, "conc", ms("same"))));
    expect(same.filter((x) => !x.deduplicated).length).toBe(1);
    expect(new Set(same.map((x) => x.milestone.milestoneId)).size).toBe(1);
    expect((await m.memory.getProject(A, "conc")).milestoneCount).toBe(9);
    const logs = await Promise.all(Array.from({ length: 5 }, (_, i) => m.memory.appendLog(A, "conc", { agentId: "a", phase: "thought", content: `t${i}` })));
    expect(logs.map((x) => x.sequenceNumber).sort()).toEqual([1, 2, 3, 4, 5]);
  });

  test("branches: creation order (main first), abandon, atomic merge with its milestone; derived segments", async () => {
    await m.memory.createProject(A, { projectId: "br", name: "b", roadmap: "" });
    await m.memory.createBranch(A, "br", { branchName: "feat", purpose: "a feature", agentId: "agent-2" });
    await m.memory.createBranch(A, "br", { branchName: "alpha", purpose: "dead end", agentId: "agent-2" });
    expect((await m.memory.listBranches(A, "br")).items.map((b) => b.branchName).slice(0, 1)).toEqual(["main"]);
    expect(await status(m.memory.createBranch(A, "br", { branchName: "feat", purpose: "x", agentId: "a" }))).toBe(409);
    expect((await m.memory.abandonBranch(A, "br", "alpha", "no")).status).toBe("abandoned");
    await m.memory.storeMilestone(A, "br", ms("f1", { branchName: "feat", agentId: "agent-2", agentType: "claude-code" }));
    await m.memory.storeMilestone(A, "br", ms("f2", { branchName: "feat", agentId: "agent-2", agentType: "cursor" }));
    await m.memory.appendLog(A, "br", { branchName: "feat", agentId: "agent-3", phase: "action", content: "ran it" });
    const merged = await m.memory.merge(A, "br", { sourceBranch: "feat", mergeSummary: "feature done", agentId: "agent-1" });
    expect(merged).toMatchObject({ merged: true, milestonesMerged: 2, sourceBranchStatus: "merged" });
    const feat = await m.memory.getBranch(A, "br", "feat");
    expect(feat).toMatchObject({ status: "merged", mergedInto: "main", mergeMilestoneId: merged.mergeMilestoneId, milestoneCount: 2 });
    expect((await m.memory.getProject(A, "br")).activeBranches).toEqual(["main"]);
    expect(await status(m.memory.storeMilestone(A, "br", ms("late", { branchName: "feat" })))).toBe(409);

    const seg = async (segment: string) => ((await m.memory.recall(A, "br", { view: "metadata", segment })) as { metadata: { data: any } }).metadata.data;
    const agents = await seg("agents");
    expect(agents.map((a: any) => a.agentId)).toEqual(["agent-1", "agent-2", "agent-3"]);
    expect([...agents[1].agentTypes].sort()).toEqual(["claude-code", "cursor"]);
    expect(agents[2]).toMatchObject({ agentTypes: [], milestones: 0, logEntries: 1, sessions: 0 });
    expect(agents[1]).toMatchObject({ milestones: 2, logEntries: 0 });
    const branches = await seg("branches");
    expect(branches.find((b: any) => b.branchName === "feat")).toMatchObject({ status: "merged", milestones: 2, logEntries: 1 });
    expect(typeof branches.find((b: any) => b.branchName === "main").lastMilestoneAt).toBe("string");
    await m.memory.putSegment(A, "br", "notes", { a: 1 });
    expect(await seg("stats")).toEqual({ milestones: 3, logEntries: 1, branches: 3, sessions: 0, knowledge: 0, documents: 0, sources: 0, customSegments: ["notes"] });
    expect(await seg("notes")).toEqual({ a: 1 });
  });

  test("sessions: insert then replace; the summary groups with and without memory", async () => {
    const base = { agentId: "a", agentType: "claude-code", toolCallsTotal: 10, toolCallsRead: 4, sessionDurationSecs: 60, startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:01:00Z" };
    expect((await m.memory.recordSession(A, "br", { ...base, sessionId: "s1", milestonesRecalled: 0, compactionCount: 4 })).created).toBe(true);
    const r = await m.memory.recordSession(A, "br", { ...base, sessionId: "s1", milestonesRecalled: 0, compactionCount: 2 });
    expect(r).toMatchObject({ created: false, session: { compactionCount: 2 } });
    await m.memory.recordSession(A, "br", { ...base, sessionId: "s2", milestonesRecalled: 3, compactionCount: 1 });
    const sum = await m.memory.metricsSummary(A, "br");
    expect(sum).toMatchObject({ totalSessions: 2, sessionsWithMemory: 1, sessionsWithoutMemory: 1, avgCompactionsWithMemory: 1, avgCompactionsWithoutMemory: 2, compactionReductionPct: 50 });
    expect(sum.recentSessions.length).toBe(2);
  });

  test("knowledge: promoted once per content; contributors: upsert, case-insensitive name, activity across projects", async () => {
    const k = { cacheKey: "c", reuseScore: 0.8, summary: "how to rotate keys", l2Collection: "l2" };
    const one = await m.memory.promote(A, "p1", k);
    expect(one).toMatchObject({ promoted: true, deduplicated: false, reuseScore: 0.8 });
    expect(await m.memory.promote(A, "p1", k)).toMatchObject({ knowledgeId: one.knowledgeId, deduplicated: true });
    const rows = await m.memory.store(A).knowledgeByKeys([1, 2, 3, 4, 5]);
    expect([...rows.values()].map((r) => r.knowledge_id)).toContain(one.knowledgeId);

    expect((await m.contributors.upsertContributor(A, { contributorId: "c1", displayName: "Ada", agentIds: ["agent-1", "agent-2"] })).created).toBe(true);
    expect((await m.contributors.upsertContributor(A, { contributorId: "c1", displayName: "Ada L" })).contributor.agentIds).toEqual(["agent-1", "agent-2"]);
    expect((await m.memory.store(A).contributorByName("ada l"))?.contributorId).toBe("c1");
    const act = await m.contributors.activity(A, "c1", 3, 0);
    expect(act.totalMilestones).toBe(6 + 9 + 3);
    expect(act.milestones.length).toBe(3);
    expect(await m.contributors.activity(B, "c1", 3, 0).then(() => 200, (e) => e.status)).toBe(404);
    await m.contributors.deleteContributor(A, "c1");
    expect((await m.contributors.listContributors(A, 10, 0)).total).toBe(0);
  });

  test("sources and documents (store level): update resets the cursor only when asked; documents replaced by external id, removed with their source", async () => {
    const s = m.memory.store(A);
    const at = "2026-01-01T00:00:00.000Z";
    await s.insertSource({ sourceId: "gh", tenantId: A, projectId: "p1", sourceType: "github", config: { owner: "o", repo: "r" }, syncCursor: "", lastSyncedAt: null, enabled: true, createdAt: at, updatedAt: at, lastError: null, itemsSynced: 0 });
    await s.advanceCursor("gh", "c-1", 2);
    await s.updateSource("gh", { projectId: "p1", sourceType: "github", config: { owner: "o", repo: "r" }, enabled: false, resetCursor: false, at });
    expect(await s.source("gh")).toMatchObject({ syncCursor: "c-1", itemsSynced: 2, enabled: false });
    await s.updateSource("gh", { projectId: "p1", sourceType: "github", config: { owner: "o", repo: "r2" }, enabled: true, resetCursor: true, at });
    expect(await s.source("gh")).toMatchObject({ syncCursor: "", enabled: true, config: { repo: "r2" } });
    await s.finishSync("gh", at, null);
    expect((await s.source("gh"))!.lastSyncedAt).toBe(at);
    const [v] = await fakeEmbedder.embed(["doc"]);
    const doc = (n: string) => ({ externalId: "issue-1", kind: "issue", title: `Issue ${n}`, body: `body ${n} with quux_token`, url: null, author: null, updatedAt: at });
    const first = await s.upsertDocument("p1", "gh", doc("one"), "d1", fakeEmbedder.id, v!, at);
    const second = await s.upsertDocument("p1", "gh", doc("two"), "d2", fakeEmbedder.id, v!, at);
    expect(second.replaced).toBe(first.key);
    expect((await s.documentsOfSource("gh")).map((d) => d.title)).toEqual(["Issue two"]);
    expect((await s.lexical("document", ["quux_token"], ["p1"], 5)).map((h) => h.key)).toEqual([second.key]);
    expect((await s.listSources(10, 0, "p1")).total).toBe(1);
    expect((await s.deleteDocumentsOfSource("gh")).map((r) => r.key)).toEqual([second.key]);
    expect(await s.lexical("document", ["quux_token"], ["p1"], 5)).toEqual([]);
    expect(await s.deleteSource("gh")).toBe(true);
  });

  test("filters: agent ids and time as JSON arrays of keys and ids", async () => {
    const s = m.memory.store(A);
    const all = await s.branchMilestones("p1", "main", 100, 0);
    const keys = [...(await s.milestonesByKeys([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])).keys()];
    expect(keys.length).toBeGreaterThan(0);
    expect((await s.filterKeys("milestone", keys, { agentIds: ["nobody"] })).size).toBe(0);
    expect((await s.filterKeys("milestone", keys, { agentIds: ["agent-1"], since: "2000-01-01" })).size).toBe(keys.length);
    expect(all.total).toBe(6);
  });

  test("a project is deleted with everything it holds; its search finds nothing; other projects keep theirs", async () => {
    const before = (await m.memory.search(A, { query: "did progress" }, "br")).count;
    expect(before).toBeGreaterThan(0);
    await m.memory.deleteProject(A, "br");
    expect(await status(m.memory.getProject(A, "br"))).toBe(404);
    const left = await storage.tenant(A).get<{ n: number }>(
      `SELECT (SELECT COUNT(*) FROM memory_milestones WHERE tenant_id = $tenant AND project_id = 'br') + (SELECT COUNT(*) FROM memory_branches WHERE tenant_id = $tenant AND project_id = 'br') + (SELECT COUNT(*) FROM memory_logs WHERE tenant_id = $tenant AND project_id = 'br') + (SELECT COUNT(*) FROM memory_sessions WHERE tenant_id = $tenant AND project_id = 'br') AS n`,
    );
    expect(left!.n).toBe(0);
    const fts = await storage.global("test: FTS rows left").get<{ n: number }>(`SELECT COUNT(*) AS n FROM memory_milestones_fts WHERE rowid NOT IN (SELECT key FROM memory_milestones)`);
    expect(fts!.n).toBe(0);
    expect((await m.memory.getProject(A, "p1")).milestoneCount).toBe(6);
  });

  test("a second set of services on the same database (a restart, or another replica) sees every row and rebuilds its index", async () => {
    const other = await memoryOver(await backend.open(), { embedder: fakeEmbedder });
    expect((await other.memory.getProject(A, "p1")).milestoneCount).toBe(6);
    // the query's vector is milestone 2's (the embedded text: contribution, progress, purpose)
    const r = await other.memory.search(A, { query: "did 2\nprogress 2\nship it" }, "p1");
    expect(r.milestones[0]!.thisContribution).toBe("did 2");
    expect(other.vectors.builtFromRows).toBe(1);
    // written through one, read through the other at once
    await m.memory.storeMilestone(A, "p1", ms("via-first"));
    expect((await other.memory.getProject(A, "p1")).milestoneCount).toBe(7);
  });
});
