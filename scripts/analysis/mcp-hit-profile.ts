#!/usr/bin/env bun
/**
 * Where a cache hit's time goes inside svc, over `/mcp` (both eras) and REST (BENCHMARKS.md
 * "/mcp hit path").
 *
 *   bun scripts/analysis/mcp-hit-profile.ts [--n 10000]
 *
 * One process: a test gateway and the fake MCP server; --n sequential hits over loopback HTTP per
 * path after 1,000 warm-up. Prints the time per hit inside the kernel's `serve` (everything svc
 * does for the request) and inside the store and service methods a hit runs (wrapped for timing,
 * which adds a little to each); the call log's batched writes run after the answers, outside
 * `serve`, and are shown per hit beside them.
 */
import { parseArgs } from "node:util";
import { startMcpGateway, registerAndDiscover } from "../../test/mcp/helpers";
import { startFakeMcpServer } from "../../test/mcp/fake-server";
import { RegistryStore } from "../../src/mcp/registry/store";
import { CallService } from "../../src/mcp/calls/service";
import { ToolCache } from "../../src/mcp/toolcache/service";
import { CallLog } from "../../src/mcp/calls/log";
import { CallStore } from "../../src/mcp/calls/store";
import { ToolCacheStore } from "../../src/mcp/toolcache/store";
import { AsyncWriteBehind } from "../../src/storage/write-behind-async";
import { Kernel } from "../../src/core/kernel";
import { machine } from "../bench/harness";

const { values } = parseArgs({ args: process.argv.slice(2), options: { n: { type: "string", default: "10000" } } });
const N = Number(values.n);

const spent: Record<string, number> = {};
function timeMethod(proto: any, name: string, label = name) {
  const original = proto[name];
  proto[name] = function (...args: unknown[]) {
    const t0 = performance.now();
    const r = original.apply(this, args);
    const done = () => (spent[label] = (spent[label] ?? 0) + performance.now() - t0);
    if (r instanceof Promise) return r.finally(done);
    done();
    return r;
  };
}
timeMethod(Kernel.prototype, "serve", "kernel serve (all of svc)");
timeMethod(Kernel.prototype, "admit", "kernel admit (auth, limits)");
timeMethod(RegistryStore.prototype, "allServers", "registry: allServers");
timeMethod(RegistryStore.prototype, "toolByName", "registry: toolByName");
timeMethod(RegistryStore.prototype, "getTool", "registry: getTool");
timeMethod(RegistryStore.prototype, "getServer", "registry: getServer");
timeMethod(CallService.prototype, "callResolved", "calls: callResolved");
timeMethod(CallService.prototype, "exactHit", "calls: exactHit (replay)");
timeMethod(ToolCache.prototype, "exact", "cache: exact lookup");
timeMethod(CallLog.prototype, "record", "calls: queue the record");
timeMethod(AsyncWriteBehind.prototype, "flush", "call log: batch write (after)");
timeMethod(ToolCacheStore.prototype, "recordHits", "  of which hit counts");
timeMethod(CallStore.prototype, "insert", "  of which call records");

const fake = startFakeMcpServer();
const h = await startMcpGateway();
try {
  const { tools } = await registerAndDiscover(h, fake.url, { name: "bench" });
  await h.call("POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, h.A, { arguments: { issue_id: "hot" } });
  const auth = { authorization: `Bearer ${h.A}` };
  const name = "bench__get_issue";
  const modern = JSON.stringify({
    method: "tools/call",
    params: { name, arguments: { issue_id: "hot" }, _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} } },
    jsonrpc: "2.0",
    id: 0,
  });
  const legacy = JSON.stringify({ method: "tools/call", params: { name, arguments: { issue_id: "hot" } }, jsonrpc: "2.0", id: 1 });
  const mcpHeaders = { ...auth, accept: "application/json, text/event-stream", "content-type": "application/json" };
  const paths: Record<string, () => Promise<unknown>> = {
    "/mcp 2026-07-28": () => fetch(`${h.gw.url}/mcp`, { method: "POST", headers: { ...mcpHeaders, "mcp-method": "tools/call", "mcp-name": name, "mcp-protocol-version": "2026-07-28" }, body: modern }).then((r) => r.text()),
    "/mcp 2025-11-25": () => fetch(`${h.gw.url}/mcp`, { method: "POST", headers: { ...mcpHeaders, "mcp-protocol-version": "2025-11-25" }, body: legacy }).then((r) => r.text()),
    "REST": () => fetch(`${h.gw.url}/api/v1/mcp/tools/${tools.get_issue.id}/call`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ arguments: { issue_id: "hot" } }) }).then((r) => r.text()),
  };
  const m = machine();
  console.log(`machine: ${m.nproc} cores, ${m.cpu}, bun ${m.bun}; ${N} hits per path after 1,000 warm-up`);
  for (const [label, hit] of Object.entries(paths)) {
    for (let i = 0; i < 1000; i++) await hit();
    for (const k in spent) delete spent[k];
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await hit();
    console.log(`${label}: ${(((performance.now() - t0) / N) * 1000).toFixed(1)} µs per hit end to end (client included)`);
    for (const [k, v] of Object.entries(spent).sort((a, b) => b[1] - a[1])) console.log(`  ${k.padEnd(32)} ${((v / N) * 1000).toFixed(1)} µs`);
  }
} finally {
  await h.gw.stop();
  await fake.stop();
}
