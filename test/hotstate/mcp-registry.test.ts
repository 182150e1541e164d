/**
 * What the /mcp endpoint exposes follows registry changes made through another replica: two
 * gateways in this process on one PostgreSQL schema and one real Redis. Each keeps a map of the
 * tenant's exposed tools, rebuilt when its registry version moves; a server registered or deleted
 * through A moves B's version over the bus. The map's timer fallback (ExposedTools.TTL_MS, 1 s) is
 * set to 10 minutes here, so only the bus can make B see the change.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { postgresEnv } from "../helpers/pg-gateway";
import { TestRedis } from "../helpers/redis";
import { startFakeMcpServer, type FakeMcpServer } from "../mcp/fake-server";
import { ExposedTools } from "../../src/mcp/endpoint";
import { until } from "./replicas";

let redis: TestRedis;
let mcp: FakeMcpServer;
let a: TestGateway;
let b: TestGateway;
const ttl = ExposedTools.TTL_MS;

beforeAll(async () => {
  ExposedTools.TTL_MS = 600_000;
  redis = await TestRedis.start();
  mcp = startFakeMcpServer();
  const env = { ...(await postgresEnv("mcp_registry")), SVC_REDIS__URL: redis.url, SVC_OUTBOUND__ALLOW_PRIVATE: "true", SVC_CACHE__ENABLED: "false" };
  a = await startGateway({}, env);
  b = await startGateway({}, env);
  await until("both connected to redis", async () => !!a.ctx.hotState?.ready() && !!b.ctx.hotState?.ready(), 20_000);
}, 120_000);

afterAll(async () => {
  ExposedTools.TTL_MS = ttl;
  await a?.stop();
  await b?.stop();
  mcp?.release();
  await mcp?.stop();
  await redis?.stop();
});

/** the tool names B's /mcp endpoint lists for the tenant */
async function listedOnB(token: string): Promise<string[]> {
  const r = await b.api("/mcp", {
    method: "POST",
    token,
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  const text = await r.text();
  expect(r.status).toBe(200);
  const json = text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data:"))!.slice(5);
  return (JSON.parse(json).result.tools as Array<{ name: string }>).map((t) => t.name);
}

test("a server registered, then deleted, through A: B's /mcp endpoint lists its tools, then no longer (bus)", async () => {
  const token = await a.token("tenant-mcp", ["WorkspaceAdmin"], "admin");
  expect(await listedOnB(token)).toEqual([]); // B's map of the tenant is built (empty)
  const reg = await a.api("/api/v1/mcp/servers", { method: "POST", token, json: { name: "shared", url: mcp.url } });
  expect(reg.status).toBe(200);
  const server = ((await reg.json()) as any).server;
  expect((await a.api(`/api/v1/mcp/servers/${server.id}/discover`, { method: "POST", token })).status).toBe(200);
  await until("B lists the new server's tools", async () => (await listedOnB(token)).some((n) => n.includes("get_issue")), 5_000);
  expect((await a.api(`/api/v1/mcp/servers/${server.id}`, { method: "DELETE", token })).status).toBeLessThan(300);
  await until("B no longer lists them", async () => (await listedOnB(token)).length === 0, 5_000);
}, 60_000);
