/**
 * Cache performance.
 *
 *   bun scripts/bench/cache-perf.ts http [--pairs 300] [--data DIR]   # hit-path latency (exact / semantic), hits/s at 64 connections, embedding time
 *   bun scripts/bench/cache-perf.ts index [--sizes 10000,100000] [--quant f32,f16] [--queries 200]
 *   bun scripts/bench/cache-perf.ts store [--base DIR] [--rounds 40] [--n 100]
 *
 * http: the gateway runs as its own process (`bun src/main.ts serve`, temp SQLite, local embedder)
 *   in front of the fake upstream (this process); latency is measured by the client over loopback
 *   (request out -> full body in), one request at a time; throughput with 64 concurrent connections.
 *   The semantic tier is measured with real paraphrases: the first N same-meaning pairs of
 *   ../shared/data/cache-eval-dev (q1 fills a fresh tenant, q2 asks), latency over the requests
 *   that were semantic hits (--pairs: N, default 300; the same number of different-meaning pairs
 *   measures the miss path).
 * index: USearch HNSW (cos, M=16, efC=128, efS=128 — the defaults of DEFAULT_INDEX_PARAMS) over RANDOM unit vectors of the model's
 *   dimension (512) — index-only numbers: build time, search p50/p99 (k=8), recall@10 against
 *   exact search for random queries (a hard case: random 512-d vectors are nearly equidistant), and
 *   RSS growth of the process while the index is held.
 * store: what storing a cache-enabled miss's entry costs the database layer (CacheStore.insert of
 *   a new exact key, bun:sqlite on a temp file, 512-d vector): this checkout's src/cache/store.ts
 *   against --base DIR's (another installed checkout; default this one), one database, rounds of
 *   --n inserts alternating between the two; prints the median µs per insert and per-round ratio.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exactSearch, MetricKind } from "usearch";
import { VectorIndex, DEFAULT_INDEX_PARAMS, type Quantization } from "../../src/core/vector-index";
import { startFakeUpstream } from "../../test/fake-upstream/server";
import { TokenService } from "../../src/core/auth";
import { createEmbedder } from "../../src/embedding";
import { dataDir } from "./data";

const argv = process.argv.slice(2);
const mode = argv[0] ?? "http";
const opt = (name: string, def: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1]! : def;
};
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const ms = (x: number) => x.toFixed(3);

function randomUnit(d: number): Float32Array {
  const v = new Float32Array(d);
  let s = 0;
  for (let i = 0; i < d; i++) {
    // Box-Muller: Gaussian components give a uniform direction
    const g = Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random());
    v[i] = g;
    s += g * g;
  }
  const inv = 1 / Math.sqrt(s);
  for (let i = 0; i < d; i++) v[i]! *= inv;
  return v;
}

async function indexBench() {
  const sizes = opt("sizes", "10000,100000").split(",").map(Number);
  const quants = opt("quant", "f32,f16").split(",") as Quantization[];
  const nq = Number(opt("queries", "200"));
  const d = 512;
  console.log(`| entries | scalar | build s | search p50 ms | search p99 ms | near-dup recall@1 | random-query recall@10 | RSS growth MB |\n|---|---|---|---|---|---|---|---|`);
  for (const n of sizes) {
    const flat = new Float32Array(n * d);
    for (let i = 0; i < n; i++) flat.set(randomUnit(d), i * d);
    const queries = Array.from({ length: nq }, () => randomUnit(d));
    const qflat = new Float32Array(nq * d);
    queries.forEach((q, i) => qflat.set(q, i * d));
    const truth = exactSearch(flat, qflat, d, 10, MetricKind.Cos);
    // near-duplicates: a stored vector moved to cosine ~0.9 (what a paraphrase looks like to the index)
    const near = Array.from({ length: nq }, () => {
      const id = Math.floor(Math.random() * n);
      const noise = randomUnit(d);
      const v = new Float32Array(d);
      for (let j = 0; j < d; j++) v[j] = flat[id * d + j]! + 0.48 * noise[j]!;
      let s2 = 0;
      for (let j = 0; j < d; j++) s2 += v[j]! * v[j]!;
      for (let j = 0; j < d; j++) v[j]! /= Math.sqrt(s2);
      return { id: id + 1, v };
    });
    for (const q of quants) {
      Bun.gc(true);
      const rss0 = process.memoryUsage().rss;
      const idx = new VectorIndex({ dimensions: d, quantization: q, ...DEFAULT_INDEX_PARAMS });
      const t0 = performance.now();
      const chunk = 50_000;
      for (let i = 0; i < n; i += chunk) {
        const m = Math.min(chunk, n - i);
        idx.addMany(Array.from({ length: m }, (_, j) => ({ vecKey: i + j + 1, vec: flat.subarray((i + j) * d, (i + j + 1) * d) })));
      }
      const build = (performance.now() - t0) / 1000;
      Bun.gc(true);
      const rss1 = process.memoryUsage().rss;
      const times: number[] = [];
      let found = 0;
      queries.forEach((qv, qi) => {
        const t = performance.now();
        const res = idx.search(qv, 10);
        times.push(performance.now() - t);
        const want = new Set(Array.from(truth.keys.subarray(qi * 10, qi * 10 + 10), (k) => Number(k) + 1));
        for (const r of res) if (want.has(r.key)) found++;
      });
      let nearFound = 0;
      for (const x of near) {
        const t = performance.now();
        const res = idx.search(x.v, 8);
        times.push(performance.now() - t);
        if (res[0]?.key === x.id) nearFound++;
      }
      console.log(
        `| ${n.toLocaleString("en")} | ${q} | ${build.toFixed(1)} | ${ms(pct(times, 50))} | ${ms(pct(times, 99))} | ${(nearFound / nq).toFixed(4)} | ${(found / (nq * 10)).toFixed(4)} | ${((rss1 - rss0) / 1e6).toFixed(0)} |`,
      );
    }
  }
}

/**
 * The gateway under test: `bun src/main.ts serve` on port 0 (a random fixed port could collide with
 * another process or an ephemeral port on a shared box, and the child then exited at start-up).
 * Its stdout and stderr are drained continuously — an undrained pipe fills (64 KiB) and blocks the
 * child's writes — and the last lines are kept to explain an unexpected exit.
 */
async function spawnGateway(env: Record<string, string>) {
  const proc = Bun.spawn(["./node_modules/.bin/bun", "src/main.ts", "serve"], {
    env: { ...process.env, SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const tail: string[] = [];
  let onListening: (url: string) => void = () => {};
  const listening = new Promise<string>((r) => (onListening = r));
  const drain = async (stream: ReadableStream<Uint8Array>, name: string, echo: boolean) => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of stream) {
      buf += dec.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        tail.push(`[${name}] ${line}`);
        if (tail.length > 40) tail.shift();
        if (echo) process.stderr.write(`[gateway] ${line}\n`);
        if (line.includes('"svc listening"')) onListening(JSON.parse(line).url);
      }
    }
  };
  const drained = Promise.all([drain(proc.stdout, "stdout", false), drain(proc.stderr, "stderr", true)]);
  let stopping = false;
  const died = proc.exited.then((code) => {
    if (stopping) return "";
    const why = `gateway process exited during the bench: code ${code}, signal ${proc.signalCode ?? "none"}\nlast output:\n${tail.join("\n")}`;
    console.error(why);
    return why;
  });
  const url = await Promise.race([listening, died.then((why) => (why ? Promise.reject(new Error(why)) : new Promise<string>(() => {})))]);
  return {
    base: url,
    proc,
    /** reject with the exit report if the gateway is gone (call when a request failed) */
    async check(e: unknown): Promise<never> {
      await Promise.race([proc.exited, Bun.sleep(1000)]); // the exit is reaped asynchronously
      if (proc.exitCode !== null || proc.signalCode) throw new Error(await died, { cause: e });
      throw e;
    },
    async stop() {
      stopping = true;
      proc.kill();
      await proc.exited;
      await drained;
    },
  };
}

async function httpBench() {
  const fake = await startFakeUpstream();
  const dir = mkdtempSync(join(tmpdir(), "svc-perf-"));
  const secret = "perf-secret-perf-secret-perf-secret";
  const gw = await spawnGateway({
    SVC_SERVER__REQUEST_LOG: "false",
    SVC_STORAGE__PATH: join(dir, "svc.db"),
    SVC_AUTH__JWT_SECRET: secret,
    SVC_RATE_LIMITS__ENABLED: "false",
    SVC_PROVIDERS__OPENAI__BASE_URL: fake.url,
    SVC_PROVIDERS__OPENAI__API_KEY: "sk-fake",
  });
  const base = gw.base;
  try {
    let ready = false;
    for (let i = 0; i < 300 && !ready; i++) {
      const r = await fetch(`${base}/ready`).catch((e) => gw.check(e));
      ready = r.status === 200;
      await r.arrayBuffer();
      if (!ready) await Bun.sleep(100);
    }
    if (!ready) throw new Error("gateway did not become ready within 30 s");
    const tokens = new TokenService(secret, { ttlSecs: 86400 });
    const token = await tokens.sign({ tenantId: "perf", permissions: [] });
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const body = (q: string) => JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: q }] });
    const call = async (q: string, h: Record<string, string> = headers) => {
      const r = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: h, body: body(q) }).catch((e) => gw.check(e));
      const j = (await r.json()) as { svc_metadata?: { cache_tier?: string | null } };
      return r.status === 200 ? (r.headers.get("x-cache-status") === "HIT" ? `HIT:${j.svc_metadata?.cache_tier}` : r.headers.get("x-cache-status")) : `status ${r.status}`;
    };
    // exact tier
    const q0 = "What is the capital of France?";
    if ((await call(q0)) !== "MISS") throw new Error("expected a miss first");
    for (let i = 0; i < 200; i++) await call(q0); // warm-up
    const exact: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const t = performance.now();
      const s = await call(q0);
      exact.push(performance.now() - t);
      if (s !== "HIT:exact") throw new Error(`exact: ${s}`);
    }
    // semantic tier: real paraphrases from the dev set, each pair in a fresh tenant (q1 fills, q2 asks)
    const allPairs = (await Bun.file(`${dataDir("cache-eval-dev", opt("data", "") || undefined)}/pairs.jsonl`).text())
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { q1: string; q2: string; label: number });
    const pairs = allPairs.filter((p) => p.label === 1).slice(0, Number(opt("pairs", "300")));
    const semantic: number[] = [];
    const semanticWarm: number[] = [];
    let asked = 0;
    for (const [i, p] of pairs.entries()) {
      const h = { ...headers, authorization: `Bearer ${await tokens.sign({ tenantId: `perf-sem-${i}`, permissions: [] })}` };
      await call(p.q1, h);
      const t = performance.now();
      const st = await call(p.q2, h); // a different wording: not exact, one embedding
      const dt = performance.now() - t;
      asked++;
      if (st !== "HIT:semantic") continue;
      semantic.push(dt);
      // the same wording again: still not exact (hits are not stored); the embedder's text LRU has the vector
      const t2 = performance.now();
      if ((await call(p.q2, h)) === "HIT:semantic") semanticWarm.push(performance.now() - t2);
    }
    const semHits = semantic.length;
    // miss path: different-meaning pairs (q1 fills a fresh tenant, q2 is compared with it and misses,
    // then goes to the fake upstream): embedding + candidate decision + upstream round trip
    const missMs: number[] = [];
    for (const [i, p] of allPairs.filter((p) => p.label === 0).slice(0, Number(opt("pairs", "300"))).entries()) {
      const h = { ...headers, authorization: `Bearer ${await tokens.sign({ tenantId: `perf-miss-${i}`, permissions: [] })}` };
      await call(p.q1, h);
      const t = performance.now();
      const st = await call(p.q2, h);
      if (st === "MISS") missMs.push(performance.now() - t);
    }
    // throughput: exact hits, 64 connections, 5 s; every answer must be a 200 exact hit
    const until = performance.now() + 5000;
    let done = 0;
    const other: Record<string, number> = {};
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (performance.now() < until) {
          const st = await call(q0);
          if (st === "HIT:exact") done++;
          else other[st ?? "none"] = (other[st ?? "none"] ?? 0) + 1;
        }
      }),
    );
    if (Object.keys(other).length) throw new Error(`64 connections: answers that were not exact hits: ${JSON.stringify(other)}`);
    console.log(`| path | n | p50 ms | p99 ms |\n|---|---|---|---|`);
    console.log(`| exact hit (HTTP round trip) | ${exact.length} | ${ms(pct(exact, 50))} | ${ms(pct(exact, 99))} |`);
    console.log(`| semantic hit incl. embedding (HTTP round trip; dev-set paraphrases) | ${semHits} hits of ${asked} paraphrases | ${ms(pct(semantic, 50))} | ${ms(pct(semantic, 99))} |`);
    console.log(`| semantic hit, embedding from the text LRU (HTTP round trip) | ${semanticWarm.length} | ${ms(pct(semanticWarm, 50))} | ${ms(pct(semanticWarm, 99))} |`);
    console.log(`| miss after comparing with a cached different-meaning question (HTTP round trip incl. fake upstream) | ${missMs.length} | ${ms(pct(missMs, 50))} | ${ms(pct(missMs, 99))} |`);
    console.log(`\nexact hits/s at 64 connections: ${(done / 5).toFixed(0)}`);
  } finally {
    await gw.stop();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  // embedding time per query (in-process, local model in its worker), fresh texts
  const emb = createEmbedder({ provider: "local", lruSize: 0 });
  await emb.load();
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    await emb.embed([`how do I configure feature ${i} of product ${i * 7} on linux`]);
    times.push(performance.now() - t);
  }
  await emb.close();
  console.log(`embedding per query (local USE-lite, one at a time): p50 ${ms(pct(times, 50))} ms, p99 ${ms(pct(times, 99))} ms`);
}

async function storeBench() {
  const { resolve } = await import("node:path");
  const { openStorage } = await import("../../src/storage/open");
  const { CACHE_MIGRATIONS } = await import("../../src/cache");
  const { CacheStore } = await import("../../src/cache/store");
  const baseDir = resolve(opt("base", "."));
  const Base = ((await import(join(baseDir, "src/cache/store.ts"))) as { CacheStore: typeof CacheStore }).CacheStore;
  const rounds = Number(opt("rounds", "40")), n = Number(opt("n", "100"));
  const dir = mkdtempSync(join(tmpdir(), "svc-store-"));
  const storage = openStorage({ path: join(dir, "bench.db") });
  try {
    await storage.migrate([{ domain: "cache", migrations: CACHE_MIGRATIONS }]);
    const stores = { this: new CacheStore(storage.tenant("t1")), base: new Base(storage.tenant("t1")) };
    const vec = Float32Array.from({ length: 512 }, (_, i) => Math.sin(i) / 16);
    const payload = JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "an answer ".repeat(8) } }] });
    let i = 0;
    const entry = () => ({
      id: crypto.randomUUID(), exactKey: `key-${i++}`, partition: "p1", mode: "single" as const, style: "openai", model: "gpt-4o-mini",
      queryText: `question ${i}`, queryVec: vec, contextVec: null, contextUsers: null, codeScope: null, codeHash: null,
      payload, inputTokens: 12, outputTokens: 16, createdAt: Date.now(), expiresAt: null,
    });
    const us: Record<"this" | "base", number[]> = { this: [], base: [] };
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 ? (["this", "base"] as const) : (["base", "this"] as const)) {
        const t0 = performance.now();
        for (let k = 0; k < n; k++) await stores[side].insert(entry());
        us[side].push(((performance.now() - t0) * 1000) / n);
      }
    }
    const ratios = us.this.map((v, r) => v / us.base[r]!);
    console.log(`CacheStore.insert of a new exact key (bun:sqlite file, ${rounds} rounds × ${n}): this ${pct(us.this, 50).toFixed(1)} µs, base ${pct(us.base, 50).toFixed(1)} µs (${baseDir}); this / base ${pct(ratios, 50).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`);
  } finally {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (mode === "index") await indexBench();
else if (mode === "store") await storeBench();
else await httpBench();
process.exit(0);
