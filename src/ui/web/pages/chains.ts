/**
 * Chains (on the Prompts page): the tenant's chains with their steps, and running one with a
 * message (POST /api/v1/chains/{id}/execute, through the gateway, cache first): every step's
 * output, tokens and whether the cache answered it. Any signed-in token may run a chain (the
 * server decides, as for reads).
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { html, int, ms, Status, useLoad, when } from "../kit";

interface Step {
  modelId: string;
  transform?: string;
}
interface Chain {
  id: string;
  name: string;
  description?: string | null;
  steps: Step[];
  updatedAt: string;
}
interface StepResult {
  index: number;
  model: string;
  output: string;
  promptTokens: number;
  completionTokens: number;
  cacheHit: boolean;
  durationMs: number;
}
interface ChainResult {
  output: string;
  steps: StepResult[];
  totalPromptTokens: number;
  totalCompletionTokens: number;
}

function RunChain({ chain }: { chain: Chain }) {
  const [message, setMessage] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ChainResult>();
  const [error, setError] = useState<string>();
  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      setResult(await api<ChainResult>(`/api/v1/chains/${encodeURIComponent(chain.id)}/execute`, { method: "POST", json: { messages: [{ role: "user", content: message }] } }));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const id = `chain-msg-${chain.id}`;
  return html`<section class="detail" aria-labelledby=${`h-run-${chain.id}`}>
    <h2 id=${`h-run-${chain.id}`}>Run ${chain.name}</h2>
    <p class="muted">Steps: ${chain.steps.map((s, i) => `${i + 1}. ${s.modelId}${s.transform && s.transform !== "passThrough" ? ` (${s.transform})` : ""}`).join(" → ")}</p>
    <form class="toolbar" onSubmit=${run}>
      <label for=${id}>Chain input</label>
      <input id=${id} class="wide" type="text" required value=${message} onInput=${(e: Event) => setMessage((e.target as HTMLInputElement).value)} />
      <button type="submit" class="primary" disabled=${busy || !message.trim()}>Run chain</button>
    </form>
    <${Status} error=${error} loading=${busy} />
    ${result &&
    html`<table>
        <caption>Steps of this run (${int(result.totalPromptTokens + result.totalCompletionTokens)} tokens)</caption>
        <thead><tr><th scope="col">Step</th><th scope="col">Model</th><th scope="col">Cache</th><th scope="col" class="num">Tokens in / out</th><th scope="col" class="num">Time</th><th scope="col">Output</th></tr></thead>
        <tbody>${result.steps.map(
          (s) => html`<tr><td>${s.index + 1}</td><td>${s.model}</td><td><span class=${`badge ${s.cacheHit ? "hit" : "miss"}`}>${s.cacheHit ? "HIT" : "MISS"}</span></td>
            <td class="num">${int(s.promptTokens)} / ${int(s.completionTokens)}</td><td class="num">${ms(s.durationMs)}</td><td class="clip">${s.output}</td></tr>`,
        )}</tbody>
      </table>
      <h3>Chain output</h3>
      <pre class="out" aria-label="Chain output">${result.output}</pre>`}
  </section>`;
}

export function Chains() {
  const chains = useLoad<{ chains: Chain[]; total: number }>(() => api("/api/v1/chains?pageSize=100"));
  const [open, setOpen] = useState<string>();
  const list = chains.data?.chains ?? [];
  const selected = list.find((c) => c.id === open);
  return html`<${Status} error=${chains.error} />
    <table>
      <caption>Chains (${chains.data?.total ?? 0})</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Steps</th><th scope="col">Updated</th><th scope="col">Run</th></tr></thead>
      <tbody>${list.length === 0 ? html`<tr><td colspan="4" class="muted">None yet.</td></tr>` : null}
        ${list.map(
          (c) => html`<tr><td>${c.name}</td><td>${c.steps.length}</td><td>${when(c.updatedAt)}</td>
            <td><button type="button" aria-expanded=${open === c.id} onClick=${() => setOpen(open === c.id ? undefined : c.id)}>${open === c.id ? "Close" : "Run"}<span class="sr-only"> ${c.name}</span></button></td></tr>`,
        )}</tbody>
    </table>
    ${selected && html`<${RunChain} key=${selected.id} chain=${selected} />`}`;
}
