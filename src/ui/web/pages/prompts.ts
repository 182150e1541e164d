/**
 * Prompts: the list; a prompt's versions, a side-by-side diff of two versions, rendering with
 * variables (POST /test, a dry run) and execution through the gateway (POST /execute); chains (chains.ts: list and run).
 * Reads need any signed-in token; the server decides who may execute.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { html, int, Status, useLoad, when } from "../kit";
import { Chains } from "./chains";

interface Variable {
  name: string;
  varType: string;
  defaultValue?: string | null;
}
interface Prompt {
  id: string;
  name: string;
  status: string;
  currentVersion: number;
  model: string | null;
  tags: string[];
  variables: Variable[];
  updatedAt: string;
}
interface Version {
  version: number;
  message: string | null;
  createdAt: string;
  template: string;
}
interface Diff {
  templateDiff: string;
  stats: { additions: number; deletions: number };
}

/** Rows of a side-by-side view from a unified diff: [left, right, kind]. */
export function sideBySide(patch: string): Array<{ left: string | null; right: string | null; kind: "same" | "del" | "add" | "change" | "gap" }> {
  const rows: Array<{ left: string | null; right: string | null; kind: "same" | "del" | "add" | "change" | "gap" }> = [];
  let dels: string[] = [];
  let adds: string[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++)
      rows.push({ left: dels[i] ?? null, right: adds[i] ?? null, kind: dels[i] !== undefined && adds[i] !== undefined ? "change" : dels[i] !== undefined ? "del" : "add" });
    dels = [];
    adds = [];
  };
  for (const line of patch.split("\n")) {
    if (line.startsWith("---") || line.startsWith("+++") || line.startsWith("===") || line.startsWith("\\")) continue;
    if (line.startsWith("@@")) {
      flush();
      if (rows.length) rows.push({ left: null, right: null, kind: "gap" });
    } else if (line.startsWith("-")) dels.push(line.slice(1));
    else if (line.startsWith("+")) adds.push(line.slice(1));
    else if (line.startsWith(" ")) {
      flush();
      rows.push({ left: line.slice(1), right: line.slice(1), kind: "same" });
    }
  }
  flush();
  return rows;
}

function DiffView({ id, versions }: { id: string; versions: Version[] }) {
  const [from, setFrom] = useState(versions[versions.length - 1]?.version ?? 1);
  const [to, setTo] = useState(versions[0]?.version ?? 1);
  const d = useLoad<Diff>(() => api(`/api/v1/prompts/${id}/diff?fromVersion=${from}&toVersion=${to}`), [id, from, to]);
  const rows = d.data ? sideBySide(d.data.templateDiff) : [];
  const pick = (label: string, value: number, set: (v: number) => void, idp: string) =>
    html`<label for=${idp}>${label}</label><select id=${idp} value=${value} onChange=${(e: Event) => set(Number((e.target as HTMLSelectElement).value))}>
      ${versions.map((v) => html`<option value=${v.version}>v${v.version}</option>`)}</select>`;
  return html`<div class="card">
    <h2>Compare versions</h2>
    <div class="toolbar">${pick("From", from, setFrom, "d-from")}${pick("To", to, setTo, "d-to")}
      ${d.data && html`<span class="muted">+${d.data.stats.additions} / −${d.data.stats.deletions} lines</span>`}</div>
    <${Status} error=${d.error} />
    ${d.data &&
    (rows.length === 0
      ? html`<p class="muted">The templates are the same.</p>`
      : html`<table class="diff">
          <caption>Template v${from} (left) and v${to} (right)</caption>
          <thead><tr><th scope="col">v${from}</th><th scope="col">v${to}</th></tr></thead>
          <tbody>${rows.map((r) =>
            r.kind === "gap"
              ? html`<tr class="gap"><td colspan="2">…</td></tr>`
              : html`<tr class=${r.kind}>
                  <td class=${r.kind === "del" || r.kind === "change" ? "del" : ""}>${r.left === null ? "" : html`<span class="sr-only">${r.kind === "same" ? "" : "removed: "}</span>${r.left}`}</td>
                  <td class=${r.kind === "add" || r.kind === "change" ? "add" : ""}>${r.right === null ? "" : html`<span class="sr-only">${r.kind === "same" ? "" : "added: "}</span>${r.right}`}</td>
                </tr>`,
          )}</tbody>
        </table>`)}
  </div>`;
}

function Run({ prompt }: { prompt: Prompt }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [result, setResult] = useState<{ rendered: string; response?: string; cacheHit?: boolean; tokens?: number }>();
  const [error, setError] = useState<string>();
  const go = async (execute: boolean) => {
    setError(undefined);
    try {
      const variables = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== ""));
      const r = await api<{ renderedPrompt: string; response: string; cacheHit: boolean; estimatedTokens: number }>(`/api/v1/prompts/${prompt.id}/${execute ? "execute" : "test"}`, {
        method: "POST",
        json: { variables },
      });
      setResult({ rendered: r.renderedPrompt, response: execute ? r.response : undefined, cacheHit: r.cacheHit, tokens: r.estimatedTokens });
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return html`<form class="card" onSubmit=${(e: Event) => (e.preventDefault(), go(false))}>
    <h2>Render and execute</h2>
    ${prompt.variables.length === 0 ? html`<p class="muted">This prompt has no variables.</p>` : null}
    ${prompt.variables.map(
      (v) => html`<label for=${`var-${v.name}`}>${v.name} <span class="muted">(${v.varType}${v.defaultValue != null ? `, default ${v.defaultValue}` : ""})</span></label>
        <input id=${`var-${v.name}`} type="text" value=${values[v.name] ?? ""} onInput=${(e: Event) => setValues({ ...values, [v.name]: (e.target as HTMLInputElement).value })} />`,
    )}
    <div class="toolbar">
      <button type="submit">Render</button>
      <button type="button" class="primary" onClick=${() => go(true)}>Execute</button>
    </div>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    ${result &&
    html`<div role="status">
      <h3>Rendered prompt <span class="muted">(≈${int(result.tokens)} tokens)</span></h3>
      <pre class="out">${result.rendered}</pre>
      ${result.response !== undefined && html`<h3>Response ${result.cacheHit ? html`<span class="badge hit">cache hit</span>` : null}</h3><pre class="out">${result.response}</pre>`}
    </div>`}
  </form>`;
}

function Detail({ prompt }: { prompt: Prompt }) {
  const v = useLoad<{ versions: Version[] }>(() => api(`/api/v1/prompts/${prompt.id}/versions?pageSize=100`), [prompt.id]);
  const versions = v.data?.versions ?? [];
  return html`<section aria-labelledby="h-prompt" class="detail">
    <h2 id="h-prompt">${prompt.name}</h2>
    <${Status} error=${v.error} />
    <table>
      <caption>Versions (${versions.length})</caption>
      <thead><tr><th scope="col">Version</th><th scope="col">Message</th><th scope="col">Created</th></tr></thead>
      <tbody>${versions.map((x) => html`<tr><td>v${x.version}${x.version === prompt.currentVersion ? " (current)" : ""}</td><td>${x.message ?? "—"}</td><td>${when(x.createdAt)}</td></tr>`)}</tbody>
    </table>
    ${versions.length > 1 && html`<${DiffView} id=${prompt.id} versions=${versions} />`}
    <${Run} prompt=${prompt} />
  </section>`;
}

export function PromptsPage() {
  const prompts = useLoad<{ prompts: Prompt[]; total: number }>(() => api("/api/v1/prompts?pageSize=100"));
  const [open, setOpen] = useState<string>();
  const selected = prompts.data?.prompts.find((p) => p.id === open);
  return html`<section aria-labelledby="h-prompts">
    <h1 id="h-prompts">Prompts</h1>
    <${Status} error=${prompts.error} loading=${prompts.loading && !prompts.data} />
    <table>
      <caption>Prompts (${prompts.data?.total ?? 0})</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Version</th><th scope="col">Model</th><th scope="col">Tags</th><th scope="col">Updated</th><th scope="col">Details</th></tr></thead>
      <tbody>${(prompts.data?.prompts ?? []).length === 0 ? html`<tr><td colspan="7" class="muted">None yet.</td></tr>` : null}
        ${(prompts.data?.prompts ?? []).map(
          (p) => html`<tr><td>${p.name}</td><td>${p.status}</td><td>v${p.currentVersion}</td><td>${p.model ?? "—"}</td><td>${p.tags.join(", ") || "—"}</td><td>${when(p.updatedAt)}</td>
            <td><button type="button" aria-expanded=${open === p.id} onClick=${() => setOpen(open === p.id ? undefined : p.id)}>${open === p.id ? "Close" : "Open"}<span class="sr-only"> ${p.name}</span></button></td></tr>`,
        )}</tbody>
    </table>
    ${selected && html`<${Detail} key=${selected.id} prompt=${selected} />`}
    <${Chains} />
  </section>`;
}
