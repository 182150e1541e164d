/** Budget periods in UTC: a day from midnight, an ISO week from Monday 00:00, a calendar month from the 1st. */
import type { BudgetPeriod } from "../types";

export function periodOf(period: BudgetPeriod, nowMs: number): { start: number; end: number } {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  if (period === "monthly") return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
  if (period === "daily") return { start: Date.UTC(y, m, day), end: Date.UTC(y, m, day + 1) };
  const sinceMonday = (d.getUTCDay() + 6) % 7;
  return { start: Date.UTC(y, m, day - sinceMonday), end: Date.UTC(y, m, day - sinceMonday + 7) };
}

/** USD to cents, kept to a millionth of a cent (small requests cost fractions of a cent). */
export const centsOf = (usd: number) => Math.round(usd * 100 * 1e6) / 1e6;
