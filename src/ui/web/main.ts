/**
 * The dashboard's shell: sign-in or the signed-in layout (navigation, a Sign out button on every
 * page, the current page). Pages are chosen by the URL's fragment (#/usage), so the server serves
 * one page and the app works behind any path prefix. What the session's permissions do not allow
 * is not offered; the server checks every call again.
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { can, finishSso, onSessionChange, session, signOut, type Session } from "./api";
import { html } from "./kit";
import { SignIn } from "./pages/signin";
import { OverviewPage } from "./pages/overview";
import { UsagePage } from "./pages/usage";
import { RequestsPage } from "./pages/requests";
import { KeysPage } from "./pages/keys";
import { CachePage } from "./pages/cache";
import { TeamsPage } from "./pages/teams";
import { SystemPage } from "./pages/system";
import { IdentityPage, McpPage } from "./pages/lists";
import { MemoryPage } from "./pages/memory";
import { PromptsPage } from "./pages/prompts";
import { UsersPage } from "./pages/users";

const PAGES = [
  { id: "overview", label: "Overview", perm: "ViewMetrics", view: OverviewPage },
  { id: "usage", label: "Usage", perm: "ViewMetrics", view: UsagePage },
  { id: "requests", label: "Requests", perm: "ViewLogs", view: RequestsPage },
  { id: "keys", label: "Keys", perm: "ViewKeys", view: KeysPage },
  { id: "cache", label: "Cache", perm: "ViewMetrics", view: CachePage },
  { id: "teams", label: "Teams", perm: "WorkspaceAdmin", view: TeamsPage },
  { id: "prompts", label: "Prompts", perm: undefined, view: PromptsPage },
  { id: "mcp", label: "MCP", perm: undefined, view: McpPage },
  { id: "memory", label: "Memory", perm: undefined, view: MemoryPage },
  { id: "users", label: "Users", perm: "WorkspaceAdmin", view: UsersPage },
  { id: "identity", label: "SSO / SCIM", perm: "WorkspaceAdmin", view: IdentityPage },
  { id: "system", label: "System", perm: undefined, view: SystemPage },
] as const;

const route = () => location.hash.replace(/^#\/?/, "") || "overview";

function App() {
  const [, setTick] = useState(0);
  const [page, setPage] = useState(route());
  useEffect(() => onSessionChange(() => setTick((n) => n + 1)), []);
  useEffect(() => {
    const f = () => setPage(route());
    addEventListener("hashchange", f);
    return () => removeEventListener("hashchange", f);
  }, []);
  const s = session();
  return s ? html`<${Shell} s=${s} page=${page} />` : html`<${SignIn} />`;
}

function Shell({ s, page }: { s: Session; page: string }) {
  const allowed = PAGES.filter((p) => !p.perm || can(p.perm));
  const current = allowed.find((p) => p.id === page) ?? allowed[0]!;
  useEffect(() => {
    document.title = `${current.label} · svc dashboard`;
    document.getElementById("main")?.focus({ preventScroll: true });
  }, [current.id]);
  return html`<a class="skip" href="#main" onClick=${(e: Event) => (e.preventDefault(), document.getElementById("main")?.focus())}>Skip to content</a>
    <header class="top">
      <span class="brand">svc</span>
      <nav aria-label="Pages"><ul>${allowed.map(
        (p) => html`<li><a href=${`#/${p.id}`} aria-current=${p.id === current.id ? "page" : undefined}>${p.label}</a></li>`,
      )}</ul></nav>
      <span class="who">Workspace <code>${s.tenant}</code></span>
      <button type="button" class="signout" onClick=${() => signOut("You are signed out.")}>Sign out</button>
    </header>
    <main id="main" tabindex="-1"><${current.view} key=${current.id} /></main>`;
}

const root = document.getElementById("app")!;
root.textContent = "";
render(html`<${App} />`, root);
void finishSso();
