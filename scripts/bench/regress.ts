#!/usr/bin/env bun
/**
 * Regression guard (BENCHMARKS.md opens with its latest table): this checkout against another one,
 * interleaved round by round so both see the same machine load, one ratio per figure.
 *
 *   bun scripts/bench/regress.ts --base DIR [--rounds 3] [--secs 4] [--n 400] [--only hitP50,hitRps,...]
 *
 * DIR is another checkout of svc, already installed (`npm install`); nothing is built: both run as
 * `bun src/main.ts` from their own directory, against one fake upstream (proxy-upstream.ts), every
 * process on 127.0.0.1. Per round (the order of the two flips every round):
 *  - start-up: spawn → first 200 on /health on a fresh data dir, then again on that existing dir;
 *    wall time and CPU of all the process's threads at that moment (/proc/<pid>/task/<tid>/schedstat);
 *  - proxy, cache off: 1-connection added p50 (paired with a direct call to the upstream in the same
 *    round, proxy-client.ts) and 64-connection req/s (wrk, else autocannon);
 *  - SSE: time to first byte added, p50;
 *  - cache: exact hit p50 and exact hits/s at 64 connections; the cache-enabled miss (every request a
 *    different question: embedding + lookup + upstream + store), 1-connection added p50 and req/s at
 *    64 connections (proxy-load.ts).
 * Prints the medians over the rounds, the ratio this / base, and the spread of the per-round ratios
 * (min–max): a ratio inside the spread is the bench's own noise, not a change.
 *
 * --only: a comma-separated list of figure keys (startFresh, cpuFresh, startExisting, cpuExisting,
 * missAdded, missRps, sseAdded, hitP50, hitRps, cmissAdded, cmissRps): only the benches those
 * figures need run (e.g. `--only hitP50,hitRps` for one change to the exact-hit path), the rest of
 * the table is left out.
 */
import { parseArgs } from "node:util";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BENCH_JWT_SECRET, ROOT, benchToken, freePort, interleaved, load, loadDistinct, median, startBenchUpstream, startTarget, threadCpuMs, waitReady, type InterleavedSpec, type Target } from "./harness";

const { values } = parseArgs({
  options: { base: { type: "string" }, rounds: { type: "string", default: "3" }, secs: { type: "string", default: "4" }, n: { type: "string", default: "400" }, only: { type: "string" } },
});
if (!values.base) {
  console.error("usage: bun scripts/bench/regress.ts --base DIR [--rounds 3] [--secs 4] [--n 400]");
  process.exit(2);
}
const BASE = resolve(values.base);
for (const f of ["src/main.ts", "node_modules"]) if (!existsSync(join(BASE, f))) throw new Error(`${BASE}/${f} is missing: the base checkout must be installed (npm install)`);
const rounds = Number(values.rounds), secs = Number(values.secs), n = Number(values.n);
const bun = process.execPath;
type Side = "this" | "base";
const rootOf: Record<Side, string> = { this: ROOT, base: BASE };
const gitRev = (dir: string) => Bun.spawnSync(["git", "-C", dir, "rev-parse", "--short", "HEAD"]).stdout.toString().trim() || "?";

/** One start of `side`'s gateway on `dataDir`: ms to the first /health 200 and CPU s at that moment. */
async function startOnce(side: Side, dataDir: string): Promise<{ ms: number; cpu: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const proc = Bun.spawn([bun, "src/main.ts"], {
    cwd: rootOf[side],
    env: { ...process.env, SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: String(port), SVC_STORAGE__PATH: join(dataDir, "svc.db"), SVC_AUTH__JWT_SECRET: BENCH_JWT_SECRET, SVC_SERVER__REQUEST_LOG: "false" },
    stdout: "ignore",
    stderr: "ignore",
  });
  try {
    for (;;) {
      if (performance.now() - t0 > 30_000 || proc.exitCode !== null) throw new Error(`${side} gateway did not start`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status === 200, () => false);
      if (ok) {
        const ms = performance.now() - t0;
        return { ms, cpu: threadCpuMs(proc.pid).all / 1000 };
      }
      await Bun.sleep(1);
    }
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

// per figure and side: one value per round
const figures: Array<{ key: string; label: string; unit: string; higherIsBetter: boolean }> = [
  { key: "startFresh", label: "start to first /health 200, fresh data dir", unit: "ms", higherIsBetter: false },
  { key: "cpuFresh", label: "CPU (all threads) to that point, fresh", unit: "s", higherIsBetter: false },
  { key: "startExisting", label: "start to first /health 200, existing data dir", unit: "ms", higherIsBetter: false },
  { key: "cpuExisting", label: "CPU (all threads) to that point, existing", unit: "s", higherIsBetter: false },
  { key: "missAdded", label: "proxy miss added p50, 1 connection, cache off", unit: "ms", higherIsBetter: false },
  { key: "missRps", label: "proxy req/s, 64 connections, cache off", unit: "req/s", higherIsBetter: true },
  { key: "sseAdded", label: "SSE time to first byte added, p50", unit: "ms", higherIsBetter: false },
  { key: "hitP50", label: "exact cache hit p50, 1 connection", unit: "ms", higherIsBetter: false },
  { key: "hitRps", label: "exact cache hits/s, 64 connections", unit: "req/s", higherIsBetter: true },
  { key: "cmissAdded", label: "cache-enabled miss added p50, 1 connection, distinct questions", unit: "ms", higherIsBetter: false },
  { key: "cmissRps", label: "cache-enabled miss req/s, 64 connections, distinct questions", unit: "req/s", higherIsBetter: true },
];
const only = values.only ? new Set(values.only.split(",").map((k) => k.trim())) : undefined;
for (const k of only ?? []) if (!figures.some((f) => f.key === k)) throw new Error(`--only: unknown figure ${k} (one of ${figures.map((f) => f.key).join(", ")})`);
/** whether any of these figures is measured */
const want = (...keys: string[]) => !only || keys.some((k) => only.has(k));
const got: Record<string, Record<Side, number[]>> = Object.fromEntries(figures.map((f) => [f.key, { this: [], base: [] }]));
const put = (key: string, side: Side, v: number) => got[key]![side].push(v);

const upstream = await startBenchUpstream();
const gwEnv = {
  SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url,
  SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench",
  SVC_RATE_LIMITS__ENABLED: "false",
  SVC_EMBEDDING__PROVIDER: "local",
};
const token = await benchToken();
const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });
const uniqueBody = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "{unique}" }], max_tokens: 16 });
const streamBody = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], stream: true });
const loadAvg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const loads: string[] = [loadAvg()];

async function client(o: Omit<InterleavedSpec, "warmup" | "reference">) {
  const r = await interleaved({ warmup: 100, reference: "direct", ...o });
  for (const [k, v] of Object.entries(r)) if (v.bad > 0) throw new Error(`${k}: ${v.bad} answers were not 200`);
  return r;
}

for (let r = 0; r < rounds; r++) {
  const order: Side[] = r % 2 === 0 ? ["this", "base"] : ["base", "this"];
  console.error(`round ${r + 1}/${rounds} (${order.join(" first, ")}), load ${loadAvg()}`);
  // ---- start-up ----
  if (want("startFresh", "cpuFresh", "startExisting", "cpuExisting")) for (const side of order) {
    const dir = mkdtempSync(join(tmpdir(), "svc-regress-"));
    try {
      const fresh = await startOnce(side, dir);
      const existing = await startOnce(side, dir);
      put("startFresh", side, fresh.ms);
      put("cpuFresh", side, fresh.cpu);
      put("startExisting", side, existing.ms);
      put("cpuExisting", side, existing.cpu);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // ---- gateways for the request benches: cache off and cache on, per side ----
  const needOff = want("missAdded", "missRps", "sseAdded");
  const needOn = want("hitP50", "hitRps", "cmissAdded", "cmissRps");
  const gw: Record<Side, { off?: Target; on?: Target }> = {} as never;
  for (const side of order) {
    gw[side] = {
      off: needOff ? await startTarget({ env: { ...gwEnv, SVC_CACHE__ENABLED: "false" }, root: rootOf[side] }) : undefined,
      on: needOn ? await startTarget({ env: { ...gwEnv, SVC_CACHE__ENABLED: "true" }, root: rootOf[side] }) : undefined,
    };
  }
  const started = (side: Side) => [gw[side].off, gw[side].on].filter((t): t is Target => t !== undefined);
  try {
    // measured once every gateway is ready: one still building in the background (listen-first) would take CPU from the others
    for (const side of order) for (const t of started(side)) if (!(await waitReady(t.url))) console.error(`${side}: ${t.url}/ready not 200 within 60 s; measuring anyway`);
    for (const side of order) {
      if (!gw[side].on) continue;
      const url = gw[side].on!.url;
      for (let i = 0; i < 900 && (await fetch(`${url}/ready`).then((x) => x.status, () => 0)) !== 200; i++) await Bun.sleep(100);
    }
    const chat = (t: Target | undefined) => `${t!.url}/v1/chat/completions`;
    const direct = { name: "direct", url: `${upstream.url}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: "Bearer sk-bench" } };
    const targets = [
      direct,
      ...order.flatMap((side) => [
        ...(want("missAdded") ? [{ name: `${side}-off`, url: chat(gw[side].off), headers }] : []),
        ...(want("hitP50") ? [{ name: `${side}-hit`, url: chat(gw[side].on), headers }] : []),
        ...(want("cmissAdded") ? [{ name: `${side}-cmiss`, url: chat(gw[side].on), headers, unique: true, body: uniqueBody }] : []),
      ]),
    ];
    if (targets.length > 1) {
      const one = await client({ targets, body, n });
      for (const side of order) {
        if (want("missAdded")) put("missAdded", side, one[`${side}-off`]!.addedP50us / 1000);
        if (want("hitP50")) put("hitP50", side, one[`${side}-hit`]!.p50us / 1000);
        if (want("cmissAdded")) put("cmissAdded", side, one[`${side}-cmiss`]!.addedP50us / 1000);
      }
    }
    if (want("sseAdded")) {
      const sse = await client({ targets: [direct, ...order.map((side) => ({ name: `${side}-off`, url: chat(gw[side].off), headers }))], body: streamBody, ttfb: true, n });
      for (const side of order) put("sseAdded", side, sse[`${side}-off`]!.addedP50us / 1000);
    }
    if (want("missRps")) for (const side of order) put("missRps", side, (await load({ url: chat(gw[side].off), method: "POST", headers, body, connections: 64, durationSecs: secs })).requestsPerSec);
    if (want("hitRps")) for (const side of order) put("hitRps", side, (await load({ url: chat(gw[side].on), method: "POST", headers, body, connections: 64, durationSecs: secs })).requestsPerSec);
    if (want("cmissRps"))
      for (const side of order) {
        const d = await loadDistinct(chat(gw[side].on), headers, uniqueBody, 64, secs);
        if (d.non200 > 0) throw new Error(`${side}: ${d.non200} cache-enabled misses were not 200`);
        put("cmissRps", side, d.rps);
      }
  } finally {
    for (const side of order) for (const t of started(side)) await t.stop();
  }
  loads.push(loadAvg());
}
upstream.proc.kill();

const fmt = (v: number, unit: string) => (unit === "req/s" ? Math.round(v).toLocaleString("en-US") : unit === "s" ? v.toFixed(3) : v.toFixed(3));
console.log(`this ${gitRev(ROOT)} vs base ${gitRev(BASE)} (${BASE}); ${rounds} rounds, ${secs} s loads, ${n} paired samples; ${navigator.hardwareConcurrency} cores, Bun ${Bun.version}; load average ${loads.join(" → ")}`);
console.log("");
console.log("| figure | this | base | this / base | per-round ratios (noise) | verdict |");
console.log("|---|---|---|---|---|---|");
for (const f of figures) {
  if (!want(f.key)) continue;
  const a = got[f.key]!.this, b = got[f.key]!.base;
  const ratio = median(a) / median(b);
  const per = a.map((x, i) => x / b[i]!);
  const lo = Math.min(...per), hi = Math.max(...per);
  const better = f.higherIsBetter ? lo > 1 : hi < 1;
  const worse = f.higherIsBetter ? hi < 1 : lo > 1;
  const verdict = better ? "better" : worse ? "**worse**" : "within noise";
  console.log(`| ${f.label} | ${fmt(median(a), f.unit)} ${f.unit} | ${fmt(median(b), f.unit)} ${f.unit} | ${ratio.toFixed(2)} | ${lo.toFixed(2)}–${hi.toFixed(2)} | ${verdict} |`);
}
process.exit(0);
