import { useState } from "preact/hooks";
import { api } from "../api";
import { downloadCsv, html, int, pct, RANGES, RangePicker, SortTable, Status, usd, useLoad, type Column, type RangeId } from "../kit";

interface Totals {
  requests: number;
  cacheHits: number;
  cacheMisses: number;
  hitRatio: number;
  totalTokens: number;
  costUsd: number;
  costSavedUsd: number;
}
type Row = Totals & { key: string | null };
interface Report {
  totals: Totals;
  breakdowns: Record<string, Row[]>;
}

const GROUPS = [
  { id: "model", label: "Model" },
  { id: "provider", label: "Provider" },
  { id: "key", label: "API key" },
  { id: "deployment", label: "Deployment" },
  { id: "day", label: "Day" },
] as const;

export function UsagePage() {
  const [range, setRange] = useState<RangeId>("day");
  const [group, setGroup] = useState<string>("model");
  const r = useLoad<Report>(() => {
    const now = Date.now();
    const from = new Date(now - RANGES.find((x) => x.id === range)!.ms).toISOString();
    // `to` a minute ahead: records written this second are inside the range
    const to = new Date(now + 60_000).toISOString();
    return api(`/api/v1/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&group_by=${GROUPS.map((g) => g.id).join(",")}`);
  }, [range]);
  const label = GROUPS.find((g) => g.id === group)!.label;
  const columns: Column<Row>[] = [
    { key: "key", label, value: (x) => x.key ?? "(none)" },
    { key: "requests", label: "Requests", value: (x) => x.requests, render: (x) => int(x.requests), numeric: true },
    { key: "hits", label: "Hits", value: (x) => x.cacheHits, render: (x) => int(x.cacheHits), numeric: true },
    { key: "misses", label: "Misses", value: (x) => x.cacheMisses, render: (x) => int(x.cacheMisses), numeric: true },
    { key: "ratio", label: "Hit ratio", value: (x) => x.hitRatio, render: (x) => pct(x.hitRatio), numeric: true },
    { key: "tokens", label: "Tokens", value: (x) => x.totalTokens, render: (x) => int(x.totalTokens), numeric: true },
    { key: "cost", label: "Cost", value: (x) => x.costUsd, render: (x) => usd(x.costUsd), numeric: true },
    { key: "saved", label: "Saved", value: (x) => x.costSavedUsd, render: (x) => usd(x.costSavedUsd), numeric: true },
  ];
  const rows = r.data?.breakdowns[group] ?? [];
  const t = r.data?.totals;
  return html`<section aria-labelledby="h-usage">
    <h1 id="h-usage">Usage</h1>
    <${RangePicker} value=${range} onChange=${setRange} />
    <${Status} error=${r.error} loading=${r.loading && !r.data} />
    ${t &&
    html`<dl class="stats">
      <div class="stat"><dt>Requests</dt><dd>${int(t.requests)}</dd></div>
      <div class="stat"><dt>Hits</dt><dd>${int(t.cacheHits)}</dd></div>
      <div class="stat"><dt>Misses</dt><dd>${int(t.cacheMisses)}</dd></div>
      <div class="stat"><dt>Cost</dt><dd>${usd(t.costUsd)}</dd></div>
      <div class="stat"><dt>Cost saved</dt><dd>${usd(t.costSavedUsd)}</dd></div>
    </dl>
    <div class="toolbar">
      <label for="group">Break down by</label>
      <select id="group" value=${group} onChange=${(e: Event) => setGroup((e.target as HTMLSelectElement).value)}>
        ${GROUPS.map((g) => html`<option value=${g.id}>${g.label}</option>`)}
      </select>
      <button type="button" onClick=${() => downloadCsv(`usage-${group}-${range}.csv`, rows, columns)}>Export CSV</button>
    </div>
    <${SortTable} rows=${rows} columns=${columns} caption=${`Usage by ${label.toLowerCase()}`} initial="requests" />`}
  </section>`;
}
