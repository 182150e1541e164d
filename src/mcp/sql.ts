/** The list queries every MCP store runs: optional filters on top of the tenant, a count and one page. */
import type { AsyncTenantDb } from "../storage/async";
import { likePattern, type Dialect } from "../storage/dialect";
import type { Page, Listed } from "../core/pagination";

/** [SQL condition, parameter name, value]: skipped when the value is undefined or "" (an absent filter). */
export type Filter = [clause: string, name: string, value: string | number | undefined];

export function whereOf(filters: Filter[]): { w: string; params: Record<string, string | number> } {
  const where = ["tenant_id = $tenant"];
  const params: Record<string, string | number> = {};
  for (const [clause, name, value] of filters)
    if (value !== undefined && value !== "") {
      where.push(clause);
      params[name] = value;
    }
  return { w: where.join(" AND "), params };
}

export async function listPage<R, T>(db: AsyncTenantDb, table: string, filters: Filter[], order: string, p: Page, map: (r: R) => T): Promise<Listed<T>> {
  const { w, params } = whereOf(filters);
  const total = (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${w}`, params))!.n;
  const items = (await db.all<R>(`SELECT * FROM ${table} WHERE ${w} ORDER BY ${order} LIMIT $limit OFFSET $offset`, { ...params, limit: p.limit, offset: p.offset })).map(map);
  return { items, total };
}

/**
 * A "name contains" filter, case-insensitive on both backends (SQLite's LIKE is case-insensitive
 * for ASCII, PostgreSQL's is not: the dialect's ciLike).
 */
export const containsFilter = (d: Dialect, column: string, name: string, value: string | undefined): Filter => [d.ciLike(column, `$${name}`), name, value ? likePattern(value) : undefined];

/** `b` as a 1/0 filter value (undefined stays absent). */
export const flag = (b: boolean | undefined) => (b === undefined ? undefined : b ? 1 : 0);

/** a boolean condition as 1/0 (PostgreSQL neither sums nor adds booleans) */
export const asInt = (cond: string) => `(CASE WHEN ${cond} THEN 1 ELSE 0 END)`;
