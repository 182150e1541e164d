#!/usr/bin/env bun
/**
 * Invalidation of 10k cached tool results (BENCHMARKS.md "MCP gateway").
 *
 *   bun scripts/bench/mcp-invalidation.ts [--entries 10000] [--runs 5]
 *
 * Service level over a SQLite file (WAL, as in production): a READ tool with --entries cached
 * results tagged with an entity, then one invalidation that drops them all, three ways:
 *   - rule:   a WRITE tool's enabled rule names the READ tool (every result of the tool);
 *   - entity: a WRITE tool mapped to the entity runs without the id parameter (the whole entity, cascading);
 *   - api:    POST /tool-cache/invalidate {entityType} (the same work, through the service).
 * Each run refills the cache; the figure is the median over --runs of the invalidation alone.
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { OutboundPolicy } from "../../src/core/outbound";
import { Logger } from "../../src/core/log";
import { loadConfig } from "../../src/config";
import { MCP_MIGRATIONS } from "../../src/mcp/migrations";
import { mcpServices } from "../../src/mcp/services";
import { cacheKeyOf, canonical } from "../../src/mcp/toolcache/key";
import { median, machine } from "./harness";

const { values } = parseArgs({ args: process.argv.slice(2), options: { entries: { type: "string", default: "10000" }, runs: { type: "string", default: "5" } } });
const N = Number(values.entries);
const RUNS = Number(values.runs);

const dir = mkdtempSync(join(tmpdir(), "svc-mcp-inv-"));
const db = new Db(join(dir, "svc.db"));
db.migrate([{ domain: "mcp", migrations: MCP_MIGRATIONS }]);
const embedder = { id: "none", dimensions: 8, isReady: () => false, embed: async () => [] };
const storage = openStorage({ path: join(dir, "svc.db"), db });
const s = mcpServices({
  storage,
  outbound: new OutboundPolicy({ allowPrivate: true }),
  embedder,
  config: loadConfig({}, { mcp: { health_interval_secs: 0 } }).mcp,
  log: new Logger("error"),
  clock: { now: () => Date.now() },
  env: {},
});
const T = "bench";
const server = await s.registry.register(T, { name: "bench", url: "http://127.0.0.1:9/mcp" });
const { tools } = await s.registry.applyDiscovery(T, server.id, [
  { name: "get_issue", inputSchema: { type: "object", properties: { issue_id: { type: "string" } } }, annotations: { readOnlyHint: true } },
  { name: "update_issue", inputSchema: { type: "object", properties: { issue_id: { type: "string" } } }, annotations: { destructiveHint: true } },
  { name: "touch_issue", inputSchema: { type: "object", properties: { issue_id: { type: "string" } } }, annotations: { destructiveHint: true } },
]);
const read = await s.registry.tool(T, tools.find((t) => t.name === "get_issue")!.id);
const write = await s.registry.tool(T, tools.find((t) => t.name === "update_issue")!.id);
const touch = await s.registry.tool(T, tools.find((t) => t.name === "touch_issue")!.id);
const issue = await s.entities.create(T, { name: "issue" });
await s.entities.map(T, { toolId: read.id, entityId: issue.id, paramName: "issue_id", operation: "READ" });
await s.entities.map(T, { toolId: write.id, entityId: issue.id, paramName: "issue_id", operation: "WRITE" });
await s.entities.createRule(T, { writeToolId: touch.id, invalidateToolId: read.id });

async function fill(): Promise<number> {
  const t0 = performance.now();
  await storage.tx(async () => {
    for (let i = 0; i < N; i++) {
      const args = { issue_id: `issue-${i}` };
      const c = canonical(args);
      await s.cache.store(T, read, { key: cacheKeyOf(T, server.id, read.name, "", c), args, canonicalArgs: c, agentScope: "", structKey: c, result: { content: [{ type: "text", text: `issue ${i}: ${"x".repeat(200)}` }] }, upstreamMs: 5, epoch: s.cache.epoch(T) });
    }
  });
  return performance.now() - t0;
}

const results: Record<string, number[]> = { rule: [], entity: [], api: [] };
const fills: number[] = [];
for (let r = 0; r < RUNS; r++)
  for (const how of ["rule", "entity", "api"] as const) {
    fills.push(await fill());
    const t0 = performance.now();
    const n =
      how === "rule" ? await s.cache.afterExecution(T, touch, { issue_id: "any" }) : how === "entity" ? await s.cache.afterExecution(T, write, {}) : (await s.cache.invalidateByApi(T, { entityType: "issue" })).invalidated;
    results[how]!.push(performance.now() - t0);
    if (n !== N) throw new Error(`${how}: invalidated ${n}, expected ${N}`);
  }

const m = machine();
console.log(`machine: ${m.nproc} cores, ${m.cpu}, bun ${m.bun}; ${N} cached results per run, ${RUNS} runs, SQLite file (WAL)`);
console.log(`fill ${N} entries (one transaction): median ${median(fills).toFixed(1)} ms`);
for (const [how, xs] of Object.entries(results)) console.log(`invalidate all ${N} by ${how.padEnd(6)}: median ${median(xs).toFixed(1)} ms (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)})`);
await s.close();
db.close();
rmSync(dir, { recursive: true, force: true });
