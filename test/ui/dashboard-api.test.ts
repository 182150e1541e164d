/**
 * What the dashboard needs from the API, at the HTTP level (the browser test shows it on the pages):
 *  - the overview's errors (5xx) and 429s of the proxies, per tenant: failed answers leave no
 *    usage record, so they are counted at the front door and rolled up per minute / hour;
 *  - a request record says why it hit or missed: the answering cache entry, the similarity (a
 *    miss's nearest), the learned score and the operating point;
 *  - the MCP activity WebSocket takes the bearer token as a subprotocol (`svc.bearer`, <token>),
 *    never in the URL; a wrong token and a token without ViewLogs are refused.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startProxyEnv, type ProxyEnv } from "../gateway/setup";

let env: ProxyEnv;
const chat = (token: string, text: string) =>
  env.gw.api("/v1/chat/completions", { method: "POST", token, json: { model: "gpt-4o-mini", messages: [{ role: "user", content: text }] } });
const overview = async (token: string) => {
  const r = await env.gw.api("/api/v1/usage/overview?range=hour", { token });
  expect(r.status).toBe(200);
  return (await r.json()) as any;
};

beforeAll(async () => {
  env = await startProxyEnv({ rate_limits: { enabled: true } });
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

describe("overview: errors and 429s of the proxies", () => {
  test("exactly the 5xx and 429 answers the tenant's clients saw, not other tenants', not counted as requests", async () => {
    const a = await env.gw.token("outcomes-a", ["WorkspaceAdmin"]);
    const b = await env.gw.token("outcomes-b", ["WorkspaceAdmin"]);
    expect((await chat(a, "first, answered")).status).toBe(200);
    env.fake.failNext({ kind: "status", status: 500 });
    const failed = await chat(a, "second, the provider fails");
    expect(failed.status).toBeGreaterThanOrEqual(500);
    // a burst over the tenant's rate limit (starter: 10 requests/s)
    const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(a, `burst ${i}`)));
    const limited = burst.filter((r) => r.status === 429).length;
    expect(limited).toBeGreaterThan(0);
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    const answered = 1 + burst.filter((r) => r.status === 200).length;
    // the overview (a rate-limited read is retried: its own 429 is not a proxy answer and is not counted)
    let o: any;
    for (const deadline = Date.now() + 10_000; ; await Bun.sleep(200)) {
      const r = await env.gw.api("/api/v1/usage/overview?range=hour", { token: a });
      if (r.status === 200) {
        o = await r.json();
        break;
      }
      if (Date.now() > deadline) throw new Error(`overview still ${r.status}`);
    }
    expect(o.totals.errors).toBe(1);
    expect(o.totals.rateLimited).toBe(limited);
    expect(o.totals.requests).toBe(answered);
    // the series per minute carries them too (the charts)
    expect(o.series.reduce((n: number, p: any) => n + p.errors, 0)).toBe(1);
    expect(o.series.reduce((n: number, p: any) => n + p.rateLimited, 0)).toBe(limited);
    for (const range of ["day", "30d"]) {
      const r = await env.gw.api(`/api/v1/usage/overview?range=${range}`, { token: a });
      if (r.status !== 200) continue; // rate limited read: the hour range above already checked the numbers
      const t = ((await r.json()) as any).totals;
      expect([t.errors, t.rateLimited]).toEqual([1, limited]);
    }
    const other = await overview(b);
    expect([other.totals.errors, other.totals.rateLimited]).toEqual([0, 0]);
  }, 60_000);
});

describe("requests: why a request hit or missed", () => {
  test("a hit carries its cache entry and similarity; a miss its nearest similarity and the operating point", async () => {
    const t = await env.gw.token("why-tenant", ["WorkspaceAdmin"]);
    const send = async (text: string) => {
      for (const deadline = Date.now() + 10_000; ; await Bun.sleep(200)) {
        const r = await chat(t, text);
        if (r.status !== 429) return r;
        if (Date.now() > deadline) throw new Error("still rate limited");
      }
    };
    expect((await send("What is the boiling point of water at sea level?")).headers.get("x-cache-status")).toBe("MISS");
    expect((await send("What is the boiling point of water at sea level?")).headers.get("x-cache-status")).toBe("HIT");
    expect((await send("Name three moons of Jupiter.")).headers.get("x-cache-status")).toBe("MISS");
    const res = await env.gw.api("/api/v1/usage/requests", { token: t });
    expect(res.status).toBe(200);
    const [otherMiss, hit, firstMiss] = ((await res.json()) as any).requests;
    const entries = ((await (await env.gw.api("/api/v1/cache/entries", { token: t })).json()) as any).entries.map((e: any) => e.id);
    expect(hit.cacheStatus).toBe("HIT");
    expect(entries).toContain(hit.cacheEntryId);
    expect(hit.similarity).toBe(1);
    // the first question had nothing to compare with; the second's nearest is the first, below the floor
    expect(firstMiss.cacheStatus).toBe("MISS");
    expect(firstMiss.similarity).toBeNull();
    expect(firstMiss.cacheEntryId).toBeNull();
    expect(otherMiss.cacheStatus).toBe("MISS");
    expect(typeof otherMiss.similarity).toBe("number");
    expect(typeof otherMiss.cachePoint).toBe("number");
    expect(otherMiss.similarity).toBeLessThan(otherMiss.cachePoint);
  }, 60_000);
});

describe("MCP activity WebSocket: the token as a subprotocol", () => {
  const url = () => `${env.gw.url.replace("http", "ws")}/api/v1/mcp/stream`;
  const upgrade = (protocol: string) =>
    fetch(`${env.gw.url}/api/v1/mcp/stream`, {
      headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-protocol": protocol },
    });

  test("svc.bearer + token opens the stream (nothing in the URL), answers svc.bearer and delivers the tenant's events", async () => {
    const token = await env.gw.token("ws-tenant", ["ViewLogs", "ManageConfig"]);
    const ws = new WebSocket(url(), ["svc.bearer", token]);
    const events: any[] = [];
    ws.onmessage = (m) => events.push(JSON.parse(String(m.data)));
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error("socket failed to open"));
    });
    expect(ws.protocol).toBe("svc.bearer");
    expect(ws.url).not.toContain(token.slice(0, 16));
    const call = (path: string, json: unknown) => env.gw.api(path, { method: "POST", token, json });
    expect((await call("/api/v1/mcp/entities", { name: "ws-sub-entity" })).status).toBeLessThan(300);
    expect((await call("/api/v1/tool-cache/invalidate", { entityType: "ws-sub-entity" })).status).toBe(200);
    for (const deadline = Date.now() + 10_000; !events.some((e) => e.type === "invalidation"); await Bun.sleep(50))
      if (Date.now() > deadline) throw new Error("no invalidation event");
    expect(events.find((e) => e.type === "invalidation").data).toMatchObject({ reason: "manual", entityType: "ws-sub-entity" });
    ws.close();
  }, 30_000);

  test("a wrong token, a missing one after svc.bearer, and a token without ViewLogs are refused before switching protocols", async () => {
    const wrong = await upgrade("svc.bearer, not.a.jwt");
    expect(wrong.status).toBe(401);
    const missing = await upgrade("svc.bearer");
    expect(missing.status).toBe(401);
    const viewer = await env.gw.token("ws-tenant", ["ViewMetrics"]);
    const weak = await upgrade(`svc.bearer, ${viewer}`);
    expect(weak.status).toBe(403);
    // the same token in the query string is not a credential for this stream
    const strong = await env.gw.token("ws-tenant", ["ViewLogs"]);
    const query = await fetch(`${env.gw.url}/api/v1/mcp/stream?token=${strong}`, {
      headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==" },
    });
    expect(query.status).toBe(401);
    // an ordinary (non-upgrade) request does not read the subprotocol header
    const plain = await env.gw.api("/api/v1/usage/overview", { headers: { "sec-websocket-protocol": `svc.bearer, ${strong}` } });
    expect(plain.status).toBe(401);
  }, 30_000);
});
