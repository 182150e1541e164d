#!/usr/bin/env bun
/**
 * 100 WebSocket subscribers of /api/v1/mcp/stream receiving 1,000 events/s (BENCHMARKS.md "MCP gateway").
 *
 *   bun scripts/bench/mcp-websocket.ts [--subs 100] [--rate 1000] [--secs 5]
 *
 * The gateway runs in this process (its event hub is driven directly: `activity` events published
 * at --rate per second, each carrying its send time); the subscribers are real WebSocket clients
 * in a second process on loopback, which reports per-event delivery latency (publish → receipt,
 * same clock: both processes read performance.timeOrigin + now) and loss.
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { startServer } from "../../src/server";
import { Logger } from "../../src/core/log";
import { machine } from "./harness";

const { values } = parseArgs({ args: process.argv.slice(2), options: { subs: { type: "string", default: "100" }, rate: { type: "string", default: "1000" }, secs: { type: "string", default: "5" }, child: { type: "string" } } });
const SUBS = Number(values.subs);
const RATE = Number(values.rate);
const SECS = Number(values.secs);
const now = () => performance.timeOrigin + performance.now();

if (values.child) {
  // subscriber process: open SUBS sockets, count events and latencies, report on stdin close
  const [url, token] = values.child.split(" ");
  const lat: number[] = [];
  let received = 0;
  const sockets: WebSocket[] = [];
  await Promise.all(
    Array.from({ length: SUBS }, () => {
      const ws = new WebSocket(url!, { headers: { authorization: `Bearer ${token}` } } as any);
      sockets.push(ws);
      ws.onmessage = (m) => {
        received++;
        if (received % 10 === 0) lat.push(now() - (JSON.parse(String(m.data)).data.sentAt as number)); // every 10th is parsed and sampled
      };
      return new Promise((r) => (ws.onopen = r));
    }),
  );
  console.log("ready");
  for await (const _ of console) break; // the parent writes a line when it has published everything
  await Bun.sleep(500); // let the last frames arrive
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? NaN;
  console.log(JSON.stringify({ received, p50: q(50), p99: q(99), max: lat.at(-1) }));
  for (const ws of sockets) ws.close();
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), "svc-mcp-ws-"));
const config = loadConfig(
  { SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "bench-secret-bench-secret-bench-secret" },
  { server: { host: "127.0.0.1", port: 0, request_log: false }, rate_limits: { enabled: false }, mcp: { health_interval_secs: 0 } },
);
const gw = await startServer(config, { logger: new Logger("error") });
const token = await gw.ctx.tokens.sign({ tenantId: "bench", permissions: ["ViewLogs"] }); // the activity stream is a request log
const child = Bun.spawn([process.execPath, import.meta.path, "--subs", String(SUBS), "--child", `ws://127.0.0.1:${gw.port}/api/v1/mcp/stream ${token}`], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
const reader = child.stdout.getReader();
let out = "";
while (!out.includes("ready")) out += new TextDecoder().decode((await reader.read()).value);

const total = RATE * SECS;
const t0 = performance.now();
let sent = 0;
while (sent < total) {
  // publish what is due by now (1 ms ticks), never ahead of the schedule
  const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * RATE));
  for (; sent < due; sent++) gw.ctx.mcp.events.activity("bench", "tool_call", { seq: sent, sentAt: now(), toolName: "get_issue", cacheStatus: "HIT", latencyMs: 0.4 });
  await Bun.sleep(1);
}
const publishSecs = (performance.now() - t0) / 1000;
child.stdin.write("done\n");
await child.stdin.flush();
out = "";
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  out += new TextDecoder().decode(value);
}
const report = JSON.parse(out.trim().split("\n").at(-1)!);
const m = machine();
console.log(`machine: ${m.nproc} cores, ${m.cpu}, bun ${m.bun}`);
console.log(`${SUBS} subscribers, ${total} events published in ${publishSecs.toFixed(2)} s (${(total / publishSecs).toFixed(0)}/s)`);
console.log(`delivered ${report.received} of ${total * SUBS} messages (${((100 * report.received) / (total * SUBS)).toFixed(2)} %)`);
console.log(`delivery latency publish -> receipt: p50 ${report.p50.toFixed(2)} ms, p99 ${report.p99.toFixed(2)} ms, max ${report.max.toFixed(2)} ms`);
await gw.stop();
rmSync(dir, { recursive: true, force: true });
