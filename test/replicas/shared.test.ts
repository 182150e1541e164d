/**
 * Three real svc processes on one fresh PostgreSQL database (issue 23): they start together against
 * the empty database (the schema is created once, under the advisory lock), and anything written
 * through one is read through the others at once — prompts, virtual keys (a key made on A
 * authenticates on B), users, MCP servers, memory milestones — and usage totals add up across them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { dropDatabase, freshDatabase } from "../helpers/postgres";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { startFakeMcpServer, type FakeMcpServer } from "../mcp/fake-server";
import { migrationSets } from "../../src/schema";
import { orderedPostgresMigrations } from "../../src/storage/migrations";
import { call, replicaEnv, startReplicas, token, until, type Replica } from "./cluster";

let fake: FakeUpstream;
let mcp: FakeMcpServer;
let dbUrl: string;
let replicas: Replica[] = [];
let startMs = 0;
let admin: string;

const [A, B, C] = [0, 1, 2];
const on = (i: number, method: string, path: string, json?: unknown, bearer = admin) => call(replicas[i]!.url, method, path, bearer, json);

beforeAll(async () => {
  fake = await startFakeUpstream();
  mcp = startFakeMcpServer();
  dbUrl = await freshDatabase("replicas");
  const t0 = performance.now();
  // all three at once against the empty database; rate limits off: the polls below are not what is tested
  replicas = await startReplicas(3, { ...replicaEnv({ url: dbUrl }, fake.url), SVC_RATE_LIMITS__ENABLED: "false" });
  startMs = performance.now() - t0;
  admin = await token("tenant-r", ["WorkspaceAdmin"], "admin");
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await fake?.stop();
  await mcp?.stop();
  if (dbUrl) await dropDatabase(dbUrl);
});

describe("three replicas started together on an empty database", () => {
  test("none crashes, all are ready, schema_migrations holds every migration id exactly once", async () => {
    for (const r of replicas) {
      expect(r.proc.exitCode).toBeNull();
      const ready = await fetch(`${r.url}/ready`);
      expect(ready.status).toBe(200);
      expect(((await ready.json()) as any).checks).toMatchObject({ database: true, migrations: true });
    }
    const expected = orderedPostgresMigrations(migrationSets()).map((m) => m.id).sort();
    const sql = new SQL(dbUrl, { max: 1 });
    try {
      const rows = (await sql`SELECT id, count(*)::int AS n FROM schema_migrations GROUP BY id ORDER BY id`) as Array<{ id: string; n: number }>;
      expect(rows.map((r) => r.id).sort()).toEqual(expected);
      expect(rows.filter((r) => r.n !== 1)).toEqual([]);
    } finally {
      await sql.close();
    }
    // no replica logged a failed migration or a crash on its way up
    for (const r of replicas) expect(r.output()).not.toMatch(/already exists|duplicate key|unhandled|uncaught/i);
    console.log(`3 replicas from spawn to ready on an empty database: ${Math.round(startMs)} ms`);
  }, 60_000);
});

describe("a write through one replica is read through the others at once", () => {
  test("prompts: created on A, read on B and C", async () => {
    const created = await on(A, "POST", "/api/v1/prompts", { name: "Shared greeting", template: "Hello {{name}}" });
    expect(created.status).toBe(201);
    for (const i of [B, C]) {
      const got = await on(i, "GET", `/api/v1/prompts/${created.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ id: created.body.id, template: "Hello {{name}}" });
    }
    const updated = await on(B, "PUT", `/api/v1/prompts/${created.body.id}`, { template: "Hi {{name}}" });
    expect(updated.status).toBe(200);
    expect((await on(C, "GET", `/api/v1/prompts/${created.body.id}`)).body.template).toBe("Hi {{name}}");
  }, 60_000);

  test("virtual keys: a key created on A authenticates an API call and a proxy call on B; revoked on B, refused on C", async () => {
    const k = await on(A, "POST", "/api/v1/virtual-keys", { name: "shared-key", teamId: null, permissions: ["ViewKeys"] });
    expect(k.status).toBe(201);
    const list = await on(B, "GET", "/api/v1/virtual-keys", undefined, k.body.key);
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).toContain("shared-key");
    const chat = await on(B, "POST", "/v1/chat/completions", { model: "gpt-4o-mini", messages: [{ role: "user", content: "key from A" }] }, k.body.key);
    expect(chat.status).toBe(200);
    expect(chat.body.choices[0].message.content).toContain("key from A");
    // C has used (and cached) the key before it is revoked
    expect((await on(C, "GET", "/api/v1/virtual-keys", undefined, k.body.key)).status).toBe(200);
    const revoked = await on(B, "DELETE", `/api/v1/virtual-keys/${k.body.id}`);
    expect(revoked.status).toBeLessThan(300);
    // other replicas learn of a revocation from the database within the key cache's 5 s
    await until("C refuses the revoked key", async () => (await on(C, "GET", "/api/v1/virtual-keys", undefined, k.body.key)).status === 401, 15_000);
  }, 60_000);

  test("users: created on A, read on B and listed on C; suspended on A, refused on B within the user cache's window", async () => {
    const u = await on(A, "POST", "/api/v1/users", { email: "shared-user@example.com" });
    expect(u.status).toBe(201);
    const got = await on(B, "GET", `/api/v1/users/${u.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.email).toBe("shared-user@example.com");
    expect(JSON.stringify((await on(C, "GET", "/api/v1/users")).body)).toContain("shared-user@example.com");
    const userToken = await token("tenant-r", ["ViewKeys"], `user:${u.body.id}`);
    expect((await on(B, "GET", "/api/v1/virtual-keys", undefined, userToken)).status).toBe(200);
    expect((await on(A, "PUT", `/api/v1/users/${u.body.id}`, { status: "SUSPENDED" })).status).toBe(200);
    // without Redis, B re-reads a user from the database once its cached copy is older than SVC_IDENTITY__USER_CACHE_MS (2 s)
    await until("B refuses the suspended user", async () => (await on(B, "GET", "/api/v1/virtual-keys", undefined, userToken)).status === 401, 15_000);
  }, 60_000);

  test("MCP servers: registered on A, listed on B and C", async () => {
    const reg = await on(A, "POST", "/api/v1/mcp/servers", { name: "shared-mcp", url: mcp.url });
    expect(reg.status).toBe(200);
    for (const i of [B, C]) {
      const list = await on(i, "GET", "/api/v1/mcp/servers");
      expect(list.status).toBe(200);
      expect(JSON.stringify(list.body)).toContain(reg.body.server.id);
    }
  }, 60_000);

  test("memory: a milestone stored on A is recalled by id on B", async () => {
    expect((await on(A, "POST", "/api/v1/memory/projects", { projectId: "shared", name: "Shared", roadmap: "one memory" })).status).toBe(201);
    const m = await on(A, "POST", "/api/v1/memory/projects/shared/store", { branchPurpose: "replicas", cumulativeProgress: "step 1", thisContribution: "stored on replica A", agentId: "agent-a" });
    expect(m.status).toBe(201);
    const got = await on(B, "GET", `/api/v1/memory/projects/shared/recall?view=milestone&milestoneId=${encodeURIComponent(m.body.milestoneId)}`);
    expect(got.status).toBe(200);
    expect(JSON.stringify(got.body)).toContain("stored on replica A");
    const project = await on(C, "GET", "/api/v1/memory/projects/shared");
    expect(project.status).toBe(200);
  }, 60_000);

  test("memory search: a milestone stored on A after B loaded the project's vector index is found by B's semantic search", async () => {
    expect((await on(A, "POST", "/api/v1/memory/projects", { projectId: "searched", name: "Searched", roadmap: "" })).status).toBe(201);
    const first = await on(A, "POST", "/api/v1/memory/projects/searched/store", { branchPurpose: "search", cumulativeProgress: "one", thisContribution: "first note about apples", agentId: "a" });
    expect(first.status).toBe(201);
    // B builds its in-process index of the project now (the fake embedder gives every text the same
    // vector, so a query sharing no word with the milestones finds them by meaning alone)
    const semantic = async (i: number) => ((await on(i, "POST", "/api/v1/memory/projects/searched/search", { query: "zzz unrelated" })).body.milestones as any[]).map((m) => m.milestoneId).sort();
    expect(await semantic(B)).toEqual([first.body.milestoneId]);
    const second = await on(A, "POST", "/api/v1/memory/projects/searched/store", { branchPurpose: "search", cumulativeProgress: "two", thisContribution: "second note about pears", agentId: "a" });
    expect(second.status).toBe(201);
    const both = [first.body.milestoneId, second.body.milestoneId].sort();
    expect(await semantic(A)).toEqual(both);
    // B's index was built before the second milestone existed: it must not miss it
    expect(await semantic(B)).toEqual(both);
  }, 60_000);

  test("usage: requests through A and B add up in C's usage totals (records are written behind: polled)", async () => {
    const tenant = await token("tenant-usage", ["WorkspaceAdmin"], "admin");
    const sent = { requests: 0, tokens: 0 };
    for (let i = 0; i < 6; i++) {
      const r = await on(i % 2 === 0 ? A : B, "POST", "/v1/chat/completions", { model: "gpt-4o-mini", messages: [{ role: "user", content: `usage ${i}` }] }, tenant);
      expect(r.status).toBe(200);
      sent.requests++;
      sent.tokens += r.body.usage.total_tokens;
    }
    // A and B write their usage rows behind the answer (a batch every 200 ms, docs/deploy.md); C
    // flushes only its own buffer before reading, so it sees the others' rows within a window
    let last: any;
    await until(
      "C's usage totals equal the requests sent through A and B",
      async () => {
        last = (await on(C, "GET", "/api/v1/usage", undefined, tenant)).body;
        return last?.totals?.requests === sent.requests;
      },
      15_000,
    );
    expect(last.totals.totalTokens).toBe(sent.tokens);
  }, 60_000);

  test("team spend: a team key's requests through A and B add up in the team's spend read on C", async () => {
    const tenant = await token("tenant-spend", ["WorkspaceAdmin"], "admin");
    const team = await on(A, "POST", "/api/v1/teams", { name: "Spenders", maxBudgetCents: 1_000_000, budgetPeriod: "monthly" }, tenant);
    expect(team.status).toBe(201);
    const k = await on(B, "POST", "/api/v1/virtual-keys", { name: "spender", teamId: team.body.id }, tenant);
    expect(k.status).toBe(201);
    // 100k prompt tokens of gpt-4o-mini a request: about 1.5 cents each
    fake.reportUsage(100_000);
    try {
      for (let i = 0; i < 4; i++) expect((await on(i % 2 === 0 ? A : B, "POST", "/v1/chat/completions", { model: "gpt-4o-mini", messages: [{ role: "user", content: `spend ${i}` }] }, k.body.key)).status).toBe(200);
    } finally {
      fake.reportUsage(undefined);
    }
    let spend: any;
    let usage: any;
    await until(
      "C's team spend covers the four requests (written behind on A and B)",
      async () => {
        usage = (await on(C, "GET", "/api/v1/usage", undefined, tenant)).body;
        spend = (await on(C, "GET", `/api/v1/teams/${team.body.id}/spend`, undefined, tenant)).body;
        return usage?.totals?.requests === 4 && Math.abs(spend?.totalSpendCents - usage.totals.costUsd * 100) < 0.001;
      },
      15_000,
    ).catch((e) => {
      throw new Error(`${e}: spend ${JSON.stringify(spend)}, usage ${JSON.stringify(usage?.totals)}`);
    });
    expect(spend.totalSpendCents).toBeGreaterThan(4);
  }, 60_000);
});

describe("the same thing created through several replicas at once", () => {
  /** `n` concurrent calls spread over the replicas: exactly one wins (2xx), the others answer 409 in their envelope */
  const race = async (what: string, n: number, send: (i: number) => Promise<{ status: number; body: any }>) => {
    const rs = await Promise.all(Array.from({ length: n }, (_, i) => send(i)));
    const statuses = rs.map((r) => r.status);
    expect({ what, won: statuses.filter((s) => s < 300).length, others: [...new Set(statuses.filter((s) => s >= 300))] }).toEqual({ what, won: 1, others: [409] });
    for (const r of rs.filter((r) => r.status === 409)) expect(JSON.stringify(r.body)).toContain("conflict");
  };

  test("one wins, the others get 409 conflict — never a 500 from the unique index (users, teams, roles, memory, SCIM tokens, MCP servers, entities, rules)", async () => {
    const t = await token("tenant-race", ["WorkspaceAdmin"], "admin");
    const at = (i: number, method: string, path: string, json?: unknown) => on(i % 3, method, path, json, t);
    await race("user", 6, (i) => at(i, "POST", "/api/v1/users", { email: "race@example.com" }));
    await race("team", 6, (i) => at(i, "POST", "/api/v1/teams", { name: "race" }));
    await race("role", 6, (i) => at(i, "POST", "/api/v1/roles", { name: "race", permissions: ["ViewKeys"] }));
    await race("memory project", 6, (i) => at(i, "POST", "/api/v1/memory/projects", { projectId: "race", name: "Race", roadmap: "" }));
    await race("memory branch", 6, (i) => at(i, "POST", "/api/v1/memory/projects/race/branches", { branchName: "feat", purpose: "race", agentId: "a" }));
    await race("SCIM token", 6, (i) => at(i, "POST", "/api/v1/scim/tokens", { name: "race" }));
    // each round a new name: the check-then-insert of an MCP server lost to the unique index with a 500 on PostgreSQL
    for (let round = 0; round < 3; round++) await race("MCP server", 6, (i) => at(i, "POST", "/api/v1/mcp/servers", { name: `race-${round}`, url: mcp.url }));
    for (let round = 0; round < 3; round++) await race("MCP entity", 6, (i) => at(i, "POST", "/api/v1/mcp/entities", { name: `race-${round}` }));
    const server = await at(0, "POST", "/api/v1/mcp/servers", { name: "race-tools", url: mcp.url });
    const discovered = await at(0, "POST", `/api/v1/mcp/servers/${server.body.server.id}/discover`);
    expect(discovered.status).toBe(200);
    const tool = Object.fromEntries(discovered.body.tools.map((x: any) => [x.name, x.id]));
    await race("MCP rule", 6, (i) => at(i, "POST", "/api/v1/mcp/rules", { writeToolId: tool.update_issue, invalidateToolId: tool.get_issue }));

    // rule generation skips existing pairs: generations racing each other all succeed, and each pair is made once
    const entity = await at(0, "POST", "/api/v1/mcp/entities", { name: "race-issue" });
    for (const [name, operation] of [["update_issue", "WRITE"], ["set_label", "WRITE"], ["get_issue", "READ"], ["list_issues", "READ"]] as const)
      expect((await at(0, "POST", "/api/v1/mcp/tool-entities", { toolId: tool[name], entityId: entity.body.id, paramName: "issue_id", operation })).status).toBe(200);
    const gens = await Promise.all(Array.from({ length: 6 }, (_, i) => at(i, "POST", "/api/v1/mcp/rules/generate")));
    expect(gens.map((g) => g.status)).toEqual(gens.map(() => 200));
    // 2 writers × 2 readers, one of them made by hand above
    expect(gens.reduce((n, g) => n + g.body.rulesGenerated, 0)).toBe(3);
  }, 60_000);

  test("no replica logged an unhandled error", () => {
    for (const r of replicas) expect(r.output().split("\n").filter((l) => l.includes('"unhandled error"'))).toEqual([]);
  });
});
