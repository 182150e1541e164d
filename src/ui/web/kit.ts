/** Small shared pieces of the pages: loading data, formatting, a sortable table, CSV export. */
import { html } from "htm/preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure } from "./api";

export { html };

/** Load data with `f` (again whenever `deps` change, or on reload()); errors are shown, not thrown. */
export function useLoad<T>(f: () => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [n, setN] = useState(0);
  // the first load starts while the component first renders, not a frame later in the effect
  const first = useRef<Promise<T> | null>(null);
  const started = useRef(false);
  if (!started.current) {
    started.current = true;
    first.current = f();
    first.current.catch(() => undefined); // handled by the effect below
  }
  useEffect(() => {
    let live = true;
    const p = first.current ?? f();
    first.current = null;
    setState((s) => (s.loading ? s : { ...s, loading: true }));
    p.then(
      (data) => live && setState({ data, loading: false }),
      (e) => live && !(e instanceof ApiFailure && e.status === 401) && setState({ error: String(e instanceof Error ? e.message : e), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  return { ...state, reload };
}

export const int = (n: number | null | undefined) => (n ?? 0).toLocaleString("en-US");
export const usd = (n: number | null | undefined) =>
  `$${(n ?? 0).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: Math.abs(n ?? 0) < 1 && n !== 0 ? 6 : 2 })}`;
export const pct = (n: number | null | undefined) => `${((n ?? 0) * 100).toFixed(1)}%`;
export const ms = (n: number | null | undefined) => `${(n ?? 0).toLocaleString("en-US", { maximumFractionDigits: (n ?? 0) >= 100 ? 0 : 1 })} ms`;
export const when = (iso: string | null | undefined) => (iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "—");

export const Status = ({ error, loading }: { error?: string; loading?: boolean }) =>
  error ? html`<p class="error" role="alert">${error}</p>` : loading ? html`<p class="muted" aria-live="polite">Loading…</p>` : null;

export interface Column<R> {
  key: string;
  label: string;
  value: (r: R) => string | number | null;
  render?: (r: R) => unknown;
  numeric?: boolean;
}

/** A table sortable by any column (click or Enter on the header button). */
export function SortTable<R>({ rows, columns, caption, initial }: { rows: R[]; columns: Column<R>[]; caption: string; initial?: string }) {
  const [sort, setSort] = useState<{ key: string; desc: boolean }>({ key: initial ?? columns[0]!.key, desc: true });
  const col = columns.find((c) => c.key === sort.key) ?? columns[0]!;
  const sorted = [...rows].sort((a, b) => {
    const x = col.value(a) ?? "";
    const y = col.value(b) ?? "";
    const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return sort.desc ? -c : c;
  });
  return html`<table>
    <caption>${caption}</caption>
    <thead><tr>${columns.map(
      (c) => html`<th scope="col" aria-sort=${c.key === sort.key ? (sort.desc ? "descending" : "ascending") : "none"} class=${c.numeric ? "num" : ""}>
        <button type="button" class="sort" onClick=${() => setSort({ key: c.key, desc: c.key === sort.key ? !sort.desc : true })}>${c.label}</button>
      </th>`,
    )}</tr></thead>
    <tbody>${sorted.length === 0
      ? html`<tr><td colspan=${columns.length} class="muted">No data in this range.</td></tr>`
      : sorted.map((r) => html`<tr>${columns.map((c) => html`<td class=${c.numeric ? "num" : ""}>${c.render ? c.render(r) : c.value(r) ?? "—"}</td>`)}</tr>`)}</tbody>
  </table>`;
}

/** Download rows as a CSV file (built in the page: no server round trip, no URL carrying data). */
export function downloadCsv<R>(name: string, rows: R[], columns: Column<R>[]) {
  const cell = (v: unknown) => {
    const s = v === null || v === undefined ? "" : String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const text = [columns.map((c) => cell(c.label)).join(","), ...rows.map((r) => columns.map((c) => cell(c.value(r))).join(","))].join("\n");
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Range picker shared by the overview and usage pages. */
export const RANGES = [
  { id: "hour", label: "Last hour", ms: 3_600_000 },
  { id: "day", label: "Last day", ms: 86_400_000 },
  { id: "30d", label: "Last 30 days", ms: 30 * 86_400_000 },
] as const;
export type RangeId = (typeof RANGES)[number]["id"];

export const RangePicker = ({ value, onChange }: { value: RangeId; onChange: (r: RangeId) => void }) =>
  html`<fieldset class="range"><legend>Range</legend>${RANGES.map(
    (r) => html`<label><input type="radio" name="range" value=${r.id} checked=${value === r.id} onChange=${() => onChange(r.id)} /> ${r.label}</label>`,
  )}</fieldset>`;
