/** /api/v1/folders over HTTP: tree, children lists, get/update/delete rules, validation, isolation. */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import type { TestGateway } from "../helpers/gateway";
import { startTwoTenants, apiCaller, expectError } from "./helpers";

let gw: TestGateway;
let A: string;
let B: string;
const F = "/api/v1/folders";

beforeAll(async () => ({ gw, A, B } = await startTwoTenants()));
afterAll(() => gw.stop());

const call = apiCaller(() => gw);
async function folder(name: string, parentId?: string | null, token = A) {
  const r = await call("POST", F, token, { name, parentId });
  expect(r.status).toBe(201);
  return r.body;
}

describe("folders", () => {
  test("create root and child folders (201); get; list root and children with the page envelope", async () => {
    const t = await gw.token("tenant-tree", ["ManageConfig", "ViewMetrics", "ViewLogs"], "carol");
    const root = (await call("POST", F, t, { name: "Marketing", parentId: null })).body;
    expect(root).toMatchObject({ name: "Marketing", parentId: null, createdBy: "carol" });
    expect(root.id).toMatch(/^[0-9a-f-]{36}$/);
    const other = (await call("POST", F, t, { name: "Alpha" })).body;
    const kids = [];
    for (const n of ["c", "a", "b"]) kids.push((await call("POST", F, t, { name: n, parentId: root.id })).body);
    expect((await call("GET", `${F}/${kids[0].id}`, t)).body).toEqual(kids[0]);
    const roots = (await call("GET", F, t)).body;
    expect(roots).toMatchObject({ total: 2, page: 1, pageSize: 20, totalPages: 1 });
    expect(roots.folders.map((f: any) => f.name)).toEqual(["Alpha", "Marketing"]);
    const children = (await call("GET", `${F}?parentId=${root.id}`, t)).body;
    expect(children.folders.map((f: any) => f.name)).toEqual(["a", "b", "c"]);
    const p2 = (await call("GET", `${F}?parentId=${root.id}&page=2&pageSize=2`, t)).body;
    expect(p2).toMatchObject({ total: 3, page: 2, pageSize: 2, totalPages: 2 });
    expect(p2.folders.map((f: any) => f.name)).toEqual(["c"]);
    expect((await call("GET", `${F}?parentId=${other.id}`, t)).body).toMatchObject({ folders: [], total: 0, totalPages: 0 });
  });

  test("validation and 404s", async () => {
    expectError(await call("POST", F, A, {}), 400, "validation_error", "name");
    expectError(await call("POST", F, A, { name: "" }), 400, "validation_error", "name");
    expectError(await call("POST", F, A, { name: "n".repeat(257) }), 400, "validation_error", "name");
    expectError(await call("POST", F, A, { name: "x", parentId: "nope" }), 400, "validation_error", "parentId");
    expectError(await call("POST", F, A, { name: "x", parentId: crypto.randomUUID() }), 404, "not_found", "folder");
    expectError(await call("GET", `${F}?parentId=nope`, A), 400, "validation_error");
    expectError(await call("GET", `${F}?parentId=${crypto.randomUUID()}`, A), 404, "not_found");
    expectError(await call("GET", `${F}?pageSize=101`, A), 400, "validation_error");
    expectError(await call("GET", `${F}/${crypto.randomUUID()}`, A), 404, "not_found");
    expectError(await call("PUT", `${F}/${crypto.randomUUID()}`, A, { name: "x" }), 404, "not_found");
    expectError(await call("DELETE", `${F}/${crypto.randomUUID()}`, A), 404, "not_found");
    expectError(await call("GET", F, undefined), 401, "authentication_error");
  });

  test("rename and move; moving under itself or a descendant is 400; moving to root with null", async () => {
    const a = await folder("A");
    const b = await folder("B", a.id);
    const c = await folder("C", b.id);
    const other = await folder("Other");
    const renamed = await call("PUT", `${F}/${a.id}`, A, { name: "A2" });
    expect(renamed.body).toMatchObject({ id: a.id, name: "A2", parentId: null });
    expectError(await call("PUT", `${F}/${a.id}`, A, { parentId: a.id }), 400, "validation_error", "own parent");
    expectError(await call("PUT", `${F}/${a.id}`, A, { parentId: b.id }), 400, "validation_error", "descendants");
    expectError(await call("PUT", `${F}/${a.id}`, A, { parentId: c.id }), 400, "validation_error", "descendants");
    expectError(await call("PUT", `${F}/${a.id}`, A, { parentId: crypto.randomUUID() }), 404, "not_found");
    expectError(await call("PUT", `${F}/${a.id}`, A, { name: "" }), 400, "validation_error");
    const moved = await call("PUT", `${F}/${c.id}`, A, { parentId: other.id });
    expect(moved.body).toMatchObject({ parentId: other.id, name: "C" });
    // now A may go under C (C is no longer A's descendant)
    expect((await call("PUT", `${F}/${a.id}`, A, { parentId: c.id })).body.parentId).toBe(c.id);
    const toRoot = await call("PUT", `${F}/${a.id}`, A, { parentId: null });
    expect(toRoot.body.parentId).toBeNull();
  });

  test("delete: 400 while it holds prompts or subfolders; 200 {deleted,id} when empty", async () => {
    const parent = await folder("Parent");
    const child = await folder("Child", parent.id);
    expectError(await call("DELETE", `${F}/${parent.id}`, A), 400, "invalid_request_error", "1 subfolder");
    const p = (await call("POST", "/api/v1/prompts", A, { name: "filed", template: "x", folderId: child.id })).body;
    expectError(await call("DELETE", `${F}/${child.id}`, A), 400, "invalid_request_error", "1 prompt");
    await call("PUT", `/api/v1/prompts/${p.id}`, A, { folderId: null });
    expect(await call("DELETE", `${F}/${child.id}`, A)).toEqual({ status: 200, body: { deleted: true, id: child.id } });
    expect(await call("DELETE", `${F}/${parent.id}`, A)).toEqual({ status: 200, body: { deleted: true, id: parent.id } });
    expectError(await call("GET", `${F}/${parent.id}`, A), 404, "not_found");
  });

  test("tenant isolation", async () => {
    const mine = await folder("Mine");
    await folder("Kid", mine.id);
    expect((await call("GET", F, B)).body.folders.some((f: any) => f.id === mine.id)).toBe(false);
    expectError(await call("GET", `${F}/${mine.id}`, B), 404, "not_found");
    expectError(await call("GET", `${F}?parentId=${mine.id}`, B), 404, "not_found");
    expectError(await call("PUT", `${F}/${mine.id}`, B, { name: "pwned" }), 404, "not_found");
    expectError(await call("DELETE", `${F}/${mine.id}`, B), 404, "not_found");
    expectError(await call("POST", F, B, { name: "intruder", parentId: mine.id }), 404, "not_found");
    const theirs = await folder("Theirs", null, B);
    expectError(await call("PUT", `${F}/${theirs.id}`, B, { parentId: mine.id }), 404, "not_found");
    expect((await call("GET", `${F}/${mine.id}`, A)).body.name).toBe("Mine");
  });
});
