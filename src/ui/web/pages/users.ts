/**
 * Users, roles and invitations (WorkspaceAdmin): invite by e-mail with a role, suspend or
 * reactivate a user, assign a role with an optional expiry; lists of users (with their role
 * assignments), invitations and roles.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { html, Status, useLoad, when } from "../kit";

interface User {
  id: string;
  email: string;
  name: string | null;
  status: string;
  identity_provider: string | null;
}
interface Role {
  id: string;
  name: string;
  permissions: string[];
}
interface Assignment {
  roleId: string;
  roleName?: string;
  expiresAt: string | null;
  expired?: boolean;
}

function Roles({ user, roles, version }: { user: User; roles: Role[]; version: number }) {
  const a = useLoad<{ assignments: Assignment[] }>(() => api(`/api/v1/users/${user.id}/roles`), [user.id, version]);
  const name = (x: Assignment) => x.roleName ?? roles.find((r) => r.id === x.roleId)?.name ?? x.roleId;
  return html`${(a.data?.assignments ?? []).map((x) => `${name(x)}${x.expiresAt ? ` (until ${when(x.expiresAt)}${x.expired ? ", expired" : ""})` : ""}`).join(", ") || "—"}`;
}

function Assign({ user, roles, onDone }: { user: User; roles: Role[]; onDone: (m: string) => void }) {
  const [role, setRole] = useState(roles[0]?.id ?? "");
  const [until, setUntil] = useState("");
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      await api(`/api/v1/users/${user.id}/roles`, { method: "POST", json: { roleId: role, expiresAt: until ? new Date(`${until}T23:59:59Z`).toISOString() : null } });
      onDone(`Role assigned to ${user.email}.`);
    } catch (err) {
      onDone(`Failed: ${(err as Error).message}`);
    }
  };
  const id = `assign-${user.id}`;
  return html`<form class="inline" onSubmit=${submit}>
    <label for=${`${id}-role`} class="sr-only">Role for ${user.email}</label>
    <select id=${`${id}-role`} value=${role} onChange=${(e: Event) => setRole((e.target as HTMLSelectElement).value)}>${roles.map((r) => html`<option value=${r.id}>${r.name}</option>`)}</select>
    <label for=${`${id}-until`} class="sr-only">Role expiry for ${user.email} (optional)</label>
    <input id=${`${id}-until`} type="date" value=${until} onInput=${(e: Event) => setUntil((e.target as HTMLInputElement).value)} />
    <button type="submit">Assign role<span class="sr-only"> to ${user.email}</span></button>
  </form>`;
}

export function UsersPage() {
  const [message, setMessage] = useState<string>();
  const [version, setVersion] = useState(0);
  const users = useLoad<{ users: User[]; total: number }>(() => api("/api/v1/users?page_size=100"), [version]);
  const roles = useLoad<{ roles: Role[] }>(() => api("/api/v1/roles"));
  const invitations = useLoad<{ invitations: Array<{ id: string; email: string; status: string; expiresAt: string; link: string | null }>; total: number }>(
    () => api("/api/v1/invitations?pageSize=100"),
    [version],
  );
  const [email, setEmail] = useState("");
  const [inviteRole, setInviteRole] = useState("");
  const done = (m: string) => {
    setMessage(m);
    setVersion((v) => v + 1);
  };
  const invite = async (e: Event) => {
    e.preventDefault();
    try {
      await api("/api/v1/invitations", { method: "POST", json: { emails: [email.trim()], roleId: inviteRole || null } });
      setEmail("");
      done(`Invitation sent to ${email.trim()}.`);
    } catch (err) {
      setMessage(`Failed: ${(err as Error).message}`);
    }
  };
  const setStatus = async (u: User, status: "ACTIVE" | "SUSPENDED") => {
    try {
      await api(`/api/v1/users/${u.id}`, { method: "PUT", json: { status } });
      done(`${u.email} is ${status === "SUSPENDED" ? "suspended" : "active again"}.`);
    } catch (err) {
      setMessage(`Failed: ${(err as Error).message}`);
    }
  };
  const roleList = roles.data?.roles ?? [];
  return html`<section aria-labelledby="h-users">
    <h1 id="h-users">Users</h1>
    ${message ? html`<p class="notice" role="status">${message}</p>` : null}
    <form class="card" onSubmit=${invite} aria-labelledby="h-invite">
      <h2 id="h-invite">Invite a user</h2>
      <label for="inv-email">E-mail</label>
      <input id="inv-email" type="email" required value=${email} onInput=${(e: Event) => setEmail((e.target as HTMLInputElement).value)} />
      <label for="inv-role">Role</label>
      <select id="inv-role" value=${inviteRole} onChange=${(e: Event) => setInviteRole((e.target as HTMLSelectElement).value)}>
        <option value="">No role</option>${roleList.map((r) => html`<option value=${r.id}>${r.name}</option>`)}
      </select>
      <button type="submit" class="primary">Send invitation</button>
    </form>
    <${Status} error=${users.error ?? roles.error} loading=${users.loading && !users.data} />
    <table>
      <caption>Users (${users.data?.total ?? 0})</caption>
      <thead><tr><th scope="col">E-mail</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Roles</th><th scope="col">Actions</th></tr></thead>
      <tbody>${(users.data?.users ?? []).length === 0 ? html`<tr><td colspan="5" class="muted">None yet.</td></tr>` : null}
        ${(users.data?.users ?? []).map(
          (u) => html`<tr>
            <td>${u.email}</td><td>${u.name ?? "—"}</td><td><span class=${`badge ${u.status.toLowerCase()}`}>${u.status}</span></td>
            <td><${Roles} user=${u} roles=${roleList} version=${version} /></td>
            <td class="actions">
              ${u.status === "SUSPENDED"
                ? html`<button type="button" onClick=${() => setStatus(u, "ACTIVE")}>Reactivate<span class="sr-only"> ${u.email}</span></button>`
                : html`<button type="button" class="danger" onClick=${() => setStatus(u, "SUSPENDED")}>Suspend<span class="sr-only"> ${u.email}</span></button>`}
              ${roleList.length > 0 && html`<${Assign} user=${u} roles=${roleList} onDone=${done} />`}
            </td>
          </tr>`,
        )}</tbody>
    </table>
    <table>
      <caption>Invitations (${invitations.data?.total ?? 0})</caption>
      <thead><tr><th scope="col">E-mail</th><th scope="col">Status</th><th scope="col">Expires</th><th scope="col">Acceptance link</th></tr></thead>
      <tbody>${(invitations.data?.invitations ?? []).length === 0 ? html`<tr><td colspan="4" class="muted">None yet.</td></tr>` : null}
        ${(invitations.data?.invitations ?? []).map(
          (i) => html`<tr><td>${i.email}</td><td>${i.status}</td><td>${when(i.expiresAt)}</td><td>${i.link ? html`<code class="clip">${i.link}</code>` : "—"}</td></tr>`,
        )}</tbody>
    </table>
    <table>
      <caption>Roles (${roleList.length})</caption>
      <thead><tr><th scope="col">Role</th><th scope="col">Permissions</th></tr></thead>
      <tbody>${roleList.map((r) => html`<tr><td>${r.name}</td><td>${r.permissions.join(", ")}</td></tr>`)}</tbody>
    </table>
  </section>`;
}
