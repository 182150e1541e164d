#!/usr/bin/env bun
/**
 * Memory API benchmark (BENCHMARKS.md "Memory API").
 *
 *   nice bun scripts/bench/memory.ts [--projects 10] [--stores 2000] [--small 10000] [--large 100000] [--queries 200] [-c 16]
 *
 * The gateway runs as its own process (`bun src/main.ts`, default configuration: the local
 * embedding model, SQLite WAL, rate limits off so the load is not throttled); this process is the
 * client. Steps:
 *   1. store: `--stores` milestones over `--projects` projects through POST /projects/{id}/store
 *      from `-c` concurrent connections (every milestone distinct: real embedding, FTS and index
 *      insert) → p50/p99 latency and throughput;
 *   2. bulk load to `--small` milestones (gateway stopped; this process embeds with the same local
 *      model in batches of 64 and inserts through MemoryStore — the rows the store endpoint writes,
 *      only faster than 16 HTTP clients on a shared 2-core machine), restart the gateway, build each
 *      project's index (first search, timed), then `--queries` distinct queries (no embedding-cache
 *      hits) one at a time, per project (POST /projects/{id}/search) and cross-project (POST /search,
 *      every project) → p50/p99, query embedding included;
 *   3. the same at `--large` milestones, plus the gateway's RSS (VmRSS).
 */
import { parseArgs } from "node:util";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TokenService } from "../../src/core/auth";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { Lexical } from "../../src/memory/lexical";
import { loadConfig } from "../../src/config";
import * as embedding from "../../src/embedding";
import { Metrics } from "../../src/core/metrics";
import { Logger } from "../../src/core/log";
import { uuid } from "../../src/core/ids";
import { MemoryStore } from "../../src/memory/store";
import { contentHash } from "../../src/memory/hash";
import { milestoneEmbedText } from "../../src/memory/service";
import { BENCH_JWT_SECRET, machine, startTarget, type Target } from "./harness";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    projects: { type: "string", default: "10" },
    stores: { type: "string", default: "2000" },
    small: { type: "string", default: "10000" },
    large: { type: "string", default: "100000" },
    queries: { type: "string", default: "200" },
    c: { type: "string", short: "c", default: "16" },
  },
});
const PROJECTS = Number(values.projects);
const STORES = Number(values.stores);
const SMALL = Number(values.small);
const LARGE = Number(values.large);
const QUERIES = Number(values.queries);
const CONN = Number(values.c);

// deterministic pseudo-random text
let seed = 42;
const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
const WORDS = (
  "cache index vector embedding tenant project branch merge milestone roadmap session agent token limit bucket quota retry timeout socket stream " +
  "parser schema validation router handler middleware kernel migration sqlite wal checkpoint vacuum fts bm25 usearch hnsw cosine recall latency " +
  "throughput benchmark fixture fake upstream provider model prompt chain folder template version rollback diff audit role team budget invitation " +
  "webhook slack jira confluence github issue pull request cursor pagination sync connector credential secret outbound ssrf redirect dns address " +
  "login passkey session cookie header envelope error status conflict deadline shutdown signal worker thread queue backpressure memory leak heap " +
  "profile flame graph allocation buffer encoder decoder json yaml config env variable default override loader watcher reload cli binary build"
).split(" ");
const VERBS = ["fixed", "added", "refactored", "removed", "documented", "tested", "measured", "optimised", "renamed", "split", "merged", "guarded"];
const sentence = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
const ident = () => `ERR_${pick(WORDS).toUpperCase()}_${Math.floor(rnd() * 1000)}`;
const file = () => `src/${pick(WORDS)}/${pick(WORDS)}.ts`;
let counter = 0;
const milestone = (p: number) => {
  const n = ++counter;
  return {
    branchPurpose: `project ${p}: ${sentence(6)}`,
    cumulativeProgress: `${sentence(15)} (step ${n})`,
    thisContribution: `${pick(VERBS)} ${sentence(8)} in ${file()} raising ${ident()} #${n}`,
    agentId: `agent-${n % 7}`,
    agentType: n % 2 ? "claude-code" : "codex",
  };
};

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const fmt = (x: number) => x.toFixed(2);

const dir = mkdtempSync(join(tmpdir(), "svc-bench-memory-"));
const dbPath = join(dir, "svc.db");
let gw: Target;
const token = await new TokenService(BENCH_JWT_SECRET).sign({ tenantId: "bench", permissions: [] });
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
const start = async () => (gw = await startTarget({ env: { SVC_RATE_LIMITS__ENABLED: "false", SVC_STORAGE__PATH: dbPath } }));
const post = async (path: string, body: unknown) => {
  const r = await fetch(`${gw.url}/api/v1/memory${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${path}: ${r.status} ${text.slice(0, 200)}`);
  return text;
};
const rssMb = () => {
  const m = readFileSync(`/proc/${gw.proc.pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) / 1024 : NaN;
};

const results: Record<string, unknown> = { machine: machine(), projects: PROJECTS, connections: CONN, queries: QUERIES };
let stored = 0;

async function storeHttp(total: number) {
  const lat: number[] = [];
  const t0 = performance.now();
  let next = stored;
  await Promise.all(
    Array.from({ length: CONN }, async () => {
      while (next < total) {
        const i = next++;
        const body = milestone(i % PROJECTS);
        const s = performance.now();
        await post(`/projects/p${i % PROJECTS}/store`, body);
        lat.push(performance.now() - s);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const n = total - stored;
  stored = total;
  return { n, secs: Math.round(secs), perSec: Math.round(n / secs), p50Ms: fmt(pct(lat, 50)), p99Ms: fmt(pct(lat, 99)) };
}

/** Gateway stopped: embed in batches with the same local model and insert the rows the store endpoint writes. */
async function bulkLoad(total: number) {
  const cfg = loadConfig({});
  const emb = embedding.create({ config: cfg.embedding, metrics: new Metrics(), log: new Logger("error") });
  const db = new Db(dbPath);
  const data = openStorage({ path: dbPath, db });
  const store = new MemoryStore(data.tenant("bench"), new Lexical(data.dialect, undefined), data.dialect);
  const t0 = performance.now();
  const n = total - stored;
  for (let i = stored; i < total; i += 64) {
    const batch = Array.from({ length: Math.min(64, total - i) }, (_, j) => ({ p: `p${(i + j) % PROJECTS}`, m: milestone((i + j) % PROJECTS) }));
    const vecs = await emb.service.embed(batch.map((b) => milestoneEmbedText(b.m)));
    await store.tx(async () => {
      for (const [j, b] of batch.entries()) {
        const at = new Date().toISOString();
        const hash = contentHash(b.m.branchPurpose, b.m.cumulativeProgress, b.m.thisContribution);
        await store.insertMilestone(
          { milestoneId: uuid(), projectId: b.p, branchName: "main", ...b.m, contentHash: hash, contentHashHex: "", sequenceNumber: await store.nextSequence(b.p, at), mergedFrom: null, createdAt: at },
          emb.service.id,
          vecs[j]!,
        );
      }
    });
  }
  db.close();
  await emb.close?.();
  stored = total;
  return { n, secs: Math.round((performance.now() - t0) / 1000) };
}

async function searches(label: string) {
  const per: number[] = [];
  const cross: number[] = [];
  // first search of each project builds its index from SQLite (timed apart)
  const b0 = performance.now();
  for (let p = 0; p < PROJECTS; p++) await post(`/projects/p${p}/search`, { query: `warm ${p} ${sentence(3)}` });
  const buildSecs = Math.round((performance.now() - b0) / 100) / 10;
  await post("/search", { query: `warm cross ${sentence(3)}` });
  for (let q = 0; q < QUERIES; q++) {
    const query = q % 3 === 0 ? `${ident()} in ${file()}` : `${pick(VERBS)} ${sentence(5)} query ${q}`;
    let s = performance.now();
    await post(`/projects/p${q % PROJECTS}/search`, { query, limit: 20 });
    per.push(performance.now() - s);
    s = performance.now();
    await post("/search", { query: `${query} across`, limit: 50 });
    cross.push(performance.now() - s);
  }
  return {
    [`${label} index build (first search of ${PROJECTS} projects) s`]: buildSecs,
    [`${label} per-project p50`]: fmt(pct(per, 50)),
    [`${label} per-project p99`]: fmt(pct(per, 99)),
    [`${label} cross-project p50`]: fmt(pct(cross, 50)),
    [`${label} cross-project p99`]: fmt(pct(cross, 99)),
  };
}

try {
  await start();
  for (let p = 0; p < PROJECTS; p++) await post("/projects", { projectId: `p${p}`, name: `Project ${p}`, roadmap: sentence(40) });
  results.store = await storeHttp(STORES);
  console.log("store", results.store);
  await gw!.stop().catch(() => {});
  results.loadSmall = await bulkLoad(SMALL);
  console.log("bulk load", results.loadSmall);
  await start();
  results.searchSmall = await searches(`${SMALL}`);
  results.rssSmallMb = Math.round(rssMb());
  console.log(results.searchSmall, results.rssSmallMb);
  await gw!.stop().catch(() => {});
  results.loadLarge = await bulkLoad(LARGE);
  console.log("bulk load", results.loadLarge);
  await start();
  results.searchLarge = await searches(`${LARGE}`);
  results.rssLargeMb = Math.round(rssMb());
  console.log(JSON.stringify(results, null, 2));
} finally {
  await gw!.stop().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
