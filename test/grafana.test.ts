/**
 * docs/grafana/svc-dashboard.json queries only what svc's /metrics exposes: after traffic that makes
 * every series exist (misses, exact and semantic hits, a bypass, an upstream 5xx that is retried and
 * then falls back to another provider, a team whose budget is spent, a rate-limited token exchange),
 * every metric a panel names is in /metrics, with every label the query matches on or groups by,
 * and every literal label value the query selects (`result="hit"`, `status=~"5.."`) occurs.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startGateway, type TestGateway } from "./helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream/server";
import { ROOT } from "../scripts/bench/harness";

const dashboard = JSON.parse(readFileSync(join(ROOT, "docs/grafana/svc-dashboard.json"), "utf8"));

interface Need {
  metric: string;
  labels: Set<string>;
  matchers: { label: string; op: string; value: string }[];
}

/** The body of the parenthesised group starting at `open` (the index of "("). */
function group(expr: string, open: number): string {
  let depth = 0;
  for (let i = open; i < expr.length; i++) {
    if (expr[i] === "(") depth++;
    else if (expr[i] === ")" && --depth === 0) return expr.slice(open + 1, i);
  }
  throw new Error(`unbalanced parentheses in ${expr}`);
}

/** What a PromQL expression needs from /metrics: each svc_ metric with the labels it matches on and those it is grouped by. */
export function needsOf(expr: string): Need[] {
  const needs: Need[] = [];
  for (const m of expr.matchAll(/\b(svc_[a-z_]+)(\{([^}]*)\})?/g)) {
    const matchers = [...(m[3] ?? "").matchAll(/(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].map((x) => ({ label: x[1]!, op: x[2]!, value: x[3]! }));
    needs.push({ metric: m[1]!, labels: new Set(matchers.map((x) => x.label)), matchers });
  }
  // `sum by (a, b) (...)`: every metric inside the group needs those labels
  for (const m of expr.matchAll(/\b(?:sum|avg|min|max|count)\s+by\s*\(([^)]*)\)\s*\(/g)) {
    const labels = m[1]!.split(",").map((s) => s.trim()).filter(Boolean);
    const inner = group(expr, m.index! + m[0].length - 1);
    for (const n of needs) if (new RegExp(`\\b${n.metric}\\b`).test(inner)) for (const l of labels) n.labels.add(l);
  }
  return needs;
}

interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseExposition(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[4]) });
  }
  return out;
}

const exprs = (): string[] => dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr as string));

describe("the Grafana dashboard against /metrics", () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let series: Series[] = [];

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    gw = await startGateway({
      providers: {
        openai: { base_url: upstream.url, max_retries: 1, retry_backoff_ms: 1 },
        anthropic: { base_url: upstream.url },
      },
      models: { fallbacks: { "gpt-4o": [{ provider: "anthropic", model: "claude-3-5-haiku-latest" }] } },
      rate_limits: { enabled: true },
    });
    const deadline = Date.now() + 60_000;
    while ((await fetch(gw.url + "/ready")).status !== 200) {
      if (Date.now() > deadline) throw new Error("gateway not ready within 60 s");
      await Bun.sleep(100);
    }
    const admin = await gw.token("acme", ["WorkspaceAdmin"]);
    expect((await gw.api("/api/v1/rate-limits/acme", { method: "PUT", token: admin, json: { tier: "enterprise" } })).status).toBe(200);
    const chat = (content: string, init: { token?: string; model?: string; headers?: Record<string, string> } = {}) =>
      gw.api("/v1/chat/completions", { method: "POST", token: init.token ?? admin, headers: init.headers, json: { model: init.model ?? "gpt-4o-mini", messages: [{ role: "user", content }] } });
    const statuses: number[] = [];
    const run = async (r: Promise<Response>) => {
      const res = await r;
      await res.arrayBuffer();
      statuses.push(res.status);
    };
    await run(chat("What is the capital of France?")); // miss
    await run(chat("What is the capital of France?")); // exact hit
    await run(chat("what's the capital city of France")); // semantic hit (or a miss: the series exist either way)
    await run(chat("Tell me a joke", { headers: { "x-svc-skip-cache": "true" } })); // bypass
    // an upstream 5xx, retried, fails again: the request falls back to the other provider
    upstream.failNext({ kind: "status", status: 500 });
    upstream.failNext({ kind: "status", status: 503 });
    await run(chat("Fall back, please", { model: "gpt-4o" }));
    // a team whose budget is spent: refused before going upstream
    const team = await (await gw.api("/api/v1/teams", { method: "POST", token: admin, json: { name: "Frozen", maxBudgetCents: 0 } })).json();
    const key = await (await gw.api("/api/v1/virtual-keys", { method: "POST", token: admin, json: { name: "frozen", teamId: team.id } })).json();
    await run(chat("Spend, please", { token: key.key }));
    // the token exchange allows 10 per minute per tenant: the 11th is rate-limited
    const plain = await (await gw.api("/api/v1/virtual-keys", { method: "POST", token: admin, json: { name: "exchanger" } })).json();
    for (let i = 0; i < 11; i++) await run(gw.api("/api/v1/auth/token", { method: "POST", json: { apiKey: plain.key } }));
    expect(statuses.slice(0, 6)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(statuses.at(-1)).toBe(429);
    series = parseExposition(await (await fetch(gw.url + "/metrics")).text());
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
    await upstream?.stop();
  });

  test("the dashboard has panels for requests, hit ratio per tier, latency, upstream errors/retries/fallbacks, tokens and cost, budgets", () => {
    const all = exprs().join("\n");
    for (const m of ["svc_http_requests_total", "svc_cache_lookups_total", "svc_http_request_duration_seconds_bucket", "svc_upstream_errors_total", "svc_upstream_retries_total", "svc_upstream_fallbacks_total", "svc_llm_tokens_total", "svc_llm_cost_usd_total", "svc_llm_cost_saved_usd_total", "svc_budget_rejections_total"])
      expect(all).toContain(m);
    expect(all).toMatch(/sum by \(tier\) \(rate\(svc_cache_lookups_total\{result="hit"\}/);
  });

  test("the traffic was counted: budget refusal, retries, fallback, rate limit, cost and savings", () => {
    const total = (name: string) => series.filter((s) => s.name === name).reduce((a, s) => a + s.value, 0);
    expect(total("svc_budget_rejections_total")).toBe(1);
    expect(total("svc_upstream_retries_total")).toBe(1);
    expect(total("svc_upstream_fallbacks_total")).toBe(1);
    expect(total("svc_rate_limit_rejections_total")).toBe(1);
    expect(total("svc_llm_cost_usd_total")).toBeGreaterThan(0);
    expect(total("svc_llm_cost_saved_usd_total")).toBeGreaterThan(0);
  });

  test("every metric a panel queries exists in /metrics with the labels and label values the query uses", () => {
    const missing: string[] = [];
    for (const expr of exprs()) {
      for (const need of needsOf(expr)) {
        const of = series.filter((s) => s.name === need.metric);
        if (!of.length) {
          missing.push(`${need.metric}: no series (${expr})`);
          continue;
        }
        for (const l of need.labels) if (l !== "le" || need.metric.endsWith("_bucket")) if (!of.some((s) => l in s.labels)) missing.push(`${need.metric}: no label ${l}`);
        for (const m of need.matchers) {
          if (m.op !== "=" && m.op !== "=~") continue;
          const re = m.op === "=" ? undefined : new RegExp(`^(?:${m.value})$`);
          if (!of.some((s) => (re ? re.test(s.labels[m.label] ?? "") : s.labels[m.label] === m.value))) missing.push(`${need.metric}: no series with ${m.label}${m.op}"${m.value}"`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  test("the check can fail: a metric or label /metrics does not have is reported", () => {
    const fake = needsOf('sum by (tenant) (rate(svc_cache_lookups_total{result="hit"}[5m])) + svc_no_such_metric');
    expect(fake.map((n) => [n.metric, [...n.labels].sort()])).toEqual([
      ["svc_cache_lookups_total", ["result", "tenant"]],
      ["svc_no_such_metric", []],
    ]);
    expect(series.some((s) => s.name === "svc_no_such_metric")).toBe(false);
    expect(series.filter((s) => s.name === "svc_cache_lookups_total").some((s) => "tenant" in s.labels)).toBe(false);
  });
});
