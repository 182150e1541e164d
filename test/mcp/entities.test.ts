/** /api/v1/mcp entities, tool-entities and rules (doc2 §4.3, §4.4): CRUD, validation, 404s, generate, isolation. */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { useMcpFixture, startMcpGateway, expectError, registerAndDiscover, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";

let h: McpGateway;
let fake: FakeMcpServer;
let tools: Record<string, any>;
const E = "/api/v1/mcp/entities";
const M = "/api/v1/mcp/tool-entities";
const R = "/api/v1/mcp/rules";

const fx = useMcpFixture({ serverName: "issues" });
beforeAll(() => ({ h, fake, tools } = fx));

describe("entities", () => {
  test("create (200, every field), get, list with parentId and partial name filters, update, parent removal", async () => {
    const repo = await h.call("POST", E, h.A, { name: "repository", description: "a git repository" });
    expect(repo.status).toBe(200);
    expect(repo.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: "repository", description: "a git repository", parentId: null, createdAt: expect.any(String), updatedAt: expect.any(String) });
    const issue = (await h.call("POST", E, h.A, { name: "issue", parentId: repo.body.id })).body;
    const pr = (await h.call("POST", E, h.A, { name: "pull_request", parentId: repo.body.id })).body;
    expect((await h.call("GET", `${E}/${issue.id}`, h.A)).body).toEqual(issue);
    const kids = await h.call("GET", `${E}?parentId=${repo.body.id}`, h.A);
    expect(kids.body).toMatchObject({ total: 2, page: 1, pageSize: 20, totalPages: 1 });
    expect(kids.body.entities.map((e: any) => e.name)).toEqual(["issue", "pull_request"]);
    expect((await h.call("GET", `${E}?name=pull_`, h.A)).body.entities.map((e: any) => e.name)).toEqual(["pull_request"]);
    expect((await h.call("GET", `${E}?pageSize=1&page=2`, h.A)).body).toMatchObject({ total: 3, totalPages: 3, entities: [expect.any(Object)] });
    const upd = await h.call("PATCH", `${E}/${pr.id}`, h.A, { name: "pr", description: "merge request" });
    expect(upd.body).toMatchObject({ id: pr.id, name: "pr", description: "merge request", parentId: repo.body.id });
    expect((await h.call("PATCH", `${E}/${pr.id}`, h.A, { parentId: null })).body.parentId).toBeNull();
    expect((await h.call("PATCH", `${E}/${pr.id}`, h.A, { parentId: issue.id })).body.parentId).toBe(issue.id);
  });

  test("validation: name 1..128, description 2000, parentId uuid; duplicates 409; cycles 400; 404s", async () => {
    expect((await h.call("POST", E, h.A, { name: "n".repeat(128), description: "d".repeat(2000) })).status).toBe(200);
    expectError(await h.call("POST", E, h.A, { name: "n".repeat(129) }), 400, "validation_error", "name");
    expectError(await h.call("POST", E, h.A, { name: "x", description: "d".repeat(2001) }), 400, "validation_error", "description");
    expectError(await h.call("POST", E, h.A, { name: "" }), 400, "validation_error", "name");
    expectError(await h.call("POST", E, h.A, {}), 400, "validation_error", "name");
    expectError(await h.call("POST", E, h.A, { name: "x", parentId: "nope" }), 400, "validation_error", "parentId");
    expectError(await h.call("POST", E, h.A, { name: "x", parentId: crypto.randomUUID() }), 404, "not_found");
    expectError(await h.call("POST", E, h.A, { name: "n".repeat(128) }), 409, "conflict");
    const a = (await h.call("POST", E, h.A, { name: "a" })).body;
    const b = (await h.call("POST", E, h.A, { name: "b", parentId: a.id })).body;
    expectError(await h.call("PATCH", `${E}/${a.id}`, h.A, { parentId: a.id }), 400, "validation_error", "own parent");
    expectError(await h.call("PATCH", `${E}/${a.id}`, h.A, { parentId: b.id }), 400, "validation_error", "descendants");
    expectError(await h.call("PATCH", `${E}/${a.id}`, h.A, { name: "b" }), 409, "conflict");
    expectError(await h.call("PATCH", `${E}/${a.id}`, h.A, { name: "n".repeat(129) }), 400, "validation_error");
    expectError(await h.call("GET", `${E}/${crypto.randomUUID()}`, h.A), 404, "not_found");
    expectError(await h.call("PATCH", `${E}/${crypto.randomUUID()}`, h.A, { name: "q" }), 404, "not_found");
    expectError(await h.call("DELETE", `${E}/${crypto.randomUUID()}`, h.A), 404, "not_found");
    expectError(await h.call("GET", `${E}?parentId=${crypto.randomUUID()}`, h.A), 404, "not_found");
    expectError(await h.call("GET", `${E}?parentId=bad`, h.A), 400, "validation_error");
    expectError(await h.call("GET", `${E}?name=${"n".repeat(129)}`, h.A), 400, "validation_error");
  });

  test("delete: {deleted: true, message}; its mappings and the rules it explains go; children become roots", async () => {
    const proj = (await h.call("POST", E, h.A, { name: "project" })).body;
    const task = (await h.call("POST", E, h.A, { name: "task", parentId: proj.id })).body;
    await h.call("POST", M, h.A, { toolId: tools.update_issue.id, entityId: proj.id, paramName: "issue_id", operation: "WRITE" });
    await h.call("POST", M, h.A, { toolId: tools.list_issues.id, entityId: proj.id, paramName: "repo", operation: "READ" });
    const rule = (await h.call("POST", R, h.A, { writeToolId: tools.update_issue.id, invalidateToolId: tools.list_issues.id })).body;
    const manual = (await h.call("POST", R, h.A, { writeToolId: tools.set_label.id, invalidateToolId: tools.get_issue.id })).body;
    const d = await h.call("DELETE", `${E}/${proj.id}`, h.A);
    expect(d.status).toBe(200);
    expect(d.body).toEqual({ deleted: true, message: expect.stringContaining("project"), invalidated: 0 });
    expect((await h.call("GET", `/api/v1/mcp/tools/${tools.list_issues.id}/entities`, h.A)).body.some((m: any) => m.entityId === proj.id)).toBe(false);
    expectError(await h.call("PATCH", `${R}/${rule.id}`, h.A, { enabled: false }), 404, "not_found");
    expect((await h.call("PATCH", `${R}/${manual.id}`, h.A, { enabled: false })).status).toBe(200); // unrelated rule kept
    expect((await h.call("GET", `${E}/${task.id}`, h.A)).body.parentId).toBeNull();
  });
});

describe("tool-entity mappings", () => {
  test("create and replace both 200, list per tool, delete; validation and 404s", async () => {
    const ent = (await h.call("POST", E, h.A, { name: "label" })).body;
    const m = await h.call("POST", M, h.A, { toolId: tools.set_label.id, entityId: ent.id, paramName: "label", operation: "WRITE" });
    expect(m.status).toBe(200);
    expect(m.body).toEqual({ toolId: tools.set_label.id, entityId: ent.id, paramName: "label", operation: "WRITE", createdAt: expect.any(String) });
    const again = await h.call("POST", M, h.A, { toolId: tools.set_label.id, entityId: ent.id, paramName: "issue_id", operation: "READ" });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ paramName: "issue_id", operation: "READ" });
    const list = await h.call("GET", `/api/v1/mcp/tools/${tools.set_label.id}/entities`, h.A);
    expect(list.body).toEqual([again.body]);
    expectError(await h.call("POST", M, h.A, { toolId: tools.set_label.id, entityId: ent.id, paramName: "nope", operation: "READ" }), 400, "validation_error", "no parameter");
    expectError(await h.call("POST", M, h.A, { toolId: tools.set_label.id, entityId: ent.id, paramName: "label", operation: "DELETE" }), 400, "validation_error", "operation");
    expectError(await h.call("POST", M, h.A, { toolId: tools.set_label.id, entityId: ent.id, paramName: "", operation: "READ" }), 400, "validation_error", "paramName");
    expectError(await h.call("POST", M, h.A, { toolId: tools.set_label.id, entityId: ent.id, paramName: "p".repeat(257), operation: "READ" }), 400, "validation_error", "paramName");
    expectError(await h.call("POST", M, h.A, { toolId: "x", entityId: ent.id, paramName: "label", operation: "READ" }), 400, "validation_error", "toolId");
    expectError(await h.call("POST", M, h.A, { toolId: crypto.randomUUID(), entityId: ent.id, paramName: "label", operation: "READ" }), 404, "not_found", "tool");
    expectError(await h.call("POST", M, h.A, { toolId: tools.set_label.id, entityId: crypto.randomUUID(), paramName: "label", operation: "READ" }), 404, "not_found", "entity");
    const del = await h.call("DELETE", `${M}/${tools.set_label.id}/${ent.id}`, h.A);
    expect(del.body).toEqual({ deleted: true, message: expect.any(String) });
    expectError(await h.call("DELETE", `${M}/${tools.set_label.id}/${ent.id}`, h.A), 404, "not_found");
    expectError(await h.call("GET", `/api/v1/mcp/tools/${crypto.randomUUID()}/entities`, h.A), 404, "not_found");
  });
});

describe("rules", () => {
  test("create (200, enabled default true), list with filters, patch, delete; validation and 404s", async () => {
    const r = await h.call("POST", R, h.A, { writeToolId: tools.update_issue.id, invalidateToolId: tools.get_issue.id });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: expect.any(String), writeToolId: tools.update_issue.id, invalidateToolId: tools.get_issue.id, enabled: true, createdAt: expect.any(String) });
    const off = (await h.call("POST", R, h.A, { writeToolId: tools.update_issue.id, invalidateToolId: tools.search_docs.id, enabled: false })).body;
    expect(off.enabled).toBe(false);
    expect((await h.call("GET", `${R}?writeToolId=${tools.update_issue.id}`, h.A)).body.total).toBeGreaterThanOrEqual(2);
    expect((await h.call("GET", `${R}?invalidateToolId=${tools.search_docs.id}`, h.A)).body.rules.map((x: any) => x.id)).toEqual([off.id]);
    expect((await h.call("GET", `${R}?enabled=false&writeToolId=${tools.update_issue.id}`, h.A)).body.rules.map((x: any) => x.id)).toEqual([off.id]);
    expect((await h.call("GET", R, h.A)).body).toMatchObject({ page: 1, pageSize: 20, rules: expect.any(Array) });
    expect((await h.call("PATCH", `${R}/${off.id}`, h.A, { enabled: true })).body).toMatchObject({ id: off.id, enabled: true });
    expectError(await h.call("PATCH", `${R}/${off.id}`, h.A, {}), 400, "validation_error", "enabled");
    expectError(await h.call("POST", R, h.A, { writeToolId: tools.update_issue.id, invalidateToolId: tools.get_issue.id }), 409, "conflict");
    expectError(await h.call("POST", R, h.A, { writeToolId: tools.update_issue.id, invalidateToolId: tools.update_issue.id }), 400, "validation_error", "different");
    expectError(await h.call("POST", R, h.A, { writeToolId: crypto.randomUUID(), invalidateToolId: tools.get_issue.id }), 404, "not_found");
    expectError(await h.call("POST", R, h.A, { writeToolId: tools.update_issue.id, invalidateToolId: crypto.randomUUID() }), 404, "not_found");
    expectError(await h.call("POST", R, h.A, { writeToolId: tools.update_issue.id }), 400, "validation_error", "invalidateToolId");
    expectError(await h.call("GET", `${R}?enabled=perhaps`, h.A), 400, "validation_error");
    expect((await h.call("DELETE", `${R}/${off.id}`, h.A)).body).toEqual({ deleted: true, message: expect.any(String) });
    expectError(await h.call("DELETE", `${R}/${off.id}`, h.A), 404, "not_found");
    expectError(await h.call("PATCH", `${R}/${crypto.randomUUID()}`, h.A, { enabled: true }), 404, "not_found");
  });

  test("generate pairs each WRITE tool writing an entity with each READ tool reading it; existing rules are skipped", async () => {
    const t = await h.gw.token("tenant-gen", ["ManageConfig", "ViewMetrics", "ViewLogs"], "x");
    const own = await registerAndDiscover({ ...h, A: t }, fake.url, { name: "gen" });
    const ts = own.tools;
    const issue = (await h.call("POST", E, t, { name: "issue" })).body;
    const comment = (await h.call("POST", E, t, { name: "comment" })).body;
    const map = (toolId: string, entityId: string, paramName: string, operation: string) => h.call("POST", M, t, { toolId, entityId, paramName, operation });
    await map(ts.update_issue.id, issue.id, "issue_id", "WRITE");
    await map(ts.update_issue.id, comment.id, "title", "WRITE");
    await map(ts.get_issue.id, issue.id, "issue_id", "READ");
    await map(ts.list_issues.id, issue.id, "issue_id", "READ");
    await map(ts.get_comment.id, comment.id, "comment_id", "READ");
    await map(ts.update_issue.id, issue.id, "issue_id", "WRITE");
    await h.call("POST", R, t, { writeToolId: ts.update_issue.id, invalidateToolId: ts.list_issues.id });
    const g = await h.call("POST", `${R}/generate`, t);
    expect(g.status).toBe(200);
    expect(g.body).toEqual({
      rulesGenerated: 2,
      rulesSkipped: 1,
      generatedRules: [
        { writeToolId: ts.update_issue.id, writeToolName: "update_issue", invalidateToolId: ts.get_comment.id, invalidateToolName: "get_comment", sharedEntities: ["comment"] },
        { writeToolId: ts.update_issue.id, writeToolName: "update_issue", invalidateToolId: ts.get_issue.id, invalidateToolName: "get_issue", sharedEntities: ["issue"] },
      ],
      message: expect.stringContaining("generated 2"),
    });
    const again = await h.call("POST", `${R}/generate`, t);
    expect(again.body).toMatchObject({ rulesGenerated: 0, rulesSkipped: 3, generatedRules: [] });
  });

  test("tenant isolation and 401", async () => {
    const ent = (await h.call("POST", E, h.A, { name: "secret-entity" })).body;
    const rule = (await h.call("POST", R, h.A, { writeToolId: tools.frobnicate.id, invalidateToolId: tools.get_issue.id })).body;
    expect((await h.call("GET", E, h.B)).body.entities).toEqual([]);
    expect((await h.call("GET", R, h.B)).body.rules).toEqual([]);
    expectError(await h.call("GET", `${E}/${ent.id}`, h.B), 404, "not_found");
    expectError(await h.call("PATCH", `${E}/${ent.id}`, h.B, { name: "x" }), 404, "not_found");
    expectError(await h.call("DELETE", `${E}/${ent.id}`, h.B), 404, "not_found");
    expectError(await h.call("POST", E, h.B, { name: "child", parentId: ent.id }), 404, "not_found");
    expectError(await h.call("PATCH", `${R}/${rule.id}`, h.B, { enabled: false }), 404, "not_found");
    expectError(await h.call("DELETE", `${R}/${rule.id}`, h.B), 404, "not_found");
    expectError(await h.call("POST", M, h.B, { toolId: tools.get_issue.id, entityId: ent.id, paramName: "issue_id", operation: "READ" }), 404, "not_found");
    expectError(await h.call("POST", R, h.B, { writeToolId: tools.update_issue.id, invalidateToolId: tools.get_issue.id }), 404, "not_found");
    expect((await h.call("POST", `${R}/generate`, h.B)).body.rulesGenerated).toBe(0);
    expectError(await h.call("GET", E, undefined), 401, "authentication_error");
    expectError(await h.call("POST", `${R}/generate`, undefined), 401, "authentication_error");
  });
});
