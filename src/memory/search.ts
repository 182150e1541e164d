/**
 * Hybrid retrieval over a tenant's memory: the query is embedded with the gateway's embedder and
 * looked up in the per-project USearch indexes (semantic), and matched with SQLite FTS5/BM25
 * (lexical: exact identifiers, file names, error strings). The two rankings are fused with
 * reciprocal rank fusion (RRF, k = 60) — rank-based, so the incomparable scales of cosine and
 * BM25 need no calibration. `score` is the fused value scaled to 0..1 (1 = first in both lists).
 */
import type { Embedder } from "./ports";
import type { ItemKind, MemoryStore } from "./store";
import type { MemoryVectors } from "./vectors";

export const RRF_K = 60;
const MAX_SCORE = 2 / (RRF_K + 1);

export interface Hit {
  kind: ItemKind;
  key: number;
  projectId?: string;
  /** fused score 0..1 */
  score: number;
  /** cosine similarity to the query (null when the item was found only lexically) */
  similarity: number | null;
  /** 1-based rank in the lexical list (null when no query term matched) */
  lexicalRank: number | null;
}

export interface RetrieveFilter {
  agentIds?: string[];
  since?: string;
}

/** The distinct words of a query as FTS5 tokenises them (letters, digits, `_`; lower case), at most 32. */
export const ftsWords = (text: string): string[] => [...new Set((text.match(/[\p{L}\p{N}_]+/gu) ?? []).map((w) => w.toLowerCase()))].slice(0, 32);

/** An FTS5 expression matching any of the words (each quoted: no operator injection). */
export function ftsQuery(text: string): string | undefined {
  const words = ftsWords(text);
  return words.length ? words.map((w) => `"${w}"`).join(" OR ") : undefined;
}

export class Retriever {
  constructor(
    private readonly embedder: Embedder,
    private readonly vectors: MemoryVectors,
  ) {}

  async embedQuery(text: string): Promise<Float32Array> {
    return (await this.embedder.embed([text]))[0]!;
  }

  /** The best `k` items of one kind among the given projects, fused. */
  rank(store: MemoryStore, kind: ItemKind, query: string, vec: Float32Array, projectIds: string[], k: number, filter: RetrieveFilter = {}): Hit[] {
    if (!projectIds.length || k <= 0) return [];
    const filtered = !!(filter.since || (filter.agentIds && kind === "milestone"));
    const depth = Math.max(k * 2, 40) * (filtered ? 4 : 1);
    // semantic: each project's index, merged by similarity
    let semantic: Array<{ key: number; similarity: number; projectId: string }> = [];
    for (const p of projectIds) for (const n of this.vectors.search(store, p, kind, this.embedder.id, vec, depth)) semantic.push({ ...n, projectId: p });
    semantic.sort((a, b) => b.similarity - a.similarity || a.key - b.key);
    semantic = semantic.slice(0, depth);
    if (filtered) {
      const ok = store.filterKeys(kind, semantic.map((s) => s.key), filter);
      semantic = semantic.filter((s) => ok.has(s.key));
    }
    // lexical
    const lexical = store.lexical(kind, ftsWords(query), projectIds, depth, filter);
    const hits = new Map<number, Hit>();
    const hit = (key: number) => {
      let h = hits.get(key);
      if (!h) hits.set(key, (h = { kind, key, score: 0, similarity: null, lexicalRank: null }));
      return h;
    };
    semantic.forEach((s, i) => {
      const h = hit(s.key);
      h.similarity = Math.round(s.similarity * 1e6) / 1e6;
      h.projectId = s.projectId;
      h.score += 1 / (RRF_K + i + 1);
    });
    lexical.forEach((l, i) => {
      const h = hit(l.key);
      h.lexicalRank = i + 1;
      h.score += 1 / (RRF_K + i + 1);
    });
    const out = [...hits.values()].sort((a, b) => b.score - a.score || (b.similarity ?? -1) - (a.similarity ?? -1) || a.key - b.key).slice(0, k);
    for (const h of out) h.score = Math.round((h.score / MAX_SCORE) * 1e6) / 1e6;
    return out;
  }
}
