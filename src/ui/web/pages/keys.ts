import { useState } from "preact/hooks";
import { api, can } from "../api";
import { html, Status, useLoad, when } from "../kit";

interface Key {
  id: string;
  name: string;
  prefix: string;
  permissions: string[];
  teamId: string | null;
  status: string;
  createdAt: string;
  lastUsedAt: string | null;
}
const PERMS = ["ViewMetrics", "ViewKeys", "ViewLogs", "ManageKeys", "ManageConfig", "WorkspaceAdmin"];

function CreateKey({ onCreated, teams }: { onCreated: () => void; teams: Array<{ id: string; name: string }> }) {
  const [name, setName] = useState("");
  const [perms, setPerms] = useState<string[]>([]);
  const [team, setTeam] = useState("");
  const [created, setCreated] = useState<{ key: string; name: string }>();
  const [error, setError] = useState<string>();
  const [copied, setCopied] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const k = await api<{ key: string; name: string }>("/api/v1/virtual-keys", { method: "POST", json: { name: name.trim(), permissions: perms, ...(team ? { teamId: team } : {}) } });
      setCreated(k);
      setCopied(false);
      setName("");
      setPerms([]);
      onCreated();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const copy = async () => {
    await navigator.clipboard.writeText(created!.key).then(
      () => setCopied(true),
      () => setError("Copying was refused by the browser: select the key and copy it."),
    );
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="h-newkey">
    <h2 id="h-newkey">Create a key</h2>
    <label for="k-name">Key name</label>
    <input id="k-name" type="text" required maxlength="128" value=${name} onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} />
    <fieldset><legend>Permissions</legend>
      ${PERMS.map(
        (p) => html`<label class="check"><input type="checkbox" checked=${perms.includes(p)} onChange=${(e: Event) =>
          setPerms((e.target as HTMLInputElement).checked ? [...perms, p] : perms.filter((x) => x !== p))} /> ${p}</label>`,
      )}
    </fieldset>
    ${teams.length > 0 &&
    html`<label for="k-team">Team</label>
      <select id="k-team" value=${team} onChange=${(e: Event) => setTeam((e.target as HTMLSelectElement).value)}>
        <option value="">No team</option>${teams.map((t) => html`<option value=${t.id}>${t.name}</option>`)}
      </select>`}
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    <button type="submit" class="primary">Create key</button>
    ${created &&
    html`<div class="once" role="status">
      <p>Key <strong>${created.name}</strong> created. Copy it now: it is shown only once.</p>
      <label for="k-secret">New API key</label>
      <input id="k-secret" type="text" readonly value=${created.key} onFocus=${(e: Event) => (e.target as HTMLInputElement).select()} />
      <button type="button" onClick=${copy}>${copied ? "Copied" : "Copy key"}</button>
    </div>`}
  </form>`;
}

export function KeysPage() {
  const keys = useLoad<{ keys: Key[]; total: number }>(() => api("/api/v1/virtual-keys?pageSize=100"));
  const teams = useLoad<{ teams: Array<{ id: string; name: string }> }>(() => (can("WorkspaceAdmin") ? api("/api/v1/teams?pageSize=100") : Promise.resolve({ teams: [] })));
  const teamName = (id: string | null) => (id ? (teams.data?.teams.find((t) => t.id === id)?.name ?? id) : "—");
  const [error, setError] = useState<string>();
  const revoke = async (k: Key) => {
    if (!confirm(`Revoke key "${k.name}"? Requests with it will be refused.`)) return;
    try {
      await api(`/api/v1/virtual-keys/${encodeURIComponent(k.id)}`, { method: "DELETE" });
      keys.reload();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const manage = can("ManageKeys");
  return html`<section aria-labelledby="h-keys">
    <h1 id="h-keys">Keys</h1>
    ${manage && html`<${CreateKey} onCreated=${keys.reload} teams=${teams.data?.teams ?? []} />`}
    <${Status} error=${keys.error ?? error} loading=${keys.loading && !keys.data} />
    <table>
      <caption>API keys (${keys.data?.total ?? 0})</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Team</th><th scope="col">Permissions</th><th scope="col">Status</th><th scope="col">Last used</th>${manage && html`<th scope="col">Actions</th>`}</tr></thead>
      <tbody>${(keys.data?.keys ?? []).map(
        (k) => html`<tr>
          <td>${k.name}</td><td><code>${k.prefix}…</code></td><td>${teamName(k.teamId)}</td><td>${k.permissions.join(", ") || "—"}</td>
          <td><span class=${`badge ${k.status}`}>${k.status}</span></td><td>${when(k.lastUsedAt)}</td>
          ${manage && html`<td>${k.status === "active" ? html`<button type="button" class="danger" onClick=${() => revoke(k)}>Revoke<span class="sr-only"> ${k.name}</span></button>` : "—"}</td>`}
        </tr>`,
      )}</tbody>
    </table>
  </section>`;
}
