/**
 * Offline quality of the semantic-cache decision (embedding cosine + hit verifier)
 * on the labelled dev set, without running the gateway.
 *
 *   ./node_modules/.bin/bun run scripts/bench/cache-quality-offline.ts \
 *     [--data ../shared/data/cache-eval-dev] [--provider local|openai] \
 *     [--base-url URL --model NAME --api-key KEY] [--thresholds 0.8,0.85,...]
 *
 * Split discipline: rules and defaults were chosen on the even ids; every table
 * reports the even ("tune") and odd ("held-out") halves separately, plus all.
 *
 * Single-turn (pairs.jsonl): a pair "hits" when cosine(q1, q2) >= T and, with the
 * verifier, verifyPair(q2, q1, cosine).accept. Multi-turn (multiturn.jsonl): the
 * last user messages are compared as above, and the context tier is replayed as
 * the engine runs it (src/cache/engine.ts): stage 1 q >= 0.85, stage 2
 * 0.3·q + 0.7·c >= 0.92 on the fused context (context.ts, system messages left
 * out as the OpenAI adapter does), the verifier on the last queries, and the
 * earlier user turns pairwise: all accepted, or hard rules only ("reworded")
 * with stage 2 >= CONTEXT_REWORDED_THRESHOLD.
 */
import { createEmbedder, dot } from "../../src/embedding/index";
import { DEFAULT_VERIFY_OPTIONS, LOW_SCORE, verifyPair, type VerifyOptions } from "../../src/cache/verify/index";
import { contextWindow, fuseContext } from "../../src/cache/context";
import { CONTEXT_REWORDED_THRESHOLD } from "../../src/cache/engine";
import { dataDir } from "./data";

function arg(name: string, def?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : def;
}
const dataDirPath = dataDir("cache-eval-dev", arg("data"));
const provider = (arg("provider", "local") as "local" | "openai") ?? "local";
const thresholds = (arg("thresholds", "0.75,0.8,0.85,0.88,0.9,0.92,0.94,0.96,0.98")!).split(",").map(Number);

interface Pair { id: string; q1: string; q2: string; label: number; category: string }
interface Msg { role: string; content: string }
interface Conv { id: string; expect: "hit" | "miss"; kind: string; variant: string; first: Msg[]; second: Msg[] }

const readJsonl = async <T>(p: string): Promise<T[]> =>
  (await Bun.file(p).text()).trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as T);
const pairs = await readJsonl<Pair>(`${dataDirPath}/pairs.jsonl`);
const convs = await readJsonl<Conv>(`${dataDirPath}/multiturn.jsonl`);

const embedder = createEmbedder({
  provider,
  baseUrl: arg("base-url"),
  model: arg("model"),
  apiKey: arg("api-key") ?? process.env.EMBEDDINGS_API_KEY,
  timeoutMs: 60_000,
});
const t0 = performance.now();
await embedder.load();
const loadMs = performance.now() - t0;

const lastUser = (m: Msg[]) => [...m].reverse().find((x) => x.role === "user")?.content ?? "";
const context = (m: Msg[]) => {
  const users = m.filter((x) => x.role === "user").map((x) => x.content);
  return users.slice(0, -1).join("\n");
};
const texts: string[] = [];
for (const p of pairs) texts.push(p.q1, p.q2);
for (const c of convs) texts.push(lastUser(c.first), lastUser(c.second), context(c.first), context(c.second));
const turnTexts = [...new Set(convs.flatMap((c) => [...c.first, ...c.second].filter((m) => m.role !== "system").map((m) => m.content)))];
texts.push(...turnTexts);
const t1 = performance.now();
const vecs = await embedder.embed(texts);
const embedMs = performance.now() - t1;
let k = 0;
const pairCos = pairs.map(() => {
  const c = dot(vecs[k]!, vecs[k + 1]!);
  k += 2;
  return c;
});
const convCos = convs.map(() => {
  const last = dot(vecs[k]!, vecs[k + 1]!);
  const ctx = dot(vecs[k + 2]!, vecs[k + 3]!);
  k += 4;
  return { last, ctx };
});
const turnVec = new Map(turnTexts.map((t, i) => [t, vecs[k + i]!]));
// The engine's view of a conversation: history window, fused context vector, earlier user turns.
const engineSide = (m: Msg[]) => {
  const turns = m.filter((x) => x.role !== "system");
  const hist = contextWindow(turns.slice(0, -1).map((x) => ({ role: x.role === "assistant" ? "assistant" : "user", text: x.content }) as const), 20);
  return {
    ctx: hist.length ? fuseContext(hist.map((t) => turnVec.get(t.text)!), embedder.dimensions) : null,
    users: hist.filter((t) => t.role === "user").map((t) => ({ text: t.text, vec: turnVec.get(t.text)! })),
  };
};
type TurnRule = "pairwise-verified" | "engine";
function engineHit(c: Conv, i: number, rule: TurnRule, vo?: Partial<VerifyOptions>): boolean {
  const a = engineSide(c.second), b = engineSide(c.first);
  const q = convCos[i]!.last;
  if (!a.ctx || !b.ctx) return false; // single-turn vs context mode: different partitions
  const score = 0.3 * q + 0.7 * dot(a.ctx, b.ctx);
  if (q < 0.85 || score < 0.92) return false;
  if (!verifyPair(lastUser(c.second), lastUser(c.first), q, vo).accept) return false;
  if (a.users.length !== b.users.length) return false;
  let reworded = false;
  for (let j = 0; j < a.users.length; j++) {
    const r = verifyPair(a.users[j]!.text, b.users[j]!.text, dot(a.users[j]!.vec, b.users[j]!.vec), vo);
    if (r.accept) continue;
    if (rule === "pairwise-verified" || r.reason !== LOW_SCORE) return false;
    reworded = true;
  }
  return !reworded || score >= CONTEXT_REWORDED_THRESHOLD;
}

// Verifier decisions (independent of T; T is the nearest-neighbour threshold applied before).
const tv = performance.now();
const pairVerdict = pairs.map((p, i) => verifyPair(p.q2, p.q1, pairCos[i]!));
const verifyUs = ((performance.now() - tv) * 1000) / pairs.length;

const isEven = (id: string) => Number.parseInt(id.slice(-4), 10) % 2 === 0;
type Half = "even" | "odd" | "all";
const inHalf = (id: string, h: Half) => h === "all" || (h === "even") === isEven(id);

interface Stats { prec: number; rec: number; fhr: number; f1: number; hits: number }
function stats(h: Half, T: number, verify: boolean): Stats {
  let tp = 0, fp = 0, P = 0, N = 0;
  pairs.forEach((p, i) => {
    if (!inHalf(p.id, h)) return;
    if (p.label) P++;
    else N++;
    const hit = pairCos[i]! >= T && (!verify || pairVerdict[i]!.accept);
    if (hit) p.label ? tp++ : fp++;
  });
  const prec = tp + fp ? tp / (tp + fp) : 1;
  const rec = P ? tp / P : 0;
  return { prec, rec, fhr: N ? fp / N : 0, f1: prec + rec ? (2 * prec * rec) / (prec + rec) : 0, hits: tp + fp };
}
const f3 = (x: number) => x.toFixed(3);

const out: string[] = [];
const say = (s = "") => {
  out.push(s);
  console.log(s);
};
say(`# Semantic cache offline quality`);
say();
say(`embedder: \`${embedder.id}\` (${embedder.dimensions}-d), load ${loadMs.toFixed(0)} ms, embedded ${texts.length} texts in ${(embedMs / 1000).toFixed(1)} s; verifier ${verifyUs.toFixed(0)} µs/pair`);
say(`verifier defaults: minScore=${DEFAULT_VERIFY_OPTIONS.minScore} maxUnmatched=${DEFAULT_VERIFY_OPTIONS.maxUnmatched} unmatchedPenalty=${DEFAULT_VERIFY_OPTIONS.unmatchedPenalty} rephraseMinWords=${DEFAULT_VERIFY_OPTIONS.rephraseMinWords} ignoreRequestVerbs=${DEFAULT_VERIFY_OPTIONS.ignoreRequestVerbs} acronyms=${DEFAULT_VERIFY_OPTIONS.acronyms}`);
say();
say(`## pairs.jsonl (${pairs.length} pairs): precision / recall / false-hit rate / F1`);
say();
say(`| T | verifier | even P | even R | even FHR | even F1 | odd P | odd R | odd FHR | odd F1 | all P | all R | all FHR |`);
say(`|---|---|---|---|---|---|---|---|---|---|---|---|---|`);
for (const verify of [false, true]) {
  for (const T of thresholds) {
    const e = stats("even", T, verify), o = stats("odd", T, verify), a = stats("all", T, verify);
    say(`| ${T} | ${verify ? "yes" : "no"} | ${f3(e.prec)} | ${f3(e.rec)} | ${f3(e.fhr)} | ${f3(e.f1)} | ${f3(o.prec)} | ${f3(o.rec)} | ${f3(o.fhr)} | ${f3(o.f1)} | ${f3(a.prec)} | ${f3(a.rec)} | ${f3(a.fhr)} |`);
  }
}

// Per-category hit rates at a few thresholds.
const cats = [...new Set(pairs.map((p) => p.category))].sort();
say();
say(`## Hit rate per category (all pairs)`);
say();
say(`| category | n | cos>=0.85 | cos>=0.9 | cos>=0.95 | cos>=0.85 + verifier (default) |`);
say(`|---|---|---|---|---|---|`);
for (const c of cats) {
  const idx = pairs.map((p, i) => (p.category === c ? i : -1)).filter((i) => i >= 0);
  const rate = (f: (i: number) => boolean) => f3(idx.filter(f).length / idx.length);
  say(`| ${c} | ${idx.length} | ${rate((i) => pairCos[i]! >= 0.85)} | ${rate((i) => pairCos[i]! >= 0.9)} | ${rate((i) => pairCos[i]! >= 0.95)} | ${rate((i) => pairCos[i]! >= 0.85 && pairVerdict[i]!.accept)} |`);
}

// Why the verifier rejects, per label.
say();
say(`## Verifier reasons (pairs with cosine >= 0.85)`);
say();
const reasons = new Map<string, [number, number]>();
pairs.forEach((p, i) => {
  if (pairCos[i]! < 0.85) return;
  const r = pairVerdict[i]!.reason.split(":")[0]!;
  const v = reasons.get(r) ?? [0, 0];
  v[p.label ? 0 : 1]++;
  reasons.set(r, v);
});
say(`| reason | label 1 (same) | label 0 (different) |`);
say(`|---|---|---|`);
for (const [r, [a, b]] of [...reasons].sort((x, y) => y[1][0] + y[1][1] - x[1][0] - x[1][1])) say(`| ${r} | ${a} | ${b} |`);

// Multi-turn.
say();
say(`## multiturn.jsonl (${convs.length} cases): hit rate by kind`);
say();
say(`Columns: the last message alone (cosine >= 0.85 + verifier); the context tier with every earlier user turn verified`);
say(`pairwise (the rule before §9 of docs/notes/embedding-quality.md); the context tier as the engine runs it now`);
say(`(reworded earlier turns pass on the hard rules when stage 2 >= ${CONTEXT_REWORDED_THRESHOLD}).`);
say();
say(`| kind | expect | n | last message only | context, turns verified pairwise | context, engine rule |`);
say(`|---|---|---|---|---|---|`);
const kinds = [...new Set(convs.map((c) => `${c.expect}|${c.kind}`))].sort();
const mtHit = convs.map((c, i) => {
  const a = lastUser(c.second), b = lastUser(c.first);
  const lastOk = convCos[i]!.last >= 0.85 && verifyPair(a, b, convCos[i]!.last).accept;
  return { lastOk, pairwise: engineHit(c, i, "pairwise-verified"), engine: engineHit(c, i, "engine") };
});
for (const key of kinds) {
  const [expect, kind] = key.split("|");
  const idx = convs.map((c, i) => (c.expect === expect && c.kind === kind ? i : -1)).filter((i) => i >= 0);
  const r = (m: "lastOk" | "pairwise" | "engine") => f3(idx.filter((i) => mtHit[i]![m]).length / idx.length);
  say(`| ${kind} | ${expect} | ${idx.length} | ${r("lastOk")} | ${r("pairwise")} | ${r("engine")} |`);
}
say();
say(`| rule | half | hit rate on expect=hit | false-hit rate on expect=miss |`);
say(`|---|---|---|---|`);
for (const mode of ["lastOk", "pairwise", "engine"] as const) {
  for (const h of ["even", "odd", "all"] as const) {
    let tp = 0, fp = 0, P = 0, N = 0;
    convs.forEach((c, i) => {
      if (!inHalf(c.id, h)) return;
      c.expect === "hit" ? P++ : N++;
      if (mtHit[i]![mode]) c.expect === "hit" ? tp++ : fp++;
    });
    const name = { lastOk: "last message only", pairwise: "context, turns verified pairwise", engine: "context, engine rule" }[mode];
    say(`| ${name} | ${h} | ${f3(tp / P)} (${tp}/${P}) | ${f3(fp / N)} (${fp}/${N}) |`);
  }
}

// Ablation of the verifier options (single-turn, cosine >= 0.85 before it).
say();
say(`## Ablation (pairs.jsonl, cosine >= 0.85 + verifier)`);
say();
say(`| variant | even P | even R | even FHR | odd P | odd R | odd FHR |`);
say(`|---|---|---|---|---|---|---|`);
const variants: [string, Partial<VerifyOptions>][] = [
  ["**default**", {}],
  ["no rewording rule (rephraseMinWords 0; the previous default)", { rephraseMinWords: 0, ignoreRequestVerbs: false, acronyms: false }],
  ["rephraseMinWords 2", { rephraseMinWords: 2 }],
  ["rephraseMinWords 4", { rephraseMinWords: 4 }],
  ["request verbs as content words", { ignoreRequestVerbs: false }],
  ["no acronym alignment", { acronyms: false }],
  ["no number rule", { rejectNumbers: false }],
  ["no entity rule", { rejectEntities: false }],
  ["no negation rule", { rejectNegation: false }],
  ["no order rule", { rejectOrder: false }],
];
for (const [name, vo] of variants) {
  const row: string[] = [];
  for (const h of ["even", "odd"] as const) {
    let tp = 0, fp = 0, P = 0, N = 0;
    pairs.forEach((p, i) => {
      if (!inHalf(p.id, h)) return;
      p.label ? P++ : N++;
      if (pairCos[i]! >= 0.85 && verifyPair(p.q2, p.q1, pairCos[i]!, vo).accept) p.label ? tp++ : fp++;
    });
    row.push(f3(tp / Math.max(1, tp + fp)), f3(tp / P), f3(fp / N));
  }
  say(`| ${name} | ${row.join(" | ")} |`);
}

const saveTo = arg("out");
if (saveTo) await Bun.write(saveTo, `${out.join("\n")}\n`);
await embedder.close();
