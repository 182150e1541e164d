/**
 * One loopback server speaking the real REST shapes of GitHub (issues list with Link pagination,
 * `since`), Jira Cloud (`POST /rest/api/3/search/jql` with nextPageToken, `POST /rest/api/3/issue`),
 * Confluence (`/wiki/rest/api/content/search` with CQL and `_links.next`) and Slack
 * (`conversations.history` with cursors, `chat.postMessage`). It records every request and can be
 * told to fail a given request (HTTP error, or Slack's `ok: false`).
 */
export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: any;
}

export interface FakeServices {
  url: string;
  requests: Recorded[];
  of(pathPrefix: string): Recorded[];
  /** fail the next request whose path starts with `pathPrefix` and whose query matches (once) */
  failNext(pathPrefix: string, status: number, match?: (r: Recorded) => boolean): void;
  github: Array<Record<string, any>>;
  jira: Array<Record<string, any>>;
  confluence: Array<Record<string, any>>;
  slack: Array<Record<string, any>>;
  created: Array<Record<string, any>>;
  posted: Array<Record<string, any>>;
  stop(): void;
}

export function startFakeServices(): FakeServices {
  const requests: Recorded[] = [];
  const failures: Array<{ prefix: string; status: number; match?: (r: Recorded) => boolean }> = [];
  const fs: Partial<FakeServices> = { github: [], jira: [], confluence: [], slack: [], created: [], posted: [] };
  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req): Promise<Response> {
      const u = new URL(req.url);
      const text = await req.text();
      let body: any = undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      const rec: Recorded = { method: req.method, path: u.pathname, query: u.searchParams, headers: req.headers, body };
      requests.push(rec);
      const fi = failures.findIndex((f) => u.pathname.startsWith(f.prefix) && (!f.match || f.match(rec)));
      if (fi >= 0) {
        const f = failures.splice(fi, 1)[0]!;
        if (f.status === 200) return Response.json({ ok: false, error: "ratelimited" });
        return Response.json({ message: "Server Error", errorMessages: ["boom"] }, { status: f.status });
      }
      const origin: string = `http://127.0.0.1:${server.port}`;

      // ---- GitHub: GET /repos/{owner}/{repo}/issues?state=all&sort=updated&direction=asc&since&per_page&page
      const gh = u.pathname.match(/^\/repos\/([^/]+)\/([^/]+)\/issues$/);
      if (gh && req.method === "GET") {
        const since = u.searchParams.get("since");
        const per = Number(u.searchParams.get("per_page") ?? 30);
        const page = Number(u.searchParams.get("page") ?? 1);
        const all = fs.github!.filter((i) => !since || i.updated_at >= since).sort((a, b) => a.updated_at.localeCompare(b.updated_at));
        const slice = all.slice((page - 1) * per, page * per);
        const headers: Record<string, string> = {};
        if (page * per < all.length) {
          const next = new URL(u);
          next.searchParams.set("page", String(page + 1));
          headers.link = `<${origin}${next.pathname}${next.search}>; rel="next", <${origin}${u.pathname}?page=${Math.ceil(all.length / per)}>; rel="last"`;
        }
        return Response.json(slice, { headers });
      }

      // ---- Jira Cloud
      if (u.pathname === "/rest/api/3/search/jql" && req.method === "POST") {
        const m = String(body.jql).match(/updated >= "(\d{4})\/(\d\d)\/(\d\d) (\d\d):(\d\d)"/);
        const since = m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}` : "";
        const all = fs.jira!.filter((i) => !since || toIso(i.fields.updated) >= since).sort((a, b) => toIso(a.fields.updated).localeCompare(toIso(b.fields.updated)));
        const start = body.nextPageToken ? Number(Buffer.from(body.nextPageToken, "base64").toString()) : 0;
        const slice = all.slice(start, start + body.maxResults);
        const more = start + body.maxResults < all.length;
        return Response.json({ issues: slice, ...(more ? { nextPageToken: Buffer.from(String(start + body.maxResults)).toString("base64") } : {}), isLast: !more });
      }
      if (u.pathname === "/rest/api/3/issue" && req.method === "POST") {
        const n = 100 + fs.created!.length;
        fs.created!.push(body);
        return Response.json({ id: String(10_000 + n), key: `${body.fields.project.key}-${n}`, self: `${origin}/rest/api/3/issue/${10_000 + n}` }, { status: 201 });
      }

      // ---- Confluence: /wiki/rest/api/content/search?cql=…&limit&start&expand
      if (u.pathname === "/wiki/rest/api/content/search" && req.method === "GET") {
        const cql = u.searchParams.get("cql")!;
        const space = cql.match(/space = "([^"]+)"/)?.[1];
        const m = cql.match(/lastmodified >= "(\d{4}-\d\d-\d\d) (\d\d:\d\d)"/);
        const since = m ? `${m[1]}T${m[2]}` : "";
        const limit = Number(u.searchParams.get("limit") ?? 25);
        const start = Number(u.searchParams.get("start") ?? 0);
        const all = fs.confluence!.filter((p) => p.space === space && (!since || p.version.when >= since)).sort((a, b) => a.version.when.localeCompare(b.version.when));
        const slice = all.slice(start, start + limit).map(({ space: _s, ...p }) => p);
        const links: Record<string, string> = { base: `${origin}/wiki`, context: "/wiki" };
        if (start + limit < all.length) {
          const q = new URLSearchParams(u.searchParams);
          q.set("start", String(start + limit));
          links.next = `/rest/api/content/search?${q}`;
        }
        return Response.json({ results: slice, start, limit, size: slice.length, _links: links });
      }

      // ---- Slack Web API
      if (u.pathname === "/api/conversations.history") {
        const channel = u.searchParams.get("channel");
        const oldest = Number(u.searchParams.get("oldest") ?? 0);
        const limit = Number(u.searchParams.get("limit") ?? 100);
        const cursor = u.searchParams.get("cursor");
        const all = fs.slack!.filter((m) => m.channel === channel && Number(m.ts) > oldest).sort((a, b) => Number(b.ts) - Number(a.ts));
        if (!all.length && !fs.slack!.some((m) => m.channel === channel)) return Response.json({ ok: false, error: "channel_not_found" });
        const start = cursor ? Number(Buffer.from(cursor, "base64").toString().replace("next_ts:", "")) : 0;
        const slice = all.slice(start, start + limit).map(({ channel: _c, ...m }) => m);
        const more = start + limit < all.length;
        return Response.json({ ok: true, messages: slice, has_more: more, pin_count: 0, response_metadata: { next_cursor: more ? Buffer.from(`next_ts:${start + limit}`).toString("base64") : "" } });
      }
      if (u.pathname === "/api/chat.postMessage" && req.method === "POST") {
        if (!req.headers.get("authorization")) return Response.json({ ok: false, error: "not_authed" });
        const ts = `${1_700_000_000 + fs.posted!.length}.000100`;
        fs.posted!.push(body);
        return Response.json({ ok: true, channel: body.channel, ts, message: { type: "message", text: body.text, ts } });
      }
      return Response.json({ message: "Not Found" }, { status: 404 });
    },
  });
  const toIso = (s: string) => new Date(s.replace(/([+-]\d\d)(\d\d)$/, "$1:$2")).toISOString();
  return Object.assign(fs as FakeServices, {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    of: (p: string) => requests.filter((r) => r.path.startsWith(p)),
    failNext: (prefix: string, status: number, match?: (r: Recorded) => boolean) => failures.push({ prefix, status, match }),
    stop: () => server.stop(true),
  });
}
