/**
 * Connections (doc2 §4.7) and the two WebSocket streams (§4.8): CRUD with ManageConfig where the
 * spec says, state moves, heartbeats and their expiry on the clock, per-server statistics; the
 * activity and connection-event streams deliver a tenant's own events only, the connection stream
 * takes the JWT in `?token=`, and the 101st concurrent socket is refused before the upgrade.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { useMcpFixture, startMcpGateway, expectError, registerAndDiscover, callTool, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";

let h: McpGateway;
let fake: FakeMcpServer;
let serverA: any;
let tools: Record<string, any>;
const C = "/api/v1/mcp/connections";

const fx = useMcpFixture({ overrides: { heartbeat_timeout_secs: 90, max_connection_event_sockets: 5 }, serverName: "conn" });
beforeAll(() => ({ h, fake, server: serverA, tools } = fx));

describe("connections", () => {
  test("create (ManageConfig, 200, CONNECTING), get, list with filters, state moves, heartbeat", async () => {
    const c = await h.call("POST", C, h.A, { serverId: serverA.id, clientId: "claude-desktop" });
    expect(c.status).toBe(200);
    expect(c.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      serverId: serverA.id,
      clientId: "claude-desktop",
      state: "CONNECTING",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      connectedAt: null,
      disconnectedAt: null,
      lastHeartbeatAt: null,
      stateChangedAt: expect.any(String),
    });
    const id = c.body.id;
    expect((await h.call("GET", `${C}/${id}`, h.A)).body).toEqual(c.body);
    const up = await h.call("PATCH", `${C}/${id}/state`, h.A, { state: "CONNECTED" });
    expect(up.body).toMatchObject({ id, state: "CONNECTED", connectedAt: expect.any(String) });
    const hb = await h.call("POST", `${C}/${id}/heartbeat`, h.A);
    expect(hb.body).toEqual({ connectionId: id, state: "CONNECTED", acknowledged: true, recordedAt: expect.any(String) });
    expect((await h.call("GET", `${C}/${id}`, h.A)).body.lastHeartbeatAt).toBe(hb.body.recordedAt);
    expect((await h.call("PATCH", `${C}/${id}/state`, h.A, { state: "CONNECTED" })).body.state).toBe("CONNECTED"); // same state: no-op
    expectError(await h.call("PATCH", `${C}/${id}/state`, h.A, { state: "CONNECTING" }), 409, "conflict", "cannot move from CONNECTED to CONNECTING");
    expect((await h.call("PATCH", `${C}/${id}/state`, h.A, { state: "DISCONNECTING" })).body.state).toBe("DISCONNECTING");
    expect((await h.call("PATCH", `${C}/${id}/state`, h.A, { state: "DISCONNECTED" })).body).toMatchObject({ state: "DISCONNECTED", disconnectedAt: expect.any(String) });
    expectError(await h.call("POST", `${C}/${id}/heartbeat`, h.A), 409, "conflict");
    expect((await h.call("PATCH", `${C}/${id}/state`, h.A, { state: "CONNECTING" })).body.state).toBe("CONNECTING"); // reconnect
    expect((await h.call("PATCH", `${C}/${id}/state`, h.A, { state: "ERROR" })).body.state).toBe("ERROR");
    await h.call("POST", C, h.A, { serverId: serverA.id, clientId: "cursor" });
    const list = await h.call("GET", `${C}?serverId=${serverA.id}`, h.A);
    expect(list.body).toMatchObject({ total: 2, page: 1, pageSize: 20, totalPages: 1 });
    expect((await h.call("GET", `${C}?clientId=cursor`, h.A)).body.connections.map((x: any) => x.clientId)).toEqual(["cursor"]);
    expect((await h.call("GET", `${C}?state=ERROR`, h.A)).body.connections.map((x: any) => x.id)).toEqual([id]);
  });

  test("validation, 404s, 401, 403 permission_error without ManageConfig (create, state); reads and heartbeats need none", async () => {
    const reader = await h.gw.token("tenant-a", ["ViewMetrics"], "reader");
    expectError(await h.call("POST", C, reader, { serverId: serverA.id, clientId: "x" }), 403, "permission_error", "ManageConfig");
    expectError(await h.call("POST", C, reader, { clientId: "bad body is not looked at" }), 403, "permission_error");
    const c = (await h.call("POST", C, h.A, { serverId: serverA.id, clientId: "x" })).body;
    expectError(await h.call("PATCH", `${C}/${c.id}/state`, reader, { state: "CONNECTED" }), 403, "permission_error");
    expect((await h.call("GET", `${C}/${c.id}`, reader)).status).toBe(200);
    expect((await h.call("POST", `${C}/${c.id}/heartbeat`, reader)).status).toBe(200);
    expectError(await h.call("POST", C, h.A, { serverId: "nope", clientId: "x" }), 400, "validation_error", "serverId");
    expectError(await h.call("POST", C, h.A, { serverId: serverA.id, clientId: "" }), 400, "validation_error", "clientId");
    expect((await h.call("POST", C, h.A, { serverId: serverA.id, clientId: "c".repeat(256) })).status).toBe(200);
    expectError(await h.call("POST", C, h.A, { serverId: serverA.id, clientId: "c".repeat(257) }), 400, "validation_error", "clientId");
    expectError(await h.call("POST", C, h.A, { serverId: crypto.randomUUID(), clientId: "x" }), 404, "not_found", "server");
    expectError(await h.call("PATCH", `${C}/${c.id}/state`, h.A, { state: "GONE" }), 400, "validation_error", "state");
    expectError(await h.call("PATCH", `${C}/${c.id}/state`, h.A, {}), 400, "validation_error", "state");
    expectError(await h.call("GET", `${C}?state=GONE`, h.A), 400, "validation_error", "state");
    expectError(await h.call("GET", `${C}/${crypto.randomUUID()}`, h.A), 404, "not_found");
    expectError(await h.call("PATCH", `${C}/${crypto.randomUUID()}/state`, h.A, { state: "CONNECTED" }), 404, "not_found");
    expectError(await h.call("POST", `${C}/${crypto.randomUUID()}/heartbeat`, h.A), 404, "not_found");
    expectError(await h.call("GET", C, undefined), 401, "authentication_error");
    // isolation
    expectError(await h.call("GET", `${C}/${c.id}`, h.B), 404, "not_found");
    expectError(await h.call("POST", `${C}/${c.id}/heartbeat`, h.B), 404, "not_found");
    expectError(await h.call("PATCH", `${C}/${c.id}/state`, h.B, { state: "CONNECTED" }), 404, "not_found");
    expectError(await h.call("POST", C, h.B, { serverId: serverA.id, clientId: "x" }), 404, "not_found");
    expect((await h.call("GET", C, h.B)).body.connections).toEqual([]);
  });

  test("a connection without heartbeats for heartbeat_timeout_secs goes DISCONNECTED (background pass)", async () => {
    const t = await h.gw.token("tenant-hb", ["ManageConfig"], "x");
    const s = (await h.call("POST", "/api/v1/mcp/servers", t, { name: "hb", url: fake.url })).body.server;
    const quiet = (await h.call("POST", C, t, { serverId: s.id, clientId: "quiet" })).body;
    const alive = (await h.call("POST", C, t, { serverId: s.id, clientId: "alive" })).body;
    await h.call("PATCH", `${C}/${quiet.id}/state`, t, { state: "CONNECTED" });
    await h.call("PATCH", `${C}/${alive.id}/state`, t, { state: "CONNECTED" });
    h.clock.advance(60_000);
    await h.call("POST", `${C}/${alive.id}/heartbeat`, t);
    h.clock.advance(30_001);
    await h.mcp.tick();
    expect((await h.call("GET", `${C}/${quiet.id}`, t)).body.state).toBe("DISCONNECTED");
    expect((await h.call("GET", `${C}/${alive.id}`, t)).body.state).toBe("CONNECTED");
  });

  test("GET /servers/{id}/connection-stats: active, total, by state, error rates", async () => {
    const t = await h.gw.token("tenant-stats", ["ManageConfig", "ViewMetrics"], "x");
    const own = await registerAndDiscover({ ...h, A: t }, fake.url, { name: "stats" });
    const ids: string[] = [];
    for (const c of ["a", "b", "c", "d"]) ids.push((await h.call("POST", C, t, { serverId: own.server.id, clientId: c })).body.id);
    await h.call("PATCH", `${C}/${ids[0]}/state`, t, { state: "CONNECTED" });
    await h.call("PATCH", `${C}/${ids[1]}/state`, t, { state: "ERROR" });
    await h.call("PATCH", `${C}/${ids[2]}/state`, t, { state: "DISCONNECTED" });
    await callTool({ ...h, A: t }, own.tools.get_issue.id, { issue_id: "1" });
    await callTool({ ...h, A: t }, own.tools.flaky_read.id, { q: "1" });
    const r = await h.call("GET", `/api/v1/mcp/servers/${own.server.id}/connection-stats`, t);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      serverId: own.server.id,
      activeConnections: 2,
      totalConnections: 4,
      byState: { CONNECTING: 1, CONNECTED: 1, DISCONNECTING: 0, DISCONNECTED: 1, ERROR: 1 },
      stateChanges: 3,
      connectionErrors: 1,
      connectionErrorRate: 0.25,
      lastHeartbeatAt: null,
      totalCalls: 2,
      failedCalls: 0,
      callErrorRate: 0,
      toolErrorRate: 0.5,
    });
    expectError(await h.call("GET", `/api/v1/mcp/servers/${crypto.randomUUID()}/connection-stats`, t), 404, "not_found");
  });
});

// ---------------------------------------------------------------------- WebSockets

const wsUrl = (path: string, query = "") => `${h.gw.url.replace("http", "ws")}${path}${query}`;

/** Open a socket and collect its JSON events. */
async function openSocket(path: string, opts: { token?: string; query?: string }) {
  const events: any[] = [];
  const waiters: Array<{ pred: (e: any) => boolean; resolve: (e: any) => void }> = [];
  const ws = new WebSocket(wsUrl(path, opts.query), opts.token ? ({ headers: { authorization: `Bearer ${opts.token}` } } as any) : undefined);
  ws.onmessage = (m) => {
    const e = JSON.parse(String(m.data));
    events.push(e);
    for (const w of [...waiters]) if (w.pred(e)) (waiters.splice(waiters.indexOf(w), 1), w.resolve(e));
  };
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("socket failed to open"));
  });
  return {
    ws,
    events,
    next: (pred: (e: any) => boolean) =>
      new Promise<any>((resolve) => {
        const hit = events.find(pred);
        if (hit) return resolve(hit);
        waiters.push({ pred, resolve });
      }),
    close: () => ws.close(),
  };
}

describe("WebSocket streams", () => {
  test("activity stream: tool_call, cache_miss/cache_hit, invalidation events of the tenant only", async () => {
    const a = await openSocket("/api/v1/mcp/stream", { token: h.A });
    const b = await openSocket("/api/v1/mcp/stream", { token: h.B });
    await callTool(h, tools.get_issue.id, { issue_id: "ws-1" });
    await callTool(h, tools.get_issue.id, { issue_id: "ws-1" });
    const hit = await a.next((e) => e.type === "cache_hit");
    expect(hit).toEqual({
      type: "cache_hit",
      timestamp: expect.any(String),
      data: { toolId: tools.get_issue.id, toolName: "get_issue", serverId: serverA.id, agentId: "alice", cacheKey: expect.anything(), tier: "exact", similarity: 1 },
    });
    const call = await a.next((e) => e.type === "tool_call" && e.data.cacheStatus === "MISS");
    expect(call.data).toEqual({
      toolId: tools.get_issue.id,
      toolName: "get_issue",
      serverId: serverA.id,
      agentId: "alice",
      cacheKey: expect.anything(),
      category: "READ",
      cacheStatus: "MISS",
      tier: null,
      latencyMs: expect.any(Number),
      upstreamLatencyMs: expect.any(Number),
      error: null,
    });
    expect(await a.next((e) => e.type === "cache_miss")).toMatchObject({ data: { stored: true } });
    await h.call("POST", "/api/v1/mcp/entities", h.A, { name: "ws-entity" });
    await h.call("POST", "/api/v1/tool-cache/invalidate", h.A, { entityType: "ws-entity" });
    expect(await a.next((e) => e.type === "invalidation")).toMatchObject({ data: { reason: "manual", entityType: "ws-entity", invalidated: 0, cascade: false } });
    // tenant B's socket saw none of it; its own call is its own
    const tb = await h.gw.token("tenant-b", ["ManageConfig", "ViewMetrics", "ViewLogs"], "bob");
    const own = await registerAndDiscover({ ...h, A: tb }, fake.url, { name: "b-srv" });
    await callTool({ ...h, A: tb }, own.tools.get_issue.id, { issue_id: "b" });
    await b.next((e) => e.type === "tool_call");
    expect(b.events.every((e) => e.data.serverId === undefined || e.data.serverId === own.server.id)).toBe(true);
    expect(a.events.some((e) => e.data.serverId === own.server.id)).toBe(false);
    a.close();
    b.close();
  });

  test("connection events: state changes of the tenant; JWT in the header or in ?token=; 401 without", async () => {
    const byQuery = await openSocket("/api/v1/mcp/connections/events", { query: `?token=${h.A}` });
    const byHeader = await openSocket("/api/v1/mcp/connections/events", { token: h.A });
    const other = await openSocket("/api/v1/mcp/connections/events", { query: `?token=${h.B}` });
    const c = (await h.call("POST", C, h.A, { serverId: serverA.id, clientId: "ws-client" })).body;
    await h.call("PATCH", `${C}/${c.id}/state`, h.A, { state: "CONNECTED" });
    const created = await byQuery.next((e) => e.data.connectionId === c.id && e.data.to === "CONNECTING");
    expect(created).toEqual({ type: "connection_state", timestamp: expect.any(String), data: { connectionId: c.id, serverId: serverA.id, clientId: "ws-client", from: null, to: "CONNECTING", reason: "created", at: expect.any(String) } });
    expect(await byHeader.next((e) => e.data.to === "CONNECTED")).toMatchObject({ data: { connectionId: c.id, from: "CONNECTING", to: "CONNECTED", reason: "requested" } });
    expect(other.events).toEqual([]);
    for (const s of [byQuery, byHeader, other]) s.close();
    const no = await fetch(`${h.gw.url}/api/v1/mcp/connections/events`, { headers: UPGRADE });
    expect(no.status).toBe(401);
    expect(await no.json()).toEqual({ type: "authentication_error", message: expect.any(String) });
    const bad = await fetch(`${h.gw.url}/api/v1/mcp/connections/events?token=not.a.jwt`, { headers: UPGRADE });
    expect(bad.status).toBe(401);
    const streamNoToken = await fetch(`${h.gw.url}/api/v1/mcp/stream?token=${h.A}`, { headers: UPGRADE });
    expect(streamNoToken.status).toBe(401); // the activity stream takes the header only
  });

  test("the concurrent limit of the connection-event stream: the next upgrade is refused with 503 in the doc2 envelope; a closed socket frees its slot", async () => {
    // this gateway allows 5 (SVC_MCP__MAX_CONNECTION_EVENT_SOCKETS; 100 by default). Sockets closed by
    // earlier tests are released when the server sees their close, just after the client does.
    const open: Awaited<ReturnType<typeof openSocket>>[] = [];
    for (let i = 0; i < 5; i++) open.push(await openEventually(i % 2 ? h.A : h.B));
    const refused = await fetch(`${h.gw.url}/api/v1/mcp/connections/events?token=${h.A}`, { headers: UPGRADE });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await refused.json()).toEqual({ type: "service_unavailable", message: expect.stringContaining("at most 5") });
    // the activity stream is not counted
    const activity = await openSocket("/api/v1/mcp/stream", { token: h.A });
    activity.close();
    const closed = new Promise((r) => (open[0]!.ws.onclose = r));
    open[0]!.close();
    await closed;
    const again = await openEventually(h.A);
    again.close();
    for (const s of open.slice(1)) s.close();
  });
});

const UPGRADE = { upgrade: "websocket", connection: "Upgrade", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13" };

/** Open a connection-events socket, retrying while the server still counts sockets whose close it has not processed yet (bounded). */
async function openEventually(token: string) {
  for (let i = 0; ; i++) {
    try {
      return await openSocket("/api/v1/mcp/connections/events", { query: `?token=${token}` });
    } catch (e) {
      if (i >= 500) throw e;
    }
  }
}

describe("shutdown with open WebSockets", () => {
  test("stop() closes each socket with 1001 (going away) and does not wait out the shutdown deadline for them", async () => {
    const g = await startMcpGateway();
    const deadlineMs = 20_000;
    (g.gw.ctx.config.server as { shutdown_timeout_ms: number }).shutdown_timeout_ms = deadlineMs;
    const ws = new WebSocket(`${g.gw.url.replace("http", "ws")}/api/v1/mcp/stream`, { headers: { authorization: `Bearer ${g.A}` } } as any);
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error("socket failed to open"));
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) => (ws.onclose = (e) => resolve({ code: e.code, reason: e.reason })));
    const outcome = await Promise.race([g.gw.stop().then(() => "stopped"), Bun.sleep(deadlineMs / 2).then(() => "still waiting")]);
    expect(outcome).toBe("stopped");
    expect(await closed).toEqual({ code: 1001, reason: "server shutting down" });
  }, 30_000);
});
