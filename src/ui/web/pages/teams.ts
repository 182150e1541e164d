import { api } from "../api";
import { html, Status, usd, useLoad } from "../kit";

interface Team {
  id: string;
  name: string;
  parentTeamId: string | null;
  maxBudgetCents: number | null;
  budgetPeriod: string;
}
interface Spend {
  teamId: string;
  totalSpendCents: number;
  teamSpendCents: number;
  maxBudgetCents: number | null;
  totalKeys: number;
  activeKeys: number;
  periodEnd: string;
}

const PERIOD: Record<string, string> = { daily: "today", weekly: "this week", monthly: "this month" };

function Budget({ team, parent, children }: { team: Team; parent?: string; children: string[] }) {
  const s = useLoad<Spend>(() => api(`/api/v1/teams/${encodeURIComponent(team.id)}/spend`), [team.id]);
  const m = useLoad<{ userIds: string[]; total: number }>(() => api(`/api/v1/teams/${encodeURIComponent(team.id)}/members`), [team.id]);
  const members = m.data?.total;
  const spent = s.data?.totalSpendCents ?? 0;
  const max = s.data?.maxBudgetCents ?? null;
  const ratio = max ? Math.min(1, spent / max) : 0;
  return html`<li class="card team">
    <h2>${team.name}</h2>
    <${Status} error=${s.error} />
    ${s.data &&
    html`<p>
        <span id=${`b-${team.id}`}>Spend ${PERIOD[team.budgetPeriod] ?? `this ${team.budgetPeriod}`}</span>:
        <strong>${usd(spent / 100)}</strong>${max !== null ? html` of ${usd(max / 100)}` : " (no budget)"}
      </p>
      ${max !== null &&
      html`<div class="bar" role="progressbar" aria-labelledby=${`b-${team.id}`} aria-valuemin="0" aria-valuemax=${max} aria-valuenow=${Math.min(spent, max)}
          aria-valuetext=${`${usd(spent / 100)} of ${usd(max / 100)}`}>
          <div class=${ratio >= 1 ? "fill over" : ratio >= 0.8 ? "fill warn" : "fill"} style=${{ width: `${(ratio * 100).toFixed(1)}%` }}></div>
        </div>`}
      <p class="muted">${s.data.activeKeys} active keys · ${members ?? "…"} members${parent ? ` · sub-team of ${parent}` : ""}${children.length ? ` · sub-teams: ${children.join(", ")}` : ""}${
        s.data.totalSpendCents !== s.data.teamSpendCents ? ` · its own keys ${usd(s.data.teamSpendCents / 100)}` : ""}</p>`}
  </li>`;
}

export function TeamsPage() {
  const teams = useLoad<{ teams: Team[] }>(() => api("/api/v1/teams?pageSize=100"));
  return html`<section aria-labelledby="h-teams">
    <h1 id="h-teams">Teams</h1>
    <${Status} error=${teams.error} loading=${teams.loading && !teams.data} />
    ${teams.data && teams.data.teams.length === 0 ? html`<p class="muted">No teams yet.</p>` : null}
    <ul class="teams">${(teams.data?.teams ?? []).map((t) => {
      const all = teams.data!.teams;
      return html`<${Budget} key=${t.id} team=${t} parent=${all.find((x) => x.id === t.parentTeamId)?.name} children=${all.filter((x) => x.parentTeamId === t.id).map((x) => x.name)} />`;
    })}</ul>
  </section>`;
}
