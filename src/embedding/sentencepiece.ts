/**
 * USE-lite's SentencePiece tokenizer, without TF.js.
 *
 * Produces exactly the ids of `@energetic-ai/embeddings`' Tokenizer (the one the TF.js path uses),
 * including its quirks, because the model was run with those ids:
 *  - input: NFKC, "▁" prepended, spaces replaced by "▁"; positions are code points;
 *  - every piece that starts at a position is a candidate; a position with no piece yields the
 *    unknown id 0 for one code point;
 *  - best path: for each end position, candidates are visited by ascending start position and a
 *    candidate replaces the current best when the best is still 0 (unset) or its score is >=
 *    (ties go to the later start);
 *  - back-tracking steps back by the piece's string length (UTF-16 units, as the original does);
 *  - runs of unknown ids are merged into one.
 * The first 6 vocabulary entries are reserved (never produced except id 0 for unknowns).
 */
export type Vocabulary = ReadonlyArray<readonly [string, number]>;

const SEP = "\u2581";
const RESERVED = 6;

interface Node {
  next: Map<string, Node> | null;
  /** Vocabulary index when a piece ends here, else -1. */
  id: number;
  score: number;
  /** Piece length in code points. */
  len: number;
}

function newNode(len: number): Node {
  return { next: null, id: -1, score: 0, len };
}

export class SentencePieceTokenizer {
  private readonly root = newNode(0);
  /** String length (UTF-16 units) of each vocabulary piece, used when back-tracking. */
  private readonly pieceLen: Int32Array;

  constructor(vocab: Vocabulary) {
    this.pieceLen = new Int32Array(vocab.length);
    for (let i = 0; i < vocab.length; i++) this.pieceLen[i] = vocab[i]![0].length;
    for (let i = RESERVED; i < vocab.length; i++) {
      const [piece, score] = vocab[i]!;
      let node = this.root;
      let depth = 0;
      for (const ch of piece) {
        depth++;
        node.next ??= new Map();
        let child = node.next.get(ch);
        if (!child) {
          child = newNode(depth);
          node.next.set(ch, child);
        }
        node = child;
      }
      if (node !== this.root) {
        node.id = i;
        node.score = score;
      }
    }
  }

  encode(text: string): number[] {
    const normalized = text.normalize("NFKC");
    const input = normalized.length > 0 ? SEP + normalized.replaceAll(" ", SEP) : normalized;
    const sym = Array.from(input);
    const n = sym.length;
    // Candidates ending at each position, in ascending start order: flat lists of (start, id, score, len).
    const ends: { start: number; id: number; score: number }[][] = Array.from({ length: n + 1 }, () => []);
    for (let i = 0; i < n; i++) {
      let node = this.root.next?.get(sym[i]!);
      let found = false;
      for (let j = i; j < n && node; j++) {
        if (node.id >= 0) {
          ends[j + 1]!.push({ start: i, id: node.id, score: node.score });
          found = true;
        }
        node = j + 1 < n ? node.next?.get(sym[j + 1]!) : undefined;
      }
      if (!found) ends[i + 1]!.push({ start: i, id: 0, score: 0 });
    }
    // Candidates were pushed by ascending start (outer loop), matching the original's iteration order.
    const best = new Float64Array(n + 1);
    const word = new Int32Array(n + 1);
    for (let e = 0; e <= n; e++) {
      for (const c of ends[e]!) {
        const s = c.score + best[c.start]!;
        if (best[e] === 0 || s >= best[e]!) {
          best[e] = s;
          word[e] = c.id;
        }
      }
    }
    const out: number[] = [];
    let it = n;
    while (it > 0) {
      const id = word[it]!;
      out.push(id);
      it -= this.pieceLen[id]!;
    }
    const merged: number[] = [];
    let prevUnk = false;
    for (const id of out) {
      if (!(prevUnk && id === 0)) merged.push(id);
      prevUnk = id === 0;
    }
    return merged.reverse();
  }
}
