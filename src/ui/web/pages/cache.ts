import { useState } from "preact/hooks";
import { api, can } from "../api";
import { html, int, Status, useLoad, when } from "../kit";

interface Stats {
  entries: number;
  lookups: number;
  hits: { exact: number; semantic: number; l2_context: number };
  misses: number;
  stores: number;
  evictions: number;
  feedback: { wrong: number; right: number; point: number; raisedBy: number; maxWrongHitRate: number };
}
interface Entry {
  id: string;
  model: string;
  mode: string;
  query: string | null;
  hits: number;
  createdAt: string;
  lastUsedAt: string;
}
interface Settings {
  decisionThreshold: number | null;
  learned: boolean;
  effectiveThreshold: number | null;
  source: string | null;
  modelThreshold: number | null;
}
const PAGE = 20;

/** the measured point closest to the floor in use (the table lists a few floors) */
const nearest = (point: number): number =>
  __SVC_OPERATING_POINTS__.reduce((best, p) => (Math.abs(p.threshold - point) < Math.abs(best - point) ? p.threshold : best), __SVC_OPERATING_POINTS__[0]!.threshold);

/** BENCHMARKS.md's measured trade-off per operating point; the row in use is marked. */
const TradeOff = ({ current }: { current: number | null }) =>
  html`<table class="compact">
    <caption>Measured by cross-validation on cache-train (BENCHMARKS.md, "Cache quality")</caption>
    <thead><tr><th scope="col">Threshold</th><th scope="col" class="num">Precision</th><th scope="col" class="num">Recall</th><th scope="col" class="num">False-hit rate</th></tr></thead>
    <tbody>${__SVC_OPERATING_POINTS__.map(
      (p) => html`<tr class=${p.threshold === current ? "current" : ""} aria-current=${p.threshold === current ? "true" : undefined}>
        <td>${p.label}${p.threshold === current ? " — in use" : ""}</td><td class="num">${p.precision.toFixed(3)}</td><td class="num">${p.recall.toFixed(3)}</td><td class="num">${p.falseHitRate.toFixed(3)}</td>
      </tr>`,
    )}</tbody>
  </table>`;

interface Lookup {
  hit: boolean;
  tier: string | null;
  similarity: number;
  learnedScore: number | null;
  entryId: string | null;
  lookupMs: number;
}

/** "Would this question hit?": POST /api/v1/query looks a chat request up without calling upstream or storing. */
function Probe({ manage, onDeleted }: { manage: boolean; onDeleted: (m: string) => void }) {
  const [model, setModel] = useState("gpt-4o-mini");
  const [question, setQuestion] = useState("");
  const [r, setR] = useState<Lookup>();
  const [error, setError] = useState<string>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      setR(await api<Lookup>("/api/v1/query", { method: "POST", json: { model: model.trim(), messages: [{ role: "user", content: question }] } }));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const remove = async () => {
    await api(`/api/v1/cache/entries/${encodeURIComponent(r!.entryId!)}`, { method: "DELETE" });
    setR(undefined);
    onDeleted(`Deleted entry ${r!.entryId}.`);
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="h-probe">
    <h2 id="h-probe">Search the cache</h2>
    <p class="muted">Looks a question up as the chat-completions proxy would, without calling the provider or storing anything.</p>
    <div class="toolbar">
      <label for="p-model">Model</label>
      <input id="p-model" type="text" required value=${model} onInput=${(e: Event) => setModel((e.target as HTMLInputElement).value)} />
      <label for="p-question">Question</label>
      <input id="p-question" type="text" required class="wide" value=${question} onInput=${(e: Event) => setQuestion((e.target as HTMLInputElement).value)} />
      <button type="submit">Look up</button>
    </div>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    ${r &&
    html`<p role="status">
      ${r.hit ? html`<span class="badge hit">HIT</span> ${r.tier} · similarity ${r.similarity.toFixed(3)}${r.learnedScore !== null ? ` · learned score ${r.learnedScore.toFixed(3)}` : ""} · entry <code>${r.entryId}</code>` : html`<span class="badge miss">MISS</span> nearest similarity ${r.similarity.toFixed(3)}`}
      · ${r.lookupMs.toFixed(1)} ms
      ${r.hit && manage ? html` <button type="button" class="danger" onClick=${remove}>Delete this entry</button>` : null}
    </p>`}
  </form>`;
}

export function CachePage() {
  const [offset, setOffset] = useState(0);
  const [message, setMessage] = useState<string>();
  const stats = useLoad<Stats>(() => api("/api/v1/cache/stats"));
  const settings = useLoad<Settings>(() => api("/api/v1/cache/settings"));
  const entries = useLoad<{ entries: Entry[]; total: number }>(() => api(`/api/v1/cache/entries?limit=${PAGE}&offset=${offset}`), [offset]);
  const manage = can("ManageConfig");
  const act = async (f: () => Promise<string>) => {
    try {
      setMessage(await f());
    } catch (e) {
      setMessage(`Failed: ${(e as Error).message}`);
    }
    stats.reload();
    entries.reload();
  };
  const purge = () =>
    confirm("Purge every cached answer of this workspace?") &&
    act(async () => `Purged ${int((await api<{ deleted: number }>("/api/v1/cache", { method: "DELETE" })).deleted)} entries.`);
  const remove = (e: Entry) => act(async () => (await api(`/api/v1/cache/entries/${encodeURIComponent(e.id)}`, { method: "DELETE" }), `Deleted entry ${e.id}.`));
  const [threshold, setThreshold] = useState("");
  const saveThreshold = (ev: Event) => {
    ev.preventDefault();
    void act(async () => {
      const v = threshold.trim() === "" ? null : Number(threshold);
      await api("/api/v1/cache/settings", { method: "PUT", json: { decisionThreshold: v } });
      settings.reload();
      return v === null ? "Operating point reset to the default." : `Operating point set to ${v}.`;
    });
  };
  const s = stats.data;
  const o = settings.data;
  return html`<section aria-labelledby="h-cache">
    <h1 id="h-cache">Cache</h1>
    <${Status} error=${stats.error} loading=${stats.loading && !s} />
    ${message ? html`<p class="notice" role="status">${message}</p>` : null}
    ${s &&
    html`<dl class="stats">
      <div class="stat"><dt>Entries</dt><dd>${int(s.entries)}</dd></div>
      <div class="stat"><dt>Lookups</dt><dd>${int(s.lookups)}</dd></div>
      <div class="stat"><dt>Exact hits</dt><dd>${int(s.hits.exact)}</dd></div>
      <div class="stat"><dt>Semantic hits</dt><dd>${int(s.hits.semantic)}</dd></div>
      <div class="stat"><dt>Multi-turn hits</dt><dd>${int(s.hits.l2_context)}</dd></div>
      <div class="stat"><dt>Misses</dt><dd>${int(s.misses)}</dd></div>
      <div class="stat"><dt>Evictions</dt><dd>${int(s.evictions)}</dd></div>
    </dl>
    <p class="muted">Counters since the gateway started.</p>`}
    ${o &&
    html`<div class="card">
      <h2>Operating point</h2>
      <p>A semantic hit needs cosine similarity ≥ <strong>${s ? s.feedback.point.toFixed(2) : "—"}</strong>${s && s.feedback.raisedBy > 0 ? html` (raised by ${s.feedback.raisedBy.toFixed(2)} after ${int(s.feedback.wrong)} reported wrong hits)` : ""}, and the verifier's checks (numbers, names, negations, antonyms, argument order).
        Higher means fewer, surer hits (precision); lower means more hits (recall). Reported wrong hits: ${s ? int(s.feedback.wrong) : "—"}, right: ${s ? int(s.feedback.right) : "—"}.</p>
      ${s && html`<${TradeOff} current=${nearest(s.feedback.point)} />`}
      ${o.learned
        ? html`<p>The learned hit decision also runs: it accepts a semantic hit at probability ≥ <strong>${o.effectiveThreshold ?? "—"}</strong> (${o.source ?? "default"}; the model's own default is ${o.modelThreshold ?? "—"}).</p>`
        : html`<p class="muted">The learned hit decision is off (<code>SVC_CACHE__LEARNED_DECISION</code>); the threshold below applies when it is on.</p>`}
      ${manage &&
      html`<form class="toolbar" onSubmit=${saveThreshold}>
        <label for="c-threshold">Decision threshold (0–1, empty for the default)</label>
        <input id="c-threshold" type="number" min="0" max="1" step="0.01" value=${threshold} onInput=${(e: Event) => setThreshold((e.target as HTMLInputElement).value)} />
        <button type="submit">Save operating point</button>
      </form>`}
    </div>`}
    <${Probe} manage=${manage} onDeleted=${(m: string) => act(async () => m)} />
    ${manage && html`<p><button type="button" class="danger" onClick=${purge}>Purge cache</button></p>`}
    <${Status} error=${entries.error} />
    <table>
      <caption>Cached answers (${int(entries.data?.total)})</caption>
      <thead><tr><th scope="col">Question</th><th scope="col">Model</th><th scope="col">Mode</th><th scope="col" class="num">Hits</th><th scope="col">Created</th><th scope="col">Last used</th>${manage && html`<th scope="col">Actions</th>`}</tr></thead>
      <tbody>${(entries.data?.entries ?? []).map(
        (e) => html`<tr>
          <td class="clip">${e.query ?? "—"}</td><td>${e.model}</td><td>${e.mode}</td><td class="num">${int(e.hits)}</td><td>${when(e.createdAt)}</td><td>${when(e.lastUsedAt)}</td>
          ${manage && html`<td><button type="button" onClick=${() => remove(e)}>Delete<span class="sr-only"> entry ${e.id}</span></button></td>`}
        </tr>`,
      )}</tbody>
    </table>
    <nav class="pager" aria-label="Entry pages">
      <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Newer</button>
      <button type="button" disabled=${offset + PAGE >= (entries.data?.total ?? 0)} onClick=${() => setOffset(offset + PAGE)}>Older</button>
    </nav>
  </section>`;
}
