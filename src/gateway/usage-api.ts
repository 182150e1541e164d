/**
 * GET /api/v1/usage (ViewMetrics): the caller's tenant's usage and cost from `usage_records` —
 * totals over [from, to) and breakdowns by model, provider, API key, day and deployment
 * (`group_by`, comma-separated; default model,provider,key,day). Every number is a sum over the
 * tenant's proxied requests (GatewayService.complete calls included): requests, cache hits /
 * misses / bypassed, hit ratio = hits / (hits + misses), tokens, list-price cost of what went
 * upstream and the list-price cost the cache saved. Buffered records are flushed before reading.
 *
 * Tokens: `inputTokens` / `outputTokens` / `totalTokens` count every answer served (cache hits
 * included, as before); the split says where they came from — `cacheHit*Tokens` were served from
 * the cache (nothing bought), `upstream*Tokens` were bought from a provider (misses and bypasses).
 * Prices: a model with no known list price (prices.ts) is charged nothing; its requests are counted
 * in `unpricedRequests` / `unpricedTokens` and `costStatus` says whether `costUsd` /
 * `costSavedUsd` cover every request (`known`), some (`partial`) or none that had tokens (`unknown`).
 */
import { t } from "elysia";
import type { Kernel } from "../core/kernel";
import { ApiError, DOC1 } from "../core/errors";
import type { AsyncStorage } from "../storage/async";
import { examples } from "../core/openapi";

export const GROUPS = ["model", "provider", "key", "day", "deployment"] as const;
export type UsageGroup = (typeof GROUPS)[number];

const COLUMN: Record<UsageGroup, string> = {
  model: "model",
  provider: "provider",
  key: "key_id",
  day: "substr(created_at, 1, 10)",
  deployment: "deployment",
};

const DAY_MS = 86_400_000;
/** the default range: the 30 days before now */
export const DEFAULT_RANGE_DAYS = 30;

export interface UsageTotals {
  requests: number;
  cacheHits: number;
  cacheMisses: number;
  cacheBypassed: number;
  hitRatio: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  costUsd: number;
  costSavedUsd: number;
  cacheHitInputTokens: number;
  cacheHitOutputTokens: number;
  cacheHitTokens: number;
  upstreamInputTokens: number;
  upstreamOutputTokens: number;
  upstreamTokens: number;
  unpricedRequests: number;
  unpricedTokens: number;
  costStatus: CostStatus;
}

/** known: every request with tokens had a list price; unknown: none had; partial: some had */
export type CostStatus = "known" | "partial" | "unknown";

export interface UsageReport {
  from: string;
  to: string;
  totals: UsageTotals;
  breakdowns: Partial<Record<UsageGroup, Array<UsageTotals & { key: string | null }>>>;
}

/** a count of the rows where `cond` holds (SQLite sums booleans, PostgreSQL does not: one text for both) */
const countIf = (cond: string) => `COALESCE(SUM(CASE WHEN ${cond} THEN 1 ELSE 0 END), 0)`;

const SUMS = `COUNT(*) AS requests,
  ${countIf("cache_status = 'HIT'")} AS hits,
  ${countIf("cache_status = 'MISS'")} AS misses,
  ${countIf("cache_status = 'BYPASS'")} AS bypassed,
  COALESCE(SUM(input_tokens), 0) AS input,
  COALESCE(SUM(output_tokens), 0) AS output,
  COALESCE(SUM(cost_usd), 0) AS cost,
  COALESCE(SUM(cost_saved_usd), 0) AS saved,
  COALESCE(SUM(CASE WHEN cache_status = 'HIT' THEN input_tokens END), 0) AS hit_input,
  COALESCE(SUM(CASE WHEN cache_status = 'HIT' THEN output_tokens END), 0) AS hit_output,
  ${countIf("input_tokens + output_tokens > 0")} AS with_tokens,
  ${countIf("priced = 0")} AS unpriced,
  COALESCE(SUM(CASE WHEN priced = 0 THEN input_tokens + output_tokens END), 0) AS unpriced_tokens`;

interface SumRow {
  requests: number;
  hits: number;
  misses: number;
  bypassed: number;
  input: number;
  output: number;
  cost: number;
  saved: number;
  hit_input: number;
  hit_output: number;
  with_tokens: number;
  unpriced: number;
  unpriced_tokens: number;
}

/** USD kept to a millionth (sums of floats otherwise print 0.30000000000000004) */
const usd = (v: number) => Math.round(v * 1e6) / 1e6;

function totalsOf(r: SumRow): UsageTotals {
  return {
    requests: r.requests,
    cacheHits: r.hits,
    cacheMisses: r.misses,
    cacheBypassed: r.bypassed,
    hitRatio: r.hits + r.misses > 0 ? r.hits / (r.hits + r.misses) : 0,
    inputTokens: r.input,
    outputTokens: r.output,
    totalTokens: r.input + r.output,
    costUsd: usd(r.cost),
    costSavedUsd: usd(r.saved),
    cacheHitInputTokens: r.hit_input,
    cacheHitOutputTokens: r.hit_output,
    cacheHitTokens: r.hit_input + r.hit_output,
    upstreamInputTokens: r.input - r.hit_input,
    upstreamOutputTokens: r.output - r.hit_output,
    upstreamTokens: r.input + r.output - r.hit_input - r.hit_output,
    unpricedRequests: r.unpriced,
    unpricedTokens: r.unpriced_tokens,
    costStatus: r.unpriced === 0 ? "known" : r.unpriced >= r.with_tokens ? "unknown" : "partial",
  };
}

/** A timestamp or a date (YYYY-MM-DD = its midnight UTC) as ISO 8601, or a 400 naming the parameter. */
function instant(name: string, raw: string | undefined, fallback: number): string {
  if (raw === undefined || raw === "") return new Date(fallback).toISOString();
  const ok = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw);
  const ms = ok ? Date.parse(raw.length === 10 ? `${raw}T00:00:00Z` : raw) : NaN;
  if (Number.isNaN(ms)) throw new ApiError("validation_error", `query '${name}': expected an ISO 8601 date or timestamp, e.g. 2026-11-01 or 2026-11-01T12:00:00Z`);
  return new Date(ms).toISOString();
}

export class UsageQuery {
  constructor(private readonly storage: AsyncStorage, private readonly flush: (tenantId: string) => void | Promise<void>, private readonly now: () => number = Date.now) {}

  async report(tenantId: string, q: { from?: string; to?: string; group_by?: string }): Promise<UsageReport> {
    const nowMs = this.now();
    // the default end is the next millisecond: a request recorded in this millisecond is in the range
    const to = instant("to", q.to, nowMs + 1);
    const from = instant("from", q.from, Date.parse(to) - DEFAULT_RANGE_DAYS * DAY_MS);
    if (from >= to) throw new ApiError("validation_error", `query 'from' (${from}) must be before 'to' (${to})`);
    const groups = q.group_by === undefined || q.group_by === "" ? (["model", "provider", "key", "day"] as UsageGroup[]) : q.group_by.split(",").map((g) => g.trim());
    for (const g of groups)
      if (!(GROUPS as readonly string[]).includes(g)) throw new ApiError("validation_error", `query 'group_by': unknown group '${g}' (expected ${GROUPS.join(", ")})`);
    await this.flush(tenantId);
    const db = this.storage.tenant(tenantId);
    const range = "tenant_id = $tenant AND created_at >= $from AND created_at < $to";
    const totals = totalsOf((await db.get<SumRow>(`SELECT ${SUMS} FROM usage_records WHERE ${range}`, { from, to }))!);
    const breakdowns: UsageReport["breakdowns"] = {};
    for (const g of new Set(groups as UsageGroup[])) {
      const col = COLUMN[g];
      const rows = await db.all<SumRow & { k: string | null }>(
        `SELECT ${col} AS k, ${SUMS} FROM usage_records WHERE ${range} GROUP BY ${col} ORDER BY ${g === "day" ? "k ASC" : "cost DESC, requests DESC, k ASC"}`,
        { from, to },
      );
      breakdowns[g] = rows.map((r) => ({ key: r.k, ...totalsOf(r) }));
    }
    return { from, to, totals, breakdowns };
  }
}

const Totals = {
  requests: t.Integer(),
  cacheHits: t.Integer(),
  cacheMisses: t.Integer(),
  cacheBypassed: t.Integer(),
  hitRatio: t.Number(),
  inputTokens: t.Integer(),
  outputTokens: t.Integer(),
  totalTokens: t.Integer(),
  costUsd: t.Number({ description: "list-price USD of what went upstream (requests of models with no known price count 0: see costStatus)" }),
  costSavedUsd: t.Number({ description: "list-price USD the cache saved (hits of models with no known price count 0)" }),
  cacheHitInputTokens: t.Integer({ description: "input tokens of answers served from the cache (nothing bought)" }),
  cacheHitOutputTokens: t.Integer({ description: "output tokens of answers served from the cache" }),
  cacheHitTokens: t.Integer(),
  upstreamInputTokens: t.Integer({ description: "input tokens bought from providers (misses and bypasses)" }),
  upstreamOutputTokens: t.Integer({ description: "output tokens bought from providers" }),
  upstreamTokens: t.Integer(),
  unpricedRequests: t.Integer({ description: "requests with tokens whose model has no known list price: charged nothing, not in costUsd/costSavedUsd" }),
  unpricedTokens: t.Integer({ description: "tokens of those requests" }),
  costStatus: t.Union([t.Literal("known"), t.Literal("partial"), t.Literal("unknown")], { description: "whether costUsd covers every request with tokens (known), some (partial) or none (unknown)" }),
};
const Group = t.Array(t.Object({ key: t.Union([t.String(), t.Null()]), ...Totals }));

export const UsageReportSchema = t.Object({
  from: t.String(),
  to: t.String(),
  totals: t.Object(Totals),
  breakdowns: t.Object({ model: t.Optional(Group), provider: t.Optional(Group), key: t.Optional(Group), day: t.Optional(Group), deployment: t.Optional(Group) }),
});

const USAGE_TOTALS = {
  requests: 120,
  cacheHits: 48,
  cacheMisses: 72,
  cacheBypassed: 0,
  hitRatio: 0.4,
  inputTokens: 60000,
  outputTokens: 18000,
  totalTokens: 78000,
  costUsd: 0.01188,
  costSavedUsd: 0.00792,
  cacheHitInputTokens: 24000,
  cacheHitOutputTokens: 7200,
  cacheHitTokens: 31200,
  upstreamInputTokens: 36000,
  upstreamOutputTokens: 10800,
  upstreamTokens: 46800,
  unpricedRequests: 0,
  unpricedTokens: 0,
  costStatus: "known",
};
/** GET /api/v1/usage (default breakdowns) for a tenant that used one model through one key on one day */
const USAGE_EXAMPLE = {
  from: "2026-10-28T00:00:00.000Z",
  to: "2026-11-27T00:00:00.000Z",
  totals: USAGE_TOTALS,
  breakdowns: {
    model: [{ key: "gpt-4o-mini", ...USAGE_TOTALS }],
    provider: [{ key: "openai", ...USAGE_TOTALS }],
    key: [{ key: "01d88af1-3e58-40bd-ba75-1afa566cff1d", ...USAGE_TOTALS }],
    day: [{ key: "2026-11-26", ...USAGE_TOTALS }],
  },
};

export const usageRoutes = (kernel: Kernel, usage: UsageQuery) =>
  kernel.mount({ prefix: "/api/v1/usage", envelope: DOC1 }).get("", ({ principal, query }) => usage.report(principal.tenantId, query), {
    perm: "ViewMetrics",
    query: t.Object({
      from: t.Optional(t.String({ description: "start (inclusive), ISO 8601 date or timestamp; default: 30 days before `to`" })),
      to: t.Optional(t.String({ description: "end (exclusive), ISO 8601 date or timestamp; default: now" })),
      group_by: t.Optional(t.String({ description: `comma-separated breakdowns: ${GROUPS.join(", ")} (default model,provider,key,day)` })),
    }),
    response: UsageReportSchema,
    detail: {
      summary: "Usage and cost of the caller's tenant: totals and breakdowns by model, provider, API key, day, deployment",
      description:
        "Sums the tenant's proxied requests between `from` and `to`: requests, cache hits and misses, tokens served from the cache and bought upstream, list-price cost and what the cache saved, with the breakdowns `group_by` asks for (each sorted by cost, days in order).",
      tags: ["usage"],
      ...examples({ response: USAGE_EXAMPLE }),
    },
  });
