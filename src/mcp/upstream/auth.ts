/**
 * How svc authenticates to a registered server (authConfig). Secrets are read from environment
 * variables at connection time, never stored:
 *  - API_KEY: the named header carries the value of `valueEnv`;
 *  - OAUTH: the client-credentials grant at `tokenUrl` (through the outbound policy), the token
 *    cached until 30 s before it expires and dropped on a 401;
 *  - MTLS: the client certificate and key (and CA) from files under the operator's `mtls_dir`.
 * Every request goes through the outbound policy: resolved, checked and pinned at each call.
 */
import { resolve, sep } from "node:path";
import { ApiError } from "../../core/errors";
import type { OutboundFetch, OutboundPolicy } from "../../core/outbound";
import type { AuthConfig } from "../types";

export type Env = Record<string, string | undefined>;

/** A failure to reach or authenticate to a server (becomes lastError, discovery_error, 502). */
export class UpstreamError extends Error {}

function secretOf(env: Env, name: string | undefined): string {
  const v = name ? env[name] : undefined;
  if (!v) throw new UpstreamError(`environment variable ${name ?? "(none)"} is not set`);
  return v;
}

/** A path of authConfig inside the operator's MTLS directory (registration check and use). */
export function mtlsPath(dir: string | undefined, path: string, field: string): string {
  if (!dir) throw new ApiError("validation_error", "MTLS servers are not enabled on this gateway (the operator sets SVC_MCP__MTLS_DIR)");
  const root = resolve(dir);
  const full = resolve(root, path);
  if (!full.startsWith(root + sep)) throw new ApiError("validation_error", `authConfig.${field} must be a file inside the gateway's MTLS directory`);
  return full;
}

interface CachedToken {
  token: string;
  expiresAtMs: number;
}

/** Client-credentials tokens per (tokenUrl, clientId, scopes), cached until shortly before they expire. */
export class OAuthTokens {
  private readonly tokens = new Map<string, CachedToken>();
  private readonly pending = new Map<string, Promise<string>>();

  constructor(private readonly fetch: OutboundFetch, private readonly env: Env, private readonly now: () => number) {}

  private keyOf(a: AuthConfig) {
    return JSON.stringify([a.tokenUrl, a.clientId, a.scopes ?? []]);
  }

  drop(a: AuthConfig) {
    this.tokens.delete(this.keyOf(a));
  }

  async token(a: AuthConfig): Promise<string> {
    const key = this.keyOf(a);
    const hit = this.tokens.get(key);
    if (hit && hit.expiresAtMs > this.now()) return hit.token;
    let p = this.pending.get(key);
    if (!p) {
      p = this.request(a, key).finally(() => this.pending.delete(key));
      this.pending.set(key, p);
    }
    return p;
  }

  private async request(a: AuthConfig, key: string): Promise<string> {
    const form = new URLSearchParams({ grant_type: "client_credentials", client_id: a.clientId ?? "", client_secret: secretOf(this.env, a.clientSecretEnv) });
    if (a.scopes?.length) form.set("scope", a.scopes.join(" "));
    let res: Response;
    try {
      res = await this.fetch(a.tokenUrl!, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" }, body: form.toString() });
    } catch (e) {
      throw new UpstreamError(`token endpoint unreachable: ${(e as Error).message}`);
    }
    const body = (await res.json().catch(() => ({}))) as { access_token?: unknown; expires_in?: unknown; error?: unknown };
    if (!res.ok || typeof body.access_token !== "string") throw new UpstreamError(`token endpoint answered ${res.status}${typeof body.error === "string" ? ` (${body.error})` : ""}`);
    const ttl = typeof body.expires_in === "number" && body.expires_in > 0 ? body.expires_in : 3600;
    this.tokens.set(key, { token: body.access_token, expiresAtMs: this.now() + Math.max(0, ttl - 30) * 1000 });
    return body.access_token;
  }
}

export interface AuthContext {
  outbound: OutboundPolicy;
  env: Env;
  oauth: OAuthTokens;
  mtlsDir?: string;
}

/** The fetch an HTTP or SSE transport of this server uses: outbound policy + the server's credentials. */
export function authenticatedFetch(a: AuthConfig, ctx: AuthContext): OutboundFetch {
  const base = ctx.outbound.fetch;
  switch (a.type) {
    case "NONE":
      return base;
    case "API_KEY":
      return (input, init = {}) => {
        const headers = new Headers(init.headers);
        headers.set(a.header!, secretOf(ctx.env, a.valueEnv));
        return base(input, { ...init, headers });
      };
    case "OAUTH":
      return async (input, init = {}) => {
        const headers = new Headers(init.headers);
        headers.set("authorization", `Bearer ${await ctx.oauth.token(a)}`);
        const res = await base(input, { ...init, headers });
        if (res.status === 401) ctx.oauth.drop(a);
        return res;
      };
    case "MTLS":
      return mtlsFetch(a, ctx);
  }
}

/**
 * MTLS: the outbound policy pins and checks the address (OutboundPolicy.pin); the request carries
 * the client certificate. Redirects are not followed (a 3xx is answered as it is), so the
 * certificate is only ever presented to the host that was configured.
 */
function mtlsFetch(a: AuthConfig, ctx: AuthContext): OutboundFetch {
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== "https:") throw new UpstreamError("MTLS needs an https URL");
    const address = await ctx.outbound.pin(url);
    const target = new URL(url);
    target.hostname = address.includes(":") ? `[${address}]` : address;
    const headers = new Headers(input instanceof Request ? input.headers : undefined);
    new Headers(init.headers).forEach((v, k) => headers.set(k, v));
    headers.set("host", url.host);
    const tls = {
      serverName: url.hostname,
      cert: Bun.file(mtlsPath(ctx.mtlsDir, a.certPath!, "certPath")),
      key: Bun.file(mtlsPath(ctx.mtlsDir, a.keyPath!, "keyPath")),
      ...(a.caPath ? { ca: Bun.file(mtlsPath(ctx.mtlsDir, a.caPath, "caPath")) } : {}),
    };
    return fetch(target, { ...init, headers, redirect: "manual", tls } as RequestInit);
  };
}
