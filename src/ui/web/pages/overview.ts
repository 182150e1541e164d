import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { api } from "../api";
import { html, int, ms, pct, RangePicker, Status, usd, useLoad, type RangeId } from "../kit";

interface Overview {
  range: string;
  from: string;
  to: string;
  bucket: string;
  totals: {
    requests: number;
    hits: { exact: number; semantic: number; l2_context: number; total: number };
    misses: number;
    bypassed: number;
    hitRatio: number;
    inputTokens: number;
    outputTokens: number;
    costUsd: number;
    costSavedUsd: number;
    latencyMs: { p50: number; p99: number };
    errors: number;
    rateLimited: number;
  };
  series: Array<{ t: string; requests: number; hits: number; misses: number; costUsd: number; costSavedUsd: number; errors: number; rateLimited: number }>;
}

const seconds = (t: string) => Date.parse(t.length === 10 ? `${t}T00:00:00Z` : t.length === 13 ? `${t}:00:00Z` : `${t}:00Z`) / 1000;
const STEP: Record<string, number> = { minute: 60, hour: 3600, day: 86400 };
type Point = Overview["series"][number];

/** Every bucket of the range, in order, with zeros where nothing happened (the API lists busy buckets only). */
function filled(o: Overview): Array<{ x: number; p?: Point }> {
  const step = STEP[o.bucket] ?? 60;
  const byX = new Map(o.series.map((p) => [seconds(p.t), p]));
  const first = Math.floor(Date.parse(o.from) / 1000 / step) * step;
  const out: Array<{ x: number; p?: Point }> = [];
  for (let x = first; x * 1000 < Date.parse(o.to); x += step) out.push({ x, p: byX.get(x) });
  return out;
}

/** A uPlot line chart of the overview's series; the caption says what it shows (the numbers are in the list above). */
function Chart({ title, o, lines, money }: { title: string; o: Overview; lines: Array<[string, (p: Point) => number, string]>; money?: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const points = filled(o);
    const data: uPlot.AlignedData = [points.map((q) => q.x), ...lines.map(([, f]) => points.map((q) => (q.p ? f(q.p) : 0)))];
    const fmt = (v: number) => (money ? `$${v >= 1 ? v.toFixed(2) : v.toPrecision(2)}` : v.toLocaleString("en-US"));
    const plot = new uPlot(
      {
        width: Math.max(300, el.clientWidth),
        height: 220,
        series: [{}, ...lines.map(([label, , stroke]) => ({ label, stroke, width: 2, value: (_: uPlot, v: number | null) => (v === null ? "—" : fmt(v)) }))],
        scales: { y: { range: (_u: uPlot, _min: number, max: number) => [0, max > 0 ? max * 1.1 : 1] } },
        axes: [{}, { size: money ? 90 : 60, values: (_u: uPlot, vals: number[]) => vals.map(fmt) }],
      },
      data,
      el,
    );
    return () => plot.destroy();
  }, [o]);
  return html`<figure class="card chart"><figcaption>${title}</figcaption><div ref=${box} aria-hidden="true"></div></figure>`;
}

export function OverviewPage() {
  const [range, setRange] = useState<RangeId>("day");
  const o = useLoad<Overview>(() => api(`/api/v1/usage/overview?range=${range}`), [range]);
  const t = o.data?.totals;
  return html`<section aria-labelledby="h-overview">
    <h1 id="h-overview">Overview</h1>
    <${RangePicker} value=${range} onChange=${setRange} />
    <${Status} error=${o.error} loading=${o.loading && !o.data} />
    ${t &&
    html`<dl class="stats">
        <div class="stat"><dt>Requests</dt><dd data-testid="requests">${int(t.requests)}</dd></div>
        <div class="stat"><dt>Hit ratio</dt><dd>${pct(t.hitRatio)}</dd></div>
        <div class="stat"><dt>Exact hits</dt><dd>${int(t.hits.exact)}</dd></div>
        <div class="stat"><dt>Semantic hits</dt><dd>${int(t.hits.semantic)}</dd></div>
        <div class="stat"><dt>Multi-turn hits</dt><dd>${int(t.hits.l2_context)}</dd></div>
        <div class="stat"><dt>Misses</dt><dd>${int(t.misses)}</dd></div>
        <div class="stat"><dt>Cost</dt><dd>${usd(t.costUsd)}</dd></div>
        <div class="stat"><dt>Cost saved</dt><dd>${usd(t.costSavedUsd)}</dd></div>
        <div class="stat"><dt>Latency p50</dt><dd>${ms(t.latencyMs.p50)}</dd></div>
        <div class="stat"><dt>Latency p99</dt><dd>${ms(t.latencyMs.p99)}</dd></div>
        <div class="stat"><dt>Tokens</dt><dd>${int(t.inputTokens + t.outputTokens)}</dd></div>
        <div class="stat"><dt>Errors</dt><dd>${int(t.errors)}</dd></div>
        <div class="stat"><dt>Rate limited (429)</dt><dd>${int(t.rateLimited)}</dd></div>
      </dl>
      <div class="charts">
        <${Chart} title=${`Requests and cache hits per ${o.data!.bucket}`} o=${o.data}
          lines=${[["Requests", (p: Point) => p.requests, "#1d4ed8"], ["Hits", (p: Point) => p.hits, "#047857"]]} />
        <${Chart} title=${`Cost and cost saved (USD) per ${o.data!.bucket}`} o=${o.data} money=${true}
          lines=${[["Cost", (p: Point) => p.costUsd, "#b91c1c"], ["Saved", (p: Point) => p.costSavedUsd, "#047857"]]} />
        <${Chart} title=${`Errors and 429s per ${o.data!.bucket}`} o=${o.data}
          lines=${[["Errors", (p: Point) => p.errors, "#b91c1c"], ["429s", (p: Point) => p.rateLimited, "#92400e"]]} />
      </div>`}
  </section>`;
}
