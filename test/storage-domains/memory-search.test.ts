/**
 * Memory search on both backends (SQLite FTS5, PostgreSQL tsvector — src/memory/lexical.ts): the
 * core cases of test/memory/search.test.ts at the service level, over the same vectors, plus the
 * words both full-text indexes must agree on (`foo_bar` one word, punctuation splits, diacritics
 * folded) — PostgreSQL's own parser would split `foo_bar`, keep `src/app.ts` whole and index
 * `a-b` three times.
 */
import { afterAll, expect, test, beforeAll } from "bun:test";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import { memoryOver, releaseEmbedder } from "../memory/backends";
import type { MemoryServices } from "../../src/memory";

const DISTRACTORS = [
  "Added a reconnect button to the settings page so users can retry manually",
  "Documented the websocket message schema for the dashboard team",
  "Wrote a loop that uploads each file in the release folder to the bucket",
  "Listed the file descriptors limit in the deployment checklist",
  "Renamed the reconnect setting in the admin UI for clarity",
  "Websocket endpoint now returns a friendly error page",
];
const RELEVANT = "Fixed the websocket reconnect loop leaking file descriptors: every retry opened a new socket without closing the previous one; sockets are now closed in a finally block";
const WORDS = [
  "Renamed retry_budget in the limiter config",
  "The retry budget of the limiter is now per key",
  "Bumped the schema to v1.2.3 in src/app.ts",
  "Rolled out the blue-green deploy",
  "Added the café menu to the kiosk",
];

afterAll(releaseEmbedder);

eachBackend("memory-search", (backend) => {
  let m: MemoryServices;
  const A = "tenant-a";
  const B = "tenant-b";
  const store = (tenant: string, p: string, text: string) =>
    m.memory.storeMilestone(tenant, p, { branchPurpose: "keep the gateway healthy", cumulativeProgress: text, thisContribution: text, agentId: "agent-s" });
  const search = (q: string, p?: string, extra: { limit?: number; projectIds?: string[] } = {}, tenant = A) => m.memory.search(tenant, { query: q, ...extra }, p);
  const texts = (r: { milestones: Array<{ thisContribution: string }> }) => r.milestones.map((x) => x.thisContribution);

  beforeAll(async () => {
    m = await memoryOver(await backend.open());
    for (const p of ["s1", "s2", "s3", "w"]) await m.memory.createProject(A, { projectId: p, name: p, roadmap: "" });
    await m.memory.createProject(B, { projectId: "s1", name: "b's s1", roadmap: "" });
    for (const d of DISTRACTORS) await store(A, "s1", d);
    await store(A, "s1", RELEVANT);
    await store(A, "s1", "Timeouts on the upstream pool now raise ERR_UPSTREAM_POOL_EXHAUSTED instead of hanging");
    await store(A, "s1", "Moved the SSRF checks into src/core/outbound.ts and covered redirects");
    await store(A, "s2", "Fixed the websocket reconnect loop in the mobile client that leaked file descriptors on every retry");
    await store(A, "s3", "Tuned the HNSW index parameters for recall at one million vectors");
    await store(B, "s1", RELEVANT + " (tenant b)");
    for (const w of WORDS) await store(A, "w", w);
  }, SETUP_TIMEOUT);

  test("the relevant milestone ranks first although others share its words; scores ordered; lexical and semantic both found it", async () => {
    const r = await search("websocket reconnect loop leaks file descriptors", "s1");
    expect(texts(r)[0]).toBe(RELEVANT);
    const scores = r.milestones.map((x) => x.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(scores[0]).toBeGreaterThan(scores[1]!);
    expect(r.milestones[0]!.lexicalRank).toBe(1);
    expect(r.milestones[0]!.similarity).toBeGreaterThan(0.3);
    expect(r.milestones.every((x) => x.projectId === "s1")).toBe(true);
  });

  test("a paraphrase is found by the vectors; an identifier and a file name by their words", async () => {
    expect(texts(await search("sockets not closed when retrying the connection", "s1", { limit: 3 }))[0]).toBe(RELEVANT);
    const id = await search("ERR_UPSTREAM_POOL_EXHAUSTED", "s1", { limit: 3 });
    expect(texts(id)[0]).toContain("ERR_UPSTREAM_POOL_EXHAUSTED");
    expect(id.milestones[0]!.lexicalRank).toBe(1);
    expect(texts(await search("src/core/outbound.ts", "s1", { limit: 3 }))[0]).toContain("src/core/outbound.ts");
    const all = texts(await search("websocket", "s1"));
    expect(all.filter((t) => /websocket/i.test(t)).length).toBe(3);
  });

  test("cross-project: every project of the tenant, never another tenant's; projectIds restricts", async () => {
    const r = await search("websocket reconnect loop leaking file descriptors");
    expect(new Set(r.milestones.slice(0, 2).map((x) => x.projectId))).toEqual(new Set(["s1", "s2"]));
    expect(texts(r).some((t) => t.includes("tenant b"))).toBe(false);
    expect(texts(await search("websocket reconnect loop leaking file descriptors", undefined, {}, B))).toEqual([RELEVANT + " (tenant b)"]);
    const only = await search("websocket reconnect", undefined, { projectIds: ["s2", "s3"] });
    expect(only.milestones.every((x) => x.projectId !== "s1")).toBe(true);
    expect(only.milestones.map((x) => x.projectId)).toContain("s2");
  });

  test("a milestone stored after the index was built is found at once", async () => {
    await search("anything at all", "s3");
    await store(A, "s3", "Introduced the quokka feature flag for gradual rollout");
    expect(texts(await search("quokka feature flag", undefined, { limit: 1 }))[0]).toContain("quokka");
  });

  test("the same words on both backends: foo_bar is one word, punctuation splits, diacritics fold", async () => {
    const lexical = async (q: string) => {
      const r = await search(q, "w", { limit: 20 });
      return r.milestones.filter((x) => x.lexicalRank !== null).map((x) => x.thisContribution).sort();
    };
    expect(await lexical("retry_budget")).toEqual(["Renamed retry_budget in the limiter config"]);
    expect(await lexical("budget")).toEqual(["The retry budget of the limiter is now per key"]);
    expect(await lexical("app")).toEqual(["Bumped the schema to v1.2.3 in src/app.ts"]);
    expect(await lexical("v1")).toEqual(["Bumped the schema to v1.2.3 in src/app.ts"]);
    expect(await lexical("green")).toEqual(["Rolled out the blue-green deploy"]);
    expect(await lexical("blue-green")).toEqual(["Rolled out the blue-green deploy"]);
    expect(await lexical("cafe")).toEqual(["Added the café menu to the kiosk"]);
    expect(await lexical("CAFÉ")).toEqual(["Added the café menu to the kiosk"]);
  });

  test("words in more than lexical_max_df items of the scope are not matched; rare ones are", async () => {
    const small = await memoryOver(await backend.open(), { config: { lexical_max_df: 2 } });
    const t = "tenant-df";
    await small.memory.createProject(t, { projectId: "df", name: "df", roadmap: "" });
    for (let i = 0; i < 4; i++) await small.memory.storeMilestone(t, "df", { branchPurpose: "p", cumulativeProgress: `deploy step ${i}`, thisContribution: `deploy pipeline change ${i}`, agentId: "a" });
    await small.memory.storeMilestone(t, "df", { branchPurpose: "p", cumulativeProgress: "deploy", thisContribution: "deploy failed with ERR_RARE_TOKEN", agentId: "a" });
    const r = await small.memory.search(t, { query: "deploy ERR_RARE_TOKEN" }, "df");
    expect(r.milestones.filter((x) => x.lexicalRank !== null).map((x) => x.thisContribution)).toEqual(["deploy failed with ERR_RARE_TOKEN"]);
    expect(r.milestones[0]!.thisContribution).toBe("deploy failed with ERR_RARE_TOKEN");
    expect(r.milestones.length).toBe(5);
    expect((await small.memory.search(t, { query: "deploy" }, "df")).milestones.every((x) => x.lexicalRank === null)).toBe(true);
  });
});
