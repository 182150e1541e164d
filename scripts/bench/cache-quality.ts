/**
 * Cache quality (issue 25): first the cross-validated figures on cache-train (scripts/bench/cache-cv.ts:
 * 5 folds by duplicate cluster, hard negatives per kind; this is where every threshold and rule is
 * chosen), then cache-eval-dev ONCE, end to end, with Wilson 95 % intervals (dev is only reported,
 * never tuned on). --cv off skips the first part.
 *
 * End to end: starts a real gateway (temp SQLite, real local embedder)
 * in front of the fake upstream (test/fake-upstream), and drives it through the official `openai`
 * SDK with ../shared/data/cache-eval-dev (or --data DIR). Each pair / multi-turn case runs in
 * its own fresh tenant (a JWT with a fresh tenant_id): first request fills, second request is
 * a HIT when the response carries X-Cache-Status: HIT.
 *
 *   bun scripts/bench/cache-quality.ts [--thresholds 0.80,0.85,0.90] [--data DIR] [--concurrency 8] [--limit N]
 *       [--learned on|off] [--adapt on|off] [--learned-mode with_rules|alone] [--decision-thresholds 0.6,0.745,0.9] [--show-false-hits 1]
 *
 * --thresholds: cache.similarity_threshold (default: the configured default); --learned off: the hand
 * verifier only (cache.learned_decision=false, the hit decision before issue 14); --decision-thresholds:
 * the learned stage's operating point (cache.decision_threshold; default: the model's).
 *
 * Reports precision (of HITs, how many were true paraphrases), recall, false-hit rate on
 * non-paraphrases (per category), and for multi-turn cases the hit rate on "hit" cases and the
 * false-hit rate on "miss" cases (context changed), plus the client-side latency of the second request.
 */
import OpenAI from "openai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { startServer } from "../../src/server";
import { Logger } from "../../src/core/log";
import { startFakeUpstream } from "../../test/fake-upstream/server";
import { dataDir } from "./data";
import { crossValidate, cvTable, wilson } from "./cache-cv";
import { crossValidatePairModel, pairCvTable } from "./cache-pair-cv";

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1] ?? "");
const DATA = dataDir("cache-eval-dev", args.get("data"));
const THRESHOLDS: Array<number | undefined> = args.has("thresholds") ? args.get("thresholds")!.split(",").map(Number) : [undefined];
/** --learned on|off: cache.learned_decision (default: the configured default: on, the pair model, since issue 25) */
const LEARNED = args.has("learned") ? args.get("learned") !== "off" : undefined;
const ADAPT = args.has("adapt") ? args.get("adapt") !== "off" : undefined;
const MODE = args.get("learned-mode") as "with_rules" | "alone" | undefined;
const DECISION: Array<number | undefined> = args.has("decision-thresholds") ? args.get("decision-thresholds")!.split(",").map(Number) : [undefined];
const CONCURRENCY = Number(args.get("concurrency") ?? 8);
const LIMIT = Number(args.get("limit") ?? Infinity);
const CV = (args.get("cv") ?? "on") !== "off";
/** k/n with its Wilson 95 % interval */
const ci = (k: number, n: number) => {
  const [lo, hi] = wilson(k, n);
  return `${(k / Math.max(1, n)).toFixed(3)} [${lo.toFixed(3)}, ${hi.toFixed(3)}] (${k}/${n})`;
};

interface Pair {
  id: string;
  q1: string;
  q2: string;
  label: 0 | 1;
  category: string;
}
interface MtCase {
  id: string;
  expect: "hit" | "miss";
  kind: string;
  variant: string;
  first: Array<{ role: string; content: string }>;
  second: Array<{ role: string; content: string }>;
}

const readJsonl = async <T>(f: string): Promise<T[]> =>
  (await Bun.file(f).text())
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);

async function pool<T>(items: T[], n: number, fn: (x: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};
const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : "n/a");

async function runOnce(threshold: number | undefined, decision: number | undefined, pairs: Pair[], cases: MtCase[]) {
  phase = `threshold ${threshold}: starting the gateway`;
  const fake = await startFakeUpstream();
  const dir = mkdtempSync(join(tmpdir(), "svc-quality-"));
  const config = loadConfig(
    { SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "bench-secret-bench-secret-bench" },
    {
      server: { host: "127.0.0.1", port: 0, request_log: false },
      rate_limits: { enabled: false },
      providers: { openai: { base_url: fake.url, api_key: "sk-fake" } },
      cache: { ...(threshold !== undefined ? { similarity_threshold: threshold } : {}), ...(LEARNED !== undefined ? { learned_decision: LEARNED } : {}), ...(ADAPT !== undefined ? { adapt_embeddings: ADAPT } : {}), ...(MODE ? { learned_mode: MODE } : {}), ...(decision !== undefined ? { decision_threshold: decision } : {}) },
    },
  );
  const srv = await startServer(config, { logger: new Logger("error") });
  await srv.ctx.embedder!.load();
  const run = `${Date.now().toString(36)}`;
  const clientFor = async (tenant: string) =>
    new OpenAI({ apiKey: await srv.ctx.tokens.sign({ tenantId: tenant, permissions: [] }), baseURL: `${srv.url}/v1`, maxRetries: 0 });
  const send = async (c: OpenAI, messages: any[]) => {
    const t0 = performance.now();
    const { response } = await c.chat.completions.create({ model: "gpt-4o-mini", messages }).withResponse();
    return { status: response.headers.get("x-cache-status"), ms: performance.now() - t0 };
  };

  const pairOut: Array<Pair & { hit: boolean; ms: number }> = [];
  phase = `threshold ${threshold}: single-turn pairs`;
  await pool(pairs, CONCURRENCY, async (p) => {
    const c = await clientFor(`qp-${run}-${p.id}`);
    const a = await send(c, [{ role: "user", content: p.q1 }]);
    if (a.status !== "MISS") throw new Error(`${p.id}: first request was ${a.status}`);
    const b = await send(c, [{ role: "user", content: p.q2 }]);
    pairOut.push({ ...p, hit: b.status === "HIT", ms: b.ms });
  });
  const mtOut: Array<MtCase & { hit: boolean; ms: number }> = [];
  phase = `threshold ${threshold}: multi-turn cases`;
  await pool(cases, CONCURRENCY, async (m) => {
    const c = await clientFor(`qm-${run}-${m.id}`);
    const a = await send(c, m.first);
    if (a.status !== "MISS") throw new Error(`${m.id}: first request was ${a.status}`);
    const b = await send(c, m.second);
    mtOut.push({ ...m, hit: b.status === "HIT", ms: b.ms });
  });
  phase = `threshold ${threshold}: stopping the gateway`;
  await srv.stop();
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
  return { pairOut, mtOut };
}

// The gateway runs in this process: if anything ends it early (an error escaping every handler, a
// signal, the event loop running dry), say so on stderr with the threshold and stage it was in.
let phase = "loading the data set";
let finished = false;
const rssMb = () => (process.memoryUsage().rss / 1e6).toFixed(0);
process.on("exit", (code) => {
  if (!finished) console.error(`cache-quality: process exiting with code ${code} before finishing, during ${phase} (RSS ${rssMb()} MB)`);
});
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, () => process.exit(128 + (sig === "SIGINT" ? 2 : sig === "SIGTERM" ? 15 : 1)));
process.on("uncaughtException", (e) => {
  console.error(`cache-quality: uncaught exception during ${phase}:`, e);
  process.exit(1);
});
process.on("unhandledRejection", (e) => {
  console.error(`cache-quality: unhandled rejection during ${phase}:`, e);
  process.exit(1);
});

if (CV) {
  phase = "cross-validation on cache-train";
  const t0 = performance.now();
  const r = await crossValidate({ folds: 5 });
  console.log(`# cross-validated on cache-train (${r.rows.qqp} Quora pairs, hard negatives ${JSON.stringify(r.rows.hard)}; ${((performance.now() - t0) / 1000).toFixed(0)} s)\n`);
  console.log(cvTable(r) + "\n");
  // the pair model (the default decision), retrained per fold: scripts/bench/cache-pair-cv.ts
  const t1 = performance.now();
  const pm = await crossValidatePairModel({ model: "gbm", cvOnly: true });
  console.log(`# pair model, cross-validated the same way (${((performance.now() - t1) / 1000).toFixed(0)} s)\n`);
  console.log(pairCvTable(pm) + "\n");
}

const pairs = (await readJsonl<Pair>(join(DATA, "pairs.jsonl"))).slice(0, LIMIT);
const cases = (await readJsonl<MtCase>(join(DATA, "multiturn.jsonl"))).slice(0, LIMIT);
console.log(`# cache quality: ${pairs.length} pairs, ${cases.length} multi-turn cases, concurrency ${CONCURRENCY}, ${new Date().toISOString()}\n`);

for (const th of THRESHOLDS) for (const dt of DECISION) {
  const t0 = performance.now();
  const { pairOut, mtOut } = await runOnce(th, dt, pairs, cases);
  const hits = pairOut.filter((p) => p.hit);
  const tp = hits.filter((p) => p.label === 1).length;
  const pos = pairOut.filter((p) => p.label === 1).length;
  const neg = pairOut.length - pos;
  const precision = tp / hits.length;
  const recall = tp / pos;
  const fhr = (hits.length - tp) / neg;
  const f1 = (2 * precision * recall) / (precision + recall);
  console.log(`## similarity_threshold ${th ?? "default"}, learned ${LEARNED === undefined ? "default (on: the pair model)" : LEARNED ? `on (${MODE ?? "default mode"}), decision_threshold ${dt ?? "model default"}` : "off"}, adapted embeddings ${ADAPT === undefined ? "default (off)" : ADAPT ? "on" : "off"} (run took ${((performance.now() - t0) / 1000).toFixed(0)} s, process RSS ${rssMb()} MB)\n`);
  console.log("| pairs | hits | precision | recall | false-hit rate | F1 |\n|---|---|---|---|---|---|");
  console.log(`| ${pairOut.length} | ${hits.length} | ${f3(precision)} | ${f3(recall)} | ${f3(fhr)} | ${f3(f1)} |\n`);
  const mtMissAll = mtOut.filter((m) => m.expect === "miss");
  const mtHitAll = mtOut.filter((m) => m.expect === "hit");
  console.log("cache-eval-dev with Wilson 95 % intervals (reported once; nothing was chosen on it):\n");
  console.log("| measure | value [95 % CI] |\n|---|---|");
  console.log(`| precision | ${ci(tp, hits.length)} |`);
  console.log(`| recall | ${ci(tp, pos)} |`);
  console.log(`| false-hit rate | ${ci(hits.length - tp, neg)} |`);
  console.log(`| multi-turn false hits | ${ci(mtMissAll.filter((m) => m.hit).length, mtMissAll.length)} |`);
  console.log(`| multi-turn hits | ${ci(mtHitAll.filter((m) => m.hit).length, mtHitAll.length)} |`);
  for (const c of [...new Set(pairOut.map((p) => p.category))].sort()) {
    const xs = pairOut.filter((p) => p.category === c);
    console.log(`| ${c} (label ${xs[0]!.label}) hit rate | ${ci(xs.filter((p) => p.hit).length, xs.length)} |`);
  }
  console.log("");
  const cats = [...new Set(pairOut.map((p) => p.category))].sort();
  console.log("| category | label | n | hit rate |\n|---|---|---|---|");
  for (const c of cats) {
    const xs = pairOut.filter((p) => p.category === c);
    console.log(`| ${c} | ${xs[0]!.label} | ${xs.length} | ${f3(xs.filter((p) => p.hit).length / xs.length)} |`);
  }
  const mtHit = mtOut.filter((m) => m.expect === "hit");
  const mtMiss = mtOut.filter((m) => m.expect === "miss");
  console.log(
    `\nmulti-turn: hit rate on expect=hit ${f3(mtHit.filter((m) => m.hit).length / mtHit.length)} (${mtHit.filter((m) => m.hit).length}/${mtHit.length}); ` +
      `false-hit rate on expect=miss (context changed) ${f3(mtMiss.filter((m) => m.hit).length / mtMiss.length)} (${mtMiss.filter((m) => m.hit).length}/${mtMiss.length})\n`,
  );
  console.log("| kind | expect | n | hit rate |\n|---|---|---|---|");
  for (const k of [...new Set(mtOut.map((m) => m.kind))]) {
    const xs = mtOut.filter((m) => m.kind === k);
    console.log(`| ${k} | ${xs[0]!.expect} | ${xs.length} | ${f3(xs.filter((m) => m.hit).length / xs.length)} |`);
  }
  const hitMs = [...pairOut, ...mtOut].filter((x) => x.hit).map((x) => x.ms);
  const missMs = [...pairOut, ...mtOut].filter((x) => !x.hit).map((x) => x.ms);
  console.log(`\nsecond-request latency (client, concurrency ${CONCURRENCY}): HIT p50 ${f3(pct(hitMs, 50))} ms, MISS p50 ${f3(pct(missMs, 50))} ms\n`);
  if (args.has("show-false-hits")) {
    for (const p of hits.filter((p) => p.label === 0)) console.log(`FALSE HIT ${p.id} [${p.category}] ${p.q1} | ${p.q2}`);
    for (const m of mtMiss.filter((m) => m.hit)) console.log(`FALSE HIT ${m.id} [${m.kind}]`);
  }
}
finished = true;
process.exit(0);
