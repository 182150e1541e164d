import { useState } from "preact/hooks";
import { api, ApiFailure, can } from "../api";
import { html, int, ms, Status, usd, useLoad, when } from "../kit";

interface Rec {
  createdAt: string;
  requestId: string;
  keyId: string | null;
  provider: string;
  model: string;
  upstreamModel: string | null;
  deployment: string | null;
  attempts: number;
  cacheStatus: string;
  cacheTier: string | null;
  streamed: boolean;
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
  costUsd: number;
  costSavedUsd: number;
  cacheEntryId: string | null;
  similarity: number | null;
  learnedScore: number | null;
  cachePoint: number | null;
}
const PAGE = 25;

const score = (n: number) => n.toFixed(3);

/** Why a request hit or missed, in words, with the numbers the decision used. */
export const why = (r: Rec): string => {
  const point = r.cachePoint !== null ? ` (operating point ${score(r.cachePoint)})` : "";
  if (r.cacheStatus === "HIT") {
    if (r.cacheTier === "exact") return "Exact hit: the same request (model, messages, parameters) was answered before.";
    const learned = r.learnedScore !== null ? `, and the learned stage judged it the same meaning with probability ${score(r.learnedScore)}` : "";
    const sim = r.similarity !== null ? ` at similarity ${score(r.similarity)}${point}` : "";
    if (r.cacheTier === "semantic") return `Semantic hit: a cached question close enough in meaning was accepted${sim}${learned}.`;
    return `Multi-turn hit: the conversation's context matched a cached one${sim}${learned}.`;
  }
  if (r.cacheStatus === "MISS")
    return r.similarity !== null
      ? `Miss: the nearest cached question had similarity ${score(r.similarity)}, below what a hit needs${point}; the provider answered and the answer was stored.`
      : "Miss: no cached question to compare with, so the provider answered and the answer was stored.";
  return "Bypassed: this request is never cached (e.g. cache disabled for it, or a non-cacheable operation).";
};

/**
 * "This hit was wrong": the cache's wrong-hit feedback on the request (the entry stops serving that
 * question and the operating point tightens). The cache remembers recent hits only: for an older
 * one (404) the entry that answered can still be deleted.
 */
function WrongHit({ r }: { r: Rec }) {
  const [state, setState] = useState<string>();
  const [forgotten, setForgotten] = useState(false);
  const report = async () => {
    try {
      await api("/api/v1/cache/feedback", { method: "POST", json: { requestId: r.requestId, verdict: "wrong" } });
      setState("Thanks: the cache was told this hit was wrong; the entry no longer answers this question.");
    } catch (e) {
      const gone = e instanceof ApiFailure && e.status === 404;
      setForgotten(gone && r.cacheEntryId !== null);
      setState(gone ? "The cache no longer remembers this request (it keeps recent hits only)." : `Failed: ${(e as Error).message}`);
    }
  };
  const remove = async () => {
    try {
      await api(`/api/v1/cache/entries/${encodeURIComponent(r.cacheEntryId!)}`, { method: "DELETE" });
      setState(`Deleted cache entry ${r.cacheEntryId}.`);
    } catch (e) {
      setState(`Failed: ${(e as Error).message}`);
    }
    setForgotten(false);
  };
  return html`<button type="button" onClick=${report}>This hit was wrong</button>
    ${forgotten ? html` <button type="button" class="danger" onClick=${remove}>Delete the entry that answered</button>` : null}
    ${state ? html` <span role="status">${state}</span>` : null}`;
}

export function RequestsPage() {
  const [status, setStatus] = useState("");
  const [model, setModel] = useState("");
  const [offset, setOffset] = useState(0);
  const [open, setOpen] = useState<string>();
  const r = useLoad<{ requests: Rec[]; total: number }>(() => {
    const q = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
    if (status) q.set("cache_status", status);
    if (model) q.set("model", model);
    return api(`/api/v1/usage/requests?${q}`);
  }, [status, model, offset]);
  const total = r.data?.total ?? 0;
  return html`<section aria-labelledby="h-requests">
    <h1 id="h-requests">Requests</h1>
    <form class="toolbar" onSubmit=${(e: Event) => e.preventDefault()}>
      <label for="f-status">Cache status</label>
      <select id="f-status" value=${status} onChange=${(e: Event) => (setStatus((e.target as HTMLSelectElement).value), setOffset(0))}>
        <option value="">Any</option><option value="HIT">HIT</option><option value="MISS">MISS</option><option value="BYPASS">BYPASS</option>
      </select>
      <label for="f-model">Model</label>
      <input id="f-model" type="text" value=${model} onChange=${(e: Event) => (setModel((e.target as HTMLInputElement).value.trim()), setOffset(0))} />
    </form>
    <${Status} error=${r.error} loading=${r.loading && !r.data} />
    <table>
      <caption>Requests ${total ? `${offset + 1}–${Math.min(offset + PAGE, total)} of ${int(total)}` : ""}</caption>
      <thead><tr><th scope="col">Time</th><th scope="col">Model</th><th scope="col">Provider</th><th scope="col">Cache</th><th scope="col" class="num">Latency</th><th scope="col" class="num">Tokens</th><th scope="col" class="num">Cost</th><th scope="col">Details</th></tr></thead>
      <tbody>
        ${(r.data?.requests ?? []).length === 0 ? html`<tr><td colspan="8" class="muted">No requests.</td></tr>` : null}
        ${(r.data?.requests ?? []).map(
          (x) => html`<tr>
              <td>${when(x.createdAt)}</td><td>${x.model}</td><td>${x.provider}</td>
              <td><span class=${`badge ${x.cacheStatus.toLowerCase()}`}>${x.cacheStatus}</span>${x.cacheTier ? ` ${x.cacheTier}` : ""}${x.similarity !== null ? ` · ${score(x.similarity)}` : ""}</td>
              <td class="num">${ms(x.latencyMs)}</td><td class="num">${int(x.inputTokens + x.outputTokens)}</td><td class="num">${usd(x.costUsd)}</td>
              <td><button type="button" aria-expanded=${open === x.requestId} onClick=${() => setOpen(open === x.requestId ? undefined : x.requestId)}>${open === x.requestId ? "Hide" : "Show"}<span class="sr-only"> request ${x.requestId}</span></button></td>
            </tr>
            ${open === x.requestId &&
            html`<tr class="detail"><td colspan="8">
              <p>${why(x)}</p>
              <dl class="pairs">
                <dt>Request ID</dt><dd><code>${x.requestId}</code></dd>
                <dt>API key</dt><dd>${x.keyId ?? "—"}</dd>
                <dt>Cache entry</dt><dd>${x.cacheEntryId ? html`<code>${x.cacheEntryId}</code>` : "—"}</dd>
                <dt>Similarity</dt><dd>${x.similarity !== null ? score(x.similarity) : "—"}${x.cacheStatus === "MISS" && x.similarity !== null ? " (nearest)" : ""}</dd>
                <dt>Learned score</dt><dd>${x.learnedScore !== null ? score(x.learnedScore) : "—"}</dd>
                <dt>Operating point</dt><dd>${x.cachePoint !== null ? score(x.cachePoint) : "—"}</dd>
                <dt>Deployment</dt><dd>${x.deployment ?? "—"}${x.upstreamModel && x.upstreamModel !== x.model ? ` (${x.upstreamModel})` : ""}</dd>
                <dt>Upstream attempts</dt><dd>${x.attempts}${x.attempts > 1 ? " (retried or fell back)" : ""}</dd>
                <dt>Tokens in / out</dt><dd>${int(x.inputTokens)} / ${int(x.outputTokens)}</dd>
                <dt>Cost saved</dt><dd>${usd(x.costSavedUsd)}</dd>
                <dt>Streamed</dt><dd>${x.streamed ? "yes" : "no"}</dd>
              </dl>
              ${x.cacheStatus === "HIT" && can("ManageConfig") ? html`<${WrongHit} r=${x} />` : null}
            </td></tr>`}`,
        )}
      </tbody>
    </table>
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Newer</button>
      <button type="button" disabled=${offset + PAGE >= total} onClick=${() => setOffset(offset + PAGE)}>Older</button>
    </nav>
  </section>`;
}
