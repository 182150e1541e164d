/**
 * Word-level semantic alignment of two questions for the pair model (issue 25): BERTScore-like
 * features from USE-lite's static token-embedding table (`module/Embeddings_en`, 8,002 pieces x 256).
 * The sentence vector blurs which word differs; aligning each word with its best counterpart on the
 * other side says whether a differing word has a near-synonym there ("quickest"/"fastest") or
 * nothing like it.
 *
 * The table is read once, lazily, from the model package's files through core (as the word weights
 * read its vocabulary); the SentencePiece tokenizer that turns a text into table rows is the embedding
 * domain's, handed in by the composition root (`usePieceTokenizer`: the cache may not import it).
 * Per text: the piece ids of its words and the unit vectors of its content words, memoised by text
 * (ALIGN_MAX texts) over a memo of word vectors (WORD_MAX words, each shared by every text that has it):
 * a cached question is met again as a candidate long after its side analysis (4,096 texts) was
 * evicted, and its alignment — the SentencePiece pass, ~25 µs — is then not redone. Memory: the
 * packed per-text vectors this replaced were 9.5 KB a text; over 40,000 cache-train questions the heap
 * holds ~10 MB more than with them (49 vs 38 MB), for 4x the texts. Per pair: dot products into
 * buffers this module owns — no allocation per candidate.
 */
import { readFileSync } from "node:fs";
import { readUseLiteVocabularySync, useLiteFilePaths } from "../../core/use-lite-files";
import type { Side } from "./analyze";

/** SentencePiece ids of a text, as the embedder tokenises it (its own text preparation included). */
export type PieceTokenizer = (text: string) => ArrayLike<number>;

const TABLE = "module/Embeddings_en";

interface TokenTable {
  dims: number;
  /** vocabulary x dims, each row L2-normalised */
  rows: Float32Array;
  /** each row's length before normalising (a word's vector sums its pieces' rows as the model has them) */
  norms: Float32Array;
  /** IDF-like weight of each piece: -log p from the vocabulary's unigram model, at least 0.5 */
  weight: Float32Array;
  encode: PieceTokenizer;
}

let tokenizerFactory: (() => PieceTokenizer) | null = null;
let table: TokenTable | null = null;
let sides = new WeakMap<Side, AlignSide>();
/** alignment by text (see alignSide): ~300 bytes a text over the shared word vectors */
let byText = new Map<string, AlignSide>();
const ALIGN_MAX = 16_384;
/** a word's unit vector (dims floats, 1 KB), by the word: words recur across questions far more than texts do */
let wordVecs = new Map<string, Float32Array>();
const WORD_MAX = 8_192;

/** Installs the embedding domain's tokenizer (built on first use). The composition root calls this once. */
export function usePieceTokenizer(factory: () => PieceTokenizer): void {
  tokenizerFactory = factory;
  table = null;
  sides = new WeakMap();
  byText = new Map();
  wordVecs = new Map();
}

export function hasPieceTokenizer(): boolean {
  return tokenizerFactory !== null;
}

/** Where one float32 tensor of the model package lies in its shards: (path, offset in the file, length, offset in the tensor). */
function tensorRanges(name: string): { shape: number[]; bytes: number; ranges: Array<{ path: string; from: number; length: number; at: number }> } {
  const files = useLiteFilePaths();
  const model = JSON.parse(readFileSync(files.modelJson, "utf8")) as { weightsManifest: Array<{ paths: string[]; weights: Array<{ name: string; shape: number[]; dtype: string }> }> };
  for (const group of model.weightsManifest) {
    let off = 0;
    for (const w of group.weights) {
      const n = w.shape.reduce((a, b) => a * b, 1);
      if (w.name !== name) {
        off += n * 4;
        continue;
      }
      if (w.dtype !== "float32") throw new Error(`USE-lite weights: ${name} is ${w.dtype}, not float32`);
      const ranges: Array<{ path: string; from: number; length: number; at: number }> = [];
      let start = 0;
      for (const p of group.paths) {
        const path = files.shards[p];
        if (!path) throw new Error(`USE-lite weights: unknown shard ${p} (package changed?)`);
        const size = Bun.file(path).size; // (a path embedded in the compiled binary too)
        const lo = Math.max(off, start), hi = Math.min(off + n * 4, start + size);
        if (lo < hi) ranges.push({ path, from: lo - start, length: hi - lo, at: lo - off });
        start += size;
      }
      if (start < off + n * 4) throw new Error(`USE-lite weights: shards end before ${name}`);
      return { shape: w.shape, bytes: n * 4, ranges };
    }
  }
  throw new Error(`USE-lite weights: no tensor ${name}`);
}

const NO_TOKENIZER = "pair model: the alignment features need the embedding domain's piece tokenizer (usePieceTokenizer; the composition root installs it)";

function tableOf(shape: number[], data: Float32Array): TokenTable {
  if (!tokenizerFactory) throw new Error(NO_TOKENIZER);
  const [V, D] = shape as [number, number];
  const vocab = readUseLiteVocabularySync();
  if (vocab.length > V) throw new Error(`USE-lite weights: ${TABLE} has ${V} rows for ${vocab.length} pieces`);
  const rows = data;
  const norms = new Float32Array(V);
  for (let i = 0; i < V; i++) {
    let n = 0;
    for (let c = 0; c < D; c++) n += rows[i * D + c]! ** 2;
    norms[i] = Math.sqrt(n);
    const k = n > 0 ? 1 / Math.sqrt(n) : 0;
    for (let c = 0; c < D; c++) rows[i * D + c]! *= k;
  }
  const weight = new Float32Array(V).fill(0.5);
  for (let i = 0; i < vocab.length; i++) weight[i] = Math.max(0.5, -(vocab[i]![1] ?? 0));
  return { dims: D, rows, norms, weight, encode: tokenizerFactory() };
}

/** The table, read synchronously if nobody loaded it yet (a decision before loadTokenTable ended). */
function tokenTable(): TokenTable {
  if (table) return table;
  if (!tokenizerFactory) throw new Error(NO_TOKENIZER);
  const t = tensorRanges(TABLE);
  const out = new Uint8Array(t.bytes);
  for (const r of t.ranges) out.set(readFileSync(r.path).subarray(r.from, r.from + r.length), r.at);
  table = tableOf(t.shape, new Float32Array(out.buffer));
  return table;
}

/**
 * Reads the table without blocking the event loop (async reads of its byte ranges only); the
 * cache's start-up warm-up runs it after listening, so the first decision does not read 8 MB.
 */
export async function loadTokenTable(): Promise<void> {
  if (table || !tokenizerFactory) return;
  const t = tensorRanges(TABLE);
  const out = new Uint8Array(t.bytes);
  for (const r of t.ranges) out.set(new Uint8Array(await Bun.file(r.path).slice(r.from, r.from + r.length).arrayBuffer()), r.at);
  table ??= tableOf(t.shape, new Float32Array(out.buffer));
}

/** What a text contributes to the alignment, computed once per text (see the header). */
export interface AlignSide {
  /** piece ids of the text's words (lower-cased tokens joined by spaces) */
  pieces: Int32Array;
  /** unit vector of each content word (dims floats): the normalised sum of the word's piece rows */
  words: Float32Array[];
}

/** The unit vector of a word: the sum of its pieces' rows as the model has them, normalised (memoised, shared). */
function wordVec(tt: TokenTable, lower: string): Float32Array {
  const hit = wordVecs.get(lower);
  if (hit) return hit;
  const D = tt.dims;
  const v = new Float32Array(D);
  for (const id of Array.from(tt.encode(lower))) for (let c = 0; c < D; c++) v[c]! += tt.rows[id * D + c]! * tt.norms[id]!;
  let n = 0;
  for (let c = 0; c < D; c++) n += v[c]! ** 2;
  const k = n > 0 ? 1 / Math.sqrt(n) : 0;
  for (let c = 0; c < D; c++) v[c]! *= k;
  if (wordVecs.size >= WORD_MAX) wordVecs.delete(wordVecs.keys().next().value!);
  wordVecs.set(lower, v);
  return v;
}

export function alignSide(side: Side): AlignSide {
  const hit = sides.get(side);
  if (hit) return hit;
  const tt = tokenTable();
  let text = "";
  for (const t of side.tokens) text += text ? ` ${t.lower}` : t.lower;
  // the pieces follow from the text, the word vectors from the content words: both are in the key
  let key = `${text}\u0001`;
  for (const t of side.content) key += ` ${t.lower}`;
  let s = byText.get(key);
  if (!s) {
    s = { pieces: Int32Array.from(tt.encode(text)), words: side.content.map((t) => wordVec(tt, t.lower)) };
    if (byText.size >= ALIGN_MAX) byText.delete(byText.keys().next().value!);
    byText.set(key, s);
  }
  sides.set(side, s);
  return s;
}

export const ALIGN_FEATURES = [
  "alignP", // content words of the first text: weighted mean of each one's best cosine on the other side (1 for the same word)
  "alignR", // ... of the second text
  "alignF", // harmonic mean of the two
  "alignWorstLo", // the worst-aligned content word's best cosine (lower of the two sides)
  "alignWorstHi", // ... the higher of the two sides' worst
  "alignDeficit", // largest weight x (1 - best cosine) of a content word
  "alignBelow3", // content words (both sides) whose best cosine is below 0.3
  "alignBelow5", // ... below 0.5
  "alignBelow7", // ... below 0.7
  "pieceP", // the same over every piece of the text (function words included), weighted by the piece's -log p
  "pieceR",
  "pieceF",
  "pieceWorst", // the worst-aligned piece's best cosine
  "pieceDeficit", // largest weight x (1 - best cosine) of a piece
] as const;
export const ALIGN_FEATURE_COUNT = ALIGN_FEATURES.length;

let bestA = new Float64Array(64);
let bestB = new Float64Array(64);
function buffers(n: number): void {
  if (bestA.length >= n && bestB.length >= n) return;
  bestA = new Float64Array(2 * n);
  bestB = new Float64Array(2 * n);
}

function dotRows(x: Float32Array, xo: number, y: Float32Array, yo: number, D: number): number {
  let s = 0;
  for (let c = 0; c < D; c++) s += x[xo + c]! * y[yo + c]!;
  return s;
}

/** best[i] = the best cosine of x's word i on y's side (1 for the same word or stem; 0 when y has no content word) */
function wordBest(x: Side, xs: AlignSide, y: Side, ys: AlignSide, D: number, best: Float64Array): void {
  const nx = x.content.length, ny = y.content.length;
  for (let i = 0; i < nx; i++) {
    const a = x.content[i]!;
    let b = ny > 0 ? -1 : 0;
    for (let j = 0; j < ny && b < 1; j++) {
      const o = y.content[j]!;
      const v = a.lower === o.lower || a.stem === o.stem ? 1 : dotRows(xs.words[i]!, 0, ys.words[j]!, 0, D);
      if (v > b) b = v;
    }
    best[i] = b;
  }
}

/**
 * Cosines of piece pairs already computed (direct-mapped, exact values: a slot holds one pair's dot
 * product or nothing). Common pieces meet again and again across candidates; a hit is one probe
 * instead of 256 multiply-adds.
 */
const PAIR_SLOTS = 1 << 16;
const pairKey = new Int32Array(PAIR_SLOTS).fill(-1);
const pairDot = new Float64Array(PAIR_SLOTS);

function pieceDot(rows: Float32Array, D: number, V: number, p: number, q: number): number {
  const key = p < q ? p * V + q : q * V + p;
  const slot = Math.imul(key, 0x9e3779b1) >>> 16;
  if (pairKey[slot] === key) return pairDot[slot]!;
  const v = dotRows(rows, p * D, rows, q * D, D);
  pairKey[slot] = key;
  pairDot[slot] = v;
  return v;
}

/** best[i] = the best cosine of x's piece i among y's pieces (1 when y has the same piece) */
function pieceBest(x: Int32Array, y: Int32Array, rows: Float32Array, D: number, best: Float64Array): void {
  const V = rows.length / D;
  for (let i = 0; i < x.length; i++) {
    const p = x[i]!;
    let b = y.length > 0 ? -1 : 0;
    for (let j = 0; j < y.length; j++) if (y[j] === p) b = 1;
    for (let j = 0; j < y.length && b < 1; j++) {
      const v = pieceDot(rows, D, V, p, y[j]!);
      if (v > b) b = v;
    }
    best[i] = b;
  }
}

/**
 * One side's weighted sums of its words' best matches (WS.sum, WS.total, WS.min), and what both sides share
 * (the largest weighted mismatch, the counts below 0.3 / 0.5 / 0.7) added up across the two calls. Module
 * state, like the buffers above: no allocation per pair.
 */
const WS = { sum: 0, total: 0, min: 1, deficit: 0, below3: 0, below5: 0, below7: 0 };
function wordSide(side: Side, best: Float64Array): void {
  let sum = 0, total = 0, min = 1;
  for (let i = 0; i < side.content.length; i++) {
    const w = side.content[i]!.weight, v = best[i]!;
    (sum += w * v), (total += w);
    if (v < min) min = v;
    if (w * (1 - v) > WS.deficit) WS.deficit = w * (1 - v);
    if (v < 0.3) WS.below3++;
    if (v < 0.5) WS.below5++;
    if (v < 0.7) WS.below7++;
  }
  (WS.sum = sum), (WS.total = total), (WS.min = min);
}

/** The same over a side's pieces, weighted by their rarity (PS.sum, PS.total; PS.worst and PS.deficit across both sides). */
const PS = { sum: 0, total: 0, worst: 1, deficit: 0 };
function pieceSide(pieces: ArrayLike<number>, weight: ArrayLike<number>, best: Float64Array): void {
  let sum = 0, total = 0;
  for (let i = 0; i < pieces.length; i++) {
    const w = weight[pieces[i]!]!, v = best[i]!;
    (sum += w * v), (total += w);
    if (v < PS.worst) PS.worst = v;
    if (w * (1 - v) > PS.deficit) PS.deficit = w * (1 - v);
  }
  (PS.sum = sum), (PS.total = total);
}

/** Writes the ALIGN_FEATURE_COUNT alignment features of sides a and b into out from offset k; returns the next offset. */
export function alignFeatures(a: Side, b: Side, out: Float64Array, k: number): number {
  const tt = tokenTable();
  const D = tt.dims;
  const sa = alignSide(a), sb = alignSide(b);
  const na = a.content.length, nb = b.content.length;
  buffers(Math.max(na, nb, sa.pieces.length, sb.pieces.length));
  wordBest(a, sa, b, sb, D, bestA);
  wordBest(b, sb, a, sa, D, bestB);
  WS.deficit = WS.below3 = WS.below5 = WS.below7 = 0;
  wordSide(a, bestA);
  const sA = WS.sum, tA = WS.total, minA = WS.min;
  wordSide(b, bestB);
  const sB = WS.sum, tB = WS.total, minB = WS.min;
  const { deficit, below3, below5, below7 } = WS;
  const P = tA > 0 ? sA / tA : 1, R = tB > 0 ? sB / tB : 1;
  out[k++] = P;
  out[k++] = R;
  out[k++] = P + R > 0 ? (2 * P * R) / (P + R) : 0;
  out[k++] = Math.min(minA, minB);
  out[k++] = Math.max(minA, minB);
  out[k++] = deficit;
  out[k++] = below3;
  out[k++] = below5;
  out[k++] = below7;
  pieceBest(sa.pieces, sb.pieces, tt.rows, D, bestA);
  pieceBest(sb.pieces, sa.pieces, tt.rows, D, bestB);
  PS.worst = 1;
  PS.deficit = 0;
  pieceSide(sa.pieces, tt.weight, bestA);
  const pa = PS.sum, qa = PS.total;
  pieceSide(sb.pieces, tt.weight, bestB);
  const pb = PS.sum, qb = PS.total;
  const { worst, deficit: pdef } = PS;
  const pP = qa > 0 ? pa / qa : 1, pR = qb > 0 ? pb / qb : 1;
  out[k++] = pP;
  out[k++] = pR;
  out[k++] = pP + pR > 0 ? (2 * pP * pR) / (pP + pR) : 0;
  out[k++] = worst;
  out[k++] = pdef;
  return k;
}
