/**
 * The spec's list conventions, as helpers each domain applies with its own limits:
 *   page/pageSize  -> {<list>, total, page, pageSize, totalPages}      (pageQuery + pageEnvelope)
 *   page/page_size -> {<list>, total, page, page_size, total_pages}    (snakePageQuery + snakePageEnvelope)
 *   limit/offset                                                      (limitOffsetQuery)
 * Query schemas coerce strings; limits are enforced by the schema (400 validation_error).
 * `page` and `offset` are capped (MAX_PAGE, MAX_OFFSET) so that an absurd value is a 400, not an
 * offset SQLite cannot bind (a 500).
 */
import { t } from "elysia";

/** The usual maximum page size (doc1 §8, doc2, doc3 §8). */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;
/** Largest accepted page number / offset (2^31 - 1): far beyond any real list, safe for SQLite and JS. */
export const MAX_PAGE = 2_147_483_647;
export const MAX_OFFSET = 2_147_483_647;

const pageParam = () => t.Optional(t.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 }));
const sizeParam = (max: number, def: number) => t.Optional(t.Integer({ minimum: 1, maximum: max, default: Math.min(def, max) }));

/** `page`/`pageSize` query properties with a maximum page size. */
export const pageQuery = (maxPageSize = MAX_PAGE_SIZE, defaultPageSize = DEFAULT_PAGE_SIZE) => ({
  page: pageParam(),
  pageSize: sizeParam(maxPageSize, defaultPageSize),
});

/** `page`/`page_size` query properties. */
export const snakePageQuery = (maxPageSize = MAX_PAGE_SIZE, defaultPageSize = DEFAULT_PAGE_SIZE) => ({
  page: pageParam(),
  page_size: sizeParam(maxPageSize, defaultPageSize),
});

export const limitOffsetQuery = (defaultLimit: number, maxLimit: number) => ({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: maxLimit, default: defaultLimit })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 })),
});

export interface Page {
  page: number;
  pageSize: number;
  limit: number;
  offset: number;
}

export function pageOf(q: { page?: number; pageSize?: number; page_size?: number }): Page {
  const page = q.page ?? 1;
  const pageSize = q.pageSize ?? q.page_size ?? DEFAULT_PAGE_SIZE;
  return { page, pageSize, limit: pageSize, offset: (page - 1) * pageSize };
}

const totalPages = (total: number, p: Page) => Math.ceil(total / p.pageSize);

export function pageEnvelope<K extends string, T>(key: K, items: T[], total: number, p: Page) {
  return { [key]: items, total, page: p.page, pageSize: p.pageSize, totalPages: totalPages(total, p) } as { [k in K]: T[] } & {
    total: number;
    page: number;
    pageSize: number;
    totalPages: number;
  };
}

/** The envelope of lists queried with `page_size`, spelled the same way. */
export function snakePageEnvelope<K extends string, T>(key: K, items: T[], total: number, p: Page) {
  return { [key]: items, total, page: p.page, page_size: p.pageSize, total_pages: totalPages(total, p) } as { [k in K]: T[] } & {
    total: number;
    page: number;
    page_size: number;
    total_pages: number;
  };
}

/** One page of a list and the total it was cut from (what stores answer). */
export interface Listed<T> {
  items: T[];
  total: number;
}
