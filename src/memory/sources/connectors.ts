/**
 * Connectors of external sources: each calls the service's real REST API at the base URL of the
 * source's `config`, through the outbound URL policy (core/outbound.ts: every hop resolved,
 * checked and pinned), with the credential read from the environment variable the config names.
 *
 *   github      GET  {baseUrl}/repos/{owner}/{repo}/issues?state=all&sort=updated&direction=asc&since=…   (issues and pull requests; Link rel="next")
 *   jira        POST {baseUrl}/rest/api/3/search/jql  {jql: "(…) AND updated >= '…' ORDER BY updated ASC", nextPageToken}
 *   confluence  GET  {baseUrl}/wiki/rest/api/content/search?cql=space = "…" AND type = page AND lastmodified >= "…" ORDER BY lastmodified ASC   (_links.next)
 *   slack       GET  {baseUrl}/api/conversations.history?channel=…&oldest=…&cursor=…   (response_metadata.next_cursor)
 *
 * A connector yields batches in the order they may be committed; each batch names the cursor to
 * store once its items are committed (undefined: not yet — Slack pages run newest first, so its
 * cursor moves only when the whole run is done).
 */
import { ApiError, badRequest } from "../../core/errors";
import type { OutboundFetch } from "../../core/outbound";
import type { DocumentInput, SourceType } from "../types";

export interface Batch {
  items: DocumentInput[];
  cursor?: string;
}

export interface SyncContext {
  config: Record<string, unknown>;
  cursor: string;
  fetch: OutboundFetch;
  /** the credential named by config.tokenEnv (undefined when the config names none) */
  token: string | undefined;
  pageSize: number;
  timeoutMs: number;
}

export interface Connector {
  /** the config keys this type accepts, with the required ones */
  keys: readonly string[];
  required: readonly string[];
  defaultBaseUrl?: string;
  /** type-specific rules beyond the keys (400 naming the field) */
  check?(config: Record<string, unknown>): void;
  pages(ctx: SyncContext): AsyncGenerator<Batch>;
}

/** Keys that would hold a credential literally: refused (credentials are named by environment variable). */
export const LITERAL_SECRET_KEYS = ["token", "apiToken", "apiKey", "password", "secret", "accessToken", "botToken"];

const str = (v: unknown) => (typeof v === "string" ? v : undefined);
const trimSlash = (u: string) => u.replace(/\/+$/, "");

export const baseUrlOf = (type: SourceType, config: Record<string, unknown>) => trimSlash(str(config.baseUrl) ?? CONNECTORS[type].defaultBaseUrl ?? "");

/** One call to the external API: non-2xx, network failure and timeout become ApiErrors naming the service. */
async function call(ctx: SyncContext, service: string, url: string, init: RequestInit = {}): Promise<Response> {
  let res: Response;
  try {
    res = await ctx.fetch(url, { ...init, signal: AbortSignal.timeout(ctx.timeoutMs) });
  } catch (e) {
    if (e instanceof ApiError) throw e;
    const name = (e as Error)?.name;
    if (name === "TimeoutError" || name === "AbortError") throw new ApiError("timeout_error", `${service} did not answer within ${ctx.timeoutMs} ms`);
    throw new ApiError("proxy_error", `${service} unreachable: ${(e as Error)?.message ?? String(e)}`);
  }
  if (!res.ok) {
    const text = (await res.text().catch(() => "")).slice(0, 300);
    throw new ApiError("proxy_error", `${service} answered ${res.status}${text ? `: ${text}` : ""}`);
  }
  return res;
}

async function jsonOf(res: Response, service: string): Promise<any> {
  try {
    return await res.json();
  } catch {
    throw new ApiError("proxy_error", `${service} answered with a body that is not JSON`);
  }
}

const bearer = (token: string | undefined): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});

/** Atlassian Cloud: Basic email:token when an email is configured, else Bearer (Data Center personal access tokens). */
const atlassianAuth = (ctx: SyncContext): Record<string, string> => {
  const email = str(ctx.config.email);
  if (email && ctx.token) return { authorization: `Basic ${Buffer.from(`${email}:${ctx.token}`).toString("base64")}` };
  return bearer(ctx.token);
};

/** The rel="next" target of an RFC 8288 Link header. */
export function nextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(",")) {
    const m = part.match(/<([^>]*)>\s*;(.*)/);
    if (m && /rel\s*=\s*"?([^";]*\s)?next(\s[^";]*)?"?/i.test(m[2]!)) return m[1];
  }
  return undefined;
}

/** A pagination link must stay on the configured origin (credentials are sent to it). */
function sameOrigin(base: string, next: string, service: string): string {
  const u = new URL(next, base + "/");
  if (u.origin !== new URL(base).origin) throw new ApiError("proxy_error", `${service} pagination pointed to another origin (${u.origin})`);
  return u.toString();
}

const iso = (s: string | undefined): string => {
  if (!s) return new Date(0).toISOString();
  const d = Date.parse(s.replace(/([+-]\d\d)(\d\d)$/, "$1:$2"));
  return Number.isNaN(d) ? new Date(0).toISOString() : new Date(d).toISOString();
};
const maxIso = (items: DocumentInput[], start: string) => items.reduce((m, i) => (i.updatedAt > m ? i.updatedAt : m), start);
/** "yyyy/MM/dd HH:mm" (UTC) — the minute precision JQL and CQL accept; `>=` then re-reads that minute (upserts make it harmless). */
const minuteOf = (isoText: string, sep: "/" | "-") => {
  const d = new Date(isoText);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}${sep}${p(d.getUTCMonth() + 1)}${sep}${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}`;
};

/** Plain text of Atlassian Document Format (Jira API v3 descriptions). */
export function adfText(node: unknown): string {
  if (typeof node === "string") return node;
  if (!node || typeof node !== "object") return "";
  const n = node as { type?: string; text?: string; content?: unknown[] };
  if (n.type === "text") return n.text ?? "";
  const inner = (n.content ?? []).map(adfText).join(n.type === "doc" ? "\n" : "");
  return n.type === "paragraph" || n.type === "heading" || n.type === "listItem" ? inner + "\n" : inner;
}

/** An ADF document of plain paragraphs (what Jira v3 expects in `description`). */
export const adfOf = (text: string) => ({
  type: "doc",
  version: 1,
  content: text.split(/\n{2,}/).map((p) => ({ type: "paragraph", content: p ? [{ type: "text", text: p }] : [] })),
});

const htmlText = (html: string) =>
  html
    .replace(/<(br|\/p|\/h\d|\/li|\/tr)\s*\/?>/gi, "\n")
    .replace(/<[^>]+>/g, "")
    .replace(/&nbsp;/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/\n{3,}/g, "\n\n")
    .trim();

/** GitHub owner and repository names: letters, digits, `-`, `_`, `.` (what GitHub allows). */
const GITHUB_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/**
 * The repository of a github config: `repo` in GitHub's own `owner/name` form, or `owner` and
 * `repo` apart (both forms name the same repository; `owner` beside an `owner/name` repo must agree).
 */
export function githubRepo(config: Record<string, unknown>): { owner: string; repo: string } {
  const repo = String(config.repo);
  const owner = config.owner === undefined ? undefined : String(config.owner);
  const slash = repo.indexOf("/");
  if (slash < 0) {
    if (owner === undefined) throw badRequest("body field 'config.owner': required for sourceType 'github' unless 'config.repo' is 'owner/name'");
    if (!GITHUB_NAME.test(repo)) throw badRequest("body field 'config.repo': expected a repository name (letters, digits, - _ .) or 'owner/name'");
    if (!GITHUB_NAME.test(owner)) throw badRequest("body field 'config.owner': expected a GitHub account name (letters, digits, - _ .)");
    return { owner, repo };
  }
  const [o, r, ...rest] = repo.split("/");
  if (rest.length > 0 || !GITHUB_NAME.test(o!) || !GITHUB_NAME.test(r!)) throw badRequest("body field 'config.repo': expected 'owner/name' (one slash, letters, digits, - _ .)");
  if (owner !== undefined && owner !== o) throw badRequest(`body field 'config.owner': '${owner}' disagrees with the owner in 'config.repo' ('${o}')`);
  return { owner: o!, repo: r! };
}

const github: Connector = {
  keys: ["baseUrl", "tokenEnv", "owner", "repo"],
  required: ["repo"],
  defaultBaseUrl: "https://api.github.com",
  check: (config) => void githubRepo(config),
  async *pages(ctx) {
    const base = baseUrlOf("github", ctx.config);
    const q = new URLSearchParams({ state: "all", sort: "updated", direction: "asc", per_page: String(ctx.pageSize) });
    if (ctx.cursor) q.set("since", ctx.cursor);
    const { owner, repo } = githubRepo(ctx.config);
    let url: string | undefined = `${base}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/issues?${q}`;
    let cursor = ctx.cursor;
    const headers = { accept: "application/vnd.github+json", "x-github-api-version": "2022-11-28", "user-agent": "svc-memory", ...bearer(ctx.token) };
    while (url) {
      const res = await call(ctx, "github", url, { headers });
      const body = await jsonOf(res, "github");
      if (!Array.isArray(body)) throw new ApiError("proxy_error", "github answered with something other than a list of issues");
      const items: DocumentInput[] = body.map((i: any) => ({
        externalId: String(i.number),
        kind: i.pull_request ? "github_pull_request" : "github_issue",
        title: `#${i.number} ${i.title ?? ""}`,
        body: `${i.pull_request ? "Pull request" : "Issue"} #${i.number} (${i.state ?? "unknown"}): ${i.title ?? ""}\n\n${i.body ?? ""}`,
        url: str(i.html_url) ?? null,
        author: str(i.user?.login) ?? null,
        updatedAt: iso(i.updated_at),
      }));
      cursor = maxIso(items, cursor);
      yield { items, cursor };
      const next = nextLink(res.headers.get("link"));
      url = next ? sameOrigin(base, next, "github") : undefined;
    }
  },
};

const jira: Connector = {
  keys: ["baseUrl", "tokenEnv", "email", "jql", "projectKey"],
  required: ["baseUrl"],
  async *pages(ctx) {
    const base = baseUrlOf("jira", ctx.config);
    const jql = str(ctx.config.jql) ?? `project = "${String(ctx.config.projectKey).replace(/"/g, "")}"`;
    const full = `(${jql})${ctx.cursor ? ` AND updated >= "${minuteOf(ctx.cursor, "/")}"` : ""} ORDER BY updated ASC`;
    let token: string | undefined;
    let cursor = ctx.cursor;
    for (;;) {
      const res = await call(ctx, "jira", `${base}/rest/api/3/search/jql`, {
        method: "POST",
        headers: { accept: "application/json", "content-type": "application/json", ...atlassianAuth(ctx) },
        body: JSON.stringify({ jql: full, maxResults: ctx.pageSize, fields: ["summary", "description", "status", "updated", "reporter", "issuetype"], ...(token ? { nextPageToken: token } : {}) }),
      });
      const body = await jsonOf(res, "jira");
      if (!Array.isArray(body?.issues)) throw new ApiError("proxy_error", "jira answered without an issues list");
      const items: DocumentInput[] = body.issues.map((i: any) => ({
        externalId: String(i.key ?? i.id),
        kind: "jira_issue",
        title: `${i.key} ${i.fields?.summary ?? ""}`,
        body: `${i.fields?.issuetype?.name ?? "Issue"} ${i.key} (${i.fields?.status?.name ?? "unknown"}): ${i.fields?.summary ?? ""}\n\n${adfText(i.fields?.description).trim()}`,
        url: `${base}/browse/${i.key}`,
        author: str(i.fields?.reporter?.displayName) ?? null,
        updatedAt: iso(i.fields?.updated),
      }));
      cursor = maxIso(items, cursor);
      yield { items, cursor };
      token = str(body.nextPageToken);
      if (body.isLast === true || !token || !items.length) break;
    }
  },
};

const confluence: Connector = {
  keys: ["baseUrl", "tokenEnv", "email", "spaceKey"],
  required: ["baseUrl", "spaceKey"],
  async *pages(ctx) {
    const base = baseUrlOf("confluence", ctx.config);
    const space = String(ctx.config.spaceKey).replace(/"/g, "");
    const cql = `space = "${space}" AND type = page${ctx.cursor ? ` AND lastmodified >= "${minuteOf(ctx.cursor, "-")}"` : ""} ORDER BY lastmodified ASC`;
    const q = new URLSearchParams({ cql, limit: String(ctx.pageSize), expand: "body.storage,version" });
    let url: string | undefined = `${base}/wiki/rest/api/content/search?${q}`;
    let cursor = ctx.cursor;
    const headers = { accept: "application/json", ...atlassianAuth(ctx) };
    while (url) {
      const res = await call(ctx, "confluence", url, { headers });
      const body = await jsonOf(res, "confluence");
      if (!Array.isArray(body?.results)) throw new ApiError("proxy_error", "confluence answered without a results list");
      const linkBase = str(body._links?.base) ?? `${base}/wiki`;
      const items: DocumentInput[] = body.results.map((p: any) => ({
        externalId: String(p.id),
        kind: "confluence_page",
        title: String(p.title ?? ""),
        body: `${p.title ?? ""}\n\n${htmlText(String(p.body?.storage?.value ?? ""))}`,
        url: p._links?.webui ? linkBase + p._links.webui : null,
        author: str(p.version?.by?.displayName) ?? null,
        updatedAt: iso(p.version?.when),
      }));
      cursor = maxIso(items, cursor);
      yield { items, cursor };
      const next = str(body._links?.next);
      url = next && items.length ? sameOrigin(base, /^https?:/.test(next) ? next : linkBase.replace(/\/+$/, "") + next, "confluence") : undefined;
    }
  },
};

const slack: Connector = {
  keys: ["baseUrl", "tokenEnv", "channel"],
  required: ["channel"],
  defaultBaseUrl: "https://slack.com",
  async *pages(ctx) {
    const base = baseUrlOf("slack", ctx.config);
    const channel = String(ctx.config.channel);
    let page: string | undefined;
    let newest = ctx.cursor;
    for (;;) {
      const q = new URLSearchParams({ channel, limit: String(ctx.pageSize) });
      if (ctx.cursor) q.set("oldest", ctx.cursor);
      if (page) q.set("cursor", page);
      const res = await call(ctx, "slack", `${base}/api/conversations.history?${q}`, { headers: { accept: "application/json", ...bearer(ctx.token) } });
      const body = await jsonOf(res, "slack");
      if (body?.ok !== true) throw new ApiError("proxy_error", `slack answered ok=false: ${str(body?.error) ?? "unknown error"}`);
      const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
      const items: DocumentInput[] = messages
        .filter((m) => typeof m.ts === "string" && typeof m.text === "string")
        .map((m) => ({
          externalId: `${channel}:${m.ts}`,
          kind: "slack_message",
          title: `#${channel} ${m.user ?? m.username ?? "unknown"} ${new Date(Number(m.ts) * 1000).toISOString()}`,
          body: m.text,
          url: null,
          author: str(m.user) ?? str(m.username) ?? null,
          updatedAt: new Date(Number(m.ts) * 1000).toISOString(),
        }));
      for (const m of messages) if (typeof m.ts === "string" && (!newest || Number(m.ts) > Number(newest))) newest = m.ts;
      page = str(body.response_metadata?.next_cursor) || undefined;
      const last = !(body.has_more === true && page);
      yield { items, cursor: last ? newest : undefined };
      if (last) break;
    }
  },
};

export const CONNECTORS: Record<SourceType, Connector> = { github, jira, confluence, slack };

/** A source created without `config` (doc1: optional) is not configured yet: it is stored, but cannot sync until a PUT gives its config. */
export const isUnconfigured = (config: Record<string, unknown>) => Object.keys(config).length === 0;

/** Check a source's config for its type (400 naming the field); returns it unchanged. An empty config (not configured yet) passes. */
export function checkConfig(type: SourceType, config: Record<string, unknown>, secretPrefix: string): Record<string, unknown> {
  if (isUnconfigured(config)) return config;
  const c = CONNECTORS[type];
  for (const k of Object.keys(config)) {
    if (LITERAL_SECRET_KEYS.includes(k)) throw badRequest(`body field 'config.${k}': credentials are never stored; name an environment variable in 'config.tokenEnv'`);
    if (!c.keys.includes(k)) throw badRequest(`body field 'config.${k}': unknown for sourceType '${type}' (accepted: ${c.keys.join(", ")})`);
    if (typeof config[k] !== "string" || (config[k] as string).length === 0 || (config[k] as string).length > 2_000)
      throw badRequest(`body field 'config.${k}': expected a non-empty string of at most 2000 characters`);
  }
  for (const k of c.required) if (config[k] === undefined) throw badRequest(`body field 'config.${k}': required for sourceType '${type}'`);
  if (type === "jira" && config.jql === undefined && config.projectKey === undefined) throw badRequest("body field 'config.jql': jql or projectKey is required for sourceType 'jira'");
  c.check?.(config);
  const env = str(config.tokenEnv);
  if (env !== undefined && (!env.startsWith(secretPrefix) || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(env)))
    throw badRequest(`body field 'config.tokenEnv': must be an environment variable name starting with ${secretPrefix}`);
  return config;
}
