import { describe, expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { limitOffsetQuery, pageOf, pageEnvelope, snakePageEnvelope, snakePageQuery, pageQuery, MAX_PAGE_SIZE, MAX_PAGE, MAX_OFFSET } from "../src/core/pagination";
import { DOC1 } from "../src/core/errors";
import { testKernel } from "./helpers/kernel";

const PageQuery = pageQuery();
const SnakePageQuery = snakePageQuery();
/** doc3 roles allow pages of up to 1000 */
const MAX_ROLE_PAGE_SIZE = 1000;

describe("page maths", () => {
  test("defaults: page 1, pageSize 20", () => {
    expect(pageOf({})).toEqual({ page: 1, pageSize: 20, limit: 20, offset: 0 });
  });
  test("offset = (page - 1) * pageSize; snake_case page_size too", () => {
    expect(pageOf({ page: 3, pageSize: 10 })).toEqual({ page: 3, pageSize: 10, limit: 10, offset: 20 });
    expect(pageOf({ page: 2, page_size: 50 })).toEqual({ page: 2, pageSize: 50, limit: 50, offset: 50 });
  });
  test("envelope: totalPages rounds up, 0 items -> 0 pages", () => {
    expect(pageEnvelope("prompts", [1, 2], 41, pageOf({ page: 3, pageSize: 20 }))).toEqual({ prompts: [1, 2], total: 41, page: 3, pageSize: 20, totalPages: 3 });
    expect(pageEnvelope("items", [], 0, pageOf({}))).toEqual({ items: [], total: 0, page: 1, pageSize: 20, totalPages: 0 });
    expect(pageEnvelope("items", [], 40, pageOf({ pageSize: 20 })).totalPages).toBe(2);
  });
});

describe("query schemas (limits enforced by the schema -> 400 validation_error)", () => {
  const { kernel } = testKernel();
  kernel.register({ prefix: "/", envelope: DOC1, auth: "public" });
  const routes = new Elysia()
    .use(kernel.plugin())
    .get("/p", ({ query }) => pageOf(query), { query: t.Object(PageQuery) })
    .get("/s", ({ query }) => pageOf(query), { query: t.Object(SnakePageQuery) })
    .get("/m", ({ query }) => query, { query: t.Object(limitOffsetQuery(50, 200)) })
    .get("/roles", ({ query }) => snakePageEnvelope("roles", [], 0, pageOf(query)), { query: t.Object(snakePageQuery(MAX_ROLE_PAGE_SIZE)) })
    .get("/small", ({ query }) => pageOf(query), { query: t.Object(pageQuery(10, 50)) });
  kernel.install(routes, {});
  const get = async (path: string) => {
    const r = await kernel.fetch(new Request(`http://localhost${path}`));
    return { status: r.status, body: (await r.json()) as any };
  };

  test("strings are coerced and defaults applied", async () => {
    expect((await get("/p?page=2&pageSize=5")).body).toEqual({ page: 2, pageSize: 5, limit: 5, offset: 5 });
    expect((await get("/p")).body).toEqual({ page: 1, pageSize: 20, limit: 20, offset: 0 });
    expect((await get("/m")).body).toEqual({ limit: 50, offset: 0 });
  });
  test(`pageSize above ${MAX_PAGE_SIZE}, page 0, non-numbers -> 400 validation_error`, async () => {
    for (const q of [`/p?pageSize=${MAX_PAGE_SIZE + 1}`, "/p?page=0", "/p?page=abc", "/p?pageSize=0", `/s?page_size=${MAX_PAGE_SIZE + 1}`, "/m?limit=201", "/m?offset=-1", "/m?limit=0"]) {
      const r = await get(q);
      expect(`${q} -> ${r.status}`).toBe(`${q} -> 400`);
      expect(r.body.error.type).toBe("validation_error");
    }
    expect((await get(`/p?pageSize=${MAX_PAGE_SIZE}`)).status).toBe(200);
    expect((await get("/m?limit=200")).status).toBe(200);
  });
  test("doc3 lists: page_size echoed as page_size/total_pages; roles allow 1000 per page", async () => {
    expect((await get("/roles?page_size=1000")).body).toEqual({ roles: [], total: 0, page: 1, page_size: 1000, total_pages: 0 });
    expect((await get("/roles?page_size=1001")).status).toBe(400);
    expect((await get("/roles")).body.page_size).toBe(20);
    expect(snakePageEnvelope("users", ["u"], 41, pageOf({ page: 2, page_size: 20 }))).toEqual({ users: ["u"], total: 41, page: 2, page_size: 20, total_pages: 3 });
  });
  test("a list's own maximum and default page size", async () => {
    expect((await get("/small")).body.pageSize).toBe(10); // the default never exceeds the maximum
    expect((await get("/small?pageSize=10")).status).toBe(200);
    expect((await get("/small?pageSize=11")).body.error.type).toBe("validation_error");
  });
  test("absurd page numbers and offsets are 400, not an offset the database cannot bind", async () => {
    for (const q of [`/p?page=${MAX_PAGE + 1}`, "/p?page=99999999999999999999", `/m?offset=${MAX_OFFSET + 1}`, "/m?offset=1e30"]) {
      const r = await get(q);
      expect(`${q} -> ${r.status} ${r.body.error?.type}`).toBe(`${q} -> 400 validation_error`);
    }
    expect((await get(`/p?page=${MAX_PAGE}&pageSize=${MAX_PAGE_SIZE}`)).body.offset).toBe((MAX_PAGE - 1) * MAX_PAGE_SIZE);
    expect(Number.isSafeInteger((MAX_PAGE - 1) * MAX_ROLE_PAGE_SIZE)).toBe(true);
  });
});
