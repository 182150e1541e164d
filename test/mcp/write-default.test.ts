/**
 * The safe default of write-invalidates-read, through the real /mcp endpoint with the official
 * client SDK (issue 22 item 6): a tool that may change state (WRITE, UNKNOWN, IDEMPOTENT) and has
 * no rule or WRITE mapping drops every cached result of its server for the tenant, so `get_issue`
 * is never answered from before an `update_issue`; results cached before a mapping was added are
 * not served stale after a matching write; once rules/mappings say what to invalidate, they alone
 * decide. The fake server numbers its answers per tool (`get_issue#3 …`), so a stale answer shows.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import type { Client } from "@modelcontextprotocol/client";
import { startMcpGateway, registerAndDiscover, connectMcp, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";

let h: McpGateway;
let fake: FakeMcpServer;
let other: FakeMcpServer;
let admin: string;
let client: Client;
let tools: Record<string, any>;

beforeAll(async () => {
  h = await startMcpGateway();
  fake = startFakeMcpServer();
  other = startFakeMcpServer();
  admin = await h.gw.token("tenant-stale", ["ManageConfig"], "admin");
  ({ tools } = await registerAndDiscover({ ...h, A: admin }, fake.url, { name: "tracker" }));
  await registerAndDiscover({ ...h, A: admin }, other.url, { name: "wiki" });
  // the agent calls with an ordinary key: no permission
  client = await connectMcp(h, await h.gw.token("tenant-stale", [], "agent"), "auto", "agent-1");
});
afterAll(async () => {
  await client.close();
  await fake.stop();
  await other.stop();
  await h.gw.stop();
});

/** one call through /mcp: the svc cache status and the text the client got */
async function call(name: string, args: Record<string, unknown>) {
  const r = await client.callTool({ name, arguments: args });
  return { status: ((r._meta as any)["svc/cache"] as { status: string }).status, text: (r.content as Array<{ text: string }>)[0]!.text };
}

describe("a state-changing tool without rules or mappings drops its server's cached results", () => {
  for (const [writer, category] of [
    ["update_issue", "WRITE"],
    ["frobnicate", "UNKNOWN"],
    ["set_label", "IDEMPOTENT"],
  ] as const)
    test(`${writer} (${category}): get_issue and list_issues are fetched again; another server's results stay`, async () => {
      expect(tools[writer].category).toBe(category);
      const first = await call("tracker__get_issue", { issue_id: "41" });
      await call("tracker__list_issues", { repo: "svc" });
      await call("wiki__search_docs", { query: "deploy" });
      const cached = await call("tracker__get_issue", { issue_id: "41" });
      expect(cached).toEqual({ status: "HIT", text: first.text });
      expect((await call("tracker__list_issues", { repo: "svc" })).status).toBe("HIT");
      expect((await call("wiki__search_docs", { query: "deploy" })).status).toBe("HIT");

      const w = await call(`tracker__${writer}`, { issue_id: "41", title: "closed" });
      expect(w.status).toBe("BYPASS");

      const after = await call("tracker__get_issue", { issue_id: "41" });
      expect(after.status).toBe("MISS"); // not the answer from before the write
      expect(after.text).not.toBe(first.text);
      expect((await call("tracker__list_issues", { repo: "svc" })).status).toBe("MISS");
      expect((await call("wiki__search_docs", { query: "deploy" })).status).toBe("HIT"); // another server: untouched
    });

  test("a READ call invalidates nothing", async () => {
    await call("tracker__get_issue", { issue_id: "7" });
    await call("tracker__search_docs", { query: "x" });
    expect((await call("tracker__get_issue", { issue_id: "7" })).status).toBe("HIT");
  });

  test("another tenant's cached results of its own registration of the same server stay", async () => {
    const otherAdmin = await h.gw.token("tenant-stale-b", ["ManageConfig"], "admin");
    await registerAndDiscover({ ...h, A: otherAdmin }, fake.url, { name: "tracker" });
    const b = await connectMcp(h, await h.gw.token("tenant-stale-b", [], "agent"), "auto");
    try {
      await b.callTool({ name: "tracker__get_issue", arguments: { issue_id: "41" } });
      await call("tracker__update_issue", { issue_id: "41", title: "x" });
      const again = await b.callTool({ name: "tracker__get_issue", arguments: { issue_id: "41" } });
      expect(((again._meta as any)["svc/cache"] as { status: string }).status).toBe("HIT");
    } finally {
      await b.close();
    }
  });
});

describe("mappings added later", () => {
  test("a result cached before the READ mapping existed is not served after a matching write; then the mappings alone decide", async () => {
    // cached while nothing is configured
    const before = await call("tracker__get_issue", { issue_id: "41" });
    expect((await call("tracker__get_issue", { issue_id: "41" })).status).toBe("HIT");
    await call("tracker__get_issue", { issue_id: "42" });
    await call("tracker__search_docs", { query: "unrelated" });

    // now the precise configuration: get_issue reads issue.issue_id, update_issue writes it
    const issue = await h.call("POST", "/api/v1/mcp/entities", admin, { name: "issue" });
    expect(issue.status).toBe(200);
    for (const [tool, operation] of [
      ["get_issue", "READ"],
      ["update_issue", "WRITE"],
    ] as const)
      expect((await h.call("POST", "/api/v1/mcp/tool-entities", admin, { toolId: tools[tool].id, entityId: issue.body.id, paramName: "issue_id", operation })).status).toBe(200);

    await call("tracker__update_issue", { issue_id: "41", title: "closed" });
    const after = await call("tracker__get_issue", { issue_id: "41" });
    expect(after.status).toBe("MISS"); // untagged (cached before the mapping), so dropped with the entity
    expect(after.text).not.toBe(before.text);
    // the precise configuration governs now: not the whole server
    expect((await call("tracker__search_docs", { query: "unrelated" })).status).toBe("HIT");

    // results stored since the mapping are tagged: a write to 41 leaves 42 alone
    expect((await call("tracker__get_issue", { issue_id: "42" })).status).toBe("MISS"); // it was cached before the mapping too
    expect((await call("tracker__get_issue", { issue_id: "42" })).status).toBe("HIT");
    await call("tracker__update_issue", { issue_id: "41", title: "reopened" });
    expect((await call("tracker__get_issue", { issue_id: "41" })).status).toBe("MISS");
    expect((await call("tracker__get_issue", { issue_id: "42" })).status).toBe("HIT");
  });

  test("a rule, even disabled, is a precise configuration: the write tool no longer drops the whole server", async () => {
    await call("tracker__get_issue", { issue_id: "77" });
    const rule = await h.call("POST", "/api/v1/mcp/rules", admin, { writeToolId: tools.frobnicate.id, invalidateToolId: tools.search_docs.id, enabled: false });
    expect(rule.status).toBe(200);
    await call("tracker__frobnicate", {});
    expect((await call("tracker__get_issue", { issue_id: "77" })).status).toBe("HIT");
  });
});
