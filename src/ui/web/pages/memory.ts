/**
 * Memory: search milestones across projects (POST /api/v1/memory/search), the projects, and a
 * project's branches with their milestone counts.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { html, Status, useLoad, when } from "../kit";

interface Project {
  projectId: string;
  name: string;
  milestoneCount: number;
  activeBranches: string[];
  updatedAt: string;
}
interface Branch {
  branchName: string;
  parentBranch: string | null;
  purpose: string;
  status: string;
  milestoneCount: number;
  mergedInto: string | null;
  updatedAt: string;
}
interface Hit {
  milestoneId: string;
  projectId: string;
  branchName: string;
  thisContribution: string;
  score: number;
  createdAt: string;
}

function Branches({ project }: { project: Project }) {
  const b = useLoad<{ branches: Branch[]; total: number }>(() => api(`/api/v1/memory/projects/${encodeURIComponent(project.projectId)}/branches?limit=100`), [project.projectId]);
  return html`<${Status} error=${b.error} />
    <table>
      <caption>Branches of ${project.name} (${b.data?.total ?? 0})</caption>
      <thead><tr><th scope="col">Branch</th><th scope="col">From</th><th scope="col">Purpose</th><th scope="col">Status</th><th scope="col" class="num">Milestones</th><th scope="col">Updated</th></tr></thead>
      <tbody>${(b.data?.branches ?? []).map(
        (x) => html`<tr><td>${x.branchName}</td><td>${x.parentBranch ?? "—"}</td><td>${x.purpose || "—"}</td><td>${x.status}${x.mergedInto ? ` into ${x.mergedInto}` : ""}</td><td class="num">${x.milestoneCount}</td><td>${when(x.updatedAt)}</td></tr>`,
      )}</tbody>
    </table>`;
}

export function MemoryPage() {
  const projects = useLoad<{ projects: Project[]; total: number }>(() => api("/api/v1/memory/projects?limit=100"));
  const [open, setOpen] = useState<string>();
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState<Hit[]>();
  const [error, setError] = useState<string>();
  const search = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      setHits((await api<{ milestones: Hit[] }>("/api/v1/memory/search", { method: "POST", json: { query, limit: 20 } })).milestones);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const selected = projects.data?.projects.find((p) => p.projectId === open);
  return html`<section aria-labelledby="h-memory">
    <h1 id="h-memory">Memory</h1>
    <form class="toolbar" onSubmit=${search}>
      <label for="m-query">Search milestones</label>
      <input id="m-query" type="search" required class="wide" value=${query} onInput=${(e: Event) => setQuery((e.target as HTMLInputElement).value)} />
      <button type="submit">Search</button>
    </form>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    ${hits &&
    html`<table>
      <caption>Milestones matching “${query}” (${hits.length})</caption>
      <thead><tr><th scope="col">Project</th><th scope="col">Branch</th><th scope="col">Contribution</th><th scope="col" class="num">Score</th><th scope="col">Created</th></tr></thead>
      <tbody>${hits.length === 0 ? html`<tr><td colspan="5" class="muted">No milestone matches.</td></tr>` : null}
        ${hits.map((h) => html`<tr><td>${h.projectId}</td><td>${h.branchName}</td><td>${h.thisContribution}</td><td class="num">${h.score.toFixed(3)}</td><td>${when(h.createdAt)}</td></tr>`)}</tbody>
    </table>`}
    <${Status} error=${projects.error} loading=${projects.loading && !projects.data} />
    <table>
      <caption>Projects (${projects.data?.total ?? 0})</caption>
      <thead><tr><th scope="col">Name</th><th scope="col" class="num">Milestones</th><th scope="col">Active branches</th><th scope="col">Updated</th><th scope="col">Branches</th></tr></thead>
      <tbody>${(projects.data?.projects ?? []).length === 0 ? html`<tr><td colspan="5" class="muted">None yet.</td></tr>` : null}
        ${(projects.data?.projects ?? []).map(
          (p) => html`<tr><td>${p.name}</td><td class="num">${p.milestoneCount}</td><td>${p.activeBranches.join(", ") || "—"}</td><td>${when(p.updatedAt)}</td>
            <td><button type="button" aria-expanded=${open === p.projectId} onClick=${() => setOpen(open === p.projectId ? undefined : p.projectId)}>${open === p.projectId ? "Hide" : "Show"}<span class="sr-only"> branches of ${p.name}</span></button></td></tr>`,
        )}</tbody>
    </table>
    ${selected && html`<${Branches} key=${selected.projectId} project=${selected} />`}
  </section>`;
}
