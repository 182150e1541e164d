/**
 * Question-frame rewordings of cache-train's own questions (issue 25, item 2 of the surface task): the
 * same question asked in another frame — "What is X?" / "Can you explain X?" / "Tell me about X",
 * "How do I X?" / "How can I X?" / "What is the way to X?" — a stand-in for the machine paraphrases of
 * cache-eval-dev's `dup_paraphrase` (which cannot be generated offline; GPTCache data is never used).
 * Measures how the shipped decision treats them: cosine, hard rules, model, per frame family. Never
 * reads cache-eval-dev.
 *
 *   nice ./node_modules/.bin/bun run scripts/bench/cache-frame-rewordings.ts [--per-frame 400]
 *
 * The shipped model was trained on all of cache-train but never on a frame rewording, so for this kind its
 * figures are out of sample; the sources are cache-train questions (the same distribution as the CV's).
 */
import { resolve } from "node:path";
import { DEFAULT_EMB_FILE, embedCached, loadOrEmbed } from "../cache-train-embed";
import { cliArg as arg, dataDir, mulberry32, seededOrder } from "./data";
import { installPieceTokenizer } from "./cache-piece-tokenizer";
import { defaultLearnedModel } from "../../src/cache/verify/learned-default";
import { dot } from "../../src/core/vectors";

installPieceTokenizer();

interface Frame { name: string; re: RegExp; to: Array<(m: RegExpExecArray) => string> }
const FRAMES: Frame[] = [
  // definition: "What is X?" -> "Can you explain X?" / "Tell me about X." / "Explain X."
  { name: "what-is -> explain", re: /^What (is|are) ((?:an? |the )?[^?]{3,60})\?$/, to: [(m) => `Can you explain ${m[2]}?`, (m) => `Tell me about ${m[2]}.`, (m) => `Explain ${m[2]}.`] },
  // how-to: "How do I X?" -> "How can I X?" / "What is the way to X?"
  { name: "how-do-i -> way-to", re: /^How (?:do|can|should) I ([^?]{3,80})\?$/, to: [(m) => `What is the way to ${m[1]}?`, (m) => `In what way can I ${m[1]}?`, (m) => `Tell me how to ${m[1]}.`] },
  // "What are some good X?" -> "Can you recommend some good X?"
  { name: "what-are-good -> recommend", re: /^What are (?:some )?(?:the )?(good|best) ([^?]{3,60})\?$/, to: [(m) => `Can you recommend some ${m[1]} ${m[2]}?`, (m) => `Which ${m[2]} are ${m[1] === "best" ? "the best" : "good"}?`] },
];

/** Frame rewordings of `questions`, at most `perFrame` per frame family (deterministic in `seed`). */
export function makeFrameRewordings(questions: string[], perFrame: number, seed: number): Array<{ frame: string; source: string; edited: string }> {
  const rnd = mulberry32(seed);
  const rows: Array<{ frame: string; source: string; edited: string }> = [];
  for (const f of FRAMES) {
    const qs = seededOrder(questions, rnd);
    let n = 0;
    for (const q of qs) {
      const m = f.re.exec(q);
      if (!m) continue;
      rows.push({ frame: f.name, source: q, edited: f.to[Math.floor(rnd() * f.to.length)]!(m) });
      if (++n >= perFrame) break;
    }
  }
  return rows;
}

if (import.meta.main) {
  const per = Number(arg("per-frame") ?? 400);
  const log = (s: string) => process.stderr.write(s + "\n");
  const set = await loadOrEmbed(dataDir("cache-train", arg("data")), arg("emb") ?? DEFAULT_EMB_FILE, log);
  const { texts, index, dims, vecs } = set;
  const rows = makeFrameRewordings(texts, per, 4500);
  const e = await embedCached(rows.map((r) => r.edited), resolve(import.meta.dir, `../../data/cache-train-frame-emb-${per}.bin`), log);
  const m = defaultLearnedModel();
  log(`shipped point: cosine >= ${m.minCosine}, probability >= ${m.threshold}`);
  const out: string[] = ["| frame family | pairs | cosine median | cosine >= floor | vetoed by a hard rule | model's probability >= its threshold | hit |", "|---|---|---|---|---|---|---|"];
  for (const f of FRAMES) {
    const rs = rows.map((r, i) => ({ ...r, i })).filter((r) => r.frame === f.name);
    let above = 0, veto = 0, hit = 0, accepts = 0;
    const cs: number[] = [];
    const ex: string[] = [];
    for (const r of rs) {
      const u = e.vecs.subarray(r.i * e.dims, (r.i + 1) * e.dims), v = vecs.subarray(index.get(r.source)! * dims, (index.get(r.source)! + 1) * dims);
      const cos = dot(u, v);
      cs.push(cos);
      const d = m.decide(r.edited, r.source, cos);
      if (cos >= m.minCosine) above++;
      if (d.learned === undefined) veto++;
      else if (d.learned >= m.threshold) accepts++;
      if (d.accept && cos >= m.minCosine) hit++;
      else if (ex.length < 4) ex.push(`${JSON.stringify(r.source)} -> ${JSON.stringify(r.edited)} cos ${cos.toFixed(3)} ${d.reason} ${d.learned?.toFixed(3) ?? ""}`);
    }
    cs.sort((a, b) => a - b);
    const pct = (k: number) => `${k} (${((100 * k) / Math.max(1, rs.length)).toFixed(1)} %)`;
    out.push(`| ${f.name} | ${rs.length} | ${cs[cs.length >> 1]?.toFixed(3)} | ${pct(above)} | ${pct(veto)} | ${pct(accepts)} | ${pct(hit)} |`);
    for (const x of ex) log(`  ${f.name}: ${x}`);
  }
  console.log(out.join("\n"));
}
