/**
 * Hybrid retrieval over a tenant's memory: the query is embedded with the gateway's embedder and
 * looked up in the per-project USearch indexes (semantic), and matched with full-text search and
 * BM25 (lexical: exact identifiers, file names, error strings; lexical.ts, FTS5 on SQLite, a
 * tsvector on PostgreSQL). The two are fused by score, not by rank
 * (FUSION, below): `score` = (cosine + 0.15 × lexical strength) / 1.15, 0..1, where the lexical
 * strength measures the BM25 match against the best one the searched items allow — a shared
 * common word adds nothing, a shared rare identifier nearly as much as a close paraphrase. A
 * relevance cut (RELEVANCE) then drops items close to the query in neither way, so a question
 * about nothing stored gets (almost) nothing instead of a page of the least unrelated items.
 * Chosen on a development set of scripts/bench/memory-retrieval.ts, measured on the committed
 * test/fixtures/memory-retrieval.json (BENCHMARKS.md "Memory retrieval"); reciprocal rank fusion
 * (`rrf`, the earlier ranking) stays selectable for that comparison.
 */
import type { Embedder } from "./ports";
import type { ItemKind, MemoryStore } from "./store";
import type { MemoryVectors } from "./vectors";

export const RRF_K = 60;
export const FUSION: Fusion = { kind: "linear", lambda: 0.15, bm25Scale: 1.4, bm25Floor: 0.28 };

/**
 * The relevance cut: an item is returned only if its cosine to the query reaches `minSimilarity`
 * or its lexical strength (as in `linear`) reaches `minLexical` — otherwise nothing in it is close
 * to the query, and the ranking alone would still fill the page with it. Below
 * `minItemsForLexicalCut` searched items BM25 cannot tell a rare word from a common one, so there
 * any item sharing a word with the query is kept.
 */
export const RELEVANCE = { minSimilarity: 0.5, minLexical: 0.5, minItemsForLexicalCut: 50 };
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
  /** BM25 of the lexical match (FTS5: lower = better; null when no query term matched) */
  bm25?: number | null;
}

export type RankMode = "fused" | "lexical" | "semantic";

/** How the two rankings are combined (the benchmark compares variants; FUSION is what search uses). */
/**
 * `linear`: score = (cosine + lambda × lexical) / (1 + lambda), where lexical is the BM25 of the
 * item's match in units of the best single-word match the searched items allow (the IDF of a word
 * found in one item: ln((N − 0.5) / 1.5)), less `bm25Floor`, over `bm25Scale`, clamped to 0..1 — so
 * a match on a word most items share counts for nothing and one on a rare identifier for much, the
 * same in a project of 10 items or 100,000. `rrf`: reciprocal rank fusion (k = 60), rank-based.
 */
export type Fusion = { kind: "rrf" } | { kind: "linear"; lambda: number; bm25Scale: number; bm25Floor: number };

export interface RankOptions {
  mode?: RankMode;
  /** apply the relevance cut (default true) */
  cut?: boolean;
  fusion?: Fusion;
}

export interface RetrieveFilter {
  agentIds?: string[];
  since?: string;
}

/** The distinct words of a query as FTS5 tokenises them (letters, digits, `_`; lower case), at most 32. */
export const ftsWords = (text: string): string[] => [...new Set((text.match(/[\p{L}\p{N}_]+/gu) ?? []).map((w) => w.toLowerCase()))].slice(0, 32);

/**
 * The query's words plus the singular of each plural ("logins" → "login", "retries" → "retry"):
 * the full-text index does not stem, and a question says "logins" where a milestone says "login".
 */
export function queryWords(text: string): string[] {
  const out = new Set<string>();
  for (const w of ftsWords(text)) {
    out.add(w);
    if (w.length <= 3 || !w.endsWith("s") || /(ss|us|is)$/.test(w)) continue;
    out.add(w.endsWith("ies") && w.length > 4 ? `${w.slice(0, -3)}y` : w.slice(0, -1));
  }
  return [...out].slice(0, 32);
}

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

  /**
   * The best `k` items of one kind among the given projects, fused (`mode` "lexical" or "semantic":
   * one ranking alone — the retrieval benchmark compares them).
   */
  async rank(store: MemoryStore, kind: ItemKind, query: string, vec: Float32Array, projectIds: string[], k: number, filter: RetrieveFilter = {}, opts: RankOptions = {}): Promise<Hit[]> {
    const mode = opts.mode ?? "fused";
    const fusion = opts.fusion ?? FUSION;
    if (!projectIds.length || k <= 0) return [];
    const filtered = !!(filter.since || (filter.agentIds && kind === "milestone"));
    const depth = Math.max(k * 2, 40) * (filtered ? 4 : 1);
    // semantic: each project's index, merged by similarity
    let semantic: Array<{ key: number; similarity: number; projectId: string }> = [];
    if (mode !== "lexical") for (const p of projectIds) for (const n of await this.vectors.search(store, p, kind, this.embedder.id, vec, depth)) semantic.push({ ...n, projectId: p });
    semantic.sort((a, b) => b.similarity - a.similarity || a.key - b.key);
    semantic = semantic.slice(0, depth);
    if (filtered) {
      const ok = await store.filterKeys(kind, semantic.map((s) => s.key), filter);
      semantic = semantic.filter((s) => ok.has(s.key));
    }
    // lexical
    const lexical = mode === "semantic" ? [] : await store.lexical(kind, queryWords(query), projectIds, depth, filter);
    const hits = new Map<number, Hit & { raw: number }>();
    const hit = (key: number) => {
      let h = hits.get(key);
      if (!h) hits.set(key, (h = { kind, key, score: 0, similarity: null, lexicalRank: null, raw: 0, bm25: null }));
      return h;
    };
    semantic.forEach((s, i) => {
      const h = hit(s.key);
      h.similarity = Math.round(s.similarity * 1e6) / 1e6;
      h.projectId = s.projectId;
      if (fusion.kind === "rrf") h.raw += 1 / (RRF_K + i + 1);
    });
    lexical.forEach((l, i) => {
      const h = hit(l.key);
      h.lexicalRank = i + 1;
      h.bm25 = l.bm25;
      if (fusion.kind === "rrf") h.raw += 1 / (RRF_K + i + 1);
    });
    // lexical strength in units of the best single-word match these items allow (see Fusion)
    let idfMax = 1;
    let items = 0;
    if (lexical.length) {
      for (const p of projectIds) items += await this.vectors.size(store, p, kind, this.embedder.id, vec.length);
      idfMax = Math.max(0.5, Math.log((items - 0.5) / 1.5));
    }
    const lin = fusion.kind === "linear" ? fusion : (FUSION as Extract<Fusion, { kind: "linear" }>);
    const strength = (h: Hit) => (h.bm25 == null ? 0 : Math.min(1, Math.max(0, -h.bm25 / idfMax - lin.bm25Floor) / lin.bm25Scale));
    // one ranking alone (the benchmark's baselines): BM25's own order, or the cosine's
    if (mode === "lexical") for (const h of hits.values()) h.raw = -(h.bm25 ?? 0);
    else if (mode === "semantic") for (const h of hits.values()) h.raw = Math.max(0, h.similarity ?? 0);
    else if (fusion.kind === "linear") {
      // an item found only by its words is at most as similar as the last semantic neighbour
      const floor = semantic.length ? Math.max(0, semantic.at(-1)!.similarity) : 0;
      for (const h of hits.values()) h.raw = (Math.max(0, h.similarity ?? floor) + fusion.lambda * strength(h)) / (1 + fusion.lambda);
    }
    let out = [...hits.values()].sort((a, b) => b.raw - a.raw || (b.similarity ?? -1) - (a.similarity ?? -1) || a.key - b.key);
    if (opts.cut !== false) {
      const lenient = items < RELEVANCE.minItemsForLexicalCut;
      out = out.filter((h) => (h.similarity ?? 0) >= RELEVANCE.minSimilarity || strength(h) >= RELEVANCE.minLexical || (lenient && h.bm25 != null));
    }
    const scoreOf = (h: Hit & { raw: number }) => (mode === "lexical" ? strength(h) : mode === "fused" && fusion.kind === "rrf" ? h.raw / MAX_SCORE : h.raw);
    return out.slice(0, k).map((h) => {
      const { raw: _, ...rest } = h;
      return { ...rest, score: Math.round(scoreOf(h) * 1e6) / 1e6 };
    });
  }
}
