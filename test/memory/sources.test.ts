/**
 * External sources end to end: CRUD and validation, then real syncs through the outbound policy
 * against loopback fakes speaking GitHub, Jira, Confluence and Slack's REST shapes — pagination,
 * incremental cursors, credentials from named environment variables, a failure mid-sync that
 * keeps the committed batches and the cursor — and the intelligence actions that call Jira/Slack.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { memoryEnv, expectError, ISO, type Env } from "./helpers";
import { startFakeServices, type FakeServices } from "./fake-services";
import { startGateway } from "../helpers/gateway";
import { nextLink, adfText } from "../../src/memory/sources/connectors";

let e: Env;
let f: FakeServices;
const GH_TOKEN = "ghp_fake_token_123";
const ATL_TOKEN = "atl_fake_token_456";
const SLACK_TOKEN = "xoxb-fake-789";

beforeAll(async () => {
  process.env.MEMORY_SECRET_GH = GH_TOKEN;
  process.env.MEMORY_SECRET_ATL = ATL_TOKEN;
  process.env.MEMORY_SECRET_SLACK = SLACK_TOKEN;
  f = startFakeServices();
  e = await memoryEnv({ memory: { sync_page_size: 2 } });
  for (const p of ["src", "other"]) await e.call("POST", "/projects", { projectId: p, name: p, roadmap: "" });
  await e.call("POST", "/projects", { projectId: "src", name: "b", roadmap: "" }, e.B);
});
afterAll(async () => {
  await e.stop();
  f.stop();
});

const docs = (sourceId: string) => e.gw.ctx.db.all<any>(`SELECT * FROM memory_documents WHERE source_id = '${sourceId}' ORDER BY external_id`);

describe("source CRUD", () => {
  test("create: every field; syncCursor empty, lastSyncedAt null, enabled true", async () => {
    const r = await e.call("POST", "/sources", { sourceId: "gh-crud", projectId: "src", sourceType: "github", config: { owner: "acme", repo: "svc", baseUrl: f.url, tokenEnv: "MEMORY_SECRET_GH" } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      sourceId: "gh-crud",
      tenantId: "tenant-a",
      projectId: "src",
      sourceType: "github",
      config: { owner: "acme", repo: "svc", baseUrl: f.url, tokenEnv: "MEMORY_SECRET_GH" },
      syncCursor: "",
      lastSyncedAt: null,
      enabled: true,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
      lastError: null,
      itemsSynced: 0,
    });
    expect(JSON.stringify(r.body)).not.toContain(GH_TOKEN);
    expectError(await e.call("POST", "/sources", { sourceId: "gh-crud", projectId: "src", sourceType: "github", config: { owner: "a", repo: "b" } }), 409, "conflict");
  });

  test("validation: limits, types, config keys per type, literal credentials refused, env-name prefix, unknown project 404, blocked URL", async () => {
    const ok = { projectId: "src", sourceType: "slack", config: { channel: "C1", baseUrl: f.url } };
    expect((await e.call("POST", "/sources", { sourceId: "s".repeat(128), ...ok })).status).toBe(201);
    expectError(await e.call("POST", "/sources", { sourceId: "s".repeat(129), ...ok }), 400, "validation_error", /sourceId/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "notion", config: {} }), 400, "validation_error", /sourceType/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "slack", config: { channel: "C1", token: "xoxb-literal" } }), 400, "validation_error", /config\.token.*environment/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "slack", config: { channel: "C1", tokenEnv: "SVC_AUTH__JWT_SECRET" } }), 400, "validation_error", /tokenEnv.*MEMORY_SECRET_/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "slack", config: { channel: "C1", owner: "x" } }), 400, "validation_error", /config\.owner/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "github", config: { owner: "x" } }), 400, "validation_error", /config\.repo/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "jira", config: { baseUrl: f.url } }), 400, "validation_error", /jql/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "confluence", config: { spaceKey: "ENG" } }), 400, "validation_error", /baseUrl/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "jira", config: { baseUrl: "file:///etc/passwd", jql: "x" } }), 400, "validation_error", /baseUrl/);
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "ghost", sourceType: "slack", config: { channel: "C1" } }), 404, "not_found");
    // config is optional (doc1 §4.12) but a given config must be complete for its type
    expectError(await e.call("POST", "/sources", { sourceId: "v1", projectId: "src", sourceType: "slack", config: { baseUrl: f.url } }), 400, "validation_error", /channel/);
  });

  test("config omitted (optional in doc1): created unconfigured (config {}), sync 409 until a PUT gives a complete config; actions skip it", async () => {
    for (const type of ["github", "jira", "confluence", "slack"]) {
      const c = await e.call("POST", "/sources", { sourceId: `bare-${type}`, projectId: "src", sourceType: type });
      expect(c.status).toBe(201);
      expect(c.body).toMatchObject({ sourceId: `bare-${type}`, sourceType: type, config: {}, syncCursor: "", lastSyncedAt: null, enabled: true });
      expectError(await e.call("POST", `/sources/bare-${type}/sync`), 409, "conflict", /not configured/);
      expect((await e.call("PUT", `/sources/bare-${type}`, { enabled: false })).body).toMatchObject({ enabled: false, config: {} });
    }
    expectError(await e.call("PUT", "/sources/bare-github", { config: { owner: "o" } }), 400, "validation_error", /config\.repo/);
    expect((await e.call("PUT", "/sources/bare-github", { config: { owner: "o", repo: "r", baseUrl: f.url }, enabled: true })).body.config).toEqual({ owner: "o", repo: "r", baseUrl: f.url });
    expect((await e.call("GET", "/sources/bare-github/status")).body).toMatchObject({ enabled: true, syncCursor: "" });
    // an unconfigured source is never an action's target
    await e.call("PUT", "/sources/bare-slack", { enabled: true });
    // … it is answered 200 executed:false with the reason (doc1's {executed, action, result}), not 400
    const bare = await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "bare-slack", text: "hi" } });
    expect(bare.status).toBe(200);
    expect(bare.body).toEqual({ executed: false, action: "post_slack", result: { error: expect.stringMatching(/source 'bare-slack' is not configured/) } });
    for (const type of ["github", "jira", "confluence", "slack"]) expect((await e.call("DELETE", `/sources/bare-${type}`)).status).toBe(200);
  });

  test("without allow_private, a loopback or private baseUrl is refused (the MCP domain's outbound policy)", async () => {
    const gw = await startGateway({ outbound: { allow_private: false } });
    try {
      const t = await gw.token("t", ["ManageConfig"]);
      await gw.api("/api/v1/memory/projects", { method: "POST", token: t, json: { projectId: "p", name: "p", roadmap: "" } });
      for (const baseUrl of [f.url, "http://10.0.0.5", "http://169.254.169.254", "http://localhost:9"]) {
        const r = await gw.api("/api/v1/memory/sources", { method: "POST", token: t, json: { sourceId: "x", projectId: "p", sourceType: "jira", config: { baseUrl, jql: "project = X" } } });
        expect(r.status).toBe(400);
        expect((await r.json()).error.message).toMatch(/config\.baseUrl/);
      }
    } finally {
      await gw.stop();
    }
  });

  test("list (limit/offset, projectId filter), get, partial update, status, delete; tenant B sees none of it", async () => {
    await e.call("POST", "/sources", { sourceId: "upd", projectId: "src", sourceType: "slack", config: { channel: "C9", baseUrl: f.url } });
    const list = await e.call("GET", "/sources?limit=200");
    expect(list.body.sources.map((s: any) => s.sourceId)).toContain("upd");
    expect(list.body.total).toBe(list.body.sources.length);
    expect((await e.call("GET", "/sources?projectId=other")).body.sources).toEqual([]);
    expect((await e.call("GET", "/sources?limit=1")).body.sources.length).toBe(1);
    expect((await e.call("GET", "/sources", undefined, e.B)).body).toEqual({ sources: [], total: 0, limit: 50, offset: 0 });
    const off = await e.call("PUT", "/sources/upd", { enabled: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, config: { channel: "C9", baseUrl: f.url }, projectId: "src" });
    expectError(await e.call("POST", "/sources/upd/sync"), 409, "conflict", /disabled/);
    const moved = await e.call("PUT", "/sources/upd", { projectId: "other", enabled: true, config: { channel: "C10", baseUrl: f.url } });
    expect(moved.body).toMatchObject({ projectId: "other", enabled: true, config: { channel: "C10", baseUrl: f.url }, syncCursor: "" });
    expectError(await e.call("PUT", "/sources/upd", { projectId: "ghost" }), 404, "not_found");
    expectError(await e.call("PUT", "/sources/upd", { sourceType: "github" }), 400, "validation_error", /config/);
    expectError(await e.call("PUT", "/sources/upd", { enabled: "yes" }), 400, "validation_error", /enabled/);
    const st = await e.call("GET", "/sources/upd/status");
    expect(st.body).toMatchObject({ sourceId: "upd", lastSyncedAt: null, syncCursor: "", enabled: true });
    for (const [m, p] of [["GET", "/sources/upd"], ["GET", "/sources/upd/status"], ["PUT", "/sources/upd"], ["DELETE", "/sources/upd"], ["POST", "/sources/upd/sync"]] as const)
      expectError(await e.call(m, p, m === "PUT" ? { enabled: false } : undefined, e.B), 404, "not_found");
    expect((await e.call("DELETE", "/sources/upd")).body).toEqual({ deleted: true, id: "upd" });
    expectError(await e.call("GET", "/sources/upd/status"), 404, "not_found");
    expectError(await e.call("DELETE", "/sources/upd"), 404, "not_found");
  });
});

describe("github sync", () => {
  test("issues and pull requests over Link pagination, bearer token from the named env var, incremental via since; failure mid-sync keeps the cursor", async () => {
    f.github.push(
      { number: 1, title: "Crash on startup", body: "Stack trace mentions ERR_BOOT_LOOP", state: "open", html_url: "https://github.com/acme/svc/issues/1", user: { login: "ann" }, updated_at: "2026-03-01T10:00:00Z" },
      { number: 2, title: "Add retry to uploader", body: "PR body", state: "closed", html_url: "https://github.com/acme/svc/pull/2", user: { login: "ben" }, updated_at: "2026-03-02T10:00:00Z", pull_request: { url: "x" } },
      { number: 3, title: "Docs typo", body: null, state: "open", html_url: "https://github.com/acme/svc/issues/3", user: { login: "cy" }, updated_at: "2026-03-03T10:00:00Z" },
      { number: 4, title: "Memory leak in cache", body: "heap grows", state: "open", html_url: "https://github.com/acme/svc/issues/4", user: { login: "dee" }, updated_at: "2026-03-04T10:00:00Z" },
      { number: 5, title: "Upgrade bun", body: "", state: "open", html_url: "https://github.com/acme/svc/pull/5", user: { login: "eve" }, updated_at: "2026-03-05T10:00:00Z", pull_request: { url: "y" } },
    );
    await e.call("POST", "/sources", { sourceId: "gh", projectId: "src", sourceType: "github", config: { owner: "acme", repo: "svc", baseUrl: f.url, tokenEnv: "MEMORY_SECRET_GH" } });
    // page 2 of 3 fails: page 1 is committed, cursor = its newest updated_at
    f.failNext("/repos/acme/svc/issues", 500, (r) => r.query.get("page") === "2");
    const bad = await e.call("POST", "/sources/gh/sync");
    expectError(bad, 502, "proxy_error", /github answered 500/);
    expect(bad.body.error.message).toMatch(/after 2 items/);
    const st = (await e.call("GET", "/sources/gh/status")).body;
    expect(st).toMatchObject({ syncCursor: "2026-03-02T10:00:00.000Z", lastSyncedAt: null, itemsSynced: 2 });
    expect(st.lastError).toMatch(/github answered 500/);
    expect(docs("gh").map((d) => d.external_id)).toEqual(["1", "2"]);

    const before = f.of("/repos/acme/svc/issues").length;
    const ok = await e.call("POST", "/sources/gh/sync");
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ sourceId: "gh", sourceType: "github", projectId: "src", syncCursor: "2026-03-05T10:00:00.000Z", enabled: true, complete: true });
    expect(ok.body.lastSyncedAt).toMatch(ISO);
    const calls = f.of("/repos/acme/svc/issues").slice(before);
    expect(calls[0]!.query.get("since")).toBe("2026-03-02T10:00:00.000Z");
    expect(calls[0]!.query.get("state")).toBe("all");
    expect(calls[0]!.query.get("per_page")).toBe("2");
    expect(calls.every((c) => c.headers.get("authorization") === `Bearer ${GH_TOKEN}`)).toBe(true);
    expect(calls[0]!.headers.get("accept")).toBe("application/vnd.github+json");
    const d = docs("gh");
    expect(d.map((x) => x.external_id)).toEqual(["1", "2", "3", "4", "5"]); // #2 re-read (since is inclusive): replaced, not duplicated
    expect(d.find((x) => x.external_id === "2")).toMatchObject({ kind: "github_pull_request", author: "ben", url: "https://github.com/acme/svc/pull/2", project_id: "src" });
    expect(d.find((x) => x.external_id === "1")).toMatchObject({ kind: "github_issue", title: "#1 Crash on startup" });
    expect((await e.call("GET", "/sources/gh/status")).body).toMatchObject({ lastError: null, lastSyncedAt: ok.body.lastSyncedAt });

    // nothing new: one call, cursor unchanged; an update arrives and is picked up
    f.github.find((i) => i.number === 3)!.updated_at = "2026-03-06T09:00:00Z";
    f.github.find((i) => i.number === 3)!.title = "Docs typo in README";
    const inc = await e.call("POST", "/sources/gh/sync");
    expect(inc.body.syncCursor).toBe("2026-03-06T09:00:00.000Z");
    expect(docs("gh").find((x) => x.external_id === "3").title).toBe("#3 Docs typo in README");
    expect(docs("gh").length).toBe(5);
  });

  test("synced documents are searchable by intelligence queries (and not by tenant B)", async () => {
    const r = await e.call("POST", "/intelligence/query", { question: "ERR_BOOT_LOOP crash on startup", timeRange: "all" });
    expect(r.status).toBe(200);
    const top = r.body.sources[0];
    expect(top).toMatchObject({ kind: "document", projectId: "src", branchName: null, sourceId: "gh", url: "https://github.com/acme/svc/issues/1" });
    expect(top.excerpt).toContain("ERR_BOOT_LOOP");
    const excluded = await e.call("POST", "/intelligence/query", { question: "ERR_BOOT_LOOP crash on startup", timeRange: "all", includeExternalSources: false });
    expect(excluded.body.sources.some((s: any) => s.kind === "document")).toBe(false);
    const b = await e.call("POST", "/intelligence/query", { question: "ERR_BOOT_LOOP crash on startup", timeRange: "all" }, e.B);
    expect(b.body.sources).toEqual([]);
  });

  test("a missing credential env var and an unreachable server are reported; deleting the source removes its documents", async () => {
    await e.call("POST", "/sources", { sourceId: "gh-noenv", projectId: "src", sourceType: "github", config: { owner: "acme", repo: "svc", baseUrl: f.url, tokenEnv: "MEMORY_SECRET_MISSING" } });
    expectError(await e.call("POST", "/sources/gh-noenv/sync"), 500, "configuration_error", /MEMORY_SECRET_MISSING is not set/);
    await e.call("POST", "/sources", { sourceId: "gh-down", projectId: "src", sourceType: "github", config: { owner: "acme", repo: "svc", baseUrl: "http://127.0.0.1:1" } });
    expectError(await e.call("POST", "/sources/gh-down/sync"), 502, "proxy_error", /github unreachable/);
    expect((await e.call("DELETE", "/sources/gh")).status).toBe(200);
    expect(docs("gh")).toEqual([]);
  });

  test("config {repo: 'owner/name'} (GitHub's own form) is accepted and syncs /repos/owner/name; malformed or disagreeing forms are 400", async () => {
    const r = await e.call("POST", "/sources", { sourceId: "gh-slash", projectId: "other", sourceType: "github", config: { repo: "acme/widgets", baseUrl: f.url, tokenEnv: "MEMORY_SECRET_GH" } });
    expect(r.status).toBe(201);
    expect(r.body.config).toEqual({ repo: "acme/widgets", baseUrl: f.url, tokenEnv: "MEMORY_SECRET_GH" });
    const before = f.of("/repos/").length;
    const sync = await e.call("POST", "/sources/gh-slash/sync");
    expect(sync.status).toBe(200);
    const calls = f.of("/repos/").slice(before);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((c) => c.path.startsWith("/repos/acme/widgets/issues"))).toBe(true);
    // owner beside an owner/name repo must agree; one slash; names of GitHub's characters; a bare repo needs an owner
    expect((await e.call("POST", "/sources", { sourceId: "gh-both", projectId: "other", sourceType: "github", config: { owner: "acme", repo: "acme/widgets", baseUrl: f.url } })).status).toBe(201);
    expectError(await e.call("POST", "/sources", { sourceId: "gh-x", projectId: "other", sourceType: "github", config: { owner: "other", repo: "acme/widgets" } }), 400, "validation_error", /config\.owner.*disagrees/);
    expectError(await e.call("POST", "/sources", { sourceId: "gh-x", projectId: "other", sourceType: "github", config: { repo: "acme/widgets/extra" } }), 400, "validation_error", /config\.repo/);
    expectError(await e.call("POST", "/sources", { sourceId: "gh-x", projectId: "other", sourceType: "github", config: { repo: "/widgets" } }), 400, "validation_error", /config\.repo/);
    expectError(await e.call("POST", "/sources", { sourceId: "gh-x", projectId: "other", sourceType: "github", config: { repo: "widgets" } }), 400, "validation_error", /config\.owner/);
    expectError(await e.call("PUT", "/sources/gh-slash", { config: { repo: "acme/../x" } }), 400, "validation_error", /config\.repo/);
    for (const id of ["gh-slash", "gh-both"]) expect((await e.call("DELETE", `/sources/${id}`)).status).toBe(200);
  });
});

describe("jira sync", () => {
  test("JQL search with nextPageToken, Basic email:token auth, incremental 'updated >=' clause; failure mid-sync keeps the cursor", async () => {
    const issue = (key: string, updated: string, summary: string) => ({
      id: key.replace(/\D/g, ""),
      key,
      self: `${f.url}/rest/api/3/issue/${key}`,
      fields: {
        summary,
        updated,
        status: { name: "To Do" },
        issuetype: { name: "Bug" },
        reporter: { displayName: "Ann" },
        description: { type: "doc", version: 1, content: [{ type: "paragraph", content: [{ type: "text", text: `Details of ${key}` }] }] },
      },
    });
    f.jira.push(issue("ENG-1", "2026-04-01T10:00:00.000+0000", "Login fails"), issue("ENG-2", "2026-04-02T10:00:00.000+0000", "Slow dashboard"), issue("ENG-3", "2026-04-03T10:00:00.000+0000", "Export to CSV"));
    await e.call("POST", "/sources", { sourceId: "jira", projectId: "src", sourceType: "jira", config: { baseUrl: f.url, projectKey: "ENG", email: "bot@acme.dev", tokenEnv: "MEMORY_SECRET_ATL" } });
    f.failNext("/rest/api/3/search/jql", 503, (r) => !!r.body?.nextPageToken);
    const bad = await e.call("POST", "/sources/jira/sync");
    expectError(bad, 502, "proxy_error", /jira answered 503/);
    expect((await e.call("GET", "/sources/jira/status")).body.syncCursor).toBe("2026-04-02T10:00:00.000Z");
    const ok = await e.call("POST", "/sources/jira/sync");
    expect(ok.status).toBe(200);
    expect(ok.body.syncCursor).toBe("2026-04-03T10:00:00.000Z");
    const calls = f.of("/rest/api/3/search/jql");
    expect(calls[0]!.method).toBe("POST");
    expect(calls[0]!.body.jql).toBe('(project = "ENG") ORDER BY updated ASC');
    expect(calls[0]!.body.maxResults).toBe(2);
    expect(calls[0]!.body.fields).toContain("summary");
    expect(calls.at(-1)!.body.jql).toBe('(project = "ENG") AND updated >= "2026/04/02 10:00" ORDER BY updated ASC');
    expect(calls[0]!.headers.get("authorization")).toBe(`Basic ${Buffer.from(`bot@acme.dev:${ATL_TOKEN}`).toString("base64")}`);
    const d = docs("jira");
    expect(d.map((x) => x.external_id)).toEqual(["ENG-1", "ENG-2", "ENG-3"]);
    expect(d[0]).toMatchObject({ kind: "jira_issue", title: "ENG-1 Login fails", author: "Ann", url: `${f.url}/browse/ENG-1` });
    expect(d[0].body).toContain("Details of ENG-1");
  });
});

describe("confluence sync", () => {
  test("CQL content search with _links.next pagination; storage-format HTML to text; lastmodified cursor", async () => {
    const page = (id: string, title: string, when: string, html: string, space = "ENG") => ({
      id,
      type: "page",
      status: "current",
      title,
      space,
      body: { storage: { value: html, representation: "storage" } },
      version: { number: 3, when, by: { displayName: "Dee" } },
      _links: { webui: `/spaces/${space}/pages/${id}`, self: `${f.url}/wiki/rest/api/content/${id}` },
    });
    f.confluence.push(
      page("101", "Runbook: rotate secrets", "2026-05-01T08:00:00.000Z", "<h1>Rotate</h1><p>Use <code>svc token</code> &amp; restart.</p>"),
      page("102", "Architecture", "2026-05-02T08:00:00.000Z", "<p>Four layers</p>"),
      page("103", "Oncall", "2026-05-03T08:00:00.000Z", "<p>Pager rota</p>"),
      page("900", "Other space", "2026-05-03T08:00:00.000Z", "<p>not ours</p>", "OPS"),
    );
    await e.call("POST", "/sources", { sourceId: "conf", projectId: "src", sourceType: "confluence", config: { baseUrl: f.url, spaceKey: "ENG", email: "bot@acme.dev", tokenEnv: "MEMORY_SECRET_ATL" } });
    const ok = await e.call("POST", "/sources/conf/sync");
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ itemsSynced: 3, syncCursor: "2026-05-03T08:00:00.000Z" });
    const calls = f.of("/wiki/rest/api/content/search");
    expect(calls.length).toBe(2);
    expect(calls[0]!.query.get("cql")).toBe('space = "ENG" AND type = page ORDER BY lastmodified ASC');
    expect(calls[0]!.query.get("expand")).toBe("body.storage,version");
    expect(calls[1]!.query.get("start")).toBe("2");
    const d = docs("conf");
    expect(d.map((x) => x.external_id)).toEqual(["101", "102", "103"]);
    expect(d[0]).toMatchObject({ kind: "confluence_page", title: "Runbook: rotate secrets", author: "Dee", url: `${f.url}/wiki/spaces/ENG/pages/101` });
    expect(d[0].body).toContain("Use svc token & restart.");
    expect(d[0].body).not.toContain("<p>");
    f.confluence.push(page("104", "New page", "2026-05-04T08:00:00.000Z", "<p>fresh</p>"));
    const inc = await e.call("POST", "/sources/conf/sync");
    expect(f.of("/wiki/rest/api/content/search").at(-1)!.query.get("cql")).toBe('space = "ENG" AND type = page AND lastmodified >= "2026-05-03 08:00" ORDER BY lastmodified ASC');
    expect(inc.body).toMatchObject({ itemsSynced: 2, syncCursor: "2026-05-04T08:00:00.000Z" });
    expect(docs("conf").length).toBe(4);
  });
});

describe("slack sync", () => {
  test("conversations.history with cursors; the cursor (newest ts) moves only when a run completes; ok=false is an error", async () => {
    for (let i = 1; i <= 5; i++) f.slack.push({ channel: "C42", type: "message", user: `U${i}`, text: `message ${i} about the deploy`, ts: `17100000${i}0.000200` });
    await e.call("POST", "/sources", { sourceId: "sl", projectId: "src", sourceType: "slack", config: { channel: "C42", baseUrl: f.url, tokenEnv: "MEMORY_SECRET_SLACK" } });
    // the second page answers ok=false: the first page's messages are kept, the cursor is not moved
    f.failNext("/api/conversations.history", 200, (r) => !!r.query.get("cursor"));
    const bad = await e.call("POST", "/sources/sl/sync");
    expectError(bad, 502, "proxy_error", /slack answered ok=false: ratelimited/);
    expect(bad.body.error.sync_cursor).toBe("");
    expect((await e.call("GET", "/sources/sl/status")).body.syncCursor).toBe("");
    expect(docs("sl").length).toBe(2);
    const ok = await e.call("POST", "/sources/sl/sync");
    expect(ok.status).toBe(200);
    expect(ok.body.syncCursor).toBe("1710000050.000200");
    expect(docs("sl").length).toBe(5);
    const calls = f.of("/api/conversations.history");
    expect(calls.every((c) => c.headers.get("authorization") === `Bearer ${SLACK_TOKEN}`)).toBe(true);
    expect(calls.at(-1)!.query.get("cursor")).toBeTruthy();
    expect(docs("sl")[0]).toMatchObject({ kind: "slack_message", author: "U1", external_id: "C42:1710000010.000200" });
    f.slack.push({ channel: "C42", type: "message", user: "U9", text: "late message", ts: "1710000090.000100" });
    const inc = await e.call("POST", "/sources/sl/sync");
    expect(f.of("/api/conversations.history").at(-1)!.query.get("oldest")).toBe("1710000050.000200");
    expect(inc.body).toMatchObject({ itemsSynced: 1, syncCursor: "1710000090.000100" });
    await e.call("POST", "/sources", { sourceId: "sl-ghost", projectId: "src", sourceType: "slack", config: { channel: "CNOPE", baseUrl: f.url } });
    expectError(await e.call("POST", "/sources/sl-ghost/sync"), 502, "proxy_error", /channel_not_found/);
  });
});

describe("intelligence actions", () => {
  test("create_jira_ticket calls POST /rest/api/3/issue with an ADF description; post_slack calls chat.postMessage", async () => {
    const j = await e.call("POST", "/intelligence/action", { action: "create_jira_ticket", params: { summary: "Fix the boot loop", description: "Seen in ERR_BOOT_LOOP.\n\nSecond paragraph.", issueType: "Bug" } });
    expect(j.status).toBe(200);
    expect(j.body).toEqual({ executed: true, action: "create_jira_ticket", result: { sourceId: "jira", id: "10100", key: "ENG-100", self: `${f.url}/rest/api/3/issue/10100`, url: `${f.url}/browse/ENG-100` } });
    const sent = f.created.at(-1)!;
    expect(sent.fields).toMatchObject({ project: { key: "ENG" }, summary: "Fix the boot loop", issuetype: { name: "Bug" } });
    expect(adfText(sent.fields.description)).toContain("Second paragraph.");
    expect(f.of("/rest/api/3/issue").at(-1)!.headers.get("authorization")).toStartWith("Basic ");
    const s = await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "sl", text: "Deploy finished" } });
    expect(s.body).toEqual({ executed: true, action: "post_slack", result: { sourceId: "sl", channel: "C42", ts: expect.any(String) } });
    expect(f.posted.at(-1)).toEqual({ channel: "C42", text: "Deploy finished" });
  });

  test("a failing target or no configured target → 200 executed false with the reason; unknown action 400; missing params 400; unknown source 404", async () => {
    f.failNext("/rest/api/3/issue", 500);
    const j = await e.call("POST", "/intelligence/action", { action: "create_jira_ticket", params: { summary: "x" } });
    expect(j.status).toBe(200);
    expect(j.body.executed).toBe(false);
    expect(j.body.result.error).toMatch(/jira answered 500/);
    await e.call("POST", "/sources", { sourceId: "sl-noauth", projectId: "src", sourceType: "slack", config: { channel: "C42", baseUrl: f.url } });
    const s = await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "sl-noauth", text: "hi" } });
    expect(s.body).toMatchObject({ executed: false, action: "post_slack", result: { error: "slack answered 200: not_authed" } });
    const down = await e.call("POST", "/sources", { sourceId: "sl-down", projectId: "src", sourceType: "slack", config: { channel: "C1", baseUrl: "http://127.0.0.1:1", tokenEnv: "MEMORY_SECRET_SLACK" } });
    expect(down.status).toBe(201);
    const d = await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "sl-down", text: "hi" } });
    expect(d.body.executed).toBe(false);
    expect(d.body.result.error).toMatch(/unreachable/);
    expectError(await e.call("POST", "/intelligence/action", { action: "send_email", params: {} }), 400, "validation_error", /action/);
    expectError(await e.call("POST", "/intelligence/action", { action: "post_slack" }), 400, "validation_error", /params/);
    expectError(await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "sl" } }), 400, "validation_error", /params\.text/);
    expectError(await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "jira", text: "x" } }), 400, "validation_error", /sourceId/);
    expectError(await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "ghost", text: "x" } }), 404, "not_found");
    // no configured target: 200 executed false with the reason, nothing sent
    const none = await e.call("POST", "/intelligence/action", { action: "create_jira_ticket", params: { summary: "x" } }, e.B);
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ executed: false, action: "create_jira_ticket", result: { error: expect.stringMatching(/no enabled jira source is configured/) } });
    // bad params are a 400 before the source's credential or the target is touched (not a 200 executed:false about the credential)
    const unset = await e.call("POST", "/sources", { sourceId: "sl-unset", projectId: "src", sourceType: "slack", config: { channel: "C1", baseUrl: f.url, tokenEnv: "MEMORY_SECRET_NEVER_SET" } });
    expect(unset.status).toBe(201);
    const posts = f.posted.length;
    expectError(await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "sl-unset" } }), 400, "validation_error", /params\.text/);
    expectError(await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "sl-unset", text: "x".repeat(40_001) } }), 400, "validation_error", /params\.text/);
    expectError(await e.call("POST", "/intelligence/action", { action: "create_jira_ticket", params: { description: "no summary" } }, e.B), 400, "validation_error", /params\.summary/);
    const ok = await e.call("POST", "/intelligence/action", { action: "post_slack", params: { sourceId: "sl-unset", text: "hi" } });
    expect(ok.body).toMatchObject({ executed: false, action: "post_slack", result: { sourceId: "sl-unset", error: expect.stringMatching(/MEMORY_SECRET_NEVER_SET/) } });
    expect(f.posted.length).toBe(posts);
  });

  test("Link header parsing", () => {
    expect(nextLink('<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last"')).toBe("https://api.github.com/x?page=2");
    expect(nextLink('<https://a/x?page=1>; rel="prev", <https://a/x?page=3>; rel="next"')).toBe("https://a/x?page=3");
    expect(nextLink('<https://a/x?page=5>; rel="last"')).toBeUndefined();
    expect(nextLink(null)).toBeUndefined();
  });
});
