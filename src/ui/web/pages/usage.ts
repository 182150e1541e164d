import { useState } from "preact/hooks";
import { api, can } from "../api";
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
  { id: "team", label: "Team" },
  { id: "deployment", label: "Deployment" },
  { id: "day", label: "Day" },
] as const;
/** the breakdowns the API computes (team is derived here from the key breakdown and each key's team) */
const API_GROUPS = GROUPS.filter((g) => g.id !== "team");

/** Every virtual key's team name (paged list calls), for the team breakdown. */
async function teamsOfKeys(): Promise<Map<string, string>> {
  const teams = (await api<{ teams: Array<{ id: string; name: string }> }>("/api/v1/teams?pageSize=100")).teams;
  const names = new Map(teams.map((t) => [t.id, t.name]));
  const out = new Map<string, string>();
  for (let page = 1; ; page++) {
    const r = await api<{ keys: Array<{ id: string; teamId: string | null }>; totalPages: number }>(`/api/v1/virtual-keys?pageSize=100&page=${page}`);
    for (const k of r.keys) if (k.teamId) out.set(k.id, names.get(k.teamId) ?? k.teamId);
    if (page >= r.totalPages) return out;
  }
}

function byTeam(keys: Row[], teamOf: Map<string, string>): Row[] {
  const sums = new Map<string, Row>();
  for (const k of keys) {
    const team = (k.key && teamOf.get(k.key)) ?? "(no team)";
    const s = sums.get(team) ?? { key: team, requests: 0, cacheHits: 0, cacheMisses: 0, hitRatio: 0, totalTokens: 0, costUsd: 0, costSavedUsd: 0 };
    s.requests += k.requests;
    s.cacheHits += k.cacheHits;
    s.cacheMisses += k.cacheMisses;
    s.totalTokens += k.totalTokens;
    s.costUsd += k.costUsd;
    s.costSavedUsd += k.costSavedUsd;
    s.hitRatio = s.cacheHits + s.cacheMisses > 0 ? s.cacheHits / (s.cacheHits + s.cacheMisses) : 0;
    sums.set(team, s);
  }
  return [...sums.values()];
}

export function UsagePage() {
  const [range, setRange] = useState<RangeId>("day");
  const [group, setGroup] = useState<string>("model");
  const r = useLoad<Report>(() => {
    const now = Date.now();
    const from = new Date(now - RANGES.find((x) => x.id === range)!.ms).toISOString();
    // `to` a minute ahead: records written this second are inside the range
    const to = new Date(now + 60_000).toISOString();
    return api(`/api/v1/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&group_by=${API_GROUPS.map((g) => g.id).join(",")}`);
  }, [range]);
  const admin = can("WorkspaceAdmin");
  const teamOf = useLoad<Map<string, string>>(() => (admin && group === "team" ? teamsOfKeys() : Promise.resolve(new Map())), [group]);
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
  const rows = group === "team" ? byTeam(r.data?.breakdowns.key ?? [], teamOf.data ?? new Map()) : (r.data?.breakdowns[group] ?? []);
  const t = r.data?.totals;
  return html`<section aria-labelledby="h-usage">
    <h1 id="h-usage">Usage</h1>
    <${RangePicker} value=${range} onChange=${setRange} />
    <${Status} error=${r.error ?? teamOf.error} loading=${r.loading && !r.data} />
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
        ${GROUPS.filter((g) => g.id !== "team" || admin).map((g) => html`<option value=${g.id}>${g.label}</option>`)}
      </select>
      <button type="button" onClick=${() => downloadCsv(`usage-${group}-${range}.csv`, rows, columns)}>Export CSV</button>
    </div>
    <${SortTable} rows=${rows} columns=${columns} caption=${`Usage by ${label.toLowerCase()}`} initial="requests" />`}
  </section>`;
}
