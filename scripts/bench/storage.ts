/**
 * Storage micro-bench: sequential (one at a time, awaited) tenant-scoped SELECT by primary key and
 * portable upsert, in µs per operation, on
 *   sqlite-sync   today's TenantDb over bun:sqlite (the baseline the async wrapper must match)
 *   sqlite-async  AsyncTenantDb over the same file (src/storage/sqlite-async.ts)
 *   pg-async      AsyncTenantDb over PostgreSQL (src/storage/postgres.ts: $name translation, row shapes, deadline timer)
 *   pg-raw        Bun's SQL `unsafe` with $1 directly (what the wrapper adds on top of the driver)
 * Rounds interleave the variants in a shuffled order (a fixed order biased whichever ran after the
 * PostgreSQL variants); each figure is the median over rounds of a round's mean, and the wrappers'
 * cost is also given paired within rounds.
 *
 *   bun scripts/bench/storage.ts [--rounds 15] [--n 2000] [--url postgres://…]
 * Without --url a throwaway PostgreSQL is started (test/helpers/postgres.ts: fsync off, loopback),
 * so PostgreSQL figures are the client + loopback + server path, not disk.
 */
import { SQL } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Db } from "../../src/storage/db";
import { storageOf } from "../../src/storage/scoped";
import { openStorage } from "../../src/storage/open";
import { upsert } from "../../src/storage/dialect";
import { cliArg, mulberry32 } from "./data";
import { startPostgres } from "../../test/helpers/postgres";

const ROUNDS = Number(cliArg("rounds") ?? 15);
const N = Number(cliArg("n") ?? 2000);
const ROWS = 1000;

const DDL = "CREATE TABLE kv (tenant_id TEXT NOT NULL, k TEXT NOT NULL, v TEXT NOT NULL, hits BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (tenant_id, k))";
const SELECT = "SELECT k, v, hits FROM kv WHERE tenant_id = $tenant AND k = $k";
const UPSERT = upsert("kv", ["tenant_id", "k", "v", "hits"], ["tenant_id", "k"], { v: "excluded.v", hits: "kv.hits + 1" }).replace("$tenant_id", "$tenant");
const key = (i: number) => `key-${i % ROWS}`;

const dir = mkdtempSync(join(tmpdir(), "svc-bench-storage-"));
const own = cliArg("url") ? undefined : await startPostgres();
const url = cliArg("url") ?? own!.url();

try {
  const db = new Db(join(dir, "bench.db"));
  const sync = storageOf(db).tenant("bench");
  const sqliteAsync = openStorage({ path: "", db }).tenant("bench");
  const pgStorage = openStorage({ url, path: "", poolSize: 10 });
  const pg = pgStorage.tenant("bench");
  const raw = new SQL(url, { max: 10 });

  db.sqlite.run(DDL);
  await pgStorage.global("bench: schema").run("DROP TABLE IF EXISTS kv");
  await pgStorage.global("bench: schema").run(DDL);
  for (let i = 0; i < ROWS; i++) {
    sync.run(UPSERT, { k: key(i), v: "x".repeat(64), hits: 0 });
    await pg.run(UPSERT, { k: key(i), v: "x".repeat(64), hits: 0 });
  }

  type Variant = { name: string; select(i: number): unknown; upsert(i: number): unknown };
  const rawSelect = "SELECT k, v, hits FROM kv WHERE tenant_id = $1 AND k = $2";
  const rawUpsert = "INSERT INTO kv (tenant_id, k, v, hits) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, k) DO UPDATE SET v = excluded.v, hits = kv.hits + 1";
  const variants: Variant[] = [
    { name: "sqlite-sync", select: (i) => sync.get(SELECT, { k: key(i) }), upsert: (i) => sync.run(UPSERT, { k: key(i), v: "y", hits: 1 }) },
    { name: "sqlite-async", select: (i) => sqliteAsync.get(SELECT, { k: key(i) }), upsert: (i) => sqliteAsync.run(UPSERT, { k: key(i), v: "y", hits: 1 }) },
    { name: "pg-async", select: (i) => pg.get(SELECT, { k: key(i) }), upsert: (i) => pg.run(UPSERT, { k: key(i), v: "y", hits: 1 }) },
    { name: "pg-raw", select: (i) => raw.unsafe(rawSelect, ["bench", key(i)]), upsert: (i) => raw.unsafe(rawUpsert, ["bench", key(i), "y", 1]) },
  ];

  const results = new Map<string, { select: number[]; upsert: number[] }>(variants.map((v) => [v.name, { select: [], upsert: [] }]));
  // warm-up: prepared statements on every connection, JIT
  for (const v of variants) for (let i = 0; i < 500; i++) {
    await v.select(i);
    await v.upsert(i);
  }
  const rand = mulberry32(23);
  for (let r = 0; r < ROUNDS; r++) {
    const order = [...variants];
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const v of order) {
      for (const op of ["select", "upsert"] as const) {
        const t0 = Bun.nanoseconds();
        for (let i = 0; i < N; i++) await v[op](i * 7 + r);
        results.get(v.name)![op].push((Bun.nanoseconds() - t0) / N / 1000);
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const spread = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `${s[Math.floor(s.length * 0.1)]!.toFixed(1)}–${s[Math.ceil(s.length * 0.9) - 1]!.toFixed(1)}`;
  };
  console.log(`storage bench: ${ROUNDS} rounds × ${N} sequential ops, ${ROWS} rows; µs/op median of round means (p10–p90 of rounds)`);
  console.log("variant        SELECT by key            upsert");
  for (const [name, r] of results) console.log(`${name.padEnd(14)} ${median(r.select).toFixed(1).padStart(7)} (${spread(r.select)})`.padEnd(40) + `${median(r.upsert).toFixed(1).padStart(7)} (${spread(r.upsert)})`);
  // what each wrapper adds, paired within a round (the box's load moves whole rounds, not pairs)
  const paired = (x: string, base: string, op: "select" | "upsert") => {
    const a = results.get(x)![op];
    const b = results.get(base)![op];
    return median(a.map((v, i) => v - b[i]!)).toFixed(1);
  };
  console.log(`added by the async wrapper, paired per round (µs/op): sqlite-async − sqlite-sync SELECT ${paired("sqlite-async", "sqlite-sync", "select")}, upsert ${paired("sqlite-async", "sqlite-sync", "upsert")}; pg-async − pg-raw SELECT ${paired("pg-async", "pg-raw", "select")}, upsert ${paired("pg-async", "pg-raw", "upsert")}`);
  await raw.close();
  await pgStorage.close();
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
  await own?.destroy();
}
