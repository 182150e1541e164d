#!/usr/bin/env bun
/**
 * Reusable load-test harness. The load generator runs as a separate process on loopback
 * (127.0.0.1), never inside the gateway's event loop:
 *   - wrk (C, microsecond latency percentiles) when it is on PATH (`apt-get install -y wrk`);
 *   - otherwise autocannon (npm devDependency, run with `node`; its percentiles are whole ms).
 * Every result says which tool produced it (`tool`).
 *
 * Library:
 *   const gw = await startTarget({ binary: "dist/svc" });      // or omit binary: `bun src/main.ts`
 *   const r = await load({ url: gw.url + "/health", connections: 64, durationSecs: 10 });
 *   // r = { requestsPerSec, p50Ms, p99Ms, total, non2xx, errors }
 *   await gw.stop();
 *
 * CLI:
 *   bun scripts/bench/harness.ts --url http://127.0.0.1:8080/health [-c 64] [-d 10] [-m GET] [-H 'k: v'] [--body '{...}']
 *   bun scripts/bench/harness.ts --start [--binary dist/svc] --path /health [-c 64] [-d 10] [--token-tenant T --token-perms P1,P2] [--rate-limits]
 * A gateway started with --start runs without rate limits (a load test would otherwise measure the
 * limiter's 429s) unless --rate-limits is given; the report says which (`rateLimits`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir, cpus } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { readdirSync, readFileSync } from "node:fs";

export const ROOT = resolve(import.meta.dir, "../..");
export const BENCH_JWT_SECRET = "bench-secret-bench-secret-bench-secret";

/** A bearer token the bench gateways accept (svc's own TokenService, BENCH_JWT_SECRET): tenant "bench" by default, sub = the tenant unless given. */
export async function benchToken(o: { tenantId?: string; sub?: string; permissions?: string[] } = {}): Promise<string> {
  const { TokenService } = await import("../../src/core/auth");
  return new TokenService(BENCH_JWT_SECRET).sign({ tenantId: o.tenantId ?? "bench", sub: o.sub, permissions: o.permissions ?? [] });
}

/**
 * A gateway's admin API as a workspace admin (tenant "bench"): what the identity benches make their
 * credentials with — a user acting with the viewer role, and API keys of new teams.
 */
export async function benchAdmin(url: string) {
  const auth = { authorization: `Bearer ${await benchToken({ sub: "bench-admin", permissions: ["WorkspaceAdmin"] })}` };
  const post = async (path: string, json: unknown): Promise<any> => {
    const r = await fetch(url + path, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(json) });
    if (r.status >= 300) throw new Error(`${url}${path}: ${r.status} ${await r.text()}`);
    return r.json();
  };
  return {
    post,
    /** a token acting for a new user (sub user:<id>) who holds the viewer role */
    async userToken(): Promise<string> {
      const user = await post("/api/v1/users", { email: "bench@example.com" });
      const roles = (await fetch(`${url}/api/v1/roles?name=viewer`, { headers: auth }).then((r) => r.json())) as any;
      await post(`/api/v1/users/${user.id}/roles`, { roleId: roles.roles[0].id });
      return benchToken({ sub: `user:${user.id}` });
    },
    /** an API key named `name` of a new team (`team`: the team's fields) */
    async teamKey(name: string, team: Record<string, unknown>): Promise<string> {
      const t = await post("/api/v1/teams", team);
      return (await post("/api/v1/virtual-keys", { name, teamId: t.id })).key as string;
    },
  };
}

export async function freePort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const p = s.port!;
  s.stop(true);
  return p;
}

/**
 * The benches' fake OpenAI-compatible upstream (scripts/bench/proxy-upstream.ts) in its own process
 * on a free port; returns once it answers.
 */
export async function startBenchUpstream(): Promise<{ url: string; proc: ReturnType<typeof Bun.spawn> }> {
  const port = await freePort();
  const proc = Bun.spawn([process.execPath, resolve(ROOT, "scripts/bench/proxy-upstream.ts"), String(port)], { cwd: ROOT, stdout: "ignore", stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 400 && !(await fetch(url, { method: "POST", body: "{}" }).then(() => true, () => false)); i++) await Bun.sleep(25);
  return { url, proc };
}

/** Poll GET /health until 200; returns ms from `since` to the first 200. */
export async function waitHealthy(url: string, proc?: { exitCode: number | null }, timeoutMs = 20_000, since = performance.now()): Promise<number> {
  const deadline = since + timeoutMs;
  while (performance.now() < deadline) {
    if (proc && proc.exitCode !== null) throw new Error(`process exited with ${proc.exitCode}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) {
        await r.arrayBuffer();
        return performance.now() - since;
      }
    } catch {}
    await Bun.sleep(1);
  }
  throw new Error(`${url} did not become healthy within ${timeoutMs} ms`);
}

/**
 * Poll GET /ready until 200 (the app built and its checks passed: a gateway that listens first
 * answers /health while it still builds, loads models and warms caches in the background, which
 * would share the CPU with whatever is measured next). False when it did not within `timeoutMs`.
 */
export async function waitReady(url: string, timeoutMs = 60_000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const ok = await fetch(`${url}/ready`).then(
      async (r) => (await r.arrayBuffer(), r.status === 200),
      () => false,
    );
    if (ok) return true;
    await Bun.sleep(20);
  }
  return false;
}

export interface Target {
  url: string;
  port: number;
  dir: string;
  proc: ReturnType<typeof Bun.spawn>;
  /** ms from spawn to the first 200 on /health */
  startMs: number;
  stop(): Promise<number>;
}

/**
 * Start a gateway (the built binary or `bun src/main.ts`) on a free loopback port with a temp DB.
 * `root`: another checkout's `src/main.ts` (an older build, to compare side by side).
 * `bunArgs`: more runtime flags before the script (e.g. the CPU profiler's); `stderr`: "pipe"
 * (default) or "inherit"; `readyMs`: how long the first /health 200 may take (default 30 s).
 */
export async function startTarget(
  opts: { binary?: string; env?: Record<string, string>; root?: string; bunArgs?: string[]; stderr?: "pipe" | "inherit"; readyMs?: number } = {},
): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-"));
  const port = await freePort();
  const root = opts.root ?? ROOT;
  const cmd = opts.binary ? [resolve(ROOT, opts.binary)] : [process.execPath, ...(opts.bunArgs ?? []), "--max-http-header-size=262144", "src/main.ts"];
  const t0 = performance.now();
  const proc = Bun.spawn(cmd, {
    cwd: opts.binary ? dir : root,
    env: {
      ...process.env,
      SVC_SERVER__HOST: "127.0.0.1",
      SVC_SERVER__PORT: String(port),
      SVC_STORAGE__PATH: join(dir, "svc.db"),
      SVC_AUTH__JWT_SECRET: BENCH_JWT_SECRET,
      SVC_SERVER__REQUEST_LOG: "false",
      ...opts.env,
    },
    stdout: "ignore",
    stderr: opts.stderr ?? "pipe",
  });
  const url = `http://127.0.0.1:${port}`;
  const startMs = await waitHealthy(url, proc, opts.readyMs ?? 30_000, t0);
  return {
    url,
    port,
    dir,
    proc,
    startMs,
    async stop() {
      proc.kill("SIGTERM");
      const code = await proc.exited;
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}

/** One target of an interleaved run: its answers' latency, and "added" paired with the reference of each round (µs). */
export interface InterleavedSample {
  p50us: number;
  p99us: number;
  addedP50us: number;
  addedP99us: number;
  /** answers that were not 200 */
  bad: number;
  cacheStatus: Record<string, number>;
}

export interface InterleavedSpec {
  targets: Array<{ name: string; url: string; headers: Record<string, string>; unique?: boolean; body?: string }>;
  body: string;
  /** the target each round's "added" is measured against */
  reference: string;
  n: number;
  warmup: number;
  /** time to the first body chunk of a streamed answer instead of the whole body */
  ttfb?: boolean;
  /** idle time (ms) before each request */
  gapMs?: number;
}

/**
 * Requests to several targets interleaved request by request, from one sequential keep-alive client
 * in its own process (proxy-client.ts), so every target is measured under the same momentary load.
 */
export async function interleaved(spec: InterleavedSpec): Promise<Record<string, InterleavedSample>> {
  const p = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/proxy-client.ts"), JSON.stringify(spec)], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  if (code !== 0) throw new Error(`proxy-client.ts exited ${code}`);
  return JSON.parse(out) as Record<string, InterleavedSample>;
}

export interface LoadOptions {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  durationSecs?: number;
  /** HTTP pipelining factor (default 1: one request in flight per connection) */
  pipelining?: number;
  /** default: wrk if installed, else autocannon */
  tool?: "wrk" | "autocannon";
}

export interface LoadResult {
  tool: "wrk" | "autocannon";
  connections: number;
  durationSecs: number;
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  non2xx: number;
  errors: number;
}

export async function load(o: LoadOptions): Promise<LoadResult> {
  const tool = o.tool ?? (Bun.which("wrk") ? "wrk" : "autocannon");
  return tool === "wrk" ? loadWrk(o) : loadAutocannon(o);
}

export interface DistinctResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  non200: number;
  cacheStatus: Record<string, number>;
}

/**
 * Closed loop of distinct questions (proxy-load.ts, its own process): `body` holds "{unique}",
 * replaced by a new question every request — the cache-enabled miss at `connections` connections.
 */
export async function loadDistinct(url: string, headers: Record<string, string>, body: string, connections = 64, secs = 8): Promise<DistinctResult> {
  const p = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/proxy-load.ts"), JSON.stringify({ url, headers, body, connections, secs })], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  if (code !== 0) throw new Error(`proxy-load.ts exited ${code}`);
  return JSON.parse(out) as DistinctResult;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000 };
const toMs = (v: string, unit: string) => Number(v) * UNIT_MS[unit]!;

/** wrk with a generated Lua script for method, headers and body; parses --latency output. */
async function loadWrk(o: LoadOptions): Promise<LoadResult> {
  const connections = o.connections ?? 64;
  const durationSecs = o.durationSecs ?? 10;
  const dir = mkdtempSync(join(tmpdir(), "svc-wrk-"));
  const script = join(dir, "req.lua");
  const lua = [`wrk.method = ${JSON.stringify(o.method ?? "GET")}`];
  for (const [k, v] of Object.entries(o.headers ?? {})) lua.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  if (o.body !== undefined) lua.push(`wrk.body = ${JSON.stringify(o.body)}`);
  await Bun.write(script, lua.join("\n") + "\n");
  const threads = Math.max(1, Math.min(connections, navigator.hardwareConcurrency));
  const p = Bun.spawn(["wrk", `-t${threads}`, `-c${connections}`, `-d${durationSecs}s`, "--latency", "-s", script, o.url], { stdout: "pipe", stderr: "pipe" });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`wrk failed (${code}): ${await new Response(p.stderr).text()}`);
  const pct = (q: string) => {
    const m = new RegExp(`^\\s*${q}%\\s+([\\d.]+)(us|ms|s)\\s*$`, "m").exec(out);
    if (!m) throw new Error(`cannot parse wrk p${q} from:\n${out}`);
    return toMs(m[1]!, m[2]!);
  };
  const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    tool: "wrk",
    connections,
    durationSecs,
    requestsPerSec: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50Ms: pct("50"),
    p99Ms: pct("99"),
    total,
    non2xx,
    errors: sock ? sock.slice(1).reduce((s, x) => s + Number(x), 0) : 0,
  };
}

/** Run autocannon in a separate node process against `url` and parse its JSON report. */
async function loadAutocannon(o: LoadOptions): Promise<LoadResult> {
  const connections = o.connections ?? 64;
  const durationSecs = o.durationSecs ?? 10;
  const args = [join(ROOT, "node_modules/autocannon/autocannon.js"), "--json", "-c", String(connections), "-d", String(durationSecs), "-p", String(o.pipelining ?? 1), "-m", o.method ?? "GET"];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push("-H", `${k}=${v}`);
  if (o.body !== undefined) args.push("-b", o.body);
  args.push(o.url);
  const node = Bun.which("node");
  if (!node) throw new Error("node is required to run autocannon");
  const p = Bun.spawn([node, ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  if (code !== 0) throw new Error(`autocannon failed (${code}): ${await new Response(p.stderr).text()}`);
  const j = JSON.parse(out);
  return {
    tool: "autocannon",
    connections,
    durationSecs,
    requestsPerSec: j.requests.average,
    p50Ms: j.latency.p50,
    p99Ms: j.latency.p99,
    total: j.requests.total,
    non2xx: j.non2xx,
    errors: j.errors,
  };
}

/** Median of ms from spawn to first 200 on /health over `runs` starts of the binary. */
export async function coldStarts(binary: string, runs = 7): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = await startTarget({ binary });
    out.push(t.startMs);
    await t.stop();
  }
  return out;
}

/**
 * On-CPU time so far (ms, the first field of /proc/<pid>/task/<tid>/schedstat) of every live thread of
 * `pid`, of its main thread, and per thread name (/proc/…/comm: Bun's "Worker" threads, "JITWorker",
 * "HeapHelper", …; the main thread is under "main").
 */
export function threadCpuMs(pid: number): { all: number; main: number; byName: Record<string, number> } {
  let all = 0;
  let main = 0;
  const byName: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      all += ns;
      const name = tid === String(pid) ? "main" : readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      byName[name] = (byName[name] ?? 0) + ns / 1e6;
      if (tid === String(pid)) main = ns;
    } catch {}
  }
  return { all: all / 1e6, main: main / 1e6, byName };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export function machine(): { nproc: number; cpu: string; bun: string } {
  let cpu = cpus()[0]?.model ?? "unknown";
  try {
    cpu = /model name\s*:\s*(.+)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? cpu;
  } catch {}
  return { nproc: navigator.hardwareConcurrency, cpu, bun: Bun.version };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      url: { type: "string" },
      start: { type: "boolean" },
      binary: { type: "string" },
      path: { type: "string", default: "/health" },
      c: { type: "string", default: "64" },
      d: { type: "string", default: "10" },
      m: { type: "string", default: "GET" },
      H: { type: "string", multiple: true },
      body: { type: "string" },
      "token-tenant": { type: "string" },
      "token-perms": { type: "string" },
      tool: { type: "string" },
      "rate-limits": { type: "boolean", default: false },
    },
  });
  const headers: Record<string, string> = {};
  for (const h of values.H ?? []) {
    const i = h.indexOf(":");
    headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
  }
  let target: Target | undefined;
  let url = values.url;
  if (values.start) {
    target = await startTarget({ binary: values.binary, env: values["rate-limits"] ? {} : { SVC_RATE_LIMITS__ENABLED: "false" } });
    url = target.url + values.path;
  }
  if (!url) throw new Error("--url or --start is required");
  if (values["token-tenant"]) {
    headers.authorization = `Bearer ${await benchToken({ tenantId: values["token-tenant"], permissions: (values["token-perms"] ?? "").split(",").filter(Boolean) })}`;
  }
  try {
    const r = await load({ url, method: values.m, headers, body: values.body, connections: Number(values.c), durationSecs: Number(values.d), tool: values.tool as LoadOptions["tool"] });
    console.log(JSON.stringify({ machine: machine(), url, ...(target ? { rateLimits: values["rate-limits"] } : {}), ...r }, null, 2));
  } finally {
    await target?.stop();
  }
}
