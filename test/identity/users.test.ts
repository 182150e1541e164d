/** /api/v1/users over HTTP: CRUD, validation, search, soft delete, isolation, permissions. */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, uuid, type IdentityEnv } from "./helpers";

let env: IdentityEnv;
const U = "/api/v1/users";
beforeAll(async () => (env = await startIdentity()));
afterAll(() => env.gw.stop());

describe("users", () => {
  test("create with every field (201), get, update, list, soft delete", async () => {
    const { call, A } = env;
    const r = await call("POST", U, A, { email: "Ada@Example.com", name: "Ada Lovelace", external_id: "ext-1", identity_provider: "okta", metadata: { dept: "math" } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email: "Ada@Example.com",
      name: "Ada Lovelace",
      external_id: "ext-1",
      identity_provider: "okta",
      metadata: { dept: "math" },
      status: "ACTIVE",
      created_at: expect.any(String),
      updated_at: expect.any(String),
      deleted_at: null,
    });
    const id = r.body.id;
    expect((await call("GET", `${U}/${id}`, A)).body).toEqual(r.body);
    const up = await call("PUT", `${U}/${id}`, A, { status: "SUSPENDED", name: null });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ id, status: "SUSPENDED", name: null, email: "Ada@Example.com", external_id: "ext-1" });
    const viewer = "00000000-0000-4000-8000-000000000003";
    expect((await call("POST", `${U}/${id}/roles`, A, { roleId: viewer })).status).toBe(201);
    const del = await call("DELETE", `${U}/${id}`, A);
    expect(del).toMatchObject({ status: 200, body: { deleted: true, id } });
    // doc3 §3: the record is kept with deleted_at (only lists exclude it) — a single get still shows it
    const gone = await call("GET", `${U}/${id}`, A);
    expect(gone.status).toBe(200);
    expect(Date.parse(gone.body.deleted_at)).not.toBeNaN();
    expect(gone.body).toMatchObject({ id, email: "Ada@Example.com", status: "SUSPENDED" });
    expect((await call("GET", U, A)).body.users.some((u: any) => u.id === id)).toBe(false);
    expectError(await call("GET", `${U}/${id}`, env.B), 404, "not_found");
    // "role assignments not removed": still listed for the deleted user
    expect((await call("GET", `${U}/${id}/roles`, A)).body.assignments.map((a: any) => a.roleId)).toEqual([viewer]);
    expectError(await call("PUT", `${U}/${id}`, A, { name: "x" }), 404, "not_found");
    expectError(await call("DELETE", `${U}/${id}`, A), 404, "not_found");
    // the address is free again once the user is deleted
    expect((await call("POST", U, A, { email: "ada@example.com" })).status).toBe(201);
  });

  test("duplicate email (case-insensitive) is 409; the same email in another workspace is fine", async () => {
    const { call, A, B } = env;
    expect((await call("POST", U, A, { email: "dup@example.com" })).status).toBe(201);
    expectError(await call("POST", U, A, { email: "DUP@example.COM" }), 409, "conflict", "already exists");
    expect((await call("POST", U, B, { email: "dup@example.com" })).status).toBe(201);
    const other = (await call("POST", U, A, { email: "other@example.com" })).body;
    expectError(await call("PUT", `${U}/${other.id}`, A, { email: "Dup@Example.com" }), 409, "conflict");
  });

  test("list: page/page_size envelope, status filter, case-insensitive search on email or name", async () => {
    const t = await env.gw.token("tenant-list", ["WorkspaceAdmin"]);
    const { call } = env;
    for (let i = 0; i < 5; i++) await call("POST", U, t, { email: `user${i}@corp.example`, name: i === 3 ? "Zoë Ünal" : `User ${i}`, status: i % 2 ? "SUSPENDED" : "ACTIVE" });
    const all = (await call("GET", U, t)).body;
    expect(all).toMatchObject({ total: 5, page: 1, page_size: 20, total_pages: 1 });
    expect(all.users.map((u: any) => u.email)).toEqual([0, 1, 2, 3, 4].map((i) => `user${i}@corp.example`));
    const p2 = (await call("GET", `${U}?page=2&page_size=2`, t)).body;
    expect(p2).toMatchObject({ total: 5, page: 2, page_size: 2, total_pages: 3 });
    expect(p2.users.map((u: any) => u.email)).toEqual(["user2@corp.example", "user3@corp.example"]);
    expect((await call("GET", `${U}?status=SUSPENDED`, t)).body.users.map((u: any) => u.email)).toEqual(["user1@corp.example", "user3@corp.example"]);
    expect((await call("GET", `${U}?search=ZOË`, t)).body.users.map((u: any) => u.email)).toEqual(["user3@corp.example"]);
    expect((await call("GET", `${U}?search=USER4%40CORP`, t)).body.total).toBe(1);
    expect((await call("GET", `${U}?page_size=100`, t)).status).toBe(200);
    expectError(await call("GET", `${U}?page_size=101`, t), 400, "validation_error", "page_size");
    expectError(await call("GET", `${U}?page_size=0`, t), 400, "validation_error");
    expectError(await call("GET", `${U}?status=DELETED`, t), 400, "validation_error", "status");
    const gone = all.users[0].id;
    await call("DELETE", `${U}/${gone}`, t);
    expect((await call("GET", U, t)).body.users.some((u: any) => u.id === gone)).toBe(false);
  });

  test("validation: email required and valid, limits, enums", async () => {
    const { call, A } = env;
    // a nullable field's 400 names its limit (TypeBox alone says "Expected union value")
    expectError(await call("POST", U, env.A, { email: "long-name@example.com", name: "n".repeat(257) }), 400, "validation_error", "name': Expected a string of at most 256 characters or null");
    expectError(await call("POST", U, A, {}), 400, "validation_error", "email");
    expectError(await call("POST", U, A, { email: "not-an-email" }), 400, "validation_error", "email");
    expectError(await call("POST", U, A, { email: "a b@example.com" }), 400, "validation_error", "email");
    expectError(await call("POST", U, A, { email: "x@example.com", status: "DELETED" }), 400, "validation_error", "status");
    expectError(await call("POST", U, A, { email: "x@example.com", metadata: [1] }), 400, "validation_error", "metadata");
    expect((await call("POST", U, A, { email: "n256@example.com", name: "n".repeat(256) })).status).toBe(201);
    expectError(await call("POST", U, A, { email: "n257@example.com", name: "n".repeat(257) }), 400, "validation_error", "name");
    const local = "l".repeat(64);
    const long = `${local}@${"d".repeat(320 - 64 - 1 - 4)}.com`;
    expect(long.length).toBe(320);
    expect((await call("POST", U, A, { email: long })).status).toBe(201);
    expectError(await call("POST", U, A, { email: "x" + long }), 400, "validation_error", "email");
    expectError(await call("GET", `${U}/not-a-uuid`, A), 400, "validation_error");
    expectError(await call("GET", `${U}/${uuid()}`, A), 404, "not_found");
  });

  test("tenant isolation: B never sees or changes A's users", async () => {
    const { call, A, B } = env;
    const a = (await call("POST", U, A, { email: "private@a.example" })).body;
    expectError(await call("GET", `${U}/${a.id}`, B), 404, "not_found");
    expectError(await call("PUT", `${U}/${a.id}`, B, { status: "SUSPENDED" }), 404, "not_found");
    expectError(await call("DELETE", `${U}/${a.id}`, B), 404, "not_found");
    expect((await call("GET", `${U}?search=private`, B)).body.total).toBe(0);
    expect((await call("GET", `${U}/${a.id}`, A)).body.status).toBe("ACTIVE");
  });

  test("malformed JSON and a body that is not an object are 400 validation_error, doc3 §7's one 400 type", async () => {
    for (const body of ['{"email":', "[1]", '"x"']) {
      const r = await env.gw.api(U, { method: "POST", token: env.A, headers: { "content-type": "application/json" }, body });
      expect(r.status).toBe(400);
      const j: any = await r.json();
      expect(j).toEqual({ error: { type: "validation_error", message: expect.any(String) } });
    }
  });

  test("401 without a token, 403 without WorkspaceAdmin, both before validation", async () => {
    const { call, none } = env;
    expectError(await call("GET", U, undefined), 401, "authentication_error");
    expectError(await call("POST", U, undefined, { email: 5 }), 401, "authentication_error");
    expectError(await call("GET", U, none), 403, "authorization_error", "WorkspaceAdmin");
    expectError(await call("POST", U, none, { email: 5 }), 403, "authorization_error");
    expectError(await call("DELETE", `${U}/${uuid()}`, none), 403, "authorization_error");
  });
});
