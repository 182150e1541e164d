/**
 * An upper bound for doc1 §4.7 multi-turn hits with the shipped embedder: a multi-turn case can only
 * hit when its last user message passes stage 1 (cosine of the two last queries >= stage1_threshold,
 * 0.85) before any other check. Counts, per kind of cache-eval-dev/multiturn.jsonl's expect=hit cases,
 * how many pass on the raw USE-lite vectors and on the adapted ones the cache compares
 * (docs/notes/embedding-quality.md §12). Analysis only: nothing is chosen from it.
 *
 *   ./node_modules/.bin/bun run scripts/analysis/context-stage1-ceiling.ts [--data DIR] [--stage1 0.85]
 */
import { join, resolve } from "node:path";
import { createEmbedder, dot } from "../../src/embedding/index";
import { EmbeddingAdapter } from "../../src/cache/adapter";
import { cliArg as arg, dataDir } from "../bench/data";

const STAGE1 = Number(arg("stage1") ?? 0.85);
const adapter = EmbeddingAdapter.fromFile(await Bun.file(resolve(import.meta.dir, "../../src/cache/adapter-weights.json")).json());
interface Msg { role: string; content: string }
interface Case { expect: string; kind: string; first: Msg[]; second: Msg[] }
const cases = (await Bun.file(join(dataDir("cache-eval-dev", arg("data")), "multiturn.jsonl")).text()).trim().split("\n").map((l) => JSON.parse(l) as Case);
const lastUser = (m: Msg[]) => [...m].reverse().find((x) => x.role === "user")!.content;
const emb = createEmbedder({ provider: "local", lruSize: 0 });
await emb.load();
const byKind = new Map<string, { n: number; raw: number; adapted: number }>();
for (const c of cases.filter((c) => c.expect === "hit")) {
  const [a, b] = await emb.embed([lastUser(c.first), lastUser(c.second)]);
  const e = byKind.get(c.kind) ?? { n: 0, raw: 0, adapted: 0 };
  e.n++;
  if (dot(a!, b!) >= STAGE1) e.raw++;
  if (dot(adapter.apply(a!), adapter.apply(b!)) >= STAGE1) e.adapted++;
  byKind.set(c.kind, e);
}
await emb.close();
console.log(`| kind | cases | last queries >= ${STAGE1}, raw | adapted (the cache's space) |\n|---|---|---|---|`);
let n = 0, raw = 0, ad = 0;
for (const [k, e] of byKind) {
  console.log(`| ${k} | ${e.n} | ${e.raw} | ${e.adapted} |`);
  n += e.n; raw += e.raw; ad += e.adapted;
}
console.log(`| all expect=hit | ${n} | ${raw} (${(raw / n).toFixed(3)}) | ${ad} (${(ad / n).toFixed(3)}) |`);
