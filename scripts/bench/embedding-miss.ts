#!/usr/bin/env bun
/**
 * The cache-enabled miss at 64 connections, this checkout against another (or against itself with
 * other settings), interleaved round by round: req/s of distinct questions (proxy-load.ts), the
 * sizes of the model calls the local embedder made meanwhile (embedding-batch-stats.ts, preloaded
 * into each gateway), and with --off the same load on the cache-off gateways beside it.
 *
 *   bun scripts/bench/embedding-miss.ts --base DIR [--rounds 4] [--secs 5] [--warmup 3] [--connections 64] [--off]
 *       [--this-env K=V,K=V] [--base-env K=V,K=V]
 *
 * DIR: another installed checkout (default: this one, to compare settings via --this-env/--base-env).
 * Both gateways run as `bun src/main.ts` against one fake upstream (proxy-upstream.ts); each round
 * starts them fresh, gives each `--warmup` s of unmeasured load, and flips which side is loaded
 * first. Prints per-round req/s, the median, the
 * ratio this / base with the spread of the per-round ratios, the batch-size histogram per side and
 * the gateway's CPU per request (all its threads: a figure the machine's other load moves less than
 * req/s) and RSS after the load.
 */
import { parseArgs } from "node:util";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, benchToken, loadDistinct, median, startBenchUpstream, startTarget, type Target } from "./harness";

const { values } = parseArgs({
  options: {
    base: { type: "string" },
    rounds: { type: "string", default: "4" },
    secs: { type: "string", default: "5" },
    connections: { type: "string", default: "64" },
    warmup: { type: "string", default: "3" },
    off: { type: "boolean", default: false },
    "this-env": { type: "string", default: "" },
    "base-env": { type: "string", default: "" },
  },
});
const BASE = resolve(values.base ?? ROOT);
if (!existsSync(join(BASE, "src/main.ts")) || !existsSync(join(BASE, "node_modules"))) throw new Error(`${BASE} must be an installed checkout (npm install)`);
const rounds = Number(values.rounds), secs = Number(values.secs), connections = Number(values.connections), warmup = Number(values.warmup);
const parseEnv = (s: string) => Object.fromEntries(s.split(",").filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
type Side = "this" | "base";
const sides: Record<Side, { root: string; env: Record<string, string> }> = {
  this: { root: ROOT, env: parseEnv(values["this-env"]!) },
  base: { root: BASE, env: parseEnv(values["base-env"]!) },
};
const statsDir = mkdtempSync(join(tmpdir(), "svc-embmiss-"));
const preload = join(ROOT, "scripts/bench/embedding-batch-stats.ts");
const loadAvg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const gitRev = (dir: string) => Bun.spawnSync(["git", "-C", dir, "rev-parse", "--short", "HEAD"]).stdout.toString().trim() || "?";

interface Stats { batches: number; texts: number; hist: Record<string, number>; workers?: number; growing?: boolean }
const readStats = (f: string): Stats => (existsSync(f) ? (JSON.parse(readFileSync(f, "utf8")) as Stats) : { batches: 0, texts: 0, hist: {} });

const upstream = await startBenchUpstream();
const gwEnv = { SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url, SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench", SVC_RATE_LIMITS__ENABLED: "false", SVC_EMBEDDING__PROVIDER: "local" };
const headers = { "content-type": "application/json", authorization: `Bearer ${await benchToken()}` };
const uniqueBody = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "{unique}" }], max_tokens: 16 });

const rps: Record<string, number[]> = { "this-miss": [], "base-miss": [], "this-off": [], "base-off": [] };
const p50: Record<string, number[]> = { "this-miss": [], "base-miss": [], "this-off": [], "base-off": [] };
const hist: Record<Side, Record<string, number>> = { this: {}, base: {} };
const rssMiB: Record<Side, number[]> = { this: [], base: [] };
const cpuMsPerReq: Record<Side, number[]> = { this: [], base: [] };
const workersSeen: Record<Side, number> = { this: 1, base: 1 };
/** CPU seconds of every thread of `pid` so far (user + system, /proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}
const loads = [loadAvg()];
console.error(`this ${gitRev(ROOT)} ${JSON.stringify(sides.this.env)} vs base ${gitRev(BASE)} ${JSON.stringify(sides.base.env)}; ${connections} connections, ${secs} s per load`);
try {
  for (let r = 0; r < rounds; r++) {
    const order: Side[] = r % 2 === 0 ? ["this", "base"] : ["base", "this"];
    const gw = {} as Record<Side, { on: Target; off?: Target; stats: string }>;
    for (const side of order) {
      const stats = join(statsDir, `${side}-${r}.json`);
      const env = { ...gwEnv, ...sides[side].env };
      gw[side] = {
        on: await startTarget({ root: sides[side].root, env: { ...env, SVC_CACHE__ENABLED: "true", BUN_OPTIONS: `--preload ${preload}`, SVC_BENCH_BATCH_STATS: stats } }),
        off: values.off ? await startTarget({ root: sides[side].root, env: { ...env, SVC_CACHE__ENABLED: "false" } }) : undefined,
        stats,
      };
    }
    try {
      for (const side of order) {
        const url = gw[side].on.url;
        const until = performance.now() + 120_000;
        while ((await fetch(`${url}/ready`).then((x) => x.status, () => 0)) !== 200) {
          if (performance.now() > until) throw new Error(`${side}: /ready not 200 within 120 s`);
          await Bun.sleep(100);
        }
      }
      // unmeasured warm-up load: JIT, the index's first pages, and further model workers where they start
      // under load (their loading is not part of the measured window: warm up until their number holds)
      for (const side of order) {
        for (let i = 0, last = -1; i < 10; i++) {
          await loadDistinct(`${gw[side].on.url}/v1/chat/completions`, headers, uniqueBody, connections, warmup);
          await Bun.sleep(600);
          const st = readStats(gw[side].stats);
          const w = st.workers ?? 1;
          if (w === last && !st.growing) break;
          last = w;
        }
      }
      await Bun.sleep(600); // the preload rewrites its file every 500 ms: let it catch up with the warm-up
      for (const side of order) {
        const before = readStats(gw[side].stats);
        const cpu0 = cpuSeconds(gw[side].on.proc.pid);
        const d = await loadDistinct(`${gw[side].on.url}/v1/chat/completions`, headers, uniqueBody, connections, secs);
        if (d.non200 > 0) throw new Error(`${side}: ${d.non200} cache-enabled misses were not 200`);
        const cpu = cpuSeconds(gw[side].on.proc.pid) - cpu0; // includes the ≤ 64 requests in flight at the end
        cpuMsPerReq[side].push((cpu * 1000) / Math.max(1, d.total));
        await Bun.sleep(600); // the preload rewrites its file every 500 ms
        const after = readStats(gw[side].stats);
        workersSeen[side] = Math.max(workersSeen[side], after.workers ?? 1);
        for (const [k, v] of Object.entries(after.hist)) {
          const dv = v - (before.hist[k] ?? 0);
          if (dv > 0) hist[side][k] = (hist[side][k] ?? 0) + dv;
        }
        const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${gw[side].on.proc.pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
        rssMiB[side].push(rss);
        rps[`${side}-miss`]!.push(d.rps);
        p50[`${side}-miss`]!.push(d.p50Ms);
        console.error(`round ${r + 1} ${side}-miss ${d.rps.toFixed(0)} req/s p50 ${d.p50Ms.toFixed(1)} ms, RSS ${rss.toFixed(0)} MiB, gateway CPU ${cpuMsPerReq[side].at(-1)!.toFixed(2)} ms/request; ${after.batches - before.batches} model calls, mean ${((after.texts - before.texts) / Math.max(1, after.batches - before.batches)).toFixed(1)} texts; load ${loadAvg()}`);
      }
      if (values.off) {
        for (const side of order) {
          const d = await loadDistinct(`${gw[side].off!.url}/v1/chat/completions`, headers, uniqueBody, connections, secs);
          rps[`${side}-off`]!.push(d.rps);
          p50[`${side}-off`]!.push(d.p50Ms);
          console.error(`round ${r + 1} ${side}-off ${d.rps.toFixed(0)} req/s`);
        }
      }
    } finally {
      for (const side of order) {
        await gw[side].on.stop();
        await gw[side].off?.stop();
      }
    }
    loads.push(loadAvg());
  }
} finally {
  upstream.proc.kill();
  rmSync(statsDir, { recursive: true, force: true });
}

console.log(`this ${gitRev(ROOT)} ${JSON.stringify(sides.this.env)} vs base ${gitRev(BASE)} (${BASE}) ${JSON.stringify(sides.base.env)}; ${rounds} rounds × ${secs} s, ${connections} connections; ${navigator.hardwareConcurrency} cores, Bun ${Bun.version}; load average ${loads.join(" → ")}`);
console.log("");
console.log("| distinct questions | this req/s (p50 ms) | base req/s (p50 ms) | this / base | per-round ratios |");
console.log("|---|---|---|---|---|");
for (const kind of values.off ? ["miss", "off"] : ["miss"]) {
  const a = rps[`this-${kind}`]!, b = rps[`base-${kind}`]!;
  const per = a.map((x, i) => x / b[i]!);
  console.log(
    `| ${kind === "miss" ? "cache enabled (miss)" : "cache off"} | ${Math.round(median(a))} (${median(p50[`this-${kind}`]!).toFixed(1)}) | ${Math.round(median(b))} (${median(p50[`base-${kind}`]!).toFixed(1)}) | ${(median(a) / median(b)).toFixed(2)} | ${Math.min(...per).toFixed(2)}–${Math.max(...per).toFixed(2)} |`,
  );
}
console.log(`per round req/s, cache enabled: this ${rps["this-miss"]!.map((x) => x.toFixed(0)).join(", ")}; base ${rps["base-miss"]!.map((x) => x.toFixed(0)).join(", ")}`);
const fmtHist = (h: Record<string, number>) => {
  const e = Object.entries(h).map(([k, v]) => [Number(k), v] as const).sort((x, y) => x[0] - y[0]);
  const calls = e.reduce((s, [, v]) => s + v, 0), texts = e.reduce((s, [k, v]) => s + k * v, 0);
  const buckets = [[1, 1], [2, 4], [5, 16], [17, 32], [33, 64]] as const;
  return `${calls} model calls, mean ${(texts / Math.max(1, calls)).toFixed(1)} texts; calls by size ${buckets.map(([lo, hi]) => `${lo === hi ? lo : `${lo}–${hi}`}: ${e.filter(([k]) => k >= lo && k <= hi).reduce((s, [, v]) => s + v, 0)}`).join(", ")}`;
};
console.log(`gateway CPU per cache-enabled miss (all threads, median ms): this ${median(cpuMsPerReq.this).toFixed(2)}, base ${median(cpuMsPerReq.base).toFixed(2)}`);
console.log(`gateway RSS after the cache-enabled load (median MiB): this ${median(rssMiB.this).toFixed(0)}, base ${median(rssMiB.base).toFixed(0)}; model workers loaded: this ${workersSeen.this}, base ${workersSeen.base}`);
console.log(`model calls under the cache-enabled load: this — ${fmtHist(hist.this)}; base — ${fmtHist(hist.base)}`);
