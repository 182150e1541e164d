/**
 * Memory search through HTTP: real embeddings (the gateway's embedder) in per-project USearch
 * indexes fused with FTS5/BM25. The relevant milestone ranks first among milestones that share
 * words with the query; exact identifiers and file names are found; scores are present and
 * ordered; project and tenant filters hold; limits at and one over.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { memoryEnv, expectError, type Env } from "./helpers";
import { ftsQuery } from "../../src/memory/search";
import { restartableEnv } from "../helpers/gateway";
import { testBackend } from "../helpers/backend";

let e: Env;
const store = (p: string, thisContribution: string, token?: string, extra: Record<string, unknown> = {}) =>
  e.call("POST", `/projects/${p}/store`, { branchPurpose: "keep the gateway healthy", cumulativeProgress: thisContribution, thisContribution, agentId: "agent-s", ...extra }, token);

const DISTRACTORS = [
  "Added a reconnect button to the settings page so users can retry manually",
  "Documented the websocket message schema for the dashboard team",
  "Wrote a loop that uploads each file in the release folder to the bucket",
  "Listed the file descriptors limit in the deployment checklist",
  "Renamed the reconnect setting in the admin UI for clarity",
  "Websocket endpoint now returns a friendly error page",
];
const RELEVANT = "Fixed the websocket reconnect loop leaking file descriptors: every retry opened a new socket without closing the previous one; sockets are now closed in a finally block";

beforeAll(async () => {
  e = await memoryEnv();
  for (const p of ["s1", "s2", "s3"]) expect((await e.call("POST", "/projects", { projectId: p, name: p, roadmap: "" })).status).toBe(201);
  expect((await e.call("POST", "/projects", { projectId: "s1", name: "b's s1", roadmap: "" }, e.B)).status).toBe(201);
  for (const d of DISTRACTORS) await store("s1", d);
  await store("s1", RELEVANT);
  await store("s1", "Timeouts on the upstream pool now raise ERR_UPSTREAM_POOL_EXHAUSTED instead of hanging");
  await store("s1", "Moved the SSRF checks into src/core/outbound.ts and covered redirects");
  await store("s2", "Fixed the websocket reconnect loop in the mobile client that leaked file descriptors on every retry");
  await store("s3", "Tuned the HNSW index parameters for recall at one million vectors");
  // tenant B: the same project id and the same text — never visible to A
  await store("s1", RELEVANT + " (tenant b)", e.B);
});
afterAll(() => e.stop());

describe("project search", () => {
  test("the relevant milestone ranks first although others share its words; every result carries a score, best first", async () => {
    const r = await e.call("POST", "/projects/s1/search", { query: "websocket reconnect loop leaks file descriptors" });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["count", "milestones", "query"]);
    expect(r.body.query).toBe("websocket reconnect loop leaks file descriptors");
    expect(r.body.milestones[0].thisContribution).toBe(RELEVANT);
    expect(r.body.count).toBe(r.body.milestones.length);
    const scores = r.body.milestones.map((m: any) => m.score);
    expect(scores.every((s: number) => typeof s === "number" && s > 0 && s <= 1)).toBe(true);
    expect([...scores].sort((a: number, b: number) => b - a)).toEqual(scores);
    expect(scores[0]).toBeGreaterThan(scores[1]);
    const first = r.body.milestones[0];
    expect(first.similarity).toBeGreaterThan(0.3);
    expect(first.lexicalRank).toBe(1);
    // the milestone fields are all there, with the exact hash
    expect(typeof first.contentHash).toMatch(/bigint|number/);
    expect(first).toMatchObject({ projectId: "s1", branchName: "main", agentId: "agent-s" });
    // only s1's milestones
    expect(r.body.milestones.every((m: any) => m.projectId === "s1")).toBe(true);
  });

  test("a paraphrase with few shared words still finds it (semantic), and exact identifiers / file names are found (lexical)", async () => {
    const para = await e.call("POST", "/projects/s1/search", { query: "sockets not closed when retrying the connection", limit: 3 });
    expect(para.body.milestones[0].thisContribution).toBe(RELEVANT);
    // first by the vectors too: the highest cosine of the results
    expect(para.body.milestones[0].similarity).toBe(Math.max(...para.body.milestones.map((m: any) => m.similarity ?? -1)));
    const id = await e.call("POST", "/projects/s1/search", { query: "ERR_UPSTREAM_POOL_EXHAUSTED", limit: 3 });
    expect(id.body.milestones[0].thisContribution).toContain("ERR_UPSTREAM_POOL_EXHAUSTED");
    expect(id.body.milestones[0].lexicalRank).toBe(1);
    const file = await e.call("POST", "/projects/s1/search", { query: "src/core/outbound.ts", limit: 3 });
    expect(file.body.milestones[0].thisContribution).toContain("src/core/outbound.ts");
  });

  test("limit 1-100 (default 20), query 1-500", async () => {
    expect((await e.call("POST", "/projects/s1/search", { query: "x".repeat(500), limit: 100 })).status).toBe(200);
    const one = await e.call("POST", "/projects/s1/search", { query: "websocket", limit: 1 });
    expect(one.body.milestones.length).toBe(1);
    // every s1 milestone that has anything to do with the query (< 20), not the unrelated ones (the relevance cut)
    const all = (await e.call("POST", "/projects/s1/search", { query: "websocket" })).body.milestones;
    expect(all.filter((m: any) => /websocket/i.test(m.thisContribution)).length).toBe(3);
    expect(all.every((m: any) => /websocket/i.test(m.thisContribution) || m.similarity >= 0.5)).toBe(true);
    expectError(await e.call("POST", "/projects/s1/search", { query: "x".repeat(501) }), 400, "validation_error", /query/);
    expectError(await e.call("POST", "/projects/s1/search", { query: "" }), 400, "validation_error", /query/);
    expectError(await e.call("POST", "/projects/s1/search", { query: "x", limit: 101 }), 400, "validation_error", /limit/);
    expectError(await e.call("POST", "/projects/s1/search", { query: "x", limit: 0 }), 400, "validation_error", /limit/);
    expectError(await e.call("POST", "/projects/ghost/search", { query: "x" }), 404, "not_found");
  });

  test("FTS query building quotes every word (no operator injection)", () => {
    expect(ftsQuery('NEAR(a b) OR "x" AND y*')).toBe('"near" OR "a" OR "b" OR "or" OR "x" OR "and" OR "y"');
    expect(ftsQuery("  ...  ")).toBeUndefined();
    expect(ftsQuery("ERR_X src/a.ts")).toBe('"err_x" OR "src" OR "a" OR "ts"');
  });
});

describe("cross-project search", () => {
  test("default: every project of the tenant, never another tenant's", async () => {
    const r = await e.call("POST", "/search", { query: "websocket reconnect loop leaking file descriptors" });
    expect(r.status).toBe(200);
    const projects = new Set(r.body.milestones.map((m: any) => m.projectId));
    expect(projects.has("s1") && projects.has("s2")).toBe(true);
    expect(r.body.milestones.some((m: any) => m.thisContribution.includes("tenant b"))).toBe(false);
    expect(r.body.milestones.slice(0, 2).map((m: any) => m.projectId).sort()).toEqual(["s1", "s2"]);
    const b = await e.call("POST", "/search", { query: "websocket reconnect loop leaking file descriptors" }, e.B);
    expect(b.body.milestones.map((m: any) => m.thisContribution)).toEqual([RELEVANT + " (tenant b)"]);
  });

  test("projectIds restricts; an unknown (or another tenant's) project is 404; limit 1-200 (default 50)", async () => {
    const r = await e.call("POST", "/search", { query: "websocket reconnect", projectIds: ["s2", "s3"] });
    expect(r.body.milestones.every((m: any) => m.projectId !== "s1")).toBe(true);
    expect(r.body.milestones.map((m: any) => m.projectId)).toContain("s2");
    expectError(await e.call("POST", "/search", { query: "x", projectIds: ["ghost"] }), 404, "not_found", /ghost/);
    expectError(await e.call("POST", "/search", { query: "x", projectIds: ["s2"] }, e.B), 404, "not_found");
    expect((await e.call("POST", "/search", { query: "x", limit: 200 })).status).toBe(200);
    expectError(await e.call("POST", "/search", { query: "x", limit: 201 }), 400, "validation_error", /limit/);
    expectError(await e.call("POST", "/search", { query: "x".repeat(501) }), 400, "validation_error", /query/);
    expect((await e.call("POST", "/search", { query: "index", projectIds: [] })).body).toEqual({ milestones: [], query: "index", count: 0 });
  });

  test("a milestone stored after an index was built is searchable at once", async () => {
    await store("s3", "Introduced the quokka feature flag for gradual rollout");
    const r = await e.call("POST", "/search", { query: "quokka feature flag", limit: 1 });
    expect(r.body.milestones[0].thisContribution).toContain("quokka");
  });
});

describe("lexical cost bound", () => {
  test("words found in more than lexical_max_df items of the scope are not matched lexically; rare ones are", async () => {
    const small = await memoryEnv({ memory: { lexical_max_df: 2 } });
    try {
      await small.call("POST", "/projects", { projectId: "df", name: "df", roadmap: "" });
      for (let i = 0; i < 4; i++)
        await small.call("POST", "/projects/df/store", { branchPurpose: "p", cumulativeProgress: `deploy step ${i}`, thisContribution: `deploy pipeline change ${i}`, agentId: "a" });
      await small.call("POST", "/projects/df/store", { branchPurpose: "p", cumulativeProgress: "deploy", thisContribution: "deploy failed with ERR_RARE_TOKEN", agentId: "a" });
      const r = await small.call("POST", "/projects/df/search", { query: "deploy ERR_RARE_TOKEN" });
      const lexical = r.body.milestones.filter((m: any) => m.lexicalRank !== null);
      expect(lexical.map((m: any) => m.thisContribution)).toEqual(["deploy failed with ERR_RARE_TOKEN"]); // "deploy" (5 items > 2) dropped
      expect(r.body.milestones[0].thisContribution).toBe("deploy failed with ERR_RARE_TOKEN");
      expect(r.body.milestones.length).toBe(5); // the others still come from the vectors
      const common = await small.call("POST", "/projects/df/search", { query: "deploy" });
      expect(common.body.milestones.every((m: any) => m.lexicalRank === null)).toBe(true);
    } finally {
      await small.stop();
    }
  });
});

describe("saved indexes", () => {
  test("indexes are saved on shutdown and loaded (not rebuilt) on the next start; a stale file is ignored", async () => {
    const { mkdtempSync, rmSync, existsSync, readdirSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "svc-memory-idx-"));
    const env = await restartableEnv(dir); // the same database for both gateways, SQLite or PostgreSQL (test/pg/)
    try {
      const one = await memoryEnv({}, env);
      await one.call("POST", "/projects", { projectId: "keep", name: "k", roadmap: "" });
      for (const t of ["alpha release checklist", "beta rollout plan", "gamma rays in the lab"]) await one.call("POST", "/projects/keep/store", { branchPurpose: "p", cumulativeProgress: t, thisContribution: t, agentId: "a" });
      expect((await one.call("POST", "/projects/keep/search", { query: "beta rollout" })).body.milestones[0].thisContribution).toBe("beta rollout plan");
      expect(one.gw.ctx.memory.vectors.builtFromRows).toBe(1);
      await one.stop();
      expect(readdirSync(join(dir, "memory-index")).filter((f) => f.endsWith(".usearch")).length).toBe(1);

      const two = await memoryEnv({}, env);
      const r = await two.call("POST", "/projects/keep/search", { query: "beta rollout" });
      expect(r.body.milestones[0].thisContribution).toBe("beta rollout plan");
      expect(two.gw.ctx.memory.vectors.loadedFromDisk).toBe(1);
      expect(two.gw.ctx.memory.vectors.builtFromRows).toBe(0);
      // a row written while no index is loaded makes the saved file stale: rebuilt from the database, the new row found
      two.gw.ctx.memory.vectors.clear();
      await two.call("POST", "/projects/keep/store", { branchPurpose: "p", cumulativeProgress: "delta", thisContribution: "delta migration notes", agentId: "a" });
      const s = await two.call("POST", "/projects/keep/search", { query: "delta migration notes" });
      expect(s.body.milestones[0].thisContribution).toBe("delta migration notes");
      expect(two.gw.ctx.memory.vectors.builtFromRows).toBe(1);
      expect(s.body.milestones[0].similarity).not.toBeNull();
      // deleting the project removes its files
      await two.call("DELETE", "/projects/keep");
      expect(readdirSync(join(dir, "memory-index")).filter((f) => f.endsWith(".usearch")).length).toBe(0);
      await two.stop();
      // the database stays (on PostgreSQL there is no SQLite file at all)
      expect(existsSync(join(dir, "svc.db"))).toBe(testBackend() === "sqlite");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
