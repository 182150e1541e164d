#!/usr/bin/env bun
/**
 * Memory API benchmark (BENCHMARKS.md "Memory API").
 *
 *   nice bun scripts/bench/memory.ts [--projects 10] [--small 10000] [--large 100000] [--queries 200] [-c 16]
 *
 * The gateway runs as its own process (`bun src/main.ts`, default configuration: the local
 * embedding model, SQLite WAL, rate limits off so the load is not throttled); this process is the
 * client. Steps:
 *   1. store: `--small` milestones over `--projects` projects through POST /projects/{id}/store from
 *      `-c` concurrent connections (every milestone distinct: real embedding, FTS and index insert)
 *      → p50/p99 latency and throughput;
 *   2. search at `--small` milestones per tenant: `--queries` distinct queries (no embedding-cache
 *      hits) one at a time, per project (POST /projects/{id}/search) and cross-project (POST /search,
 *      every project) → p50/p99, query embedding included;
 *   3. store up to `--large` milestones the same way (throughput reported), then search again;
 *   4. RSS of the gateway process (VmRSS) at `--large`.
 */
import { parseArgs } from "node:util";
import { readFileSync } from "node:fs";
import { TokenService } from "../../src/core/auth";
import { BENCH_JWT_SECRET, machine, startTarget } from "./harness";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    projects: { type: "string", default: "10" },
    small: { type: "string", default: "10000" },
    large: { type: "string", default: "100000" },
    queries: { type: "string", default: "200" },
    c: { type: "string", short: "c", default: "16" },
  },
});
const PROJECTS = Number(values.projects);
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
    cumulativeProgress: `${sentence(30)} (step ${n})`,
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

const gw = await startTarget({ env: { SVC_RATE_LIMITS__ENABLED: "false" } });
const token = await new TokenService(BENCH_JWT_SECRET).sign({ tenantId: "bench", permissions: [] });
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
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
try {
  for (let p = 0; p < PROJECTS; p++) await post("/projects", { projectId: `p${p}`, name: `Project ${p}`, roadmap: sentence(40) });
  let stored = 0;
  async function storeUpTo(total: number) {
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
  async function searches(label: string) {
    const per: number[] = [];
    const cross: number[] = [];
    // warm: build each project's index (lazy) before timing
    for (let p = 0; p < PROJECTS; p++) await post(`/projects/p${p}/search`, { query: `warm ${p} ${sentence(3)}` });
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
      [`${label} per-project p50`]: fmt(pct(per, 50)),
      [`${label} per-project p99`]: fmt(pct(per, 99)),
      [`${label} cross-project p50`]: fmt(pct(cross, 50)),
      [`${label} cross-project p99`]: fmt(pct(cross, 99)),
    };
  }
  results.store = await storeUpTo(SMALL);
  console.log("store", results.store);
  results.searchSmall = await searches(`${SMALL}`);
  console.log(results.searchSmall);
  results.rssSmallMb = Math.round(rssMb());
  results.load = await storeUpTo(LARGE);
  console.log("load to", LARGE, results.load);
  const t = performance.now();
  results.searchLarge = await searches(`${LARGE}`);
  results.searchLargeWallSecs = Math.round((performance.now() - t) / 1000);
  console.log(results.searchLarge);
  results.rssLargeMb = Math.round(rssMb());
  console.log(JSON.stringify(results, null, 2));
} finally {
  await gw.stop();
}
