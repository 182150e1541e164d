/**
 * The spec's list conventions:
 *   page/pageSize (doc1 prompts, versions, runs, folders; doc2 MCP lists; doc3 SSO) -> {items, total, page, pageSize, totalPages}
 *   page/page_size (doc3 lists that spell it so)
 *   limit/offset (doc1 Memory API)
 * Query schemas coerce strings; limits are enforced by the schema (400 validation_error).
 */
import { t } from "elysia";

export const MAX_PAGE_SIZE = 100;

export const PageQuery = {
  page: t.Optional(t.Integer({ minimum: 1, default: 1 })),
  pageSize: t.Optional(t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: 20 })),
};

export const SnakePageQuery = {
  page: t.Optional(t.Integer({ minimum: 1, default: 1 })),
  page_size: t.Optional(t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: 20 })),
};

export const limitOffsetQuery = (defaultLimit: number, maxLimit: number) => ({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: maxLimit, default: defaultLimit })),
  offset: t.Optional(t.Integer({ minimum: 0, default: 0 })),
});

export interface Page {
  page: number;
  pageSize: number;
  limit: number;
  offset: number;
}

export function pageOf(q: { page?: number; pageSize?: number; page_size?: number }): Page {
  const page = q.page ?? 1;
  const pageSize = q.pageSize ?? q.page_size ?? 20;
  return { page, pageSize, limit: pageSize, offset: (page - 1) * pageSize };
}

export function pageEnvelope<K extends string, T>(key: K, items: T[], total: number, p: Page) {
  return {
    [key]: items,
    total,
    page: p.page,
    pageSize: p.pageSize,
    totalPages: Math.ceil(total / p.pageSize),
  } as { [k in K]: T[] } & { total: number; page: number; pageSize: number; totalPages: number };
}
