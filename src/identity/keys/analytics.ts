/**
 * Virtual-key analytics (doc3 §2.3, §4.7): totals and an hourly breakdown of one key's usage
 * records over a period, and anomalies:
 *  - `spend_spike`: an hour's spend > 3 × its baseline;
 *  - `request_spike`: an hour's requests > 5 × its baseline;
 *  - `new_model`: a model the key used in the period and never before it.
 * Baseline of an hour = the mean of the same metric over the 24 hourly buckets just before it
 * (empty hours count as 0; they may reach back before the period). An hour whose baseline is 0
 * has no spike (no history to compare with: a key's first traffic is not an anomaly; a new
 * model is reported as such).
 */
import { notFound } from "../../core/errors";
import type { KeyRegistry, UsageReader } from "../ports";
import { centsOf } from "../teams/period";
import { iso, type WallClock } from "../types";

export const ANALYTICS_PERIODS = { "1h": 1, "6h": 6, "24h": 24, "7d": 168, "30d": 720 } as const;
export type AnalyticsPeriod = keyof typeof ANALYTICS_PERIODS;
export const BASELINE_HOURS = 24;
export const SPEND_SPIKE = 3;
export const REQUEST_SPIKE = 5;

const HOUR = 3_600_000;

export interface HourBucket {
  hour: string;
  requests: number;
  tokens: number;
  spendCents: number;
}

export interface Anomaly {
  type: "spend_spike" | "request_spike" | "new_model";
  /** the hour it happened in (new_model: the first hour the model was used) */
  bucket: string;
  value: number;
  baseline: number;
  model?: string;
  message: string;
}

export interface KeyAnalytics {
  keyId: string;
  period: AnalyticsPeriod;
  from: string;
  to: string;
  totalRequests: number;
  totalTokens: number;
  totalSpendCents: number;
  hourlyBreakdown: HourBucket[];
  anomalies: Anomaly[];
  baselineHours: number;
}

export class KeyAnalyticsService {
  constructor(
    private readonly registry: KeyRegistry,
    private readonly usage: UsageReader,
    private readonly clock: WallClock,
  ) {}

  async analytics(tenantId: string, keyId: string, period: AnalyticsPeriod): Promise<KeyAnalytics> {
    if (!(await this.registry.get(tenantId, keyId))) throw notFound("virtual key");
    const hours = ANALYTICS_PERIODS[period];
    const end = Math.floor(this.clock() / HOUR) * HOUR + HOUR;
    const start = end - hours * HOUR;
    const historyStart = start - BASELINE_HOURS * HOUR;
    await this.usage.flush();
    const rows = await this.usage.hourly(tenantId, keyId, iso(historyStart), iso(end));

    // buckets from historyStart; index 0..BASELINE_HOURS-1 are history only
    const n = BASELINE_HOURS + hours;
    const buckets = Array.from({ length: n }, (_, i) => ({ hour: iso(historyStart + i * HOUR), requests: 0, tokens: 0, usd: 0 }));
    const firstUse = new Map<string, number>();
    for (const r of rows) {
      const i = Math.floor((Date.parse(r.hour) - historyStart) / HOUR);
      const b = buckets[i];
      if (!b) continue;
      b.requests += r.requests;
      b.tokens += r.tokens;
      b.usd += r.costUsd;
      if (i >= BASELINE_HOURS && r.requests > 0 && !(firstUse.get(r.model)! <= i)) firstUse.set(r.model, i);
    }

    const anomalies: Anomaly[] = [];
    let sumReq = 0;
    let sumUsd = 0;
    for (let i = 0; i < BASELINE_HOURS; i++) {
      sumReq += buckets[i]!.requests;
      sumUsd += buckets[i]!.usd;
    }
    for (let i = BASELINE_HOURS; i < n; i++) {
      const b = buckets[i]!;
      const baseReq = sumReq / BASELINE_HOURS;
      const baseUsd = sumUsd / BASELINE_HOURS;
      if (baseUsd > 0 && b.usd > SPEND_SPIKE * baseUsd)
        anomalies.push({
          type: "spend_spike",
          bucket: b.hour,
          value: centsOf(b.usd),
          baseline: centsOf(baseUsd),
          message: `spend ${centsOf(b.usd)} cents is more than ${SPEND_SPIKE}× the baseline of ${centsOf(baseUsd)} cents`,
        });
      if (baseReq > 0 && b.requests > REQUEST_SPIKE * baseReq)
        anomalies.push({
          type: "request_spike",
          bucket: b.hour,
          value: b.requests,
          baseline: round(baseReq),
          message: `${b.requests} requests is more than ${REQUEST_SPIKE}× the baseline of ${round(baseReq)}`,
        });
      sumReq += b.requests - buckets[i - BASELINE_HOURS]!.requests;
      sumUsd += b.usd - buckets[i - BASELINE_HOURS]!.usd;
    }
    if (firstUse.size > 0) {
      const before = new Set(await this.usage.modelsBefore(tenantId, keyId, iso(start)));
      for (const [model, i] of [...firstUse].sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]))) {
        if (before.has(model)) continue;
        const value = rows.filter((r) => r.model === model && Date.parse(r.hour) >= start).reduce((s, r) => s + r.requests, 0);
        anomalies.push({ type: "new_model", bucket: buckets[i]!.hour, value, baseline: 0, model, message: `model ${model} was never used by this key before the period` });
      }
    }

    const inPeriod = buckets.slice(BASELINE_HOURS);
    return {
      keyId,
      period,
      from: iso(start),
      to: iso(end),
      totalRequests: inPeriod.reduce((s, b) => s + b.requests, 0),
      totalTokens: inPeriod.reduce((s, b) => s + b.tokens, 0),
      totalSpendCents: centsOf(inPeriod.reduce((s, b) => s + b.usd, 0)),
      hourlyBreakdown: inPeriod.map((b) => ({ hour: b.hour, requests: b.requests, tokens: b.tokens, spendCents: centsOf(b.usd) })),
      anomalies,
      baselineHours: BASELINE_HOURS,
    };
  }
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;
