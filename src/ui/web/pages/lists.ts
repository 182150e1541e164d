/**
 * Read-only pages over the other domains' list endpoints: MCP servers, tools
 * and tool-cache analytics, and the workspace's SSO connections and SCIM tokens
 * and activity. Each section is one paged list call of the public API.
 */
import { api, can } from "../api";
import { LiveActivity } from "./activity";
import { html, int, ms, pct, Status, usd, useLoad, when } from "../kit";

type Row = Record<string, any>;
interface Section {
  title: string;
  path: string;
  /** the list's field in the answer */
  key: string;
  columns: Array<[string, (r: Row) => unknown]>;
}

const text = (v: unknown) => (v === null || v === undefined || v === "" ? "—" : Array.isArray(v) ? v.join(", ") || "—" : String(v));

function List({ s }: { s: Section }) {
  const r = useLoad<Row>(() => api(s.path), [s.path]);
  const rows = (r.data?.[s.key] as Row[] | undefined) ?? [];
  return html`<div>
    <${Status} error=${r.error} loading=${r.loading && !r.data} />
    <table>
      <caption>${s.title} (${int((r.data?.total as number | undefined) ?? rows.length)})</caption>
      <thead><tr>${s.columns.map(([label]) => html`<th scope="col">${label}</th>`)}</tr></thead>
      <tbody>${rows.length === 0
        ? html`<tr><td colspan=${s.columns.length} class="muted">None yet.</td></tr>`
        : rows.map((row) => html`<tr>${s.columns.map(([, f]) => html`<td>${text(f(row))}</td>`)}</tr>`)}</tbody>
    </table>
  </div>`;
}

const page = (id: string, title: string, sections: Section[], intro?: () => unknown) =>
  function Page() {
    return html`<section aria-labelledby=${`h-${id}`}>
      <h1 id=${`h-${id}`}>${title}</h1>
      ${intro?.()}
      ${sections.map((s) => html`<${List} key=${s.path} s=${s} />`)}
    </section>`;
  };

function ToolCacheSummary() {
  const a = useLoad<Row>(() => api("/api/v1/mcp/analytics"));
  const s = a.data?.summary as Row | undefined;
  return html`<${Status} error=${a.error} />${s &&
    html`<dl class="stats">
      <div class="stat"><dt>Tool calls</dt><dd>${int(s.totalCalls)}</dd></div>
      <div class="stat"><dt>Tool-cache hit rate</dt><dd>${pct(s.hitRate)}</dd></div>
      <div class="stat"><dt>Time saved</dt><dd>${ms(s.estimatedTimeSavedMs)}</dd></div>
      <div class="stat"><dt>Cost saved</dt><dd>${usd(s.estimatedCostSaved)}</dd></div>
    </dl>`}`;
}

export const McpPage = page(
  "mcp",
  "MCP",
  [
    {
      title: "Servers",
      path: "/api/v1/mcp/servers?pageSize=100",
      key: "servers",
      columns: [["Name", (r) => r.name], ["Status", (r) => r.status], ["Transport", (r) => r.transport], ["Health p50", (r) => (r.healthLatencyP50Ms === null ? null : ms(r.healthLatencyP50Ms))], ["Last check", (r) => when(r.lastHealthCheck)], ["Last error", (r) => r.lastError]],
    },
    {
      title: "Tools",
      path: "/api/v1/mcp/tools?pageSize=100",
      key: "tools",
      columns: [["Name", (r) => r.name], ["Classification", (r) => r.category], ["Cached", (r) => (r.cacheConfig?.enabled ? `yes, ${r.cacheConfig.ttlSecs} s` : "no")], ["Available", (r) => (r.available ? "yes" : "no")]],
    },
  ],
  () => html`<${ToolCacheSummary} />${can("ViewLogs") ? html`<${LiveActivity} />` : null}`,
);

export const IdentityPage = page("identity", "SSO / SCIM", [
  { title: "SSO connections", path: "/api/v1/sso/connections?pageSize=100", key: "connections", columns: [["Name", (r) => r.name], ["Protocol", (r) => r.protocol], ["Domains (verification)", (r) => (r.domains ?? []).map((d: Row) => `${d.domain} (${d.status})`)], ["Status", (r) => r.status], ["Last tested", (r) => when(r.lastTestedAt)]] },
  { title: "SCIM tokens", path: "/api/v1/scim/tokens?pageSize=100", key: "tokens", columns: [["Name", (r) => r.name], ["Status", (r) => r.status], ["Scopes", (r) => r.scopes], ["Token", (r) => r.maskedValue], ["Expires", (r) => (r.expiresAt ? when(r.expiresAt) : "never")], ["Last used", (r) => when(r.lastUsedAt)]] },
  { title: "Recent SCIM activity", path: "/api/v1/scim/activities?pageSize=20", key: "activities", columns: [["Time", (r) => when(r.timestamp)], ["Operation", (r) => r.operation], ["Resource", (r) => r.resourceType], ["Status", (r) => r.status], ["Error", (r) => r.errorMessage]] },
]);
