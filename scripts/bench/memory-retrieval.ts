#!/usr/bin/env bun
/**
 * Memory search quality (BENCHMARKS.md "Memory retrieval"): the labelled set of
 * test/fixtures/memory-retrieval.json (built by test/fixtures/memory-retrieval-generate.ts) is
 * stored in one project through the Memory service (the built-in embedder, as `npm start` runs),
 * then every query is ranked three ways — BM25 alone, vectors alone, and the fused ranking search
 * answers with — and scored with nDCG@10 (graded gains 2^g − 1) and MRR (first relevant item).
 * The relevance cut is measured on the same queries (how much of the relevant top 10 it keeps) and
 * on off-topic queries (how many results it lets through where nothing is relevant).
 *
 *   bun scripts/bench/memory-retrieval.ts [--json]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../../src/config";
import { createApp, closeApp } from "../../src/app";
import { Logger } from "../../src/core/log";
import { Retriever, type Fusion, type Hit, type RankMode } from "../../src/memory/search";
import { ROOT } from "./harness";

interface Fixture {
  milestones: Array<{ id: string; branchPurpose: string; cumulativeProgress: string; thisContribution: string; agentId: string }>;
  queries: Array<{ id: string; kind: string; text: string; relevant: Record<string, number> }>;
  offTopic: string[];
}

export function ndcgAt(ranked: string[], relevant: Record<string, number>, k = 10): number {
  const gain = (g: number) => 2 ** g - 1;
  const dcg = ranked.slice(0, k).reduce((s, id, i) => s + gain(relevant[id] ?? 0) / Math.log2(i + 2), 0);
  const ideal = Object.values(relevant)
    .sort((a, b) => b - a)
    .slice(0, k)
    .reduce((s, g, i) => s + gain(g) / Math.log2(i + 2), 0);
  return ideal ? dcg / ideal : 0;
}

export function reciprocalRank(ranked: string[], relevant: Record<string, number>): number {
  const i = ranked.findIndex((id) => (relevant[id] ?? 0) > 0);
  return i < 0 ? 0 : 1 / (i + 1);
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

async function main() {
  const { values } = parseArgs({ options: { json: { type: "boolean" }, keep: { type: "string" }, fusion: { type: "string" }, sweep: { type: "boolean" }, fixture: { type: "string" } } });
  const set: Fixture = JSON.parse(readFileSync(values.fixture ?? join(ROOT, "test/fixtures/memory-retrieval.json"), "utf8"));
  // --keep DIR: store the corpus once into DIR and reuse it on later runs (comparing fusion settings)
  const dir = values.keep ?? mkdtempSync(join(tmpdir(), "svc-memory-retrieval-"));
  const app = createApp(loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "bench-secret-bench-secret-bench" }), { logger: new Logger("error") });
  try {
    const tenant = "bench";
    const memory = app.memory.memory;
    const key = (m: { branchPurpose: string; cumulativeProgress: string; thisContribution: string }) => `${m.branchPurpose}\n${m.cumulativeProgress}\n${m.thisContribution}`;
    const fixtureId = new Map(set.milestones.map((m) => [key(m), m.id]));
    const t0 = performance.now();
    let stored = false;
    try {
      await memory.getProject(tenant, "product");
    } catch {
      await memory.createProject(tenant, { projectId: "product", name: "Product", roadmap: "" });
      for (const m of set.milestones) {
        const { deduplicated } = await memory.storeMilestone(tenant, "product", { branchPurpose: m.branchPurpose, cumulativeProgress: m.cumulativeProgress, thisContribution: m.thisContribution, agentId: m.agentId });
        if (deduplicated) throw new Error(`fixture milestone ${m.id} duplicates another`);
      }
      stored = true;
    }
    const storeSecs = stored ? (performance.now() - t0) / 1000 : 0;
    const store = memory.store(tenant);
    const retriever = new Retriever(app.embedder, app.memory.vectors);
    const idsOf = async (ranked: Promise<Hit[]>) => {
      const hits = await ranked;
      const rows = await store.milestonesByKeys(hits.map((h) => h.key));
      return hits.map((h) => fixtureId.get(key(rows.get(h.key)!))!);
    };
    const fusion: Fusion | undefined = values.fusion ? JSON.parse(values.fusion) : undefined;
    if (values.sweep) {
      const vecs = new Map<string, Float32Array>();
      for (const q of set.queries) vecs.set(q.id, await retriever.embedQuery(q.text));
      const variants: Fusion[] = [{ kind: "rrf" }];
      for (const lambda of [0.1, 0.15, 0.25]) for (const bm25Scale of [0.7, 1.4, 2.8]) for (const bm25Floor of [0, 0.28, 0.56]) variants.push({ kind: "linear", lambda, bm25Scale, bm25Floor });
      for (const f of variants) {
        const by: Record<string, number[]> = {};
        for (const q of set.queries) {
          const ranked = await idsOf(retriever.rank(store, "milestone", q.text, vecs.get(q.id)!, ["product"], 10, {}, { fusion: f, cut: false }));
          for (const k of [q.kind, "all"]) (by[k] ??= []).push(ndcgAt(ranked, q.relevant));
        }
        process.stdout.write(`${JSON.stringify(f)} ${Object.entries(by).map(([k, v]) => `${k} ${mean(v).toFixed(3)}`).join("  ")}\n`);
      }
      return;
    }
    // the rankings compared: each alone, the fusion search uses, and reciprocal rank fusion (the ranking before it)
    const rankings: Array<{ name: string; mode: RankMode; fusion?: Fusion }> = [
      { name: "lexical", mode: "lexical" },
      { name: "semantic", mode: "semantic" },
      { name: "fused", mode: "fused", fusion },
      { name: "rrf", mode: "fused", fusion: { kind: "rrf" } },
    ];
    const modes = rankings.map((r) => r.name);
    const results: Record<string, Record<string, { ndcg: number[]; mrr: number[] }>> = {};
    const cut = { keptRelevant: 0, relevantInTop10: 0, returnedOnTopic: 0, onTopicQueries: 0 };
    for (const q of set.queries) {
      const vec = await retriever.embedQuery(q.text);
      for (const { name: mode, mode: rankMode, fusion: f } of rankings) {
        const ranked = await idsOf(retriever.rank(store, "milestone", q.text, vec, ["product"], 10, {}, { mode: rankMode, cut: false, fusion: f }));
        for (const kind of [q.kind, "all"]) {
          const r = ((results[mode] ??= {})[kind] ??= { ndcg: [], mrr: [] });
          r.ndcg.push(ndcgAt(ranked, q.relevant));
          r.mrr.push(reciprocalRank(ranked, q.relevant));
        }
        if (mode === "fused") {
          const kept = new Set(await idsOf(retriever.rank(store, "milestone", q.text, vec, ["product"], 10, {}, { fusion })));
          for (const id of ranked) if (q.relevant[id]) (cut.relevantInTop10++, kept.has(id) && cut.keptRelevant++);
          cut.returnedOnTopic += kept.size;
          cut.onTopicQueries++;
        }
      }
    }
    let offReturned = 0;
    let offUncut = 0;
    for (const text of set.offTopic) {
      const vec = await retriever.embedQuery(text);
      offUncut += (await retriever.rank(store, "milestone", text, vec, ["product"], 10, {}, { cut: false, fusion })).length;
      offReturned += (await retriever.rank(store, "milestone", text, vec, ["product"], 10, {}, { fusion })).length;
    }
    const table = Object.fromEntries(
      modes.map((mode) => [mode, Object.fromEntries(Object.entries(results[mode]!).map(([kind, r]) => [kind, { ndcg10: +mean(r.ndcg).toFixed(3), mrr: +mean(r.mrr).toFixed(3), n: r.ndcg.length }]))]),
    );
    const report = {
      milestones: set.milestones.length,
      queries: set.queries.length,
      storeSecs: +storeSecs.toFixed(1),
      embedder: app.embedder.id,
      table,
      cut: {
        relevantKept: +(cut.keptRelevant / Math.max(1, cut.relevantInTop10)).toFixed(3),
        meanReturnedOnTopic: +(cut.returnedOnTopic / cut.onTopicQueries).toFixed(2),
        offTopicQueries: set.offTopic.length,
        meanReturnedOffTopic: +(offReturned / set.offTopic.length).toFixed(2),
        meanReturnedOffTopicWithoutCut: +(offUncut / set.offTopic.length).toFixed(2),
      },
    };
    if (values.json) process.stdout.write(JSON.stringify(report, null, 2) + "\n");
    else {
      process.stdout.write(`${report.milestones} milestones (stored in ${report.storeSecs} s), ${report.queries} queries, embedder ${report.embedder}\n\n`);
      const kinds = ["all", ...Object.keys(results.fused!).filter((k) => k !== "all")];
      process.stdout.write(`| ranking | ${kinds.map((k) => `nDCG@10 ${k}`).join(" | ")} | ${kinds.map((k) => `MRR ${k}`).join(" | ")} |\n|---|${kinds.map(() => "---:").join("|")}|${kinds.map(() => "---:").join("|")}|\n`);
      for (const mode of modes) process.stdout.write(`| ${mode} | ${kinds.map((k) => table[mode]![k]!.ndcg10.toFixed(3)).join(" | ")} | ${kinds.map((k) => table[mode]![k]!.mrr.toFixed(3)).join(" | ")} |\n`);
      process.stdout.write(`\nrelevance cut: keeps ${(report.cut.relevantKept * 100).toFixed(1)}% of the relevant items of the fused top 10, ${report.cut.meanReturnedOnTopic} results per on-topic query; off-topic queries: ${report.cut.meanReturnedOffTopic} results each (without the cut: ${report.cut.meanReturnedOffTopicWithoutCut})\n`);
    }
  } finally {
    await closeApp(app);
    if (!values.keep) rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
