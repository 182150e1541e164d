/**
 * The call log (src/mcp/calls/log.ts): a call's record and a hit's count are written behind the
 * answer, and every read of what they feed sees them at once. The gateways here are started with
 * a flush delay of a minute, so a queued call is written only by a read, the cap or close — each
 * test fails if the one it is about does not write. (One test keeps the real delay: the timer.)
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import { closeApp } from "../../src/app";
import { CallLog } from "../../src/mcp/calls/log";
import type { AsyncStorage } from "../../src/storage/async";
import { startMcpGateway, registerAndDiscover, connectMcp, callTool, expectError, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";

/** A gateway whose call log waits `flushMs` (default: a minute) and holds at most `max` calls. */
async function gatewayWith(opts: { flushMs?: number; max?: number } = {}): Promise<McpGateway> {
  const saved = { flushMs: CallLog.FLUSH_MS, max: CallLog.MAX };
  CallLog.FLUSH_MS = opts.flushMs ?? 60_000;
  CallLog.MAX = opts.max ?? saved.max;
  try {
    return await startMcpGateway();
  } finally {
    CallLog.FLUSH_MS = saved.flushMs;
    CallLog.MAX = saved.max;
  }
}

/** A fresh tenant with the fake server registered as `name`: its token and the gateway as that tenant. */
async function tenant(h: McpGateway, fake: FakeMcpServer, id: string, name: string) {
  await h.mcp.callLog.flush(); // what an earlier test left queued (when it failed half way) does not count here
  const token = await h.gw.token(id, ["WorkspaceAdmin"], "alice");
  const as = { ...h, A: token };
  const { server, tools } = await registerAndDiscover(as, fake.url, { name });
  return { token, server, tools };
}

/** What is in the database now, read without the gateway (so without flushing); through the async storage, as this file also runs on PostgreSQL (test/pg/). */
const written = (h: McpGateway, tenantId: string) => callsIn(h.gw.ctx.data, tenantId);
const callsIn = async (data: AsyncStorage, tenantId: string) => Number((await data.tenant(tenantId).get<{ n: number }>("SELECT count(*) AS n FROM mcp_calls WHERE tenant_id = $tenant"))!.n);
const meta = (r: { _meta?: unknown }) => (r._meta as Record<string, any>)["svc/cache"] as { status: string; cacheKey: string };
const stats = (h: McpGateway, token: string, key: string) => h.call("POST", "/api/v1/tool-cache/stats", token, { cacheKey: key });

let h: McpGateway;
let fake: FakeMcpServer;
beforeAll(async () => {
  h = await gatewayWith();
  fake = startFakeMcpServer();
});
afterAll(async () => {
  await fake.stop();
  await h.gw.stop();
});

describe("call log: reads see the queued calls", () => {
  test("a hit over /mcp, then at once each read: analytics, stats, entry, search, metrics, health, connection stats", async () => {
    const { token, server } = await tenant(h, fake, "log-reads", "reads");
    const client = await connectMcp(h, token);
    const call = () => client.callTool({ name: "reads__get_issue", arguments: { issue_id: "7" } });
    const first = await call();
    expect(meta(first).status).toBe("MISS");
    const key = meta(first).cacheKey;
    let hits = 0;
    /** one more hit, still queued when it returns */
    const hit = async () => {
      h.clock.advance(1000);
      const r = await call();
      expect(meta(r)).toMatchObject({ status: "HIT", cacheKey: key });
      hits++;
      expect(h.mcp.callLog.pending).toBeGreaterThan(0);
      expect(await written(h, "log-reads")).toBeLessThan(hits + 1);
    };
    let lastAccessed = 0;
    /** the entry's last access moved with the newest hit (one fake-clock second later) */
    const accessedNow = (at: string) => {
      if (lastAccessed) expect(Date.parse(at) - lastAccessed).toBe(1000);
      lastAccessed = Date.parse(at);
    };

    await hit();
    const analytics = (await h.call("GET", `/api/v1/mcp/analytics?serverId=${server.id}`, token)).body;
    expect(analytics.summary).toMatchObject({ totalCalls: hits + 1, cacheHits: hits, cacheMisses: 1 });
    expect(analytics.byTool).toEqual([expect.objectContaining({ toolName: "get_issue", totalCalls: hits + 1, cacheHits: hits })]);

    await hit();
    const s = (await stats(h, token, key)).body;
    expect(s).toMatchObject({ cached: true, accessCount: hits, misses: 1, totalCalls: hits + 1 });
    accessedNow(s.lastAccessedAt);

    await hit();
    const entry = (await h.call("GET", `/api/v1/tool-cache/${key}`, token)).body;
    expect(entry.accessCount).toBe(hits);
    accessedNow(entry.lastAccessedAt);

    await hit();
    const found = (await h.call("POST", "/api/v1/tool-cache/search", token, { queryText: "get_issue issue_id 7" })).body.results;
    expect(found).toHaveLength(1);
    expect(String(found[0].cacheKey)).toBe(key);
    expect(found[0].accessCount).toBe(hits);
    accessedNow(found[0].lastAccessedAt);

    await hit();
    expect((await h.call("GET", "/api/v1/tool-cache/metrics", token)).body).toMatchObject({ hits, misses: 1 });

    await hit();
    expect((await h.call("GET", `/api/v1/mcp/servers/${server.id}/health`, token)).body.access_count).toBe(hits);

    await hit();
    expect((await h.call("GET", `/api/v1/mcp/servers/${server.id}/connection-stats`, token)).body).toMatchObject({ totalCalls: hits + 1, failedCalls: 0 });

    expect(h.mcp.callLog.pending).toBe(0);
    expect(await written(h, "log-reads")).toBe(hits + 1);
    await client.close();
  });

  test("an entry invalidated, stored again and deleted while its hits are queued: no row comes back, no count moves to the new entry", async () => {
    const { token, server, tools } = await tenant(h, fake, "log-inval", "inval");
    expect((await h.call("POST", "/api/v1/mcp/rules", token, { writeToolId: tools.update_issue.id, invalidateToolId: tools.get_issue.id })).status).toBe(200);
    const get = () => callTool(h, tools.get_issue.id, { issue_id: "9" }, token);
    const key = String((await get()).body.cache.cacheKey);
    for (let i = 0; i < 3; i++) expect((await get()).body.cache.status).toBe("HIT");
    // the WRITE's rule drops the entry the three queued hits were answered from; the next call stores a new one under the same key
    expect((await callTool(h, tools.update_issue.id, { issue_id: "9" }, token)).body.cache.status).toBe("BYPASS");
    expect((await get()).body.cache.status).toBe("MISS");
    for (let i = 0; i < 2; i++) expect((await get()).body.cache.status).toBe("HIT");
    expect(await written(h, "log-inval")).toBe(0);

    expect((await h.call("GET", `/api/v1/tool-cache/${key}`, token)).body.accessCount).toBe(2); // the new entry's own hits
    expect((await stats(h, token, key)).body).toMatchObject({ accessCount: 5, misses: 2, totalCalls: 7 }); // every call of the key

    // a hit queued, then its server deleted (its tools and entries with it): the flush neither fails nor brings the entry back
    expect((await get()).body.cache.status).toBe("HIT");
    expect((await h.call("DELETE", `/api/v1/mcp/servers/${server.id}`, token)).status).toBe(200);
    expect(h.mcp.callLog.pending).toBe(1);
    expect((await h.call("GET", "/api/v1/mcp/analytics", token)).body.summary).toMatchObject({ totalCalls: 9, cacheHits: 6 });
    expect(h.mcp.callLog.pending).toBe(0);
    expect(Number((await h.gw.ctx.data.tenant("log-inval").get<{ n: number }>("SELECT count(*) AS n FROM mcp_cache_entries WHERE tenant_id = $tenant"))!.n)).toBe(0);
    expectError(await h.call("GET", `/api/v1/tool-cache/${key}`, token), 404, "not_found");
  });

  test("tenants: each one's queued calls are written under it; a read writes its own tenant's only", async () => {
    const a = await tenant(h, fake, "log-ta", "iso");
    const b = await tenant(h, fake, "log-tb", "iso");
    const getA = () => callTool(h, a.tools.get_issue.id, { issue_id: "1" }, a.token);
    const getB = () => callTool(h, b.tools.get_issue.id, { issue_id: "1" }, b.token);
    const keyA = String((await getA()).body.cache.cacheKey);
    const keyB = String((await getB()).body.cache.cacheKey);
    expect(keyA).not.toBe(keyB);
    const results = await Promise.all([...Array.from({ length: 30 }, getA), ...Array.from({ length: 20 }, getB)]);
    expect(results.every((r) => r.body.cache.status === "HIT")).toBe(true);
    expect(h.mcp.callLog.pending).toBe(31 + 21);

    expect((await h.call("GET", "/api/v1/mcp/analytics", b.token)).body.summary).toMatchObject({ totalCalls: 21, cacheHits: 20 });
    expect(h.mcp.callLog.pending).toBe(31); // A's calls are still queued
    expect(await written(h, "log-ta")).toBe(0);
    expectError(await stats(h, b.token, keyA), 404, "not_found");
    expectError(await h.call("GET", `/api/v1/tool-cache/${keyA}`, b.token), 404, "not_found");
    expect((await h.call("GET", `/api/v1/tool-cache/${keyB}`, b.token)).body.accessCount).toBe(20);

    expect((await stats(h, a.token, keyA)).body).toMatchObject({ accessCount: 30, totalCalls: 31 });
    expect((await h.call("GET", `/api/v1/tool-cache/${keyA}`, a.token)).body.accessCount).toBe(30);
    expect((await h.call("GET", "/api/v1/mcp/analytics", a.token)).body.summary).toMatchObject({ totalCalls: 31, cacheHits: 30 });
    expect(h.mcp.callLog.pending).toBe(0);

    // one batch holding both tenants' calls (as the timer and the cap write them): each row under its tenant
    await Promise.all([...Array.from({ length: 7 }, getA), ...Array.from({ length: 5 }, getB)]);
    await h.mcp.callLog.flush();
    expect(await written(h, "log-ta")).toBe(38);
    expect(await written(h, "log-tb")).toBe(26);
    expect((await h.call("GET", `/api/v1/tool-cache/${keyA}`, a.token)).body.accessCount).toBe(37);
    expect((await h.call("GET", `/api/v1/tool-cache/${keyB}`, b.token)).body.accessCount).toBe(25);
  });
});

describe("call log: batches", () => {
  test("1,000 concurrent hits (REST and /mcp) across cap flushes: every one counted", async () => {
    const g = await gatewayWith({ max: 64 });
    try {
      const { token, tools } = await tenant(g, fake, "log-many", "many");
      const key = String((await callTool(g, tools.get_issue.id, { issue_id: "hot" }, token)).body.cache.cacheKey);
      const client = await connectMcp(g, token);
      const rest = Array.from({ length: 500 }, () => callTool(g, tools.get_issue.id, { issue_id: "hot" }, token).then((r) => r.body.cache.status));
      const mcp = Array.from({ length: 500 }, () => client.callTool({ name: "many__get_issue", arguments: { issue_id: "hot" } }).then((r) => meta(r).status));
      const statuses = await Promise.all([...rest, ...mcp]);
      expect(statuses.filter((s) => s === "HIT")).toHaveLength(1000);
      // 1,001 calls: 15 batches of 64 written when the cap was reached, 41 still queued (the batches are written
      // behind the answers: on PostgreSQL some are still in flight when the last answer comes; nothing here flushes)
      for (const deadline = Date.now() + 10_000; (await written(g, "log-many")) < 960 && Date.now() < deadline; ) await Bun.sleep(10);
      expect(await written(g, "log-many")).toBe(960);
      expect(g.mcp.callLog.pending).toBe(41);
      expect((await stats(g, token, key)).body).toMatchObject({ accessCount: 1000, misses: 1, totalCalls: 1001 });
      expect((await g.call("GET", `/api/v1/tool-cache/${key}`, token)).body.accessCount).toBe(1000);
      expect((await g.call("GET", "/api/v1/mcp/analytics", token)).body.summary).toMatchObject({ totalCalls: 1001, cacheHits: 1000 });
      expect(await written(g, "log-many")).toBe(1001);
      await client.close();
    } finally {
      await g.gw.stop();
    }
  }, 30_000);

  test("without a read, the timer writes the queued calls shortly after", async () => {
    const g = await gatewayWith({ flushMs: CallLog.FLUSH_MS });
    try {
      const { token, tools } = await tenant(g, fake, "log-timer", "timer");
      for (let i = 0; i < 3; i++) await callTool(g, tools.get_issue.id, { issue_id: "t" }, token);
      expect(g.mcp.callLog.pending).toBe(3);
      const since = performance.now();
      while ((await written(g, "log-timer")) < 3 && performance.now() - since < 5000) await Bun.sleep(10);
      expect(await written(g, "log-timer")).toBe(3);
      expect(g.mcp.callLog.pending).toBe(0);
    } finally {
      await g.gw.stop();
    }
  });

  test("shutdown writes what is queued (the database has every call and hit count)", async () => {
    const g = await gatewayWith();
    try {
      const { token } = await tenant(g, fake, "log-close", "closing");
      const client = await connectMcp(g, token);
      for (let i = 0; i < 6; i++) await client.callTool({ name: "closing__get_issue", arguments: { issue_id: "c" } });
      await client.close();
      expect(g.mcp.callLog.pending).toBe(6);
      expect(await written(g, "log-close")).toBe(0);
      // what SIGTERM runs after the server stopped accepting: every domain's close, then the database's
      await g.gw.server.stop(true);
      await closeApp(g.gw.ctx);
      const db = g.gw.reopen();
      try {
        expect(await callsIn(db, "log-close")).toBe(6);
        expect(await db.tenant("log-close").get<{ hits: number }>("SELECT hits FROM mcp_cache_entries WHERE tenant_id = $tenant")).toEqual({ hits: 5 });
      } finally {
        await db.close();
      }
    } finally {
      rmSync(g.gw.dir, { recursive: true, force: true });
    }
  });
});
