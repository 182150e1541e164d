import { describe, expect, test, afterAll } from "bun:test";
import { Elysia, t } from "elysia";
import { PageQuery, SnakePageQuery, limitOffsetQuery, pageOf, pageEnvelope, MAX_PAGE_SIZE } from "../src/core/pagination";
import { mapError } from "../src/core/http";

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
  const app = new Elysia()
    .onError(({ code, error, request }) => mapError(code, error, request))
    .get("/p", ({ query }) => pageOf(query), { query: t.Object(PageQuery) })
    .get("/s", ({ query }) => pageOf(query), { query: t.Object(SnakePageQuery) })
    .get("/m", ({ query }) => query, { query: t.Object(limitOffsetQuery(50, 200)) });
  const get = async (path: string) => {
    const r = await app.handle(new Request(`http://localhost${path}`));
    return { status: r.status, body: (await r.json()) as any };
  };
  afterAll(() => app.stop?.());

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
});
