/**
 * Checks that the TypeScript/WASM USE-lite backend (use-lite-fast.ts) produces the same vectors as
 * the TF.js graph (use-lite.ts) and the same SentencePiece ids as @energetic-ai/embeddings.
 *
 *   ./node_modules/.bin/bun run scripts/bench/embedding-equivalence.ts [--data DIR] [--limit N] [--kernel wasm-i16|wasm|js]
 *
 * Embeds q1 and q2 of every pair in DIR/pairs.jsonl (default ../shared/data/cache-eval-dev) with
 * both backends, after the same text canonicalisation as the embedder (prepareText), and reports
 * min / p01 / mean cosine and the number of texts below 0.9999. Exit code 1 when any text is below.
 */
import { parseArgs } from "node:util";
import { UseLiteModel, prepareText } from "../../src/embedding/use-lite";
import { UseLiteFast, type UseLiteFastKernel } from "../../src/embedding/use-lite-fast";
import { dataDir } from "./data";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { data: { type: "string" }, limit: { type: "string" }, kernel: { type: "string" } },
});
const dir = dataDir("cache-eval-dev", values.data);
const lines = (await Bun.file(`${dir}/pairs.jsonl`).text()).split("\n").filter((l) => l.trim());
let texts = [...new Set(lines.flatMap((l) => {
  const p = JSON.parse(l) as { q1: string; q2: string };
  return [p.q1, p.q2];
}))].map((t) => prepareText(t));
if (values.limit) texts = texts.slice(0, Number(values.limit));

const ref = new UseLiteModel();
await ref.load();
const fast = new UseLiteFast((values.kernel as UseLiteFastKernel | undefined) ?? "auto");
await fast.load();
const refTok = (ref as unknown as { model: { tokenizer: { encode(s: string): number[] } } }).model.tokenizer;

let tokMismatch = 0;
const cos: number[] = [];
const BATCH = 16;
for (let i = 0; i < texts.length; i += BATCH) {
  const chunk = texts.slice(i, i + BATCH);
  for (const t of chunk) {
    const a = refTok.encode(t.length > 0 ? t : " ").slice(0, 128);
    const b = fast.tokenize(t);
    if (a.length > 0 && a.join(",") !== b.join(",")) {
      tokMismatch++;
      if (tokMismatch <= 5) console.log(`token mismatch: ${JSON.stringify(t)}\n  tfjs ${a}\n  fast ${b}`);
    }
  }
  const va = await ref.embedFlat(chunk);
  const vb = fast.embedFlat(chunk);
  for (let k = 0; k < chunk.length; k++) {
    let s = 0;
    for (let c = 0; c < 512; c++) s += va[k * 512 + c]! * vb[k * 512 + c]!;
    cos.push(s);
    if (s < 0.9999) console.log(`low cosine ${s.toFixed(6)}: ${JSON.stringify(chunk[k])}`);
  }
}
const sorted = [...cos].sort((a, b) => a - b);
const below = cos.filter((c) => c < 0.9999).length;
console.log(
  `texts=${cos.length} backend=${fast.backend()} token-mismatches=${tokMismatch} cosine min=${sorted[0]!.toFixed(7)} ` +
    `p01=${sorted[Math.floor(sorted.length * 0.01)]!.toFixed(7)} mean=${(cos.reduce((a, b) => a + b, 0) / cos.length).toFixed(7)} below-0.9999=${below}`,
);
process.exit(below > 0 || tokMismatch > 0 ? 1 : 0);
