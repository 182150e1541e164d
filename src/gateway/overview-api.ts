/**
 * GET /api/v1/usage/overview (ViewMetrics): the dashboard's overview of the caller's tenant over
 * the last hour, day or 30 days — requests, hits per tier (exact / semantic / l2_context =
 * multi-turn), misses, bypassed, tokens, cost and cost saved, latency p50/p99, and a series (per
 * minute / hour / day) for the charts.
 * GET /api/v1/usage/requests (ViewLogs): the per-request usage records, newest first, with filters.
 *
 * The overview never scans usage_records: a trigger keeps two rollups, one row per tenant and
 * minute (`usage_rollup_minute`, read for the last hour: ≤ 60 rows) and per tenant and hour
 * (`usage_rollup_hour`, read for the last day and 30 days: ≤ 720 rows), each with latency as a
 * fixed histogram — whatever the traffic. Ranges are whole units (UTC), the current one included:
 * the last 60 minutes, 24 hours, 720 hours; percentiles are interpolated within a histogram bucket
 * (buckets grow ~25% each). usage_records are never deleted today; whatever deletes them later (a
 * retention job) must subtract from, or delete, the rollup rows of the same minutes and hours.
 */
import { Elysia, t } from "elysia";
import type { Kernel } from "../core/kernel";
import { ApiError, DOC1 } from "../core/errors";
import { limitOffsetQuery } from "../core/pagination";
import type { AsyncStorage } from "../storage/async";
import { LATENCY_BOUNDS, ROLLUP_HISTOGRAM } from "./rollups";

export { LATENCY_BOUNDS, OVERVIEW_MIGRATIONS } from "./rollups";
const L = ROLLUP_HISTOGRAM;

/**
 * Failed proxy requests leave no usage record (only answered requests have one), so the overview's
 * errors (5xx answers: upstream failures, timeouts, the gateway's own) and 429s (the tenant's rate
 * limits, or a provider's passed on) are counted from the front door's answers (the kernel's
 * RequestObserver.watch): per tenant and minute in memory, written behind in one transaction every
 * FLUSH_MS (and before the overview reads) into a per-minute and a per-hour table, like the usage
 * rollups. The request path only increments a counter.
 */
export class OutcomeCounter {
  static FLUSH_MS = 1_000;
  /** tenant \0 minute -> counts not yet written */
  private pending = new Map<string, { tenantId: string; minute: string; errors: number; limited: number }>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  /** the writes started so far, in order (each flush waits for the ones before it) */
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly storage: AsyncStorage, private readonly onError: (e: unknown) => void = () => {}, private readonly now: () => number = Date.now) {}

  /** One answer's status (the request path: a map update, nothing else). */
  observe(tenantId: string, status: number) {
    const limited = status === 429;
    if ((!limited && status < 500) || this.closed) return;
    const minute = new Date(this.now()).toISOString().slice(0, 16);
    const k = `${tenantId}\0${minute}`;
    let c = this.pending.get(k);
    if (!c) this.pending.set(k, (c = { tenantId, minute, errors: 0, limited: 0 }));
    if (limited) c.limited++;
    else c.errors++;
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), OutcomeCounter.FLUSH_MS);
      (this.timer as { unref?: () => void }).unref?.();
    }
  }

  /**
   * Write the pending counts (one transaction for all tenants); resolves once they and every
   * earlier flush are written. A failed write keeps them for the next flush.
   */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return this.writing;
    const batch = this.pending;
    this.pending = new Map();
    const add = (db: ReturnType<AsyncStorage["tenant"]>, table: string, unit: string, at: string, e: number, l: number) =>
      db.run(
        `INSERT INTO ${table} (tenant_id, ${unit}, errors, rate_limited) VALUES ($tenant, $at, $e, $l)
         ON CONFLICT (tenant_id, ${unit}) DO UPDATE SET errors = ${table}.errors + excluded.errors, rate_limited = ${table}.rate_limited + excluded.rate_limited`,
        { at, e, l },
      );
    const write = async () => {
      try {
        await this.storage.tx(async () => {
          for (const c of batch.values()) {
            const db = this.storage.tenant(c.tenantId);
            await add(db, "request_outcome_minute", "minute", c.minute, c.errors, c.limited);
            await add(db, "request_outcome_hour", "hour", c.minute.slice(0, 13), c.errors, c.limited);
          }
        });
      } catch (e) {
        for (const [k, c] of batch) {
          const now = this.pending.get(k);
          if (now) (now.errors += c.errors), (now.limited += c.limited);
          else this.pending.set(k, c);
        }
        this.onError(e);
      }
    };
    this.writing = this.writing.then(write);
    return this.writing;
  }

  async close() {
    await this.flush();
    this.closed = true;
  }
}

/** Each range: the rollup it reads, how many of its units (the current one included), and the series' step (characters of the unit kept). */
export const RANGES = {
  hour: { table: "usage_rollup_minute", unit: "minute", count: 60, ms: 60_000, chars: 16, step: 16, bucket: "minute" },
  day: { table: "usage_rollup_hour", unit: "hour", count: 24, ms: 3_600_000, chars: 13, step: 13, bucket: "hour" },
  "30d": { table: "usage_rollup_hour", unit: "hour", count: 720, ms: 3_600_000, chars: 13, step: 10, bucket: "day" },
} as const;
export type OverviewRange = keyof typeof RANGES;

const usd = (v: number) => Math.round(v * 1e6) / 1e6;

/** The q-quantile (0..1) of a histogram, interpolated linearly inside its bucket; 0 when empty. */
export function quantile(counts: number[], q: number): number {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return 0;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i]!;
    if (n > 0 && seen + n >= rank) {
      const lo = i === 0 ? 0 : LATENCY_BOUNDS[i - 1]!;
      const hi = i < LATENCY_BOUNDS.length ? LATENCY_BOUNDS[i]! : lo * 2;
      return Math.round((lo + ((rank - seen) / n) * (hi - lo)) * 100) / 100;
    }
    seen += n;
  }
  return LATENCY_BOUNDS[LATENCY_BOUNDS.length - 1]!;
}

export class OverviewQuery {
  constructor(
    private readonly storage: AsyncStorage,
    private readonly flush: (tenantId: string) => void | Promise<void>,
    private readonly now: () => number = Date.now,
    private readonly outcomes?: OutcomeCounter,
  ) {}

  async overview(tenantId: string, range: OverviewRange) {
    const spec = RANGES[range];
    if (!spec) throw new ApiError("validation_error", `query 'range': expected one of ${Object.keys(RANGES).join(", ")}`);
    await this.flush(tenantId);
    const nowMs = this.now();
    // whole units: [from, to] where `to` is the current minute / hour
    const to = new Date(nowMs).toISOString().slice(0, spec.chars);
    const from = new Date(nowMs - (spec.count - 1) * spec.ms).toISOString().slice(0, spec.chars);
    const db = this.storage.tenant(tenantId);
    const where = `tenant_id = $tenant AND ${spec.unit} >= $from AND ${spec.unit} <= $to`;
    const sums = `SUM(requests) AS requests, SUM(hits_exact) AS exact, SUM(hits_semantic) AS semantic, SUM(hits_context) AS context, SUM(misses) AS misses,
      SUM(bypassed) AS bypassed, SUM(input_tokens) AS input, SUM(output_tokens) AS output, SUM(cost_usd) AS cost, SUM(cost_saved_usd) AS saved`;
    const row = (await db.get<Record<string, number | null>>(`SELECT ${sums}, ${L.map((c) => `SUM(${c}) AS ${c}`).join(", ")} FROM ${spec.table} WHERE ${where}`, { from, to }))!;
    await this.outcomes?.flush();
    const failed = (await db.get<{ errors: number | null; limited: number | null }>(
      `SELECT SUM(errors) AS errors, SUM(rate_limited) AS limited FROM ${spec.table.replace("usage_rollup", "request_outcome")} WHERE ${where}`,
      { from, to },
    ))!;
    const n = (k: string) => Number(row[k] ?? 0);
    const hist = L.map((c) => n(c));
    const hits = n("exact") + n("semantic") + n("context");
    const series = (
      await db.all<{ t: string; requests: number; hits: number; misses: number; cost: number; saved: number }>(
        `SELECT substr(${spec.unit}, 1, ${spec.step}) AS t, SUM(requests) AS requests, SUM(hits_exact + hits_semantic + hits_context) AS hits, SUM(misses) AS misses,
           SUM(cost_usd) AS cost, SUM(cost_saved_usd) AS saved FROM ${spec.table} WHERE ${where} GROUP BY t ORDER BY t`,
        { from, to },
      )
    ).map((r) => ({ t: r.t, requests: r.requests, hits: r.hits, misses: r.misses, costUsd: usd(r.cost), costSavedUsd: usd(r.saved), errors: 0, rateLimited: 0 }));
    // errors and 429s per bucket; a bucket with failures only is listed too
    const outcomeTable = spec.table.replace("usage_rollup", "request_outcome");
    const byT = new Map(series.map((p) => [p.t, p]));
    for (const r of await db.all<{ t: string; errors: number; limited: number }>(
      `SELECT substr(${spec.unit}, 1, ${spec.step}) AS t, SUM(errors) AS errors, SUM(rate_limited) AS limited FROM ${outcomeTable} WHERE ${where} GROUP BY t`,
      { from, to },
    )) {
      let p = byT.get(r.t);
      if (!p) byT.set(r.t, (p = { t: r.t, requests: 0, hits: 0, misses: 0, costUsd: 0, costSavedUsd: 0, errors: 0, rateLimited: 0 }));
      p.errors = r.errors;
      p.rateLimited = r.limited;
    }
    if (byT.size > series.length) series.splice(0, series.length, ...[...byT.values()].sort((a, b) => a.t.localeCompare(b.t)));
    const startOf = (u: string) => Date.parse(spec.chars === 16 ? `${u}:00.000Z` : `${u}:00:00.000Z`);
    return {
      range,
      from: new Date(startOf(from)).toISOString(),
      to: new Date(startOf(to) + spec.ms).toISOString(),
      bucket: spec.bucket,
      totals: {
        requests: n("requests"),
        hits: { exact: n("exact"), semantic: n("semantic"), l2_context: n("context"), total: hits },
        misses: n("misses"),
        bypassed: n("bypassed"),
        hitRatio: hits + n("misses") > 0 ? hits / (hits + n("misses")) : 0,
        inputTokens: n("input"),
        outputTokens: n("output"),
        costUsd: usd(n("cost")),
        costSavedUsd: usd(n("saved")),
        latencyMs: { p50: quantile(hist, 0.5), p99: quantile(hist, 0.99) },
        errors: Number(failed.errors ?? 0),
        rateLimited: Number(failed.limited ?? 0),
      },
      series,
    };
  }

  async requests(tenantId: string, q: RequestsQuery) {
    await this.flush(tenantId);
    const limit = q.limit ?? 50;
    const offset = q.offset ?? 0;
    const clauses = ["tenant_id = $tenant"];
    const args: Record<string, string | number> = { limit, offset };
    if (q.cache_status) (clauses.push("cache_status = $status"), (args.status = q.cache_status));
    if (q.model) (clauses.push("model = $model"), (args.model = q.model));
    if (q.key_id) (clauses.push("key_id = $key"), (args.key = q.key_id));
    if (q.before) (clauses.push("created_at < $before"), (args.before = q.before));
    const db = this.storage.tenant(tenantId);
    const where = clauses.join(" AND ");
    const total = (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM usage_records WHERE ${where}`, args))!.n;
    const rows = await db.all<Record<string, any>>(
      `SELECT created_at, request_id, key_id, style, provider, model, upstream_model, deployment, attempts, cache_status, cache_tier, streamed,
         input_tokens, output_tokens, latency_ms, cost_usd, cost_saved_usd, cache_entry_id, similarity, learned_score, cache_point
       FROM usage_records WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $limit OFFSET $offset`,
      args,
    );
    return {
      requests: rows.map((r) => ({
        createdAt: r.created_at,
        requestId: r.request_id,
        keyId: r.key_id ?? null,
        style: r.style,
        provider: r.provider,
        model: r.model,
        upstreamModel: r.upstream_model ?? null,
        deployment: r.deployment ?? null,
        attempts: r.attempts,
        cacheStatus: r.cache_status,
        cacheTier: r.cache_tier ?? null,
        streamed: r.streamed === 1,
        inputTokens: r.input_tokens,
        outputTokens: r.output_tokens,
        latencyMs: r.latency_ms,
        costUsd: r.cost_usd,
        costSavedUsd: r.cost_saved_usd,
        cacheEntryId: r.cache_entry_id ?? null,
        similarity: r.similarity ?? null,
        learnedScore: r.learned_score ?? null,
        cachePoint: r.cache_point ?? null,
      })),
      total,
      limit,
      offset,
    };
  }
}

export interface RequestsQuery {
  limit?: number;
  offset?: number;
  cache_status?: string;
  model?: string;
  key_id?: string;
  before?: string;
}

const Count = t.Integer();
export const OverviewSchema = t.Object({
  range: t.String(),
  from: t.String(),
  to: t.String(),
  bucket: t.String({ description: "step of `series`: minute (hour range), hour (day range) or day (30d range)" }),
  totals: t.Object({
    requests: Count,
    hits: t.Object({ exact: Count, semantic: Count, l2_context: Count, total: Count }),
    misses: Count,
    bypassed: Count,
    hitRatio: t.Number(),
    inputTokens: Count,
    outputTokens: Count,
    costUsd: t.Number(),
    costSavedUsd: t.Number(),
    latencyMs: t.Object({ p50: t.Number(), p99: t.Number() }, { description: "interpolated within histogram buckets (~25% wide)" }),
    errors: t.Integer({ description: "proxy requests answered with a 5xx (upstream failures, timeouts, the gateway's own errors); not counted in `requests`" }),
    rateLimited: t.Integer({ description: "proxy requests answered 429 (the tenant's rate limits, or a provider's passed on); not counted in `requests`" }),
  }),
  series: t.Array(t.Object({ t: t.String(), requests: Count, hits: Count, misses: Count, costUsd: t.Number(), costSavedUsd: t.Number(), errors: Count, rateLimited: Count })),
});

const RequestSchema = t.Object({
  createdAt: t.String(),
  requestId: t.String(),
  keyId: t.Nullable(t.String()),
  style: t.String(),
  provider: t.String(),
  model: t.String(),
  upstreamModel: t.Nullable(t.String()),
  deployment: t.Nullable(t.String()),
  attempts: Count,
  cacheStatus: t.String(),
  cacheTier: t.Nullable(t.String()),
  streamed: t.Boolean(),
  inputTokens: Count,
  outputTokens: Count,
  latencyMs: t.Number(),
  costUsd: t.Number(),
  costSavedUsd: t.Number(),
  cacheEntryId: t.Nullable(t.String({ description: "the cache entry that answered a hit" })),
  similarity: t.Nullable(t.Number({ description: "a hit's similarity, or a miss's nearest cached question's; null when bypassed or nothing was compared" })),
  learnedScore: t.Nullable(t.Number({ description: "the learned stage's probability of same meaning, when it decided the hit" })),
  cachePoint: t.Nullable(t.Number({ description: "the operating point (cosine floor) the lookup used" })),
});

export const overviewRoutes = (kernel: Kernel, q: OverviewQuery) =>
  new Elysia({ name: "svc-usage-overview" })
    .use(kernel.mount({ prefix: "/api/v1/usage/overview", envelope: DOC1 }).get("", ({ principal, query }) => q.overview(principal.tenantId, (query.range ?? "day") as OverviewRange), {
    perm: "ViewMetrics",
    query: t.Object({ range: t.Optional(t.Union([t.Literal("hour"), t.Literal("day"), t.Literal("30d")], { description: "last hour, day or 30 days (default day)" })) }),
    response: OverviewSchema,
    detail: {
      summary: "Overview of the caller's tenant over the last hour, day or 30 days: requests, hits per tier, cost, saved, latency, a series",
      description: "What the dashboard's overview shows, for the last 60 minutes, 24 hours or 30 days (whole UTC units, the current one included): requests, hits per tier, misses and bypassed, tokens, cost and cost saved, latency p50/p99, errors (5xx) and 429s of the proxies, and a per-minute, hour or day series for charts.",
      tags: ["usage"],
    },
  }))
    .use(kernel.mount({ prefix: "/api/v1/usage/requests", envelope: DOC1 }).get("", ({ principal, query }) => q.requests(principal.tenantId, query), {
    perm: "ViewLogs",
    query: t.Object({
      ...limitOffsetQuery(50, 200),
      cache_status: t.Optional(t.Union([t.Literal("HIT"), t.Literal("MISS"), t.Literal("BYPASS")])),
      model: t.Optional(t.String({ minLength: 1, maxLength: 256 })),
      key_id: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
      before: t.Optional(t.String({ minLength: 10, maxLength: 40, description: "only records created before this ISO 8601 timestamp" })),
    }),
    response: t.Object({ requests: t.Array(RequestSchema), total: Count, limit: Count, offset: Count }),
    detail: {
      summary: "The caller's per-request usage records, newest first, filtered by cache status, model or key",
      description: "One record per proxied request of the tenant (limit/offset, or `before` a timestamp for the next page): request id, key, style, provider, model and deployment, attempts, cache status and tier, whether it streamed, tokens, latency and cost, and why it hit or missed: the answering cache entry, the similarity (a miss's nearest), the learned score and the operating point.",
      tags: ["usage"],
    },
  }));
