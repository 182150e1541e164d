#!/usr/bin/env bun
/**
 * MCP tool calls through svc vs calling the MCP server directly (BENCHMARKS.md "MCP gateway").
 *
 *   bun scripts/bench/mcp-calls.ts [--n 500]
 *
 * Three processes on loopback: the gateway (`bun src/main.ts`, default configuration, loopback
 * targets allowed), the MCP server (official server SDK, Streamable HTTP, 2026-07-28 era; this
 * script with --server) and the clients (this process). Calls are sequential (one in flight);
 * each figure is the median (and p99) of --n calls after 50 warm-up calls of every series; the
 * series compared are timed in turn, call by call (direct, REST hit, /mcp hit; then the three
 * misses), so a process still warming up or a neighbour's load weighs on each alike:
 *   - direct: the official client calling the server;
 *   - hit: the same call answered by svc's tool cache, over REST and over svc's /mcp endpoint;
 *   - miss: new arguments every call (goes upstream), over /mcp vs direct; svc's own overhead
 *     = its reported latencyMs − upstreamLatencyMs (time inside svc around the upstream call).
 */
import { parseArgs } from "node:util";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { TokenService } from "../../src/core/auth";
import { startTarget, BENCH_JWT_SECRET, machine } from "./harness";
import { startFakeMcpServer } from "../../test/mcp/fake-server";

const { values } = parseArgs({ args: process.argv.slice(2), options: { n: { type: "string", default: "500" }, server: { type: "boolean" } } });

if (values.server) {
  // the MCP server's own process: print its URL, serve until stdin closes
  const fake = startFakeMcpServer();
  console.log(fake.url);
  for await (const _ of console) break;
  await fake.stop();
  process.exit(0);
}
const N = Number(values.n);
const WARM = 50;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(3)} ms, p99 ${pct(xs, 99).toFixed(3)} ms`;

/** Each series warmed up, then timed in turn call by call; the durations of each. */
async function timed(n: number, ...series: Array<(i: number) => Promise<unknown>>): Promise<[number[], number[], number[]]> {
  for (const fn of series) for (let i = 0; i < WARM; i++) await fn(-1 - i);
  const out: [number[], number[], number[]] = [[], [], []];
  for (let i = 0; i < n; i++)
    for (const [k, fn] of series.entries()) {
      const t0 = performance.now();
      await fn(i);
      out[k]!.push(performance.now() - t0);
    }
  return out;
}

const mcpClient = async (url: string, headers: Record<string, string> = {}) => {
  const c = new Client({ name: "bench", version: "1" }, { versionNegotiation: { mode: "auto" } });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return c;
};

const serverProc = Bun.spawn([process.execPath, import.meta.path, "--server"], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
const lines = serverProc.stdout.getReader();
let firstLine = "";
while (!firstLine.includes("\n")) firstLine += new TextDecoder().decode((await lines.read()).value);
const fake = { url: firstLine.trim() };
const gw = await startTarget({ env: { SVC_OUTBOUND__ALLOW_PRIVATE: "true", SVC_MCP__HEALTH_INTERVAL_SECS: "0", SVC_RATE_LIMITS__ENABLED: "false" } });
try {
  const token = await new TokenService(BENCH_JWT_SECRET).sign({ tenantId: "bench", permissions: ["WorkspaceAdmin"] });
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const reg = (await (await fetch(`${gw.url}/api/v1/mcp/servers`, { method: "POST", headers: auth, body: JSON.stringify({ name: "bench", url: fake.url }) })).json()) as any;
  const disc = (await (await fetch(`${gw.url}/api/v1/mcp/servers/${reg.server.id}/discover`, { method: "POST", headers: auth })).json()) as any;
  const tool = disc.tools.find((t: any) => t.name === "get_issue");

  const direct = await mcpClient(fake.url);
  const viaSvc = await mcpClient(`${gw.url}/mcp`, { authorization: `Bearer ${token}` });

  const [directSame, hitRest, hitMcp] = await timed(
    N,
    () => direct.callTool({ name: "get_issue", arguments: { issue_id: "hot" } }),
    () => fetch(`${gw.url}/api/v1/mcp/tools/${tool.id}/call`, { method: "POST", headers: auth, body: JSON.stringify({ arguments: { issue_id: "hot" } }) }).then((r) => r.arrayBuffer()),
    () => viaSvc.callTool({ name: "bench__get_issue", arguments: { issue_id: "hot" } }),
  );

  const inside: number[] = [];
  const [directMiss, missMcp, missRest] = await timed(
    N,
    (i) => direct.callTool({ name: "get_issue", arguments: { issue_id: `d-${i}` } }),
    (i) => viaSvc.callTool({ name: "bench__get_issue", arguments: { issue_id: `m-${i}` } }),
    async (i) => {
      const r = (await (await fetch(`${gw.url}/api/v1/mcp/tools/${tool.id}/call`, { method: "POST", headers: auth, body: JSON.stringify({ arguments: { issue_id: `r-${i}` } }) })).json()) as any;
      if (i >= 0) inside.push(r.latencyMs - r.upstreamLatencyMs);
    },
  );

  const m = machine();
  console.log(`machine: ${m.nproc} cores, ${m.cpu}, bun ${m.bun}; n=${N} sequential calls per series after ${WARM} warm-up each, series interleaved call by call`);
  console.log(`direct call (official client -> server):        ${fmt(directSame)}`);
  console.log(`hit through svc, REST POST /tools/{id}/call:    ${fmt(hitRest)}`);
  console.log(`hit through svc, /mcp (official client):       ${fmt(hitMcp)}`);
  console.log(`miss, direct (new arguments each call):         ${fmt(directMiss)}`);
  console.log(`miss through svc /mcp:                          ${fmt(missMcp)}  -> added end to end: ${(pct(missMcp, 50) - pct(directMiss, 50)).toFixed(3)} ms p50`);
  console.log(`miss through svc REST:                          ${fmt(missRest)}`);
  console.log(`svc overhead inside the gateway on a miss (latencyMs - upstreamLatencyMs): ${fmt(inside)}`);
  await direct.close();
  await viaSvc.close();
} finally {
  await gw.stop();
  serverProc.stdin.end();
  await serverProc.exited;
}
