#!/usr/bin/env bun
/**
 * Do two forward passes of the local model give the cache the same hit decisions? Embeds both
 * questions of N cache-train pairs with this checkout's model (kernel --kernel, default
 * native-i16) and with another variant (--base DIR's use-lite-fast.ts and --base-kernel, default
 * this checkout and wasm-i16), then decides each pair as the engine does for a stored q1 and an
 * incoming q2: the adapter's cosine against the learned model's floor (a surface match down to its
 * own floor), then the learned pair model. Prints how many decisions are identical, the hits on each
 * side, the smallest cosine between the two variants' vectors, and the first differing pairs.
 * The proof an embedding change must pass (issue 27: identical decisions on ≥ 99.9 %); a change that
 * keeps vectors bit-identical reads 100 % and cosine 1.
 *
 *   bun scripts/bench/embedding-decisions.ts [--n 12000] [--kernel native-i16] [--base DIR] [--base-kernel wasm-i16] [--data DIR]
 */
import { resolve } from "node:path";
import { UseLiteFast, type UseLiteFastKernel } from "../../src/embedding/use-lite-fast";
import { dot, prepareText } from "../../src/embedding/index";
import { defaultAdapter } from "../../src/cache/adapter-default";
import { defaultLearnedModel } from "../../src/cache/verify/learned-default";
import { installPieceTokenizer } from "./cache-piece-tokenizer";
import { cliArg, dataDir } from "./data";

const n = Number(cliArg("n") ?? 12000);
const kernel = (cliArg("kernel") ?? "native-i16") as UseLiteFastKernel;
const baseDir = resolve(cliArg("base") ?? resolve(import.meta.dir, "../.."));
const baseKernel = cliArg("base-kernel") ?? "wasm-i16";
const { UseLiteFast: BaseFast } = (await import(resolve(baseDir, "src/embedding/use-lite-fast.ts"))) as { UseLiteFast: typeof UseLiteFast };

installPieceTokenizer(); // what src/app.ts installs for the pair model's word alignment
interface Pair { id: string; q1: string; q2: string }
const lines = (await Bun.file(resolve(dataDir("cache-train", cliArg("data")), "pairs.jsonl")).text()).trim().split("\n");
const step = Math.max(1, Math.floor(lines.length / n)); // every step-th pair: spread over the file, no choice made on it
const pairs = lines.filter((_, i) => i % step === 0).slice(0, n).map((l) => JSON.parse(l) as Pair);
const texts = pairs.flatMap((p) => [prepareText(p.q1), prepareText(p.q2)]);

async function embedAll(m: UseLiteFast): Promise<{ vecs: Float32Array[]; msPerText: number; backend: string }> {
  await m.load();
  const vecs: Float32Array[] = [];
  const t = performance.now();
  for (let i = 0; i < texts.length; i += 64) {
    const flat = m.embedFlat(texts.slice(i, i + 64));
    for (let j = 0; j < flat.length / 512; j++) vecs.push(flat.slice(j * 512, (j + 1) * 512));
  }
  return { vecs, msPerText: (performance.now() - t) / texts.length, backend: m.backend() };
}
const a = await embedAll(new UseLiteFast(kernel));
const b = await embedAll(new BaseFast(baseKernel as UseLiteFastKernel));

const adapter = defaultAdapter(), model = defaultLearnedModel();
function hit(v: Float32Array[], i: number, p: Pair): boolean {
  const rq = v[2 * i + 1]!, rc = v[2 * i]!; // q2 asks, q1 is stored
  const cos = dot(adapter.apply(rq), adapter.apply(rc));
  const surface = model.surfaceMatch?.(p.q2, p.q1) ?? null;
  const floor = surface && model.surfaceMinCosine !== undefined ? Math.min(model.minCosine, model.surfaceMinCosine) : model.minCosine;
  return cos >= floor && model.decide(p.q2, p.q1, cos, rq, rc, model.threshold, false, dot(rq, rc)).accept;
}
let same = 0, hitsA = 0, hitsB = 0, minCos = 1;
const differ: string[] = [];
pairs.forEach((p, i) => {
  const ha = hit(a.vecs, i, p), hb = hit(b.vecs, i, p);
  if (ha === hb) same++;
  else differ.push(`${p.id}: ${ha ? "hit" : "miss"} here, ${hb ? "hit" : "miss"} in the base`);
  hitsA += ha ? 1 : 0;
  hitsB += hb ? 1 : 0;
});
for (let i = 0; i < a.vecs.length; i++) minCos = Math.min(minCos, dot(a.vecs[i]!, b.vecs[i]!));
console.log(`${a.backend} (this) vs ${b.backend} (${baseDir}), ${pairs.length} cache-train pairs (every ${step}th):`);
console.log(`identical decisions ${same} of ${pairs.length} (${((100 * same) / pairs.length).toFixed(2)} %); hits ${hitsA} vs ${hitsB}; smallest vector cosine ${minCos.toFixed(6)}; embedding ms/text (batches of 64) ${a.msPerText.toFixed(3)} vs ${b.msPerText.toFixed(3)}`);
for (const d of differ.slice(0, 20)) console.log(`  ${d}`);
