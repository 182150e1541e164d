/**
 * Embeds every distinct question of cache-train/pairs.jsonl with the gateway's own local embedder
 * (USE-lite) and keeps the vectors in a gitignored file under data/, so that retraining
 * (scripts/train-cache-pair-model.ts, scripts/bench/cache-*.ts) does not embed ~124k texts again. The file is keyed by the
 * embedder id and the question list's hash; a stale file is rebuilt.
 *
 *   nice ./node_modules/.bin/bun run scripts/cache-train-embed.ts [--data DIR] [--out data/cache-train-emb.bin]
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createEmbedder } from "../src/embedding/index";
import { cliArg as arg, dataDir } from "./bench/data";
export { mulberry32 } from "./bench/data";

export interface TrainPair { id: string; q1: string; q2: string; label: number }
export interface EmbeddedSet { pairs: TrainPair[]; texts: string[]; index: Map<string, number>; dims: number; vecs: Float32Array; embedderId: string }

export const DEFAULT_EMB_FILE = resolve(import.meta.dir, "../data/cache-train-emb.bin");

export async function readPairs(dir: string): Promise<TrainPair[]> {
  return (await Bun.file(`${dir}/pairs.jsonl`).text()).trim().split("\n").map((l) => JSON.parse(l) as TrainPair);
}

/** Distinct texts in first-seen order (deterministic). */
export function distinctTexts(pairs: TrainPair[]): string[] {
  const seen = new Set<string>();
  for (const p of pairs) for (const t of [p.q1, p.q2]) seen.add(t);
  return [...seen];
}


/**
 * ROC AUC of a score over labelled rows: the share of (positive, negative) pairs the score orders
 * correctly (rows sorted by score, stable: ties count in input order). The training scripts' measure.
 */
export function aucOf<T>(rows: readonly T[], score: (r: T) => number, positive: (r: T) => unknown): number {
  const s = rows.map((r) => ({ p: score(r), y: positive(r) })).sort((a, b) => a.p - b.p);
  let neg = 0, acc = 0, pos = 0;
  for (const x of s) {
    if (x.y) {
      acc += neg;
      pos++;
    } else neg++;
  }
  return acc / Math.max(1, pos * neg);
}

/** FNV-1a of a string as a number in [0, 1). */
function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0) / 4294967296;
}

export type Part = "train" | "val" | "test";

/**
 * The held-out split by question, one for every training script: questions joined by any pair form
 * one component (so no question, nor its paraphrase, is in two parts); a component goes 80/10/10 to
 * train/val/test by the hash of its first-seen text.
 */
export function questionSplit({ pairs, texts, index }: Pick<EmbeddedSet, "pairs" | "texts" | "index">): (qi: number) => Part {
  const parent = texts.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  for (const p of pairs) {
    const a = find(index.get(p.q1)!), b = find(index.get(p.q2)!);
    if (a !== b) parent[Math.max(a, b)] = Math.min(a, b); // root = smallest index = first-seen text
  }
  return (qi) => {
    const h = fnv(texts[find(qi)]!);
    return h < 0.8 ? "train" : h < 0.9 ? "val" : "test";
  };
}

/**
 * k folds by duplicate cluster for cross-validation: questions joined by any pair (duplicate or not)
 * form one component, so no question, nor anything Quora paired it with, is in two folds; a component
 * goes to fold floor(k · hash(first-seen text)).
 */
export function clusterFolds({ pairs, texts, index }: Pick<EmbeddedSet, "pairs" | "texts" | "index">, k: number): (qi: number) => number {
  const parent = texts.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  for (const p of pairs) {
    const a = find(index.get(p.q1)!), b = find(index.get(p.q2)!);
    if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
  }
  return (qi) => Math.min(k - 1, Math.floor(fnv(`fold:${texts[find(qi)]!}`) * k));
}

/** Embeds `texts` with the local embedder, keeping the vectors in `file` (rebuilt when the texts or the embedder change). */
export async function embedCached(texts: string[], file: string, log = (s: string) => process.stderr.write(s + "\n")): Promise<{ dims: number; vecs: Float32Array }> {
  const hash = createHash("sha256").update(texts.join("\n")).digest("hex").slice(0, 16);
  const emb = createEmbedder({ provider: "local", lruSize: 0 });
  const header = `${emb.id}|${hash}|${texts.length}|${emb.dimensions}`;
  const dims = emb.dimensions;
  if (existsSync(file)) {
    const buf = new Uint8Array(await Bun.file(file).arrayBuffer());
    const hl = new DataView(buf.buffer).getUint32(0, true);
    if (new TextDecoder().decode(buf.subarray(4, 4 + hl)) === header) {
      await emb.close();
      return { dims, vecs: new Float32Array(buf.buffer.slice(4 + hl, 4 + hl + texts.length * dims * 4)) };
    }
  }
  await emb.load();
  const vecs = new Float32Array(texts.length * dims);
  for (let i = 0; i < texts.length; i += 64) (await emb.embed(texts.slice(i, i + 64))).forEach((v, k) => vecs.set(v, (i + k) * dims));
  await emb.close();
  mkdirSync(dirname(file), { recursive: true });
  const hb = new TextEncoder().encode(header);
  const out = new Uint8Array(4 + hb.length + vecs.byteLength);
  new DataView(out.buffer).setUint32(0, hb.length, true);
  out.set(hb, 4);
  out.set(new Uint8Array(vecs.buffer), 4 + hb.length);
  await Bun.write(file, out);
  log(`wrote ${file} (${texts.length} vectors)`);
  return { dims, vecs };
}

export async function loadOrEmbed(dir: string, file = DEFAULT_EMB_FILE, log = (s: string) => process.stderr.write(s + "\n")): Promise<EmbeddedSet> {
  const pairs = await readPairs(dir);
  const texts = distinctTexts(pairs);
  const index = new Map(texts.map((t, i) => [t, i]));
  const hash = createHash("sha256").update(texts.join("\n")).digest("hex").slice(0, 16);
  const emb = createEmbedder({ provider: "local", lruSize: 0 });
  const id = emb.id;
  const dims = emb.dimensions;
  const header = `${id}|${hash}|${texts.length}|${dims}`;
  if (existsSync(file)) {
    const buf = new Uint8Array(await Bun.file(file).arrayBuffer());
    const hl = new DataView(buf.buffer).getUint32(0, true);
    const h = new TextDecoder().decode(buf.subarray(4, 4 + hl));
    if (h === header) {
      await emb.close();
      const off = 4 + hl;
      const vecs = new Float32Array(buf.buffer.slice(off, off + texts.length * dims * 4));
      return { pairs, texts, index, dims, vecs, embedderId: id };
    }
    log(`embedding cache ${file} is stale (${h} != ${header}); re-embedding`);
  }
  await emb.load();
  const vecs = new Float32Array(texts.length * dims);
  const B = 64;
  const t0 = performance.now();
  for (let i = 0; i < texts.length; i += B) {
    const got = await emb.embed(texts.slice(i, i + B));
    got.forEach((v, k) => vecs.set(v, (i + k) * dims));
    if ((i / B) % 100 === 0) log(`embedded ${i + got.length}/${texts.length} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  }
  await emb.close();
  mkdirSync(dirname(file), { recursive: true });
  const hb = new TextEncoder().encode(header);
  const out = new Uint8Array(4 + hb.length + vecs.byteLength);
  new DataView(out.buffer).setUint32(0, hb.length, true);
  out.set(hb, 4);
  out.set(new Uint8Array(vecs.buffer), 4 + hb.length);
  await Bun.write(file, out);
  log(`wrote ${file} (${texts.length} vectors, ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  return { pairs, texts, index, dims, vecs, embedderId: id };
}

if (import.meta.main) {
  const s = await loadOrEmbed(dataDir("cache-train", arg("data")), arg("out") ?? DEFAULT_EMB_FILE);
  console.log(`${s.texts.length} texts x ${s.dims} (${s.embedderId})`);
}
