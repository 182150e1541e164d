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
  /** Children by code point. */
  next: Map<number, Node> | null;
  /** Vocabulary index when a piece ends here, else -1. */
  id: number;
  score: number;
}

function newNode(): Node {
  return { next: null, id: -1, score: 0 };
}

/** Pure ASCII without control characters: NFKC leaves it as it is. */
const PLAIN_ASCII = /^[\x20-\x7e]*$/;

export class SentencePieceTokenizer {
  private readonly root = newNode();
  /** String length (UTF-16 units) of each vocabulary piece, used when back-tracking. */
  private readonly pieceLen: Int32Array;
  // per-call scratch, grown as needed: code points, best score and piece id per end position
  private cps = new Int32Array(256);
  private best = new Float64Array(257);
  private word = new Int32Array(257);

  constructor(vocab: Vocabulary) {
    this.pieceLen = new Int32Array(vocab.length);
    for (let i = 0; i < vocab.length; i++) this.pieceLen[i] = vocab[i]![0].length;
    for (let i = RESERVED; i < vocab.length; i++) {
      const [piece, score] = vocab[i]!;
      let node = this.root;
      for (const ch of piece) {
        const cp = ch.codePointAt(0)!;
        node.next ??= new Map();
        let child = node.next.get(cp);
        if (!child) {
          child = newNode();
          node.next.set(cp, child);
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
    const normalized = PLAIN_ASCII.test(text) ? text : text.normalize("NFKC");
    const input = normalized.length > 0 ? SEP + normalized.replaceAll(" ", SEP) : normalized;
    if (input.length + 1 > this.best.length) {
      this.cps = new Int32Array(input.length);
      this.best = new Float64Array(input.length + 1);
      this.word = new Int32Array(input.length + 1);
    }
    const cps = this.cps, best = this.best, word = this.word;
    let n = 0;
    for (let u = 0; u < input.length; n++) {
      const cp = input.codePointAt(u)!;
      cps[n] = cp;
      u += cp > 0xffff ? 2 : 1;
    }
    best.fill(0, 0, n + 1);
    word.fill(0, 0, n + 1);
    // Best path, start positions ascending: every piece starting at i is offered to the end position
    // it reaches (best[i] is final by then: all pieces ending at i start before it), so each end
    // position sees its candidates by ascending start, as the original visits them; a candidate
    // replaces the current best when that is still 0 (unset) or the candidate's sum is >= it (ties go
    // to the later start). A position where no piece starts offers the unknown id 0 for one code point.
    const root = this.root.next;
    for (let i = 0; i < n; i++) {
      const from = best[i]!;
      let node = root?.get(cps[i]!);
      let found = false;
      for (let j = i; j < n && node; j++) {
        if (node.id >= 0) {
          const e = j + 1, s = node.score + from;
          if (best[e] === 0 || s >= best[e]!) {
            best[e] = s;
            word[e] = node.id;
          }
          found = true;
        }
        node = j + 1 < n ? node.next?.get(cps[j + 1]!) : undefined;
      }
      if (!found && (best[i + 1] === 0 || from >= best[i + 1]!)) {
        best[i + 1] = from;
        word[i + 1] = 0;
      }
    }
    // back-track by each piece's string length, merging runs of unknown ids
    const out: number[] = [];
    let it = n;
    let prevUnk = false;
    while (it > 0) {
      const id = word[it]!;
      if (!(prevUnk && id === 0)) out.push(id);
      prevUnk = id === 0;
      it -= this.pieceLen[id]!;
    }
    return out.reverse();
  }
}
