import { BASE } from "../api";
import { html, Status, useLoad } from "../kit";

/** Readiness and version (public /ready and /health: no permission needed). */
export function SystemPage() {
  const ready = useLoad<Record<string, unknown>>(async () => {
    const res = await fetch(`${BASE}/ready`);
    return (await res.json()) as Record<string, unknown>;
  });
  const health = useLoad<Record<string, unknown>>(async () => (await fetch(`${BASE}/health`)).json() as Promise<Record<string, unknown>>);
  const rows = (o: Record<string, unknown> | undefined) =>
    Object.entries(o ?? {}).map(([k, v]) => html`<dt>${k}</dt><dd><code>${typeof v === "object" ? JSON.stringify(v) : String(v)}</code></dd>`);
  return html`<section aria-labelledby="h-system">
    <h1 id="h-system">System</h1>
    <${Status} error=${ready.error ?? health.error} loading=${ready.loading} />
    <div class="card"><h2>Readiness</h2><dl class="pairs">${rows(ready.data)}</dl></div>
    <div class="card"><h2>Health</h2><dl class="pairs">${rows(health.data)}</dl></div>
  </section>`;
}
