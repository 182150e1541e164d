/**
 * Memory projects, milestones, logs, branches and recall over HTTP against a real gateway (real
 * embedder, SQLite): every field, each limit at and one over, 404s, tenant isolation, 401, the
 * content hash and deduplication, concurrent stores and merges, and the memory rate-limit groups.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { memoryEnv, expectError, milestone, ISO, UUID, type Env } from "./helpers";
import { contentHash } from "../../src/memory/hash";
import { FakeClock } from "../../src/ratelimit";
import { startGateway } from "../helpers/gateway";

let e: Env;
beforeAll(async () => {
  e = await memoryEnv();
});
afterAll(() => e.stop());

const mkProject = async (projectId: string, token?: string) => {
  const r = await e.call("POST", "/projects", { projectId, name: `Project ${projectId}`, roadmap: "1. build 2. ship" }, token);
  expect(r.status).toBe(201);
  return r.body;
};

describe("projects", () => {
  test("create answers every field; main branch active with no parent, agent system", async () => {
    const r = await e.call("POST", "/projects", { projectId: "p-create", name: "Create", roadmap: "the plan" });
    expect(r.status).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(["activeBranches", "createdAt", "milestoneCount", "name", "projectId", "roadmap", "tenantId", "updatedAt"]);
    expect(r.body).toMatchObject({ projectId: "p-create", tenantId: "tenant-a", name: "Create", roadmap: "the plan", milestoneCount: 0, activeBranches: ["main"] });
    expect(r.body.createdAt).toMatch(ISO);
    expect(r.body.updatedAt).toBe(r.body.createdAt);
    const main = await e.call("GET", "/projects/p-create/branches/main");
    expect(main.status).toBe(200);
    expect(main.body).toMatchObject({ projectId: "p-create", branchName: "main", parentBranch: null, status: "active", agentId: "system", abandonReason: null, mergedInto: null });
    expect((await e.call("GET", "/projects/p-create")).body).toEqual(r.body);
  });

  test("limits: projectId 1-128, name 1-256, roadmap ≤10,000 (create) and 1-10,000 (PUT)", async () => {
    expect((await e.call("POST", "/projects", { projectId: "x".repeat(128), name: "n".repeat(256), roadmap: "r".repeat(10_000) })).status).toBe(201);
    expectError(await e.call("POST", "/projects", { projectId: "y".repeat(129), name: "n", roadmap: "" }), 400, "validation_error", /projectId/);
    expectError(await e.call("POST", "/projects", { projectId: "", name: "n", roadmap: "" }), 400, "validation_error", /projectId/);
    expectError(await e.call("POST", "/projects", { projectId: "y", name: "n".repeat(257), roadmap: "" }), 400, "validation_error", /name/);
    expectError(await e.call("POST", "/projects", { projectId: "y", name: "", roadmap: "" }), 400, "validation_error", /name/);
    expectError(await e.call("POST", "/projects", { projectId: "y", name: "n", roadmap: "r".repeat(10_001) }), 400, "validation_error", /roadmap/);
    expectError(await e.call("POST", "/projects", { projectId: "y", name: "n" }), 400, "validation_error", /roadmap/);
    expect((await e.call("POST", "/projects", { projectId: "y-empty-roadmap", name: "n", roadmap: "" })).status).toBe(201);
    await mkProject("p-roadmap");
    const put = await e.call("PUT", "/projects/p-roadmap/roadmap", { roadmap: "z".repeat(10_000) });
    expect(put.status).toBe(200);
    expect(put.body.roadmap).toBe("z".repeat(10_000));
    expect(put.body.updatedAt >= put.body.createdAt).toBe(true);
    expectError(await e.call("PUT", "/projects/p-roadmap/roadmap", { roadmap: "z".repeat(10_001) }), 400, "validation_error", /roadmap/);
    expectError(await e.call("PUT", "/projects/p-roadmap/roadmap", { roadmap: "" }), 400, "validation_error", /roadmap/);
    expectError(await e.call("PUT", "/projects/nope/roadmap", { roadmap: "a" }), 404, "not_found");
  });

  test("ids that become a URL path segment: '.' and '..' refused (a URL client resolves them away), '...' and 'a.b' fine", async () => {
    for (const id of [".", ".."]) {
      expectError(await e.call("POST", "/projects", { projectId: id, name: "n", roadmap: "" }), 400, "validation_error", /projectId/);
      expectError(await e.call("POST", "/contributors", { contributorId: id, displayName: "d" }), 400, "validation_error", /contributorId/);
      expectError(await e.call("POST", "/sources", { sourceId: id, projectId: "dots", sourceType: "github", config: { owner: "o", repo: "r" } }), 400, "validation_error", /sourceId/);
    }
    await mkProject("dots");
    for (const name of [".", ".."]) expectError(await e.call("POST", "/projects/dots/branches", { branchName: name, purpose: "p", agentId: "a" }), 400, "validation_error", /branchName/);
    for (const name of ["...", "v1.2", "my branch"]) {
      expect((await e.call("POST", "/projects/dots/branches", { branchName: name, purpose: "p", agentId: "a" })).status).toBe(201);
      expect((await e.call("GET", `/projects/dots/branches/${encodeURIComponent(name)}`)).body.branchName).toBe(name);
    }
    expect((await e.call("POST", "/projects", { projectId: "...", name: "n", roadmap: "" })).status).toBe(201);
    expect((await e.call("GET", "/projects/...")).body.projectId).toBe("...");
  });

  test("a projectId is unique per tenant (409) but two tenants can both own 'app'", async () => {
    await mkProject("app");
    expectError(await e.call("POST", "/projects", { projectId: "app", name: "again", roadmap: "" }), 409, "conflict");
    const b = await mkProject("app", e.B);
    expect(b.tenantId).toBe("tenant-b");
    await e.call("POST", "/projects/app/store", milestone("tenant-b-only"), e.B);
    expect((await e.call("GET", "/projects/app")).body.milestoneCount).toBe(0);
    expect((await e.call("GET", "/projects/app", undefined, e.B)).body.milestoneCount).toBe(1);
  });

  test("list with limit/offset; tenant B never sees A's projects", async () => {
    for (const id of ["l1", "l2", "l3"]) await mkProject(`list-${id}`, e.B);
    const all = await e.call("GET", "/projects?limit=200", undefined, e.B);
    expect(all.status).toBe(200);
    expect(all.body.projects.every((p: any) => p.tenantId === "tenant-b")).toBe(true);
    expect(all.body.projects.map((p: any) => p.projectId)).not.toContain("p-create");
    const page = await e.call("GET", "/projects?limit=1&offset=1", undefined, e.B);
    expect(page.body.projects.length).toBe(1);
    expect(page.body.projects[0].projectId).toBe(all.body.projects[1].projectId);
    expect(page.body).toMatchObject({ total: all.body.total, limit: 1, offset: 1 });
    expectError(await e.call("GET", "/projects?limit=0"), 400, "validation_error", /limit/);
    expectError(await e.call("GET", "/projects?limit=201"), 400, "validation_error", /limit/);
    expectError(await e.call("GET", "/projects?offset=-1"), 400, "validation_error", /offset/);
  });

  test("unknown project: 404 on every project route; another tenant's project is unknown", async () => {
    await mkProject("private-a");
    const B = e.B;
    for (const [m, p, body] of [
      ["GET", "/projects/private-a", undefined],
      ["DELETE", "/projects/private-a", undefined],
      ["POST", "/projects/private-a/store", milestone(1)],
      ["GET", "/projects/private-a/recall", undefined],
      ["POST", "/projects/private-a/log", { agentId: "a", phase: "thought", content: "x" }],
      ["POST", "/projects/private-a/branches", { branchName: "f", purpose: "p", agentId: "a" }],
      ["GET", "/projects/private-a/branches", undefined],
      ["GET", "/projects/private-a/branches/main", undefined],
      ["POST", "/projects/private-a/branches/main/abandon", { reason: "r" }],
      ["POST", "/projects/private-a/merge", { sourceBranch: "f", mergeSummary: "s", agentId: "a" }],
      ["PUT", "/projects/private-a/roadmap", { roadmap: "r" }],
      ["POST", "/projects/private-a/search", { query: "q" }],
      ["POST", "/projects/private-a/metrics", { sessionId: "s", agentId: "a", milestonesRecalled: 0, toolCallsTotal: 0, sessionDurationSecs: 1, startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:01:00Z" }],
      ["GET", "/projects/private-a/metrics/summary", undefined],
      ["POST", "/projects/private-a/promote", { cacheKey: "k", reuseScore: 0.5, summary: "s", l2Collection: "c" }],
    ] as const)
      expectError(await e.call(m, p, body, B), 404, "not_found");
    expect((await e.call("GET", "/projects/private-a")).status).toBe(200);
  });

  test("401 without a token, in the doc1 envelope", async () => {
    const r = await e.gw.api("/api/v1/memory/projects");
    expect(r.status).toBe(401);
    const body = await r.json();
    expect(body.error.type).toBe("authentication_error");
  });

  test("delete: empty body, then everything of the project is gone (milestones, branches, logs, metrics, vectors, knowledge, sources)", async () => {
    await mkProject("doomed");
    await e.call("POST", "/projects/doomed/branches", { branchName: "feat", purpose: "p", agentId: "a" });
    const m = (await e.call("POST", "/projects/doomed/store", milestone("doomed unique xylophone"))).body;
    await e.call("POST", "/projects/doomed/log", { agentId: "a", phase: "thought", content: "x" });
    await e.call("POST", "/projects/doomed/metrics", { sessionId: "s", agentId: "a", milestonesRecalled: 1, toolCallsTotal: 1, sessionDurationSecs: 1, startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:01:00Z" });
    await e.call("POST", "/projects/doomed/promote", { cacheKey: "k", reuseScore: 0.5, summary: "doomed knowledge", l2Collection: "c" });
    expect((await e.call("POST", "/sources", { sourceId: "doomed-src", projectId: "doomed", sourceType: "github", config: { owner: "o", repo: "r", baseUrl: "http://127.0.0.1:9" } })).status).toBe(201);
    expect((await e.call("POST", "/search", { query: "doomed unique xylophone" })).body.milestones.some((x: any) => x.milestoneId === m.milestoneId)).toBe(true);
    const del = await e.call("DELETE", "/projects/doomed");
    expect(del.status).toBe(200);
    expect(del.text).toBe("");
    expectError(await e.call("GET", "/projects/doomed"), 404, "not_found");
    expectError(await e.call("GET", "/sources/doomed-src/status"), 404, "not_found");
    // through the async storage: this file also runs on PostgreSQL (test/pg/)
    const db = e.gw.ctx.data.tenant("tenant-a");
    for (const t of ["memory_milestones", "memory_branches", "memory_logs", "memory_sessions", "memory_knowledge", "memory_sources", "memory_metadata"])
      expect(Number((await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t} WHERE tenant_id = $tenant AND project_id = 'doomed'`))!.n)).toBe(0);
    const orphans = await e.gw.ctx.data.global("test: lexical index rows of no milestone").get<{ n: number }>(`SELECT COUNT(*) AS n FROM memory_milestones_fts WHERE rowid NOT IN (SELECT key FROM memory_milestones)`);
    expect(Number(orphans!.n)).toBe(0);
    expect((await e.call("POST", "/search", { query: "doomed unique xylophone" })).body.milestones.some((x: any) => x.milestoneId === m.milestoneId)).toBe(false);
    // the id can be used again, from scratch
    expect((await mkProject("doomed")).milestoneCount).toBe(0);
    expectError(await e.call("DELETE", "/projects/never"), 404, "not_found");
  });
});

describe("store", () => {
  test("every field; contentHash is the exact signed 64-bit SHA-256 prefix, written as a bare JSON integer", async () => {
    await mkProject("st");
    const body = milestone(1, { agentType: "claude-code" });
    const r = await e.call("POST", "/projects/st/store", body);
    expect(r.status).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(
      ["agentId", "agentType", "branchName", "branchPurpose", "contentHash", "contentHashHex", "createdAt", "cumulativeProgress", "deduplicated", "mergedFrom", "milestoneId", "projectId", "sequenceNumber", "thisContribution"].sort(),
    );
    const expected = contentHash(body.branchPurpose, body.cumulativeProgress, body.thisContribution);
    expect(r.body).toMatchObject({ projectId: "st", branchName: "main", ...body, sequenceNumber: 1, deduplicated: false, mergedFrom: null });
    expect(r.body.milestoneId).toMatch(UUID);
    expect(r.body.createdAt).toMatch(ISO);
    expect(BigInt(r.body.contentHash)).toBe(expected);
    expect(r.body.contentHashHex).toBe(BigInt.asUintN(64, expected).toString(16).padStart(16, "0"));
    // the wire text carries the integer digit for digit
    expect(r.text).toContain(`"contentHash":${expected.toString()},`);
    expect((await e.call("GET", "/projects/st")).body.milestoneCount).toBe(1);
    // defaults: branch main, agentType custom
    const d = await e.call("POST", "/projects/st/store", milestone(2));
    expect(d.body.agentType).toBe("custom");
  });

  test("content hash: fixed test vectors (stable across processes and versions), separator makes concatenation unambiguous", () => {
    const h = contentHash("a", "b", "c");
    const hex = new Bun.CryptoHasher("sha256").update(new Uint8Array([0x61, 0, 0x62, 0, 0x63])).digest("hex").slice(0, 16);
    expect(BigInt.asUintN(64, h).toString(16).padStart(16, "0")).toBe(hex);
    expect(contentHash("ab", "", "c")).not.toBe(contentHash("a", "b", "c"));
    // pinned: SHA-256 of two NUL bytes = 96a296d224f285c6…, as a signed big-endian int64
    expect(new Bun.CryptoHasher("sha256").update(new Uint8Array([0, 0])).digest("hex").slice(0, 16)).toBe("96a296d224f285c6");
    expect(contentHash("", "", "")).toBe(-7592340192486062650n);
    expect(BigInt.asIntN(64, 0x96a296d224f285c6n)).toBe(-7592340192486062650n);
  });

  test("identical content: no new row, milestoneCount unchanged, the existing milestone (200, deduplicated: true)", async () => {
    await mkProject("dedup");
    const first = await e.call("POST", "/projects/dedup/store", milestone("same"));
    const again = await e.call("POST", "/projects/dedup/store", { ...milestone("same"), agentId: "other-agent", agentType: "x" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, deduplicated: true });
    expect((await e.call("GET", "/projects/dedup")).body.milestoneCount).toBe(1);
    // same content on another branch of the project: still the same milestone
    await e.call("POST", "/projects/dedup/branches", { branchName: "f", purpose: "p", agentId: "a" });
    const other = await e.call("POST", "/projects/dedup/store", { ...milestone("same"), branchName: "f" });
    expect(other.status).toBe(200);
    expect(other.body.milestoneId).toBe(first.body.milestoneId);
    // another project is not deduplicated against
    await mkProject("dedup-2");
    const p2 = await e.call("POST", "/projects/dedup-2/store", milestone("same"));
    expect(p2.status).toBe(201);
    expect(p2.body.milestoneId).not.toBe(first.body.milestoneId);
  });

  test("50 parallel stores: sequence numbers 1..50, gap-free and unique; 10 parallel identical stores make one row", async () => {
    await mkProject("conc");
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => e.call("POST", "/projects/conc/store", milestone(`parallel ${i}`))));
    expect(rs.filter((r) => r.status !== 201)).toEqual([]);
    expect(rs.map((r) => r.body.sequenceNumber).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect((await e.call("GET", "/projects/conc")).body.milestoneCount).toBe(50);
    const same = await Promise.all(Array.from({ length: 10 }, () => e.call("POST", "/projects/conc/store", milestone("identical"))));
    expect(same.filter((r) => r.status === 201).length).toBe(1);
    expect(new Set(same.map((r) => r.body.milestoneId)).size).toBe(1);
    expect(same.filter((r) => r.body.deduplicated).length).toBe(9);
    expect((await e.call("GET", "/projects/conc")).body.milestoneCount).toBe(51);
  });

  test("limits: branchName 256, branchPurpose 2,000, cumulativeProgress 50,000, thisContribution 10,000; required fields", async () => {
    await mkProject("lim");
    const long = "b".repeat(256);
    await e.call("POST", "/projects/lim/branches", { branchName: long, purpose: "p", agentId: "a" });
    const ok = await e.call("POST", "/projects/lim/store", {
      branchName: long,
      branchPurpose: "p".repeat(2_000),
      cumulativeProgress: "c".repeat(50_000),
      thisContribution: "t".repeat(10_000),
      agentId: "a",
    });
    expect(ok.status).toBe(201);
    for (const [field, n] of [["branchPurpose", 2_001], ["cumulativeProgress", 50_001], ["thisContribution", 10_001], ["branchName", 257]] as const)
      expectError(await e.call("POST", "/projects/lim/store", { ...milestone("over"), [field]: "x".repeat(n) }), 400, "validation_error", new RegExp(field));
    for (const field of ["branchPurpose", "cumulativeProgress", "thisContribution", "agentId"]) {
      const body: Record<string, unknown> = milestone("missing");
      delete body[field];
      expectError(await e.call("POST", "/projects/lim/store", body), 400, "validation_error", new RegExp(field));
    }
  });

  test("unknown branch 404; abandoned and merged branches refuse new milestones (409)", async () => {
    await mkProject("states");
    expectError(await e.call("POST", "/projects/states/store", milestone(1, { branchName: "ghost" })), 404, "not_found", /ghost/);
    await e.call("POST", "/projects/states/branches", { branchName: "dead", purpose: "p", agentId: "a" });
    await e.call("POST", "/projects/states/branches/dead/abandon", { reason: "wrong approach" });
    expectError(await e.call("POST", "/projects/states/store", milestone(2, { branchName: "dead" })), 409, "conflict", /abandoned/);
    await e.call("POST", "/projects/states/branches", { branchName: "done", purpose: "p", agentId: "a" });
    await e.call("POST", "/projects/states/merge", { sourceBranch: "done", mergeSummary: "s", agentId: "a" });
    expectError(await e.call("POST", "/projects/states/store", milestone(3, { branchName: "done" })), 409, "conflict", /merged/);
    expect((await e.call("GET", "/projects/states")).body.milestoneCount).toBe(1); // only the merge milestone
    // content that already exists in the project, sent to an unknown branch: still 404 (not a 200 "deduplicated" onto another branch)
    const kept = await e.call("POST", "/projects/states/store", milestone("kept"));
    expect(kept.status).toBe(201);
    expectError(await e.call("POST", "/projects/states/store", milestone("kept", { branchName: "ghost" })), 404, "not_found", /ghost/);
    expect((await e.call("POST", "/projects/states/store", milestone("kept"))).body).toMatchObject({ milestoneId: kept.body.milestoneId, deduplicated: true });
    expect((await e.call("GET", "/projects/states")).body.milestoneCount).toBe(2);
    // nor new log entries
    expectError(await e.call("POST", "/projects/states/log", { branchName: "dead", agentId: "a", phase: "thought", content: "x" }), 409, "conflict", /abandoned/);
    expectError(await e.call("POST", "/projects/states/log", { branchName: "done", agentId: "a", phase: "thought", content: "x" }), 409, "conflict", /merged/);
  });
});

describe("log", () => {
  test("entries with per-branch sequence numbers; every field; phase and content limits", async () => {
    await mkProject("lg");
    await e.call("POST", "/projects/lg/branches", { branchName: "f", purpose: "p", agentId: "a" });
    const a1 = await e.call("POST", "/projects/lg/log", { agentId: "a", phase: "observation", content: "saw x" });
    expect(a1.status).toBe(201);
    expect(Object.keys(a1.body).sort()).toEqual(["agentId", "branchName", "createdAt", "entryId", "phase", "projectId", "sequenceNumber"]);
    expect(a1.body).toMatchObject({ projectId: "lg", branchName: "main", agentId: "a", phase: "observation", sequenceNumber: 1 });
    expect(a1.body.entryId).toMatch(UUID);
    expect((await e.call("POST", "/projects/lg/log", { agentId: "a", phase: "thought", content: "c".repeat(50_000) })).body.sequenceNumber).toBe(2);
    expect((await e.call("POST", "/projects/lg/log", { branchName: "f", agentId: "a", phase: "action", content: "did" })).body.sequenceNumber).toBe(1);
    const par = await Promise.all(Array.from({ length: 20 }, (_, i) => e.call("POST", "/projects/lg/log", { branchName: "f", agentId: "a", phase: "action", content: `p${i}` })));
    expect(par.map((r) => r.body.sequenceNumber).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
    expectError(await e.call("POST", "/projects/lg/log", { agentId: "a", phase: "feeling", content: "x" }), 400, "validation_error", /phase/);
    expectError(await e.call("POST", "/projects/lg/log", { agentId: "a", phase: "thought", content: "c".repeat(50_001) }), 400, "validation_error", /content/);
    expectError(await e.call("POST", "/projects/lg/log", { agentId: "a", phase: "thought" }), 400, "validation_error", /content/);
    expectError(await e.call("POST", "/projects/lg/log", { branchName: "nope", agentId: "a", phase: "thought", content: "x" }), 404, "not_found");
  });
});

describe("branches", () => {
  test("create (parent default main), list, get; uniqueness, parent must exist and be active; limits", async () => {
    await mkProject("br");
    const c = await e.call("POST", "/projects/br/branches", { branchName: "feature-x", purpose: "try x", agentId: "agent-7" });
    expect(c.status).toBe(201);
    expect(Object.keys(c.body).sort()).toEqual(
      ["abandonReason", "agentId", "branchName", "createdAt", "mergeMilestoneId", "mergedInto", "milestoneCount", "parentBranch", "projectId", "purpose", "status", "updatedAt"].sort(),
    );
    expect(c.body).toMatchObject({ projectId: "br", branchName: "feature-x", parentBranch: "main", purpose: "try x", status: "active", agentId: "agent-7", abandonReason: null, milestoneCount: 0 });
    const sub = await e.call("POST", "/projects/br/branches", { branchName: "sub", parentBranch: "feature-x", purpose: "deeper", agentId: "a" });
    expect(sub.body.parentBranch).toBe("feature-x");
    expectError(await e.call("POST", "/projects/br/branches", { branchName: "feature-x", purpose: "again", agentId: "a" }), 409, "conflict");
    expectError(await e.call("POST", "/projects/br/branches", { branchName: "orphan", parentBranch: "ghost", purpose: "p", agentId: "a" }), 404, "not_found", /ghost/);
    await e.call("POST", "/projects/br/branches/sub/abandon", { reason: "no" });
    expectError(await e.call("POST", "/projects/br/branches", { branchName: "from-dead", parentBranch: "sub", purpose: "p", agentId: "a" }), 409, "conflict");
    expectError(await e.call("POST", "/projects/br/branches", { branchName: "b".repeat(257), purpose: "p", agentId: "a" }), 400, "validation_error", /branchName/);
    expectError(await e.call("POST", "/projects/br/branches", { branchName: "ok", purpose: "p".repeat(2_001), agentId: "a" }), 400, "validation_error", /purpose/);
    expect((await e.call("POST", "/projects/br/branches", { branchName: "ok", purpose: "p".repeat(2_000), agentId: "a" })).status).toBe(201);
    expectError(await e.call("POST", "/projects/br/branches", { branchName: "a/b", purpose: "p", agentId: "a" }), 400, "validation_error", /branchName/);
    const list = await e.call("GET", "/projects/br/branches");
    expect(list.body.branches.map((b: any) => b.branchName)).toEqual(["main", "feature-x", "sub", "ok"]);
    expectError(await e.call("GET", "/projects/br/branches/ghost"), 404, "not_found");
    expect((await e.call("GET", "/projects/br")).body.activeBranches).toEqual(["main", "feature-x", "ok"]);
  });

  test("branch list takes limit/offset like every memory list (doc1 §2.1): page, total, limits 1-200", async () => {
    await mkProject("brpage");
    for (const n of ["b1", "b2", "b3"]) await e.call("POST", "/projects/brpage/branches", { branchName: n, purpose: "p", agentId: "a" });
    const all = await e.call("GET", "/projects/brpage/branches");
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 4, limit: 50, offset: 0 });
    expect(all.body.branches.map((b: any) => b.branchName)).toEqual(["main", "b1", "b2", "b3"]);
    const page = await e.call("GET", "/projects/brpage/branches?limit=2&offset=1");
    expect(page.body).toMatchObject({ total: 4, limit: 2, offset: 1 });
    expect(page.body.branches.map((b: any) => b.branchName)).toEqual(["b1", "b2"]);
    expect((await e.call("GET", "/projects/brpage/branches?limit=200")).body.branches.length).toBe(4);
    expectError(await e.call("GET", "/projects/brpage/branches?limit=0"), 400, "validation_error", /limit/);
    expectError(await e.call("GET", "/projects/brpage/branches?limit=201"), 400, "validation_error", /limit/);
    expectError(await e.call("GET", "/projects/brpage/branches?offset=-1"), 400, "validation_error", /offset/);
    expectError(await e.call("GET", "/projects/brpage/branches", undefined, e.B), 404, "not_found");
  });

  test("abandon: reason required, milestones kept, leaves activeBranches; twice → 409", async () => {
    await mkProject("ab");
    await e.call("POST", "/projects/ab/branches", { branchName: "f", purpose: "p", agentId: "a" });
    const m = await e.call("POST", "/projects/ab/store", milestone(1, { branchName: "f" }));
    expectError(await e.call("POST", "/projects/ab/branches/f/abandon", {}), 400, "validation_error", /reason/);
    const r = await e.call("POST", "/projects/ab/branches/f/abandon", { reason: "dead end" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ branchName: "f", status: "abandoned", abandonReason: "dead end", milestoneCount: 1 });
    expect((await e.call("GET", "/projects/ab")).body.activeBranches).toEqual(["main"]);
    expect((await e.call("GET", `/projects/ab/recall?view=milestone&milestoneId=${m.body.milestoneId}`)).body.milestones[0].milestoneId).toBe(m.body.milestoneId);
    expectError(await e.call("POST", "/projects/ab/branches/f/abandon", { reason: "again" }), 409, "conflict");
    expectError(await e.call("POST", "/projects/ab/branches/ghost/abandon", { reason: "x" }), 404, "not_found");
    expectError(await e.call("POST", "/projects/ab/branches/main/abandon", { reason: "x" }), 400, "invalid_request_error", /main/);
    expectError(await e.call("POST", "/projects/ab/branches/f/abandon", { reason: "r".repeat(2_001) }), 400, "validation_error", /reason/);
  });

  test("merge: merge milestone on the target with the summary, source merged, milestonesMerged = source's milestones", async () => {
    await mkProject("mg");
    await e.call("POST", "/projects/mg/branches", { branchName: "feat", purpose: "build feat", agentId: "a" });
    for (let i = 0; i < 3; i++) await e.call("POST", "/projects/mg/store", milestone(`feat ${i}`, { branchName: "feat" }));
    const r = await e.call("POST", "/projects/mg/merge", { sourceBranch: "feat", mergeSummary: "feat is done: 3 steps", agentId: "lead" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ merged: true, milestonesMerged: 3, sourceBranchStatus: "merged", sourceBranch: "feat", targetBranch: "main" });
    const mm = (await e.call("GET", `/projects/mg/recall?view=milestone&milestoneId=${r.body.mergeMilestoneId}`)).body.milestones[0];
    expect(mm).toMatchObject({ branchName: "main", cumulativeProgress: "feat is done: 3 steps", agentId: "lead", mergedFrom: "feat", sequenceNumber: 4 });
    const src = (await e.call("GET", "/projects/mg/branches/feat")).body;
    expect(src).toMatchObject({ status: "merged", mergedInto: "main", mergeMilestoneId: r.body.mergeMilestoneId, milestoneCount: 3 });
    expect((await e.call("GET", "/projects/mg")).body).toMatchObject({ milestoneCount: 4, activeBranches: ["main"] });
    // the source's milestones keep their branch (history stays associated)
    expect((await e.call("GET", "/projects/mg/recall?view=branch&branch=feat")).body.milestones.length).toBe(3);
    expectError(await e.call("POST", "/projects/mg/merge", { sourceBranch: "feat", mergeSummary: "again", agentId: "a" }), 409, "conflict", /merged/);
    expectError(await e.call("POST", "/projects/mg/merge", { sourceBranch: "main", targetBranch: "main", mergeSummary: "s", agentId: "a" }), 400, "validation_error", /itself/);
    expectError(await e.call("POST", "/projects/mg/merge", { sourceBranch: "ghost", mergeSummary: "s", agentId: "a" }), 404, "not_found", /ghost/);
    await e.call("POST", "/projects/mg/branches", { branchName: "g", purpose: "p", agentId: "a" });
    expectError(await e.call("POST", "/projects/mg/merge", { sourceBranch: "g", targetBranch: "ghost", mergeSummary: "s", agentId: "a" }), 404, "not_found", /ghost/);
    expectError(await e.call("POST", "/projects/mg/merge", { sourceBranch: "g", mergeSummary: "s".repeat(50_001), agentId: "a" }), 400, "validation_error", /mergeSummary/);
    expect((await e.call("POST", "/projects/mg/merge", { sourceBranch: "g", mergeSummary: "s".repeat(50_000), agentId: "a" })).status).toBe(200);
    // merge into a non-main target
    await e.call("POST", "/projects/mg/branches", { branchName: "t", purpose: "target", agentId: "a" });
    await e.call("POST", "/projects/mg/branches", { branchName: "s2", parentBranch: "t", purpose: "src", agentId: "a" });
    const m2 = await e.call("POST", "/projects/mg/merge", { sourceBranch: "s2", targetBranch: "t", mergeSummary: "into t", agentId: "a" });
    expect(m2.body.milestonesMerged).toBe(0);
    expect((await e.call("GET", "/projects/mg/recall?view=branch&branch=t")).body.milestones[0].milestoneId).toBe(m2.body.mergeMilestoneId);
  });

  test("concurrent merges of one source: exactly one succeeds, one merge milestone", async () => {
    await mkProject("mgc");
    await e.call("POST", "/projects/mgc/branches", { branchName: "f", purpose: "p", agentId: "a" });
    await e.call("POST", "/projects/mgc/store", milestone(1, { branchName: "f" }));
    const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => e.call("POST", "/projects/mgc/merge", { sourceBranch: "f", mergeSummary: `attempt ${i}`, agentId: "a" })));
    expect(rs.filter((r) => r.status === 200).length).toBe(1);
    expect(rs.filter((r) => r.status === 409).length).toBe(7);
    expect((await e.call("GET", "/projects/mgc")).body.milestoneCount).toBe(2);
  });
});

describe("recall", () => {
  test("five views with defaults; fields of other views omitted; unknown view 400", async () => {
    await mkProject("rc");
    for (let i = 1; i <= 12; i++) await e.call("POST", "/projects/rc/store", milestone(`rc ${i}`));
    for (let i = 1; i <= 25; i++) await e.call("POST", "/projects/rc/log", { agentId: "a", phase: "thought", content: `t${i}` });
    const ov = await e.call("GET", "/projects/rc/recall");
    expect(ov.status).toBe(200);
    expect(Object.keys(ov.body).sort()).toEqual(["branches", "project", "view"]);
    expect(ov.body.view).toBe("overview");
    expect(ov.body.project.milestoneCount).toBe(12);
    expect(ov.body.branches.map((b: any) => b.branchName)).toEqual(["main"]);

    const br = await e.call("GET", "/projects/rc/recall?view=branch");
    expect(Object.keys(br.body).sort()).toEqual(["branch", "limit", "milestones", "offset", "total", "view"]);
    expect(br.body.milestones.length).toBe(10);
    expect(br.body.milestones.map((m: any) => m.sequenceNumber)).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3]);
    expect(br.body.total).toBe(12);
    const br2 = await e.call("GET", "/projects/rc/recall?view=branch&branch=main&limit=5&offset=10");
    expect(br2.body.milestones.map((m: any) => m.sequenceNumber)).toEqual([2, 1]);
    expectError(await e.call("GET", "/projects/rc/recall?view=branch&branch=ghost"), 404, "not_found");

    const one = br.body.milestones[0];
    const ms = await e.call("GET", `/projects/rc/recall?view=milestone&milestoneId=${one.milestoneId}`);
    expect(Object.keys(ms.body).sort()).toEqual(["milestones", "view"]);
    expect(ms.body.milestones).toEqual([one]);
    expectError(await e.call("GET", "/projects/rc/recall?view=milestone"), 400, "validation_error", /milestoneId/);
    expectError(await e.call("GET", "/projects/rc/recall?view=milestone&milestoneId=nope"), 404, "not_found");

    const lg = await e.call("GET", "/projects/rc/recall?view=log");
    expect(Object.keys(lg.body).sort()).toEqual(["branch", "limit", "logEntries", "offset", "total", "view"]);
    expect(lg.body.logEntries.length).toBe(20);
    expect(lg.body.logEntries[0]).toMatchObject({ sequenceNumber: 25, content: "t25", phase: "thought" });
    expect(lg.body.total).toBe(25);

    expectError(await e.call("GET", "/projects/rc/recall?view=everything"), 400, "validation_error", /view/);
    expectError(await e.call("GET", "/projects/rc/recall?view=metadata"), 400, "validation_error", /segment/);
  });

  test("metadata segments: derived agents/branches/stats/sessions, custom ones written with PUT, unknown → 404", async () => {
    await mkProject("md");
    await e.call("POST", "/projects/md/store", milestone(1, { agentId: "ag-1", agentType: "claude-code" }));
    await e.call("POST", "/projects/md/store", milestone(2, { agentId: "ag-2" }));
    await e.call("POST", "/projects/md/log", { agentId: "ag-1", phase: "action", content: "x" });
    const agents = await e.call("GET", "/projects/md/recall?view=metadata&segment=agents");
    expect(Object.keys(agents.body).sort()).toEqual(["metadata", "view"]);
    expect(agents.body.metadata.kind).toBe("derived");
    expect(agents.body.metadata.data).toEqual([
      expect.objectContaining({ agentId: "ag-1", agentTypes: ["claude-code"], milestones: 1, logEntries: 1, sessions: 0 }),
      expect.objectContaining({ agentId: "ag-2", agentTypes: ["custom"], milestones: 1, logEntries: 0 }),
    ]);
    const branches = await e.call("GET", "/projects/md/recall?view=metadata&segment=branches");
    expect(branches.body.metadata.data).toEqual([expect.objectContaining({ branchName: "main", status: "active", milestones: 2, logEntries: 1 })]);
    const stats = await e.call("GET", "/projects/md/recall?view=metadata&segment=stats");
    expect(stats.body.metadata.data).toMatchObject({ milestones: 2, logEntries: 1, branches: 1, sessions: 0, knowledge: 0, documents: 0, sources: 0, customSegments: [] });
    expect((await e.call("GET", "/projects/md/recall?view=metadata&segment=sessions")).body.metadata.data.totalSessions).toBe(0);
    expectError(await e.call("GET", "/projects/md/recall?view=metadata&segment=conventions"), 404, "not_found", /conventions/);
    const put = await e.call("PUT", "/projects/md/metadata/conventions", { data: { style: "tabs", tests: "bun test" } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ segment: "conventions", kind: "custom", data: { style: "tabs", tests: "bun test" } });
    const got = await e.call("GET", "/projects/md/recall?view=metadata&segment=conventions");
    expect(got.body.metadata).toEqual(put.body);
    expectError(await e.call("PUT", "/projects/md/metadata/agents", { data: {} }), 400, "invalid_request_error", /read-only/);
    expectError(await e.call("PUT", "/projects/md/metadata/bad%20name", { data: {} }), 400, "validation_error");
    expectError(await e.call("GET", "/projects/md/recall?view=metadata&segment=conventions", undefined, e.B), 404, "not_found");
  });
});

describe("rate-limit groups", () => {
  test("memory write 50/s and read 100/s per tenant (enterprise tier), answered 429 rate_limit_error with retry_after_secs", async () => {
    const clock = new FakeClock();
    const gw = await startGateway({ rate_limits: { enabled: true } }, {}, { clock });
    try {
      const admin = await gw.token("tenant-rl", ["ManageConfig"]);
      expect((await gw.api("/api/v1/rate-limits/tenant-rl", { method: "PUT", token: admin, json: { tier: "enterprise" } })).status).toBe(200);
      const t = await gw.token("tenant-rl");
      const post = () => gw.api("/api/v1/memory/projects", { method: "POST", token: t, json: { projectId: "", name: "x", roadmap: "" } }).then((r) => r.status);
      const writes: number[] = [];
      for (let i = 0; i < 51; i++) writes.push(await post());
      expect(writes.slice(0, 50).every((s) => s === 400)).toBe(true); // admitted (then refused by validation)
      const limited = await gw.api("/api/v1/memory/projects", { method: "POST", token: t, json: {} });
      expect(limited.status).toBe(429);
      const body = await limited.json();
      expect(body.error.type).toBe("rate_limit_error");
      expect(Number.isInteger(body.error.retry_after_secs)).toBe(true);
      const reads: number[] = [];
      for (let i = 0; i < 101; i++) reads.push((await gw.api("/api/v1/memory/projects", { token: t })).status);
      expect(reads.slice(0, 100).every((s) => s === 200)).toBe(true);
      expect(reads[100]).toBe(429);
    } finally {
      await gw.stop();
    }
  });
});
