/**
 * The signed-in session and every call to svc's public API. The access token lives in this tab's
 * sessionStorage only (never a URL, never localStorage, never a cookie) and goes out as a bearer
 * header, so another site cannot make the browser act with it (no CSRF) and closing the tab ends it.
 */

export interface Session {
  token: string;
  /** seconds since the epoch */
  exp: number;
  tenant: string;
  permissions: string[];
}

const KEY = "svc.session";
/** the API's root: the page's path without its trailing /ui (works behind a path prefix) */
export const BASE = location.pathname.replace(/\/ui\/?$/, "");

let listeners: Array<() => void> = [];
export const onSessionChange = (f: () => void) => {
  listeners.push(f);
  return () => (listeners = listeners.filter((l) => l !== f));
};
export let notice: string | undefined;

export function session(): Session | undefined {
  const raw = sessionStorage.getItem(KEY);
  if (!raw) return undefined;
  try {
    const s = JSON.parse(raw) as Session;
    if (s.exp * 1000 <= Date.now()) {
      signOut("Your session has expired. Sign in again.");
      return undefined;
    }
    return s;
  } catch {
    sessionStorage.removeItem(KEY);
    return undefined;
  }
}

let expiryTimer: number | undefined;
function armExpiry(s: Session | undefined) {
  if (expiryTimer !== undefined) clearTimeout(expiryTimer);
  expiryTimer = undefined;
  if (s) expiryTimer = window.setTimeout(() => signOut("Your session has expired. Sign in again."), Math.min(s.exp * 1000 - Date.now(), 2 ** 31 - 1));
}

function claims(token: string): { tenant_id?: string; permissions?: string[]; exp?: number } {
  const part = token.split(".")[1] ?? "";
  const json = atob(part.replace(/-/g, "+").replace(/_/g, "/"));
  return JSON.parse(json);
}

/** Exchange an API key for an access token (POST /api/v1/auth/token); the key itself is not kept. */
export async function signIn(apiKey: string): Promise<void> {
  const res = await fetch(`${BASE}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ apiKey }) });
  if (!res.ok) throw new Error(res.status === 401 ? "That API key was not accepted." : await errorText(res));
  const { accessToken } = (await res.json()) as { accessToken: string };
  begin(accessToken, undefined, undefined);
}

function begin(token: string, tenant: string | undefined, permissions: string[] | undefined) {
  const c = claims(token);
  const s: Session = { token, exp: c.exp ?? 0, tenant: tenant ?? c.tenant_id ?? "", permissions: permissions ?? c.permissions ?? [] };
  sessionStorage.setItem(KEY, JSON.stringify(s));
  notice = undefined;
  armExpiry(s);
  listeners.forEach((l) => l());
}

/**
 * Start an SSO sign-in for an e-mail: svc finds the workspace's identity provider and the browser
 * goes there; it comes back to this page with a one-time code in the fragment (never the token).
 */
export async function startSso(email: string): Promise<void> {
  const q = new URLSearchParams({ email, returnTo: location.pathname });
  const res = await fetch(`${BASE}/api/v1/sso/login?${q}`, { headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(res.status === 404 ? "No active SSO connection for that e-mail's domain." : await errorText(res));
  const { redirectUrl } = (await res.json()) as { redirectUrl: string };
  location.assign(redirectUrl);
}

/**
 * Back from the identity provider at `#sso=<code>`: the fragment is removed at once (out of the
 * history too), and the code exchanged once for the sign-in's token (POST /api/v1/auth/sso-code).
 */
export async function finishSso(): Promise<void> {
  const m = /^#sso=([A-Za-z0-9_-]{1,128})$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, "", location.pathname + location.search);
  const res = await fetch(`${BASE}/api/v1/auth/sso-code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ code: m[1] }) });
  if (!res.ok) return signOut(`SSO sign-in failed: ${await errorText(res)}`);
  const r = (await res.json()) as { accessToken: string; workspace: string; permissions: string[] };
  begin(r.accessToken, r.workspace, r.permissions);
}

export function signOut(message?: string) {
  sessionStorage.removeItem(KEY);
  notice = message;
  armExpiry(undefined);
  listeners.forEach((l) => l());
}

armExpiry(session());

/** Whether the session may do what `perm` allows (the server checks again on every call). */
export function can(perm: string): boolean {
  const p = session()?.permissions ?? [];
  if (p.includes("WorkspaceAdmin") || p.includes(perm)) return true;
  if (perm === "ViewKeys") return p.includes("ManageKeys");
  return false;
}

/** The message of an error answer in any of svc's envelopes. */
export async function errorText(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { error?: { message?: string }; message?: string; detail?: string };
    return body.error?.message ?? body.message ?? body.detail ?? `HTTP ${res.status}`;
  } catch {
    return `HTTP ${res.status}`;
  }
}

export class ApiFailure extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Call the API with the session's token; a 401 ends the session (back to sign-in). */
export async function api<T = any>(path: string, init: { method?: string; json?: unknown } = {}): Promise<T> {
  const s = session();
  if (!s) throw new ApiFailure(401, "signed out");
  const headers: Record<string, string> = { authorization: `Bearer ${s.token}` };
  if (init.json !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(BASE + path, { method: init.method ?? "GET", headers, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
  if (res.status === 401) {
    signOut("Your session has expired. Sign in again.");
    throw new ApiFailure(401, "session expired");
  }
  if (!res.ok) throw new ApiFailure(res.status, await errorText(res));
  if (res.status === 204) return undefined as T;
  const type = res.headers.get("content-type") ?? "";
  return (type.includes("json") ? await res.json() : await res.text()) as T;
}
