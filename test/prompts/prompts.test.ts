/** /api/v1/prompts over HTTP with plain fetch: CRUD, lists, versions, diff, rollback, duplicate, status, runs, isolation. */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import type { TestGateway } from "../helpers/gateway";
import { RecordingGateway, startTwoTenants, apiCaller, expectError } from "./helpers";
import { ApiError } from "../../src/core/errors";

let gw: TestGateway;
let A: string; // tenant-a, sub alice
let B: string; // tenant-b
const P = "/api/v1/prompts";

/** the model double every execute in this file goes to */
const double = new RecordingGateway((req) => (req.model === "broken" ? new ApiError("proxy_error", "upstream said 500") : `answer to ${req.messages[0]!.content}`));
beforeAll(async () => ({ gw, A, B } = await startTwoTenants(double)));
afterAll(() => gw.stop());

const call = apiCaller(() => gw);
async function create(json: Record<string, unknown>, token = A) {
  const r = await call("POST", P, token, json);
  expect(r.status).toBe(201);
  return r.body;
}

describe("create and get", () => {
  test("201 with every field; variables extracted; slug from name; createdBy = token sub; DRAFT; version 1", async () => {
    const p = await create({
      name: "Greeting Prompt",
      template: "Hello {{name=World}}, you are {{age:integer}}",
      description: "says hi",
      model: "gpt-4o-mini",
      temperature: 0.3,
      maxTokens: 50,
      tags: ["greet", "demo", "greet"],
    });
    expect(p).toMatchObject({
      name: "Greeting Prompt",
      slug: "greeting-prompt",
      description: "says hi",
      template: "Hello {{name=World}}, you are {{age:integer}}",
      variables: [
        { name: "name", varType: "string", defaultValue: "World" },
        { name: "age", varType: "integer", defaultValue: null },
      ],
      model: "gpt-4o-mini",
      temperature: 0.3,
      maxTokens: 50,
      tags: ["greet", "demo"],
      folderId: null,
      status: "DRAFT",
      currentVersion: 1,
      createdBy: "alice",
    });
    expect(p.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(p.createdAt).toBe(p.updatedAt);
    const got = await call("GET", `${P}/${p.id}`, A);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(p);
    const v1 = await call("GET", `${P}/${p.id}/versions/1`, A);
    expect(v1.body).toMatchObject({ promptId: p.id, version: 1, template: p.template, model: "gpt-4o-mini", temperature: 0.3, maxTokens: 50, createdBy: "alice" });
  });

  test("slug collisions within a tenant get -2, -3; another tenant gets the plain slug", async () => {
    const a = await create({ name: "Same Name", template: "x" });
    const b = await create({ name: "same  name!", template: "x" });
    const c = await create({ name: "Same-Name", template: "x" });
    expect([a.slug, b.slug, c.slug]).toEqual(["same-name", "same-name-2", "same-name-3"]);
    expect((await create({ name: "Same Name", template: "x" }, B)).slug).toBe("same-name");
  });

  test("validation: required fields and every limit -> 400 validation_error", async () => {
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ template: "x" }, "name"],
      [{ name: "n" }, "template"],
      [{ name: "", template: "x" }, "name"],
      [{ name: "n".repeat(257), template: "x" }, "name"],
      [{ name: "n", template: "" }, "template"],
      [{ name: "n", template: "x".repeat(100_001) }, "template"],
      [{ name: "n", template: "x", description: "d".repeat(2001) }, "description"],
      [{ name: "n", template: "x", model: "m".repeat(129) }, "model"],
      [{ name: "n", template: "x", temperature: 2.5 }, "temperature"],
      [{ name: "n", template: "x", temperature: -0.1 }, "temperature"],
      [{ name: "n", template: "x", maxTokens: 0 }, "maxTokens"],
      [{ name: "n", template: "x", maxTokens: 1.5 }, "maxTokens"],
      [{ name: "n", template: "x", tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, "tags"],
      [{ name: "n", template: "x", tags: ["t".repeat(65)] }, "tags"],
      [{ name: "n", template: "x", folderId: "not-a-uuid" }, "folderId"],
      [{ name: "n", template: "x", status: "LIVE" }, "status"],
    ];
    for (const [json, field] of bad) {
      const r = await call("POST", P, A, json);
      expectError(r, 400, "validation_error", field);
    }
    // limits are inclusive
    await create({ name: "n".repeat(256), template: "x".repeat(100_000), description: "d".repeat(2000), temperature: 2, maxTokens: 1 });
    // bad template syntax is a validation error too
    expectError(await call("POST", P, A, { name: "n", template: "{{x:date}}" }), 400, "validation_error", "'x'");
    // malformed JSON
    const r = await gw.api(P, { method: "POST", token: A, body: "{", headers: { "content-type": "application/json" } });
    expect(r.status).toBe(400);
    expect(((await r.json()) as any).error.type).toBe("invalid_request_error");
  });

  test("unknown folderId -> 404; unknown prompt -> 404; no token -> 401", async () => {
    expectError(await call("POST", P, A, { name: "n", template: "x", folderId: crypto.randomUUID() }), 404, "not_found", "folder");
    expectError(await call("GET", `${P}/${crypto.randomUUID()}`, A), 404, "not_found", "prompt");
    expectError(await call("GET", `${P}/nope`, A), 404, "not_found");
    expectError(await call("GET", P, undefined), 401, "authentication_error");
  });
});

describe("credentials", () => {
  test("an API key works as the bearer credential; createdBy is its sub", async () => {
    const { key, record } = await gw.ctx.apiKeys.create("tenant-a", "ci-bot", ["ManageConfig"]);
    const r = await call("POST", P, key, { name: "By key", template: "x" });
    expect(r.status).toBe(201);
    expect(r.body.createdBy).toBe(`key:${record.id}`);
    expect((await call("GET", `${P}/${r.body.id}`, A)).status).toBe(200); // same tenant as the JWT
    expectError(await call("GET", P, "svc_not-a-real-key"), 401, "authentication_error");
  });
});

describe("list", () => {
  let folder: string;
  let t: string;
  beforeAll(async () => {
    t = await gw.token("tenant-list", ["ManageConfig", "ViewMetrics", "ViewLogs"], "lister");
    folder = (await call("POST", "/api/v1/folders", t, { name: "F" })).body.id;
    for (let i = 0; i < 25; i++)
      await create({ name: `P${String(i).padStart(2, "0")}`, template: "t", tags: i % 5 === 0 ? ["five"] : [], folderId: i < 3 ? folder : undefined, status: i % 2 ? "PUBLISHED" : "DRAFT" }, t);
    await create({ name: "Invoice 50% off", template: "t", description: "Handles REFUNDS" }, t);
    await create({ name: "Other", template: "t", description: "about invoice_x" }, t);
  });

  test("envelope and pagination maths", async () => {
    const all = await call("GET", P, t);
    expect(all.body).toMatchObject({ total: 27, page: 1, pageSize: 20, totalPages: 2 });
    expect(all.body.prompts).toHaveLength(20);
    const p3 = await call("GET", `${P}?page=3&pageSize=10`, t);
    expect(p3.body).toMatchObject({ total: 27, page: 3, pageSize: 10, totalPages: 3 });
    expect(p3.body.prompts).toHaveLength(7);
    const p4 = await call("GET", `${P}?page=4&pageSize=10`, t);
    expect(p4.body.prompts).toHaveLength(0);
    expect(p4.body.totalPages).toBe(3);
    const ids = new Set<string>();
    for (let page = 1; page <= 3; page++) for (const p of (await call("GET", `${P}?page=${page}&pageSize=10`, t)).body.prompts) ids.add(p.id);
    expect(ids.size).toBe(27); // pages do not overlap
    expect((await call("GET", `${P}?pageSize=100`, t)).body.prompts).toHaveLength(27);
  });

  test("filters: status, folderId, tag, search over name and description (case-insensitive, literal % and _)", async () => {
    expect((await call("GET", `${P}?status=PUBLISHED`, t)).body.total).toBe(12);
    expect((await call("GET", `${P}?status=ARCHIVED`, t)).body.total).toBe(0);
    const inFolder = (await call("GET", `${P}?folderId=${folder}`, t)).body;
    expect(inFolder.total).toBe(3);
    expect(inFolder.prompts.every((p: any) => p.folderId === folder)).toBe(true);
    expect((await call("GET", `${P}?tag=five`, t)).body.total).toBe(5);
    expect((await call("GET", `${P}?tag=five&status=DRAFT`, t)).body.total).toBe(3);
    expect((await call("GET", `${P}?search=invoice`, t)).body.total).toBe(2);
    expect((await call("GET", `${P}?search=refunds`, t)).body.prompts.map((p: any) => p.name)).toEqual(["Invoice 50% off"]);
    expect((await call("GET", `${P}?search=${encodeURIComponent("50%")}`, t)).body.total).toBe(1);
    expect((await call("GET", `${P}?search=e_x`, t)).body.total).toBe(1);
    expect((await call("GET", `${P}?search=p0`, t)).body.total).toBe(10);
    // case-insensitive beyond ASCII, and a rename is searchable under the new name only
    const u = await gw.token("tenant-unicode", ["ManageConfig", "ViewMetrics", "ViewLogs"], "u");
    const e = await create({ name: "École d'été", template: "t", description: "ПРИВЕТ мир" }, u);
    for (const q of ["école", "ÉCOLE", "ÉTÉ", "привет", "МИР"]) expect((await call("GET", `${P}?search=${encodeURIComponent(q)}`, u)).body.total).toBe(1);
    await call("PUT", `${P}/${e.id}`, u, { name: "Summer school", description: "" });
    expect((await call("GET", `${P}?search=${encodeURIComponent("école")}`, u)).body.total).toBe(0);
    expect((await call("GET", `${P}?search=SUMMER`, u)).body.total).toBe(1);
  });

  test("query validation -> 400", async () => {
    for (const q of ["pageSize=101", "pageSize=0", "page=0", "page=x", "status=LIVE", "folderId=abc", `search=${"s".repeat(501)}`])
      expectError(await call("GET", `${P}?${q}`, t), 400, "validation_error");
  });
});

describe("update, versions, diff, rollback", () => {
  test("partial update; unchanged template keeps the version; changed template makes N+1 with message; versions immutable", async () => {
    const p = await create({ name: "Versioned", template: "Line one\nHello {{who}}\n" });
    const u1 = await call("PUT", `${P}/${p.id}`, A, { description: "new desc", template: p.template, tags: ["a"] });
    expect(u1.status).toBe(200);
    expect(u1.body).toMatchObject({ description: "new desc", tags: ["a"], currentVersion: 1, name: "Versioned", slug: "versioned" });
    const u2 = await call("PUT", `${P}/${p.id}`, A, { template: "Line one\nHi {{who}} from {{place=Paris}}\n", message: "friendlier" });
    expect(u2.body.currentVersion).toBe(2);
    expect(u2.body.variables.map((v: any) => v.name)).toEqual(["who", "place"]);
    const u3 = await call("PUT", `${P}/${p.id}`, A, { name: "Renamed", model: "gpt-4o" });
    expect(u3.body).toMatchObject({ currentVersion: 2, name: "Renamed", slug: "versioned", model: "gpt-4o" });
    const versions = await call("GET", `${P}/${p.id}/versions`, A);
    expect(versions.body).toMatchObject({ total: 2, page: 1, pageSize: 20, totalPages: 1 });
    expect(versions.body.versions.map((v: any) => [v.version, v.message])).toEqual([
      [2, "friendlier"],
      [1, "Initial version"],
    ]);
    expect((await call("GET", `${P}/${p.id}/versions/1`, A)).body.template).toBe("Line one\nHello {{who}}\n");
    expect((await call("GET", `${P}/${p.id}/versions/2`, A)).body.variables).toEqual([
      { name: "who", varType: "string", defaultValue: null },
      { name: "place", varType: "string", defaultValue: "Paris" },
    ]);
    expectError(await call("GET", `${P}/${p.id}/versions/3`, A), 404, "not_found", "version 3");
    expectError(await call("GET", `${P}/${p.id}/versions/0`, A), 400, "validation_error");
    expectError(await call("PUT", `${P}/${crypto.randomUUID()}`, A, { name: "x" }), 404, "not_found");
    expectError(await call("PUT", `${P}/${p.id}`, A, { name: "" }), 400, "validation_error", "name");
    expectError(await call("PUT", `${P}/${p.id}`, A, { message: "m".repeat(1001) }), 400, "validation_error", "message");
  });

  test("POST versions always adds N+1 (201) and makes it current; template required", async () => {
    const p = await create({ name: "Explicit", template: "A", model: "m1" });
    const v2 = await call("POST", `${P}/${p.id}/versions`, A, { template: "A", message: "same text, new version", temperature: 1 });
    expect(v2.status).toBe(201);
    expect(v2.body).toMatchObject({ promptId: p.id, version: 2, template: "A", model: "m1", temperature: 1, message: "same text, new version", createdBy: "alice" });
    const v3 = await call("POST", `${P}/${p.id}/versions`, A, { template: "B {{x}}", model: "m2" });
    expect(v3.body.version).toBe(3);
    expect((await call("GET", `${P}/${p.id}`, A)).body).toMatchObject({ currentVersion: 3, template: "B {{x}}", model: "m2", temperature: 1 });
    expectError(await call("POST", `${P}/${p.id}/versions`, A, { message: "no template" }), 400, "validation_error", "template");
    expectError(await call("POST", `${P}/${crypto.randomUUID()}/versions`, A, { template: "x" }), 404, "not_found");
  });

  test("validation of every body and query on a prompt's sub-resources -> 400 validation_error naming the field", async () => {
    const p = await create({ name: "Limits", template: "x {{a=1}}", model: "m" });
    const bad: Array<[string, string, unknown, string]> = [
      ["PUT", "", { folderId: "abc" }, "folderId"],
      ["PUT", "", { status: "LIVE" }, "status"],
      ["PUT", "", { template: "" }, "template"],
      ["PUT", "", { template: "x".repeat(100_001) }, "template"],
      ["PUT", "", { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, "tags"],
      ["PUT", "", { temperature: 2.01 }, "temperature"],
      ["PUT", "", { maxTokens: 0 }, "maxTokens"],
      ["POST", "/versions", { template: "" }, "template"],
      ["POST", "/versions", { template: "x".repeat(100_001) }, "template"],
      ["POST", "/versions", { template: "x", model: "" }, "model"],
      ["POST", "/versions", { template: "x", temperature: 3 }, "temperature"],
      ["POST", "/versions", { template: "x", maxTokens: 0 }, "maxTokens"],
      ["POST", "/versions", { template: "x", message: "m".repeat(1001) }, "message"],
      ["POST", "/rollback", { version: 0 }, "version"],
      ["POST", "/rollback", { version: "one" }, "version"],
      ["POST", "/rollback", { version: 1, message: "m".repeat(1001) }, "message"],
      ["POST", "/duplicate", { name: "n".repeat(257) }, "name"],
      ["POST", "/duplicate", { folderId: "abc" }, "folderId"],
      ["POST", "/execute", { version: 0 }, "version"],
      ["POST", "/execute", { maxTokens: 0 }, "maxTokens"],
      ["POST", "/execute", { model: "" }, "model"],
      ["POST", "/execute", { dryRun: "yes" }, "dryRun"],
      ["POST", "/test", { temperature: -1 }, "temperature"],
      ["GET", "/runs?version=0", undefined, "version"],
      ["GET", "/runs?page=0", undefined, "page"],
      ["GET", "/versions?pageSize=0", undefined, "pageSize"],
      ["GET", "/diff?fromVersion=0&toVersion=1", undefined, "fromVersion"],
    ];
    for (const [method, sub, json, field] of bad) expectError(await call(method, `${P}/${p.id}${sub}`, A, json), 400, "validation_error", field);
    // nothing above changed the prompt
    expect((await call("GET", `${P}/${p.id}`, A)).body).toMatchObject({ currentVersion: 1, template: "x {{a=1}}", status: "DRAFT" });
  });

  test("versions list pagination", async () => {
    const p = await create({ name: "Many versions", template: "v1" });
    for (let i = 2; i <= 7; i++) await call("PUT", `${P}/${p.id}`, A, { template: `v${i}` });
    const page2 = await call("GET", `${P}/${p.id}/versions?page=2&pageSize=3`, A);
    expect(page2.body).toMatchObject({ total: 7, page: 2, pageSize: 3, totalPages: 3 });
    expect(page2.body.versions.map((v: any) => v.version)).toEqual([4, 3, 2]);
    expectError(await call("GET", `${P}/${p.id}/versions?pageSize=101`, A), 400, "validation_error");
    expectError(await call("GET", `${P}/${crypto.randomUUID()}/versions`, A), 404, "not_found");
  });

  test("diff is a real unified diff with variable changes and stats", async () => {
    const p = await create({ name: "Diffed", template: "intro\nHello {{name}}\nkeep {{n:integer=1}}\nbye {{gone}}\n" });
    await call("PUT", `${P}/${p.id}`, A, { template: "intro\nHi {{name}}\nkeep {{n:number=2}}\nbye\nnew {{added:boolean}}\n" });
    const d = await call("GET", `${P}/${p.id}/diff?fromVersion=1&toVersion=2`, A);
    expect(d.status).toBe(200);
    expect(d.body.fromVersion).toBe(1);
    expect(d.body.toVersion).toBe(2);
    expect(d.body.templateDiff).toBe(
      [
        "--- v1",
        "+++ v2",
        "@@ -1,4 +1,5 @@",
        " intro",
        "-Hello {{name}}",
        "-keep {{n:integer=1}}",
        "-bye {{gone}}",
        "+Hi {{name}}",
        "+keep {{n:number=2}}",
        "+bye",
        "+new {{added:boolean}}",
        "",
      ].join("\n"),
    );
    expect(d.body.variablesAdded).toEqual([{ name: "added", varType: "boolean", defaultValue: null }]);
    expect(d.body.variablesRemoved).toEqual([{ name: "gone", varType: "string", defaultValue: null }]);
    expect(d.body.variablesChanged).toEqual([{ name: "n", from: { varType: "integer", defaultValue: "1" }, to: { varType: "number", defaultValue: "2" } }]);
    expect(d.body.stats).toEqual({ additions: 4, deletions: 3, totalChanges: 7 });
    const same = await call("GET", `${P}/${p.id}/diff?fromVersion=2&toVersion=2`, A);
    expect(same.body).toMatchObject({ templateDiff: "", variablesAdded: [], variablesRemoved: [], variablesChanged: [], stats: { additions: 0, deletions: 0, totalChanges: 0 } });
    expectError(await call("GET", `${P}/${p.id}/diff?fromVersion=1&toVersion=9`, A), 404, "not_found", "version 9");
    expectError(await call("GET", `${P}/${p.id}/diff?fromVersion=1`, A), 400, "validation_error");
    expectError(await call("GET", `${P}/${p.id}/diff?fromVersion=a&toVersion=2`, A), 400, "validation_error");
  });

  test("rollback to V creates N+1 with V's content (201); unknown version 404", async () => {
    const p = await create({ name: "Rolled", template: "first {{a}}", model: "m-one", temperature: 0.1 });
    const v1Before = (await call("GET", `${P}/${p.id}/versions/1`, A)).body;
    await call("PUT", `${P}/${p.id}`, A, { template: "second {{b}}", model: "m-two" });
    await call("POST", `${P}/${p.id}/versions`, A, { template: "third", model: "m-three", temperature: 0.9 });
    const rb = await call("POST", `${P}/${p.id}/rollback`, A, { version: 1 });
    expect(rb.status).toBe(201);
    expect(rb.body).toMatchObject({ version: 4, template: "first {{a}}", model: "m-one", temperature: 0.1, message: "Rollback to version 1" });
    expect((await call("GET", `${P}/${p.id}`, A)).body).toMatchObject({ currentVersion: 4, template: "first {{a}}", variables: [{ name: "a" }], model: "m-one" });
    const rb2 = await call("POST", `${P}/${p.id}/rollback`, A, { version: 2, message: "back to b" });
    expect(rb2.body).toMatchObject({ version: 5, template: "second {{b}}", message: "back to b" });
    // the old versions are untouched
    expect((await call("GET", `${P}/${p.id}/versions/3`, A)).body).toMatchObject({ template: "third", model: "m-three" });
    // versions are immutable: v1 is byte-for-byte what it was, and no route edits or deletes a version
    expect((await call("GET", `${P}/${p.id}/versions/1`, A)).body).toEqual(v1Before);
    expect((await call("PUT", `${P}/${p.id}/versions/1`, A, { template: "edited" })).status).toBe(404);
    expect((await call("DELETE", `${P}/${p.id}/versions/1`, A)).status).toBe(404);
    expect((await call("GET", `${P}/${p.id}/versions/1`, A)).body).toEqual(v1Before);
    expectError(await call("POST", `${P}/${p.id}/rollback`, A, { version: 42 }), 404, "not_found");
    expectError(await call("POST", `${P}/${p.id}/rollback`, A, {}), 400, "validation_error", "version");
    expectError(await call("POST", `${P}/${crypto.randomUUID()}/rollback`, A, { version: 1 }), 404, "not_found");
  });
});

describe("status, duplicate, delete", () => {
  test("status moves: DRAFT<->PUBLISHED, ->ARCHIVED, ARCHIVED->DRAFT only", async () => {
    const p = await create({ name: "Lifecycle", template: "x" });
    const move = (status: string) => call("PUT", `${P}/${p.id}`, A, { status });
    expect((await move("PUBLISHED")).body.status).toBe("PUBLISHED");
    expect((await move("PUBLISHED")).status).toBe(200); // same status: no-op
    // an update that does not name a status keeps it
    expect((await call("PUT", `${P}/${p.id}`, A, { template: "y" })).body).toMatchObject({ status: "PUBLISHED", currentVersion: 2 });
    expect((await move("DRAFT")).body.status).toBe("DRAFT");
    expect((await move("ARCHIVED")).body.status).toBe("ARCHIVED");
    expectError(await move("PUBLISHED"), 400, "invalid_request_error", "ARCHIVED to PUBLISHED");
    expect((await move("DRAFT")).body.status).toBe("DRAFT");
    expect((await create({ name: "Born published", template: "x", status: "PUBLISHED" })).status).toBe("PUBLISHED");
  });

  test("duplicate copies the current template into a new DRAFT prompt at version 1", async () => {
    const f = (await call("POST", "/api/v1/folders", A, { name: "dup target" })).body.id;
    const p = await create({ name: "Original", template: "v1", tags: ["x"], model: "m", status: "PUBLISHED" });
    await call("PUT", `${P}/${p.id}`, A, { template: "v2 {{y}}" });
    const d = await call("POST", `${P}/${p.id}/duplicate`, A);
    expect(d.status).toBe(201);
    expect(d.body).toMatchObject({ name: "Original (copy)", slug: "original-copy", template: "v2 {{y}}", currentVersion: 1, status: "DRAFT", tags: ["x"], model: "m" });
    expect(d.body.id).not.toBe(p.id);
    const d2 = await call("POST", `${P}/${p.id}/duplicate`, A, { name: "Named copy", folderId: f });
    expect(d2.body).toMatchObject({ name: "Named copy", folderId: f, currentVersion: 1 });
    expect((await call("GET", `${P}/${d2.body.id}/versions`, A)).body.total).toBe(1);
    expectError(await call("POST", `${P}/${crypto.randomUUID()}/duplicate`, A, {}), 404, "not_found");
    expectError(await call("POST", `${P}/${p.id}/duplicate`, A, { folderId: crypto.randomUUID() }), 404, "not_found", "folder");
    expectError(await call("POST", `${P}/${p.id}/duplicate`, A, { name: "" }), 400, "validation_error");
  });

  test("delete removes the prompt, its versions and its runs", async () => {
    const p = await create({ name: "Doomed", template: "x {{a=1}}" });
    await call("PUT", `${P}/${p.id}`, A, { template: "y" });
    await call("POST", `${P}/${p.id}/test`, A, {});
    // through the async storage: this file also runs on PostgreSQL (test/pg/)
    const count = async (table: string) => Number((await gw.ctx.data.tenant("tenant-a").get<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE prompt_id = $id AND tenant_id = $tenant`, { id: p.id }))!.n);
    expect(await count("prompt_versions")).toBe(2);
    expect(await count("prompt_runs")).toBe(1);
    const d = await call("DELETE", `${P}/${p.id}`, A);
    expect(d).toEqual({ status: 200, body: { deleted: true, id: p.id } });
    expect(await count("prompt_versions")).toBe(0);
    expect(await count("prompt_runs")).toBe(0);
    expectError(await call("GET", `${P}/${p.id}`, A), 404, "not_found");
    expectError(await call("DELETE", `${P}/${p.id}`, A), 404, "not_found");
  });
});

describe("test / dry run / runs (a gateway double as the completer)", () => {
  test("/test and dryRun render only, never call the model, and record DRY_RUN runs", async () => {
    const p = await create({ name: "Dry", template: "Tell {{who=me}} about {{topic}}", model: "gpt-4o-mini" });
    const before = double.calls.length;
    const t1 = await call("POST", `${P}/${p.id}/test`, A, { variables: { topic: "cats" }, dryRun: false });
    expect(t1.status).toBe(200);
    expect(t1.body).toMatchObject({ renderedPrompt: "Tell me about cats", estimatedTokens: 5, response: "", usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, cacheHit: false, dryRun: true });
    const t2 = await call("POST", `${P}/${p.id}/execute`, A, { variables: { topic: "dogs", who: "you" }, dryRun: true });
    expect(t2.body).toMatchObject({ renderedPrompt: "Tell you about dogs", dryRun: true });
    expect(double.calls.length).toBe(before);
    const run = await call("GET", `${P}/${p.id}/runs/${t2.body.runId}`, A);
    expect(run.body).toMatchObject({ runId: t2.body.runId, promptId: p.id, version: 1, status: "DRY_RUN", dryRun: true, variables: { topic: "dogs", who: "you" }, renderedPrompt: "Tell you about dogs", response: null, createdBy: "alice" });
    expectError(await call("POST", `${P}/${p.id}/test`, A, { variables: {} }), 400, "validation_error", "'topic'");
    expectError(await call("POST", `${P}/${p.id}/execute`, A, {}), 400, "validation_error", "'topic'");
  });

  test("execute sends the rendered text verbatim as one user message with the chosen model and settings; run recorded", async () => {
    const p = await create({ name: "Exec", template: "Translate '{{text}}'\ninto {{lang=French}}.", model: "gpt-4o-mini", temperature: 0.2, maxTokens: 64 });
    const r = await call("POST", `${P}/${p.id}/execute`, A, { variables: { text: "good morning" } });
    expect(r.status).toBe(200);
    const rendered = "Translate 'good morning'\ninto French.";
    expect(r.body).toMatchObject({ renderedPrompt: rendered, response: `answer to ${rendered}`, cacheHit: false, dryRun: false });
    expect(r.body.usage.totalTokens).toBe(r.body.usage.promptTokens + r.body.usage.completionTokens);
    expect(Number.isInteger(r.body.durationMs)).toBe(true);
    expect(double.calls.at(-1)).toMatchObject({ tenantId: "tenant-a", model: "gpt-4o-mini", temperature: 0.2, maxTokens: 64, messages: [{ role: "user", content: rendered }] });
    // request overrides the prompt's model and settings
    await call("POST", `${P}/${p.id}/execute`, A, { variables: { text: "x" }, model: "claude-3-5-haiku", temperature: 1, maxTokens: 10 });
    expect(double.calls.at(-1)).toMatchObject({ model: "claude-3-5-haiku", temperature: 1, maxTokens: 10 });
    const run = (await call("GET", `${P}/${p.id}/runs/${r.body.runId}`, A)).body;
    expect(run).toMatchObject({ status: "COMPLETED", version: 1, model: "gpt-4o-mini", response: `answer to ${rendered}`, usage: r.body.usage, cacheHit: false, dryRun: false, error: null });
  });

  test("a PUT of model/temperature/maxTokens (no new version) is what the next execute uses; an explicit older version keeps its own settings", async () => {
    const p = await create({ name: "Settings follow PUT", template: "q {{a=1}}", model: "gpt-4o-mini", temperature: 0.1, maxTokens: 10 });
    const put = await call("PUT", `${P}/${p.id}`, A, { model: "claude-3-5-haiku-latest", temperature: 0.7, maxTokens: 99 });
    expect(put.body.currentVersion).toBe(1);
    const r = await call("POST", `${P}/${p.id}/execute`, A, {});
    expect(r.status).toBe(200);
    expect(r.body.model).toBe("claude-3-5-haiku-latest");
    expect(double.calls.at(-1)).toMatchObject({ model: "claude-3-5-haiku-latest", temperature: 0.7, maxTokens: 99 });
    // asking for the current version by number is the same as not asking
    await call("POST", `${P}/${p.id}/execute`, A, { version: 1 });
    expect(double.calls.at(-1)).toMatchObject({ model: "claude-3-5-haiku-latest", temperature: 0.7, maxTokens: 99 });
    // v2 with its own model; executing v1 explicitly uses v1's recorded settings
    await call("POST", `${P}/${p.id}/versions`, A, { template: "q2 {{a=1}}", model: "gemini-2.0-flash", temperature: 0.2 });
    await call("POST", `${P}/${p.id}/execute`, A, { version: 1 });
    expect(double.calls.at(-1)).toMatchObject({ model: "gpt-4o-mini", temperature: 0.1, maxTokens: 10, messages: [{ role: "user", content: "q 1" }] });
    await call("POST", `${P}/${p.id}/execute`, A, {});
    expect(double.calls.at(-1)).toMatchObject({ model: "gemini-2.0-flash", temperature: 0.2, maxTokens: 99, messages: [{ role: "user", content: "q2 1" }] });
    // null clears a default: no temperature/maxTokens is sent; without any model execute is a 400 (the old version's model is not used)
    const cleared = await call("PUT", `${P}/${p.id}`, A, { temperature: null, maxTokens: null });
    expect(cleared.body).toMatchObject({ model: "gemini-2.0-flash", temperature: null, maxTokens: null, currentVersion: 2 });
    await call("POST", `${P}/${p.id}/execute`, A, {});
    expect(double.calls.at(-1)!.temperature).toBeUndefined();
    expect(double.calls.at(-1)!.maxTokens).toBeUndefined();
    expect((await call("PUT", `${P}/${p.id}`, A, { model: null })).body.model).toBeNull();
    expectError(await call("POST", `${P}/${p.id}/execute`, A, {}), 400, "validation_error", "model");
    expect((await call("POST", `${P}/${p.id}/execute`, A, { model: "gpt-4o" })).status).toBe(200);
    expectError(await call("PUT", `${P}/${p.id}`, A, { name: null }), 400, "validation_error", "name");
  });

  test("execute a specific version; unknown version 404; no model 400; archived 400 but dry run works", async () => {
    const p = await create({ name: "Versions exec", template: "old {{a}}", model: "m" });
    await call("PUT", `${P}/${p.id}`, A, { template: "new {{a}}" });
    const r = await call("POST", `${P}/${p.id}/execute`, A, { variables: { a: 1 }, version: 1 });
    expect(r.body.renderedPrompt).toBe("old 1");
    expectError(await call("POST", `${P}/${p.id}/execute`, A, { version: 9 }), 404, "not_found");
    const nm = await create({ name: "No model", template: "x" });
    expectError(await call("POST", `${P}/${nm.id}/execute`, A, {}), 400, "validation_error", "model");
    await call("PUT", `${P}/${p.id}`, A, { status: "ARCHIVED" });
    expectError(await call("POST", `${P}/${p.id}/execute`, A, { variables: { a: 1 } }), 400, "invalid_request_error", "ARCHIVED");
    expect((await call("POST", `${P}/${p.id}/test`, A, { variables: { a: 1 } })).status).toBe(200);
    expectError(await call("POST", `${P}/${crypto.randomUUID()}/execute`, A, {}), 404, "not_found");
    expectError(await call("POST", `${P}/${p.id}/execute`, A, { variables: "nope" }), 400, "validation_error");
    expectError(await call("POST", `${P}/${p.id}/execute`, A, { temperature: 3 }), 400, "validation_error");
  });

  test("an upstream failure returns its error and is recorded as a FAILED run", async () => {
    const p = await create({ name: "Fails", template: "hi", model: "broken" });
    expectError(await call("POST", `${P}/${p.id}/execute`, A, {}), 502, "proxy_error", "upstream said 500");
    const runs = (await call("GET", `${P}/${p.id}/runs`, A)).body;
    expect(runs.total).toBe(1);
    expect(runs.runs[0]).toMatchObject({ status: "FAILED", error: "proxy_error: upstream said 500", response: null });
  });

  test("runs list: filters by status and version, paginates, 404s", async () => {
    const p = await create({ name: "Runs", template: "v1 {{x=0}}", model: "m" });
    for (let i = 0; i < 3; i++) await call("POST", `${P}/${p.id}/execute`, A, {});
    await call("POST", `${P}/${p.id}/test`, A, {});
    await call("PUT", `${P}/${p.id}`, A, { template: "v2", model: "broken" });
    await call("POST", `${P}/${p.id}/execute`, A, {});
    await call("POST", `${P}/${p.id}/test`, A, {});
    const all = (await call("GET", `${P}/${p.id}/runs`, A)).body;
    expect(all).toMatchObject({ total: 6, page: 1, pageSize: 20, totalPages: 1 });
    expect(all.runs[0].version).toBe(2); // newest first
    expect((await call("GET", `${P}/${p.id}/runs?status=COMPLETED`, A)).body.total).toBe(3);
    expect((await call("GET", `${P}/${p.id}/runs?status=DRY_RUN`, A)).body.total).toBe(2);
    expect((await call("GET", `${P}/${p.id}/runs?status=FAILED&version=2`, A)).body.total).toBe(1);
    expect((await call("GET", `${P}/${p.id}/runs?version=1`, A)).body.total).toBe(4);
    const page = (await call("GET", `${P}/${p.id}/runs?page=2&pageSize=4`, A)).body;
    expect(page).toMatchObject({ total: 6, page: 2, pageSize: 4, totalPages: 2 });
    expect(page.runs).toHaveLength(2);
    expectError(await call("GET", `${P}/${p.id}/runs?status=DONE`, A), 400, "validation_error");
    expectError(await call("GET", `${P}/${p.id}/runs?pageSize=101`, A), 400, "validation_error");
    expectError(await call("GET", `${P}/${p.id}/runs/${crypto.randomUUID()}`, A), 404, "not_found", "run");
    expectError(await call("GET", `${P}/${crypto.randomUUID()}/runs`, A), 404, "not_found");
  });
});

describe("tenant isolation", () => {
  test("tenant B can neither see nor touch tenant A's prompts, versions, runs or folders", async () => {
    const f = (await call("POST", "/api/v1/folders", A, { name: "A only" })).body.id;
    const p = await create({ name: "Secret of A", template: "secret {{x=1}}", folderId: f, tags: ["secret"] });
    const run = (await call("POST", `${P}/${p.id}/test`, A, {})).body.runId;
    const listB = (await call("GET", `${P}?pageSize=100&search=Secret`, B)).body;
    expect(listB.total).toBe(0);
    expect((await call("GET", `${P}?tag=secret`, B)).body.total).toBe(0);
    const paths: Array<[string, string, unknown?]> = [
      ["GET", `${P}/${p.id}`],
      ["PUT", `${P}/${p.id}`, { name: "pwned" }],
      ["DELETE", `${P}/${p.id}`],
      ["POST", `${P}/${p.id}/duplicate`, {}],
      ["GET", `${P}/${p.id}/versions`],
      ["GET", `${P}/${p.id}/versions/1`],
      ["POST", `${P}/${p.id}/versions`, { template: "pwned" }],
      ["GET", `${P}/${p.id}/diff?fromVersion=1&toVersion=1`],
      ["POST", `${P}/${p.id}/rollback`, { version: 1 }],
      ["POST", `${P}/${p.id}/execute`, { dryRun: true }],
      ["POST", `${P}/${p.id}/test`, {}],
      ["GET", `${P}/${p.id}/runs`],
      ["GET", `${P}/${p.id}/runs/${run}`],
    ];
    for (const [m, path, json] of paths) expectError(await call(m, path, B, json), 404, "not_found");
    // B cannot file a prompt into A's folder
    expectError(await call("POST", P, B, { name: "x", template: "x", folderId: f }), 404, "not_found", "folder");
    // nor move or duplicate its own prompt into A's folder, nor filter by it
    const mine = (await call("POST", P, B, { name: "B's own", template: "b" })).body;
    expectError(await call("PUT", `${P}/${mine.id}`, B, { folderId: f }), 404, "not_found", "folder");
    expectError(await call("POST", `${P}/${mine.id}/duplicate`, B, { folderId: f }), 404, "not_found", "folder");
    expect((await call("GET", `${P}?folderId=${f}`, B)).body.total).toBe(0);
    expect((await call("GET", `${P}/${mine.id}`, B)).body.folderId).toBeNull();
    // B's POST versions / rollback attempts above added nothing to A's prompt
    expect((await call("GET", `${P}/${p.id}/versions?pageSize=100`, A)).body.total).toBe(1);
    // A's prompt is intact
    const still = (await call("GET", `${P}/${p.id}`, A)).body;
    expect(still).toMatchObject({ name: "Secret of A", currentVersion: 1 });
    expect((await call("GET", `${P}/${p.id}/runs`, A)).body.total).toBe(1);
  });
});
