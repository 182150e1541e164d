import { useState } from "preact/hooks";
import { html } from "../kit";
import { notice, signIn, startSso } from "../api";

/** Sign in with an API key (exchanged for an access token; the key is not stored), or with the workspace's SSO. */
export function SignIn() {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await signIn(key.trim());
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      setBusy(false);
    }
  };
  return html`<main id="main" class="signin">
    <h1>svc dashboard</h1>
    <form onSubmit=${submit} class="card">
      <h2>Sign in</h2>
      ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
      <label for="apikey">API key</label>
      <input id="apikey" name="apikey" type="text" autocomplete="off" spellcheck=${false} required value=${key} onInput=${(e: Event) => setKey((e.target as HTMLInputElement).value)} />
      <p class="hint">The key is exchanged for an access token kept in this tab only.</p>
      ${error ? html`<p class="error" role="alert">${error}</p>` : null}
      <button type="submit" class="primary" disabled=${busy}>Sign in</button>
    </form>
    <${Sso} />
  </main>`;
}

/** SSO: the e-mail's verified domain picks the workspace's identity provider; the browser returns here signed in. */
function Sso() {
  const [email, setEmail] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await startSso(email.trim());
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      setBusy(false);
    }
  };
  return html`<form onSubmit=${submit} class="card">
    <h2>Single sign-on</h2>
    <label for="ssoemail">Work e-mail</label>
    <input id="ssoemail" name="ssoemail" type="email" autocomplete="email" required value=${email} onInput=${(e: Event) => setEmail((e.target as HTMLInputElement).value)} />
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    <button type="submit" disabled=${busy}>Continue with SSO</button>
  </form>`;
}
