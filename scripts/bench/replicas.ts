#!/usr/bin/env bun
/**
 * Replicas on one PostgreSQL and one Redis (issue 24), every server its own process on 127.0.0.1
 * (the run's throwaway PostgreSQL from test/helpers/postgres.ts, a throwaway redis-server from
 * test/helpers/redis.ts, the benches' fake upstream, `bun src/main.ts` replicas each with its own
 * data directory), the load generator its own process too:
 *  1. 64-connection throughput of the proxy miss path (cache off) through 1 replica, then through
 *     3 replicas on the same database and Redis, connection i sending to replica i mod N (a
 *     round-robin spread of connections, no balancer process in the way). Rate limits and team
 *     budgets are on and shared in Redis: every request uses the next of `tenants` API keys (each
 *     tenant on the enterprise tier, each key in a team with a budget), so nothing is refused and
 *     each request pays the limiter's and the budget's round trips;
 *  2. PostgreSQL, 1 replica without Redis (in-process limiter and budget) vs 1 with Redis: the same
 *     workload on two replicas of their own schemas, interleaved request by request from one
 *     connection (paired: the added cost is the median of per-pair differences), then each at 64
 *     connections;
 *  3. cross-replica invalidation delay: an API key revoked through replica A (its DELETE answered at
 *     t0) while B and C, which had verified and memoised the key, are polled back to back until
 *     they answer 401; the delay is from t0 to the sending of the first request that saw it;
 *  4. cache follow delay (2 replicas, cache on, a bag-of-words embedder served by this process):
 *     a new question answered through A (stored), then asked through B at once, first a variant
 *     (semantic: B's index must have the entry), then the same text (exact), and the delay B itself
 *     measured from A's stream append to the entry being in its index (its
 *     svc_cache_replica_change_delay_seconds sum and count read before and after each event).
 *
 *   bun scripts/bench/replicas.ts [--secs 8] [--n 2000] [--events 100] [--tenants 200]
 */
import { parseArgs } from "node:util";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { BENCH_JWT_SECRET, ROOT, freePort, machine, median, startBenchUpstream, waitHealthy } from "./harness";
import { TestRedis } from "../../test/helpers/redis";
import { dropSchema, freshSchema } from "../../test/helpers/postgres";
import { TEST_SSO_SECRET_KEY } from "../../test/helpers/pg-gateway";
import { TokenService } from "../../src/core/auth";
import { embeddingsAnswer } from "../../test/fake-upstream/bag-of-words";

const pct = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

// ------------------------------------------------------------------ load generator (its own process)

interface LoadArgs {
  mode: "load" | "paired";
  urls: string[];
  /** the API keys each url's requests take in turn (replicas of one database: the same list) */
  keys: string[][];
  body: string;
  connections?: number;
  secs?: number;
  n?: number;
}

async function loadMain(o: LoadArgs) {
  const next = o.urls.map(() => 0);
  const abort = new AbortController();
  const send = async (j: number) => {
    const keys = o.keys[j]!;
    const t = performance.now();
    const r = await fetch(`${o.urls[j]}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${keys[next[j]!++ % keys.length]}`, "content-type": "application/json" }, body: o.body, signal: abort.signal });
    await r.arrayBuffer();
    return { ms: performance.now() - t, status: r.status };
  };
  if (o.mode === "paired") {
    // one connection per target, interleaved request by request, the order alternating
    const lat: number[][] = o.urls.map(() => []);
    const diff: number[] = [];
    const statuses: Record<string, number> = {};
    for (let i = 0; i < 200 + o.n!; i++) {
      const order = i % 2 ? [1, 0] : [0, 1];
      const got: number[] = [];
      for (const j of order) {
        const r = await send(j);
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        got[j] = r.ms;
      }
      if (i < 200) continue; // warm-up
      lat[0]!.push(got[0]!);
      lat[1]!.push(got[1]!);
      diff.push(got[1]! - got[0]!);
    }
    console.log(JSON.stringify({ p50: lat.map((l) => pct(l, 50)), p99: lat.map((l) => pct(l, 99)), diffP50: pct(diff, 50), diffP99: pct(diff, 99), statuses }));
    return;
  }
  const lat: number[] = [];
  const statuses: Record<string, number> = {};
  let measuring = false;
  let stop = false;
  let inFlight = 0;
  const loop = async (j: number) => {
    while (!stop) {
      try {
        inFlight++;
        const r = await send(j).finally(() => inFlight--);
        if (!measuring) continue;
        lat.push(r.ms);
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      } catch {
        if (measuring) statuses.error = (statuses.error ?? 0) + 1;
        if (stop) return;
      }
    }
  };
  const loops = Array.from({ length: o.connections! }, (_, i) => loop(i % o.urls.length));
  await Bun.sleep(1_000);
  measuring = true;
  const t0 = performance.now();
  await Bun.sleep(o.secs! * 1000);
  measuring = false;
  const elapsed = (performance.now() - t0) / 1000;
  stop = true;
  // what is still unanswered 2 s after the window is abandoned (counted)
  let unanswered = 0;
  const grace = setTimeout(() => {
    unanswered = inFlight;
    abort.abort();
  }, 2_000);
  await Promise.all(loops);
  clearTimeout(grace);
  // answered requests per second that were served (a refusal is cheaper than a served request: not counted)
  console.log(JSON.stringify({ rps: (statuses["200"] ?? 0) / elapsed, p50: pct(lat, 50), p99: pct(lat, 99), max: Math.max(...lat), statuses, unanswered }));
}

async function runLoad<T>(o: LoadArgs): Promise<T> {
  const p = Bun.spawn([process.execPath, import.meta.path, "--load", JSON.stringify(o)], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  if (code !== 0) throw new Error(`load generator exited ${code}`);
  return JSON.parse(out) as T;
}

// ------------------------------------------------------------------ servers

interface Replica {
  url: string;
  proc: ReturnType<typeof Bun.spawn>;
}

/** the replicas' data directories (made by the bench process only: the load generator runs this file too) */
let workDir: string | undefined;
const work = () => (workDir ??= mkdtempSync(join(tmpdir(), "svc-bench-replicas-")));
const procs: Array<ReturnType<typeof Bun.spawn>> = [];
let replicaNo = 0;

/** a replica (`bun src/main.ts`) on `db`, with its own data directory; ready once /ready holds (redis included when set) */
async function replica(env: Record<string, string>): Promise<Replica> {
  const dir = join(work(), `replica-${replicaNo++}`);
  mkdirSync(dir);
  const port = await freePort();
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_")));
  const proc = Bun.spawn([process.execPath, "--max-http-header-size=262144", "src/main.ts"], {
    cwd: ROOT,
    env: { ...clean, SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: String(port), SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: BENCH_JWT_SECRET, SVC_SERVER__REQUEST_LOG: "false", SVC_METRICS__RENDER_INTERVAL_MS: "0", ...env },
    stdout: "ignore",
    stderr: "inherit",
  });
  procs.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, proc, 90_000);
  const deadline = performance.now() + 60_000;
  while ((await fetch(`${url}/ready`)).status !== 200) {
    if (performance.now() > deadline) throw new Error(`replica ${url} not ready: ${await (await fetch(`${url}/ready`)).text()}`);
    await Bun.sleep(50);
  }
  return { url, proc };
}

async function stopReplica(r: Replica) {
  const t0 = performance.now();
  r.proc.kill("SIGTERM");
  await r.proc.exited;
  progress(`replica ${r.url} stopped in ${(performance.now() - t0).toFixed(0)} ms`);
}

const tokens = new TokenService(BENCH_JWT_SECRET);
const adminOf = (tenantId: string) => tokens.sign({ tenantId, sub: "admin", permissions: ["WorkspaceAdmin"] });

async function call(url: string, token: string, method: string, path: string, json?: unknown): Promise<any> {
  const t0 = performance.now();
  const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { "content-type": "application/json" }) }, body: json === undefined ? undefined : JSON.stringify(json) });
  const body = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(body)}`);
  if (performance.now() - t0 > 500) progress(`slow: ${method} ${path} took ${(performance.now() - t0).toFixed(0)} ms`);
  return body;
}

/**
 * `n` tenants on the enterprise tier, each with an API key in a team with a (large) monthly budget:
 * their keys, and `drain(url)`: the time until a replica has written its queued usage records (a
 * team's spend endpoint writes them all before it reads).
 */
async function tenantsWithKeys(url: string, n: number, label: string): Promise<{ keys: string[]; drain(url: string): Promise<number> }> {
  const keys: string[] = [];
  let probe: { admin: string; teamId: string } | undefined;
  const one = async (i: number) => {
    const tenant = `${label}-${i}`;
    const admin = await adminOf(tenant);
    await call(url, admin, "PUT", `/api/v1/rate-limits/${tenant}`, { tier: "enterprise" });
    const team = await call(url, admin, "POST", "/api/v1/teams", { name: "bench", maxBudgetCents: 1_000_000_000, budgetPeriod: "monthly" });
    keys.push((await call(url, admin, "POST", "/api/v1/virtual-keys", { name: "bench", teamId: team.id })).key);
    probe ??= { admin, teamId: team.id };
  };
  for (let i = 0; i < n; i += 16) await Promise.all(Array.from({ length: Math.min(16, n - i) }, (_, j) => one(i + j)));
  const drain = async (at: string) => {
    const t0 = performance.now();
    for (;;) {
      const r = await fetch(`${at}/api/v1/teams/${probe!.teamId}/spend`, { headers: { authorization: `Bearer ${probe!.admin}` } });
      await r.arrayBuffer();
      if (r.status === 200) return performance.now() - t0;
      if (performance.now() - t0 > 300_000) throw new Error(`${at} did not write its usage records within 300 s (${r.status})`);
      await Bun.sleep(200);
    }
  };
  return { keys, drain };
}

// ------------------------------------------------------------------ the bench

const started = performance.now();
const progress = (what: string) => console.error(`[${((performance.now() - started) / 1000).toFixed(1)} s] ${what}`);

async function bench() {
  const { values } = parseArgs({ options: { secs: { type: "string", default: "8" }, n: { type: "string", default: "2000" }, events: { type: "string", default: "100" }, tenants: { type: "string", default: "200" } } });
  const secs = Number(values.secs);
  const n = Number(values.n);
  const events = Number(values.events);
  const nTenants = Number(values.tenants);
  const load0 = loadavg()[0]!;

  const redis = await TestRedis.start();
  const upstream = await startBenchUpstream();
  procs.push(upstream.proc);
  const schemas: Array<{ url: string; schema: string }> = [];
  const db = async (label: string) => {
    const s = await freshSchema(label);
    schemas.push(s);
    return { SVC_STORAGE__URL: s.url, SVC_STORAGE__SCHEMA: s.schema, SVC_IDENTITY__SSO__SECRET_KEY: TEST_SSO_SECRET_KEY };
  };
  const common = { SVC_CACHE__ENABLED: "false", SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url, SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench" };
  const body = JSON.stringify({ model: "gpt-4", messages: [{ role: "user", content: "hello from the replicas bench" }] });
  const rows: string[][] = [];
  const out: Record<string, unknown> = {};
  try {
    // ---- 1 replica with Redis, 1 without (own schemas); paired, then each at 64 connections
    progress("starting replicas");
    const sharedDb = await db("bench_replicas");
    const a = await replica({ ...sharedDb, ...common, SVC_REDIS__URL: redis.url });
    const local = await replica({ ...(await db("bench_replicas_local")), ...common });
    progress(`creating ${nTenants} tenants with a budgeted key on each database`);
    const [shared, localT] = await Promise.all([tenantsWithKeys(a.url, nTenants, "t"), tenantsWithKeys(local.url, nTenants, "t")]);
    progress("paired: no Redis vs Redis, 1 connection");
    const paired = await runLoad<{ p50: number[]; p99: number[]; diffP50: number; diffP99: number; statuses: Record<string, number> }>({ mode: "paired", urls: [local.url, a.url], keys: [localT.keys, shared.keys], body, n });
    out.paired = paired;
    await Promise.all([localT.drain(local.url), shared.drain(a.url)]);
    type LoadOut = { rps: number; p50: number; p99: number; max: number; statuses: Record<string, number>; unanswered: number };
    /** a 64-connection run, then the time until every replica has written the usage records it queued */
    const loadThenDrain = async (urls: string[], t: typeof shared) => {
      const r = await runLoad<LoadOut>({ mode: "load", urls, keys: urls.map(() => t.keys), body, connections: 64, secs });
      const drains = await Promise.all(urls.map((u) => t.drain(u)));
      return { ...r, drainMs: Math.max(...drains) };
    };
    progress("64 connections: no Redis");
    const localLoad = await loadThenDrain([local.url], localT);
    await stopReplica(local);
    progress("64 connections: Redis, 1 replica");
    const one = await loadThenDrain([a.url], shared);
    // ---- 3 replicas on the same database and Redis
    progress("starting replicas B and C");
    const [b, c] = await Promise.all([replica({ ...sharedDb, ...common, SVC_REDIS__URL: redis.url }), replica({ ...sharedDb, ...common, SVC_REDIS__URL: redis.url })]);
    progress("64 connections over 3 replicas");
    const three = await loadThenDrain([a.url, b.url, c.url], shared);
    out.load = { local: localLoad, one, three };
    const st = (s: Record<string, number>) => Object.entries(s).filter(([k]) => k !== "200").map(([k, v]) => `${v}×${k}`).join(" ") || "none";
    const detail = (r: LoadOut & { drainMs: number }) => `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${(r.max / 1000).toFixed(1)} s`;
    const notes = (r: LoadOut & { drainMs: number }) => `non-200: ${st(r.statuses)}; ${r.unanswered} unanswered 2 s after the window; usage records written ${(r.drainMs / 1000).toFixed(1)} s after`;
    rows.push([`PG, 1 replica, no Redis (in-process limits/budget), 64 conn, ${secs} s`, `${localLoad.rps.toFixed(0)} req/s served`, detail(localLoad), notes(localLoad)]);
    rows.push([`PG + Redis, 1 replica, 64 conn, ${secs} s`, `${one.rps.toFixed(0)} req/s served (${(one.rps / localLoad.rps).toFixed(2)}x no Redis)`, detail(one), notes(one)]);
    rows.push([`PG + Redis, 3 replicas, 64 conn round-robin, ${secs} s`, `${three.rps.toFixed(0)} req/s served (${(three.rps / one.rps).toFixed(2)}x 1 replica)`, detail(three), notes(three)]);
    rows.push([
      `PG, 1 replica: Redis limiter + budget added per request (paired, 1 conn, n=${n})`,
      `added p50 ${(paired.diffP50 * 1000).toFixed(0)} µs`,
      `no Redis p50 ${paired.p50[0]!.toFixed(2)} ms / with Redis p50 ${paired.p50[1]!.toFixed(2)} ms; added p99 ${paired.diffP99.toFixed(2)} ms`,
      `non-200: ${st(Object.fromEntries(Object.entries(paired.statuses)))}`,
    ]);

    // ---- invalidation: a key revoked through A, polled on B and C
    const adminTenant = "inval";
    const admin = await adminOf(adminTenant);
    await call(a.url, admin, "PUT", `/api/v1/rate-limits/${adminTenant}`, { tier: "enterprise" });
    const tiers = (url: string, key: string) => fetch(`${url}/api/v1/rate-limits/tiers`, { headers: { authorization: `Bearer ${key}` } }).then(async (r) => (await r.arrayBuffer(), r.status));
    progress("invalidation");
    const inval: number[] = [];
    const invalRecv: number[] = [];
    let firstPoll = 0;
    for (let e = 0; e < events; e++) {
      const k = await call(a.url, admin, "POST", "/api/v1/virtual-keys", { name: `inv-${e}`, teamId: null, permissions: ["ViewMetrics"] });
      const tw = performance.now();
      for (const r of [b, c]) if ((await tiers(r.url, k.key)) !== 200) throw new Error("key not accepted before revocation");
      if (performance.now() - tw > 500) progress(`slow: first use of the key on B and C took ${(performance.now() - tw).toFixed(0)} ms`);
      await call(a.url, admin, "DELETE", `/api/v1/virtual-keys/${k.id}`);
      const t0 = performance.now();
      await Promise.all(
        [b, c].map(async (r) => {
          for (let polls = 0; ; polls++) {
            const sent = performance.now();
            const status = await tiers(r.url, k.key);
            if (status === 401) {
              inval.push(Math.max(0, sent - t0));
              invalRecv.push(performance.now() - t0);
              if (polls === 0) firstPoll++;
              return;
            }
            if (status !== 200) throw new Error(`poll answered ${status}`);
            if (performance.now() - t0 > 10_000) throw new Error("revocation not seen in 10 s");
          }
        }),
      );
      await Bun.sleep(20);
    }
    out.invalidation = { sentP50: pct(inval, 50), sentP99: pct(inval, 99), recvP50: pct(invalRecv, 50), recvP99: pct(invalRecv, 99), firstPoll, of: inval.length };
    rows.push([
      `invalidation: key revoked through A, seen by B and C (${inval.length} observations)`,
      `p50 ${pct(inval, 50).toFixed(2)} ms, p99 ${pct(inval, 99).toFixed(2)} ms, max ${Math.max(...inval).toFixed(2)} ms`,
      `to the answer of the first 401: p50 ${pct(invalRecv, 50).toFixed(2)} ms, p99 ${pct(invalRecv, 99).toFixed(2)} ms`,
      `${firstPoll}/${inval.length} refused at the first request after the DELETE answered`,
    ]);
    for (const r of [a, b, c]) await stopReplica(r);

    // ---- cache follow delay: 2 replicas, cache on, bag-of-words embeddings served here
    const embed = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        return embeddingsAnswer((await req.json()) as { input: string | string[]; model: string });
      },
    });
    progress("cache follow: starting 2 replicas with the cache on");
    const cacheDb = await db("bench_replicas_cache");
    const cacheEnv = { ...cacheDb, ...common, SVC_REDIS__URL: redis.url, SVC_CACHE__ENABLED: "true", SVC_EMBEDDING__PROVIDER: "openai", SVC_EMBEDDING__BASE_URL: `http://127.0.0.1:${embed.port}/v1`, SVC_EMBEDDING__MODEL: "bow-64", SVC_EMBEDDING__API_KEY: "sk-embed", SVC_OUTBOUND__ALLOW_PRIVATE: "true" };
    const ca = await replica(cacheEnv);
    const cb = await replica(cacheEnv);
    const [ckey] = (await tenantsWithKeys(ca.url, 1, "cache")).keys;
    const ask = async (url: string, q: string) => {
      const r = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${ckey}`, "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-4", messages: [{ role: "user", content: q }] }) });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`ask answered ${r.status}`);
      return r.headers.get("x-cache-status");
    };
    const delayMetric = async (url: string) => {
      const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${admin}` } })).text();
      const v = (name: string) => text.split("\n").filter((l) => l.startsWith(name)).reduce((s, l) => s + Number(l.split(" ").at(-1)), 0);
      return { sum: v("svc_cache_replica_change_delay_seconds_sum"), count: v("svc_cache_replica_change_delay_seconds_count") };
    };
    // B loads the partition's index (a miss of its own) before A stores
    await ask(cb.url, "a warm up question for replica b");
    const follow: number[] = [];
    let semanticHits = 0;
    let exactHits = 0;
    for (let e = 0; e < events; e++) {
      const q = `question number ${e} about ${crypto.randomUUID()}`;
      const before = await delayMetric(cb.url);
      if ((await ask(ca.url, q)) !== "MISS") throw new Error("A did not miss");
      // at once: the same words capitalised with a question mark (a semantic hit only: B's index must have it), then the same text (exact tier)
      if ((await ask(cb.url, `Question number ${e} about ${q.split(" about ")[1]}?`)) === "HIT") semanticHits++;
      if ((await ask(cb.url, q)) === "HIT") exactHits++;
      // the delay B measured from A's append to the entry being in its index (Redis stream ids: whole ms)
      for (let w = 0; w < 100 && (await delayMetric(cb.url)).count === before.count; w++) await Bun.sleep(10);
      const after = await delayMetric(cb.url);
      if (after.count > before.count) follow.push(((after.sum - before.sum) / (after.count - before.count)) * 1000);
    }
    out.follow = { p50: pct(follow, 50), p99: pct(follow, 99), semanticHits, exactHits, events };
    rows.push([
      `cache follow: stored through A, asked through B at once (${events} questions)`,
      `A's append to the entry in B's index: p50 ${pct(follow, 50).toFixed(0)} ms, p99 ${pct(follow, 99).toFixed(0)} ms, max ${Math.max(...follow).toFixed(0)} ms (whole ms)`,
      `asked through B the moment A answered: ${semanticHits}/${events} semantic hits (a variant), then ${exactHits}/${events} exact hits`,
      `${follow.length} changes measured`,
    ]);
    for (const r of [ca, cb]) await stopReplica(r);
    embed.stop(true);
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.all(procs.map((p) => p.exited));
    await redis.stop();
    for (const s of schemas) await dropSchema(s.url, s.schema).catch(() => {});
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  }

  const m = machine();
  const lines = [
    `machine: nproc ${m.nproc}, ${m.cpu}, bun ${m.bun}; load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end (shared, noisy: one run, medians)`,
    "",
    "| measurement | result | detail | notes |",
    "|---|---|---|---|",
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ];
  console.log(lines.join("\n"));
  console.error(JSON.stringify(out));
}

if (process.argv[2] === "--load") await loadMain(JSON.parse(process.argv[3]!) as LoadArgs);
else await bench();
