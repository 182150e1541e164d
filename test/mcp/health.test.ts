/**
 * Server health: a real round trip, the 30-second cache on the clock, status moves
 * (PENDING → HEALTHY, failures → DEGRADED → DOWN, recovery), DISABLED set and cleared by an admin
 * and never checked nor called, the background pass driven without timers, and the status rules
 * themselves.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startMcpGateway, expectError, type McpGateway } from "./helpers";
import { startFakeMcpServer, type FakeMcpServer } from "./fake-server";
import { nextStatus, percentile } from "../../src/mcp/health/service";

let h: McpGateway;
const S = "/api/v1/mcp/servers";

beforeAll(async () => {
  h = await startMcpGateway();
});
afterAll(() => h.gw.stop());

/** A server whose MCP endpoint can be switched off and on (a proxy in front of a fake server). */
function switchable(target: FakeMcpServer) {
  let up = true;
  const proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (r) => (up ? fetch(target.url, { method: r.method, headers: r.headers, body: r.body }) : new Response("down", { status: 503 })),
  });
  return {
    url: `http://127.0.0.1:${proxy.port}/mcp`,
    set up(v: boolean) {
      up = v;
    },
    stop: () => proxy.stop(true),
  };
}

describe("health", () => {
  test("GET …/health: a real check, then the cached result for 30 s, then a new check; every field", async () => {
    const fake = startFakeMcpServer();
    const reg = await h.call("POST", S, h.A, { name: "health-1", url: fake.url });
    const id = reg.body.server.id;
    const r1 = await h.call("GET", `${S}/${id}/health`, h.A);
    expect(r1.status).toBe(200);
    expect(r1.body).toEqual({
      serverId: id,
      status: "HEALTHY",
      latencyP50Ms: expect.any(Number),
      latencyP99Ms: expect.any(Number),
      error: null,
      checkedAt: expect.any(String),
      access_count: 0,
      avg_latency_ms: expect.any(Number),
      error_rate: 0,
      cached: false,
    });
    const s = (await h.call("GET", `${S}/${id}`, h.A)).body;
    expect(s).toMatchObject({ status: "HEALTHY", lastError: null, lastHealthCheck: r1.body.checkedAt });
    expect(s.healthLatencyP50Ms).toEqual(expect.any(Number));
    h.clock.advance(29_999);
    const r2 = await h.call("GET", `${S}/${id}/health`, h.A);
    expect(r2.body).toMatchObject({ cached: true, checkedAt: r1.body.checkedAt });
    h.clock.advance(1);
    const r3 = await h.call("GET", `${S}/${id}/health`, h.A);
    expect(r3.body.cached).toBe(false);
    expect(r3.body.checkedAt).not.toBe(r1.body.checkedAt);
    await fake.stop();
  });

  test("failures: HEALTHY → DEGRADED → DOWN after 3 in a row; recovery goes back to HEALTHY once the error rate settles; lastError", async () => {
    const fake = startFakeMcpServer();
    const sw = switchable(fake);
    const reg = await h.call("POST", S, h.A, { name: "health-2", url: sw.url });
    const id = reg.body.server.id;
    const server = () => h.mcp.registry.server("tenant-a", id);
    await h.mcp.health.check("tenant-a", await server());
    expect((await server()).status).toBe("HEALTHY");
    sw.up = false;
    const statuses: string[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await h.mcp.health.check("tenant-a", await server())).status);
    expect(statuses).toEqual(["DEGRADED", "DEGRADED", "DOWN"]);
    expect((await server()).lastError).toEqual(expect.any(String));
    sw.up = true;
    const back: string[] = [];
    for (let i = 0; i < 4; i++) back.push((await h.mcp.health.check("tenant-a", await server())).status);
    expect(back[0]).toBe("DEGRADED"); // answering again, errors still elevated (EMA ≥ 0.25)
    expect(back.at(-1)).toBe("HEALTHY");
    expect((await server()).lastError).toBeNull();
    sw.stop();
    await fake.stop();
  });

  test("a server that never answered stays PENDING; the background pass checks every enabled server of every tenant", async () => {
    const dead = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("no", { status: 404 }) });
    const fake = startFakeMcpServer();
    const p = await h.call("POST", S, h.A, { name: "never", url: `http://127.0.0.1:${dead.port}/mcp` });
    const other = await h.call("POST", S, h.B, { name: "tenant-b-server", url: fake.url });
    const pass = await h.mcp.tick();
    expect(pass.checked).toBeGreaterThanOrEqual(2);
    expect(await h.mcp.registry.server("tenant-a", p.body.server.id)).toMatchObject({ status: "PENDING", lastError: expect.any(String) });
    expect((await h.mcp.registry.server("tenant-b", other.body.server.id)).status).toBe("HEALTHY");
    await dead.stop(true);
    await fake.stop();
  });

  test("DISABLED: set and cleared by an admin (ManageConfig); a disabled server is not checked, not discovered, not called", async () => {
    const fake = startFakeMcpServer();
    const reg = await h.call("POST", S, h.A, { name: "health-3", url: fake.url });
    const id = reg.body.server.id;
    await h.call("POST", `${S}/${id}/discover`, h.A);
    const d = await h.call("POST", `${S}/${id}/disable`, h.A);
    expect(d.body).toMatchObject({ id, status: "DISABLED" });
    expect((await h.call("GET", `${S}?status=DISABLED`, h.A)).body.servers.map((x: any) => x.id)).toContain(id);
    const pages = fake.listPages;
    const hc = await h.call("GET", `${S}/${id}/health`, h.A);
    expect(hc.body).toMatchObject({ status: "DISABLED", cached: true });
    await h.mcp.tick();
    expect((await h.mcp.registry.server("tenant-a", id)).status).toBe("DISABLED");
    expectError(await h.call("POST", `${S}/${id}/discover`, h.A), 409, "conflict", "DISABLED");
    expect(fake.listPages).toBe(pages);
    const e = await h.call("POST", `${S}/${id}/enable`, h.A);
    expect(e.body).toMatchObject({ status: "PENDING", lastError: null });
    expect((await h.call("GET", `${S}/${id}/health`, h.A)).body).toMatchObject({ status: "HEALTHY", cached: false });
    expectError(await h.call("POST", `${S}/${crypto.randomUUID()}/disable`, h.A), 404, "not_found");
    await fake.stop();
  });

  test("health results are emitted to the activity stream (service level)", async () => {
    const fake = startFakeMcpServer();
    const reg = await h.call("POST", S, h.A, { name: "health-4", url: fake.url });
    const seen: any[] = [];
    const off = h.mcp.events.subscribe("activity", "tenant-a", (t) => seen.push(JSON.parse(t)));
    await h.mcp.health.check("tenant-a", await h.mcp.registry.server("tenant-a", reg.body.server.id));
    off();
    expect(seen).toEqual([
      {
        type: "health_check",
        timestamp: expect.any(String),
        data: { serverId: reg.body.server.id, serverName: "health-4", status: "HEALTHY", previousStatus: "PENDING", ok: true, latencyMs: expect.any(Number), latencyP50Ms: expect.any(Number), latencyP99Ms: expect.any(Number), error: null },
      },
    ]);
    await fake.stop();
  });
});

describe("status rules", () => {
  const cfg = { degraded_latency_ms: 2000, down_after_failures: 3 };
  const st = (consecutiveFailures: number, errorRate = 0) => ({ samples: [], consecutiveFailures, avgLatencyMs: null, errorRate, lastHealthCheckMs: null });
  test("thresholds", () => {
    expect(nextStatus("PENDING", true, 10, st(0), cfg)).toBe("HEALTHY");
    expect(nextStatus("PENDING", true, 2001, st(0), cfg)).toBe("DEGRADED");
    expect(nextStatus("PENDING", false, 0, st(5, 1), cfg)).toBe("PENDING");
    expect(nextStatus("HEALTHY", false, 0, st(1, 0.2), cfg)).toBe("DEGRADED");
    expect(nextStatus("DEGRADED", false, 0, st(3, 0.5), cfg)).toBe("DOWN");
    expect(nextStatus("DOWN", true, 10, st(0, 0.3), cfg)).toBe("DEGRADED");
    expect(nextStatus("DOWN", true, 10, st(0, 0.1), cfg)).toBe("HEALTHY");
    expect(nextStatus("DISABLED", true, 10, st(0), cfg)).toBe("DISABLED");
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([...Array(100).keys()].map((i) => i + 1), 99)).toBe(99);
    expect(percentile([], 50)).toBeNull();
  });
});
