/**
 * Lexical matching of the Memory API's searchable items, on either backend — the one place where
 * memory's full-text search differs between SQLite and PostgreSQL (docs/notes/postgres-plan.md).
 *
 * Both give the same thing to the ranking (search.ts): the best `k` items of a scope matching any
 * of the query's words, each with its Okapi BM25 (k1 = 1.2, b = 0.75) as FTS5's `bm25()` reports it
 * (negative, lower is better) — the fusion calibrates the lexical strength on that scale, so a
 * PostgreSQL `ts_rank` (another scale) would silently switch the lexical half of the ranking off.
 *
 * - SQLite: the FTS5 tables of migration 0001 (unicode61, `_` inside words, a `scope` column with a
 *   tenant token and a project token that narrows the match inside FTS5), `bm25(t, 1.0, 0.0)`;
 *   statistics (rows, average length, document frequency) are FTS5's, table-wide.
 * - PostgreSQL: the dialect's FTS table (a 'simple' tsvector of `body`, GIN-indexed). Its parser
 *   splits words differently from unicode61 (`foo_bar` → `foo`, `bar`; `src/app.ts` → one file
 *   token; `a-b` → `a-b`, `a`, `b`), so the body is indexed as FTS5's words, lower-cased, diacritics
 *   removed, `_` written as `x5f` (pgWord): every word is then one lexeme, the same words as on
 *   SQLite. BM25 is computed in SQL: term frequency from the tsvector's positions, a row's length
 *   from its body's words; the statistics (rows, average length, document frequencies) are the
 *   searched scope's — its project, or the tenant for several projects.
 * - A word in more items of the scope than `maxDf` is not matched (see Lexical); document
 *   frequencies are cached briefly on both backends.
 */
import type { AsyncSql, AsyncStorage, AsyncTenantDb, Params } from "../storage/async";
import type { Dialect } from "../storage/dialect";

const K1 = 1.2;
const B = 0.75;
/**
 * PostgreSQL: a row's length in words — its body holds exactly its words, one space apart (bodyOf),
 * so the spaces count them without unpacking the tsvector.
 */
const PG_WORDS = `(CASE WHEN f.body = '' THEN 0 ELSE length(f.body) - length(replace(f.body, ' ', '')) + 1 END)`;
/** tokens of the `scope` column (tenant token + project token) that FTS5 counts in a row's length */
const SCOPE_TOKENS = 2;

/** FTS5 unicode61's words of a text (letters, digits, `_`), lower case, without diacritics. */
export const fts5Words = (text: string): string[] => (text.normalize("NFKD").replace(/\p{Mn}/gu, "").toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []);

/** A word as one PostgreSQL 'simple' lexeme (`_` is a separator there). */
export const pgWord = (w: string): string => w.normalize("NFKD").replace(/\p{Mn}/gu, "").toLowerCase().replace(/_/g, "x5f");

/**
 * A scope: one project or several projects of the tenant. The FTS rows' `scope` column holds the
 * tenant's token and the project's (`t_… p_…`, store.ts); FTS5 narrows a match by the project's
 * token (one project) or the tenant's (several).
 */
export interface LexicalScope {
  tenantToken: string;
  /** set when the scope is one project */
  projectToken?: string;
  projectIds: string[];
}

export interface LexicalQuery {
  table: string;
  words: string[];
  scope: LexicalScope;
  k: number;
  /** extra conditions on the item row `i` and their parameters */
  where: string[];
  params: Params;
}

/** Cached counts (document frequencies), shared by the stores of one app. */
class Cache {
  private readonly entries = new Map<string, { v: unknown; at: number }>();
  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}
  async get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const e = this.entries.get(key);
    if (e && now - e.at < this.ttlMs) return e.v as T;
    const v = await load();
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { v, at: now });
    return v;
  }
}

/**
 * Lexical search for one storage. Words found in more than `maxDf` items of the searched scope are
 * dropped (rarest first, at most 2 × maxDf postings in all): their BM25 weight is near zero, and
 * matching them would make the query cost grow with the corpus.
 */
export class Lexical {
  private readonly cache: Cache;
  private readonly pg: boolean;

  constructor(
    private readonly d: Dialect,
    /**
     * SQLite: counts FTS matches across tenants (the expression is narrowed by a tenant-derived
     * scope token; only a number comes back). Unused on PostgreSQL, which counts through the
     * tenant's handle joined to the item table.
     */
    private readonly counter: AsyncSql | undefined,
    readonly maxDf = 2_000,
    ttlMs = 30_000,
    maxEntries = 50_000,
  ) {
    this.cache = new Cache(ttlMs, maxEntries);
    this.pg = d.name === "postgres";
  }

  /** The text stored in an FTS table's `body` for an item's text. */
  bodyOf(text: string): string {
    return this.pg ? fts5Words(text).map(pgWord).join(" ") : text;
  }

  async search(db: AsyncTenantDb, q: LexicalQuery): Promise<Array<{ key: number; bm25: number }>> {
    if (!q.words.length || !q.scope.projectIds.length) return [];
    const fts = `${q.table}_fts`;
    const counted = await Promise.all(q.words.map(async (w) => ({ w, n: await this.df(db, q.table, q.scope, w) })));
    const kept: string[] = [];
    let postings = 0;
    for (const c of counted.filter((c) => c.n > 0 && c.n <= this.maxDf).sort((a, b) => a.n - b.n)) {
      if (postings + c.n > 2 * this.maxDf && kept.length) break;
      kept.push(c.w);
      postings += c.n;
    }
    if (!kept.length) return [];
    const where = [`i.tenant_id = $tenant`, `i.project_id IN ${this.d.inJsonArray("$projects")}`, ...q.where];
    const params: Params = { ...q.params, projects: JSON.stringify(q.scope.projectIds), k: q.k };
    if (!this.pg) {
      params.match = `${this.scopeMatch(q.scope)} AND body : (${this.d.ftsQuery(kept, "any")})`;
      return db.all<{ key: number; bm25: number }>(
        `SELECT f.rowid AS key, bm25(${fts}, 1.0, 0.0) AS bm25 FROM ${fts} f JOIN ${q.table} i ON i.key = f.rowid
         WHERE ${this.d.ftsMatch("f", fts, "$match")} AND ${where.join(" AND ")} ORDER BY bm25(${fts}, 1.0, 0.0) LIMIT $k`,
        params,
      );
    }
    // PostgreSQL: BM25 as FTS5 computes it, over the scope's statistics
    const stats = await this.scopeStats(db, q.table, q.scope);
    const idf = (n: number) => {
      const v = Math.log((stats.rows - n + 0.5) / (n + 0.5));
      return v > 0 ? v : 1e-6;
    };
    const byWord = new Map(counted.map((c) => [c.w, c.n]));
    params.match = this.d.ftsQuery(kept.map(pgWord), "any");
    params.terms = JSON.stringify(kept.map((w) => ({ term: pgWord(w), idf: idf(byWord.get(w)!) })));
    params.avgdl = Math.max(stats.avgdl + SCOPE_TOKENS, 1);
    // term frequency from the tsvector's positions (the terms parsed once, not per row), a row's
    // length from its body's words
    return db.all<{ key: number; bm25: number }>(
      `WITH w AS MATERIALIZED (SELECT term, idf FROM jsonb_to_recordset(CAST($terms AS TEXT)::jsonb) AS x(term TEXT, idf DOUBLE PRECISION))
       SELECT f.rowid AS key,
              -(SELECT COALESCE(SUM(w.idf * cardinality(u.positions) * ${K1 + 1} / (cardinality(u.positions) + ${K1} * (${1 - B} + ${B} * (dl.n + ${SCOPE_TOKENS}) / CAST($avgdl AS DOUBLE PRECISION)))), 0)
                FROM unnest(f.tsv) u JOIN w ON w.term = u.lexeme) AS bm25
       FROM ${fts} f JOIN ${q.table} i ON i.key = f.rowid CROSS JOIN LATERAL (SELECT ${PG_WORDS} AS n) dl
       WHERE ${this.d.ftsMatch("f", fts, "$match")} AND ${where.join(" AND ")} ORDER BY bm25, f.rowid LIMIT $k`,
      params,
    );
  }

  /** FTS5: the expression part narrowing a match to the scope's token. */
  private scopeMatch(scope: LexicalScope) {
    return `scope : "${scope.projectToken ?? scope.tenantToken}"`;
  }

  /** PostgreSQL: the FTS rows of a scope, by their `scope` column (indexed; see migrations.ts). */
  private scopeRows(scope: LexicalScope): { where: string; params: Params } {
    return scope.projectToken
      ? { where: `f.scope = $scope`, params: { scope: `${scope.tenantToken} ${scope.projectToken}` } }
      : { where: `f.scope LIKE $scope`, params: { scope: `${scope.tenantToken} %` } };
  }

  /** SQL condition (on the item row `i`) of a scope on PostgreSQL. */
  private scopeWhere(scope: LexicalScope) {
    return scope.projectIds.length === 1 ? `i.tenant_id = $tenant AND i.project_id = $p` : `i.tenant_id = $tenant`;
  }

  /** Items of the scope containing `word`, counted up to maxDf + 1 (cached). */
  private df(db: AsyncTenantDb, table: string, scope: LexicalScope, word: string): Promise<number> {
    const fts = `${table}_fts`;
    if (!this.pg) {
      const match = `${this.scopeMatch(scope)} AND body : "${word}"`;
      return this.cache.get(`${fts}\u0000${match}`, async () => {
        const text = `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${fts} WHERE ${fts} MATCH $match LIMIT $cap) c`;
        const cap = this.maxDf + 1;
        if (this.counter) return (await this.counter.get<{ n: number }>(text, { match, cap }))!.n;
        return (await db.get<{ n: number }>(
          `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${fts} f JOIN ${table} i ON i.key = f.rowid WHERE ${fts} MATCH $match AND i.tenant_id = $tenant LIMIT $cap) c`,
          { match, cap },
        ))!.n;
      });
    }
    return this.cache.get(`${fts}\u0000${scope.projectToken ?? scope.tenantToken}\u0000${word}`, async () => {
      return (await db.get<{ n: number }>(
        `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${fts} f JOIN ${table} i ON i.key = f.rowid WHERE ${this.d.ftsMatch("f", fts, "$match")} AND ${this.scopeWhere(scope)} LIMIT $cap) c`,
        { match: this.d.ftsQuery([pgWord(word)], "any"), cap: this.maxDf + 1, ...(scope.projectIds.length === 1 ? { p: scope.projectIds[0]! } : {}) },
      ))!.n;
    });
  }

  /**
   * PostgreSQL: rows of the scope and their average length in tokens — read for every search, not
   * cached: FTS5 keeps these current, and a stale row count against fresh document frequencies
   * would bend the IDF (one pass over the scope's rows, counting their bodies' spaces; the
   * matching itself uses the GIN index).
   */
  private async scopeStats(db: AsyncTenantDb, table: string, scope: LexicalScope): Promise<{ rows: number; avgdl: number }> {
    const rows = this.scopeRows(scope);
    // the scope column holds tokens derived from the tenant ($tenant is bound but only the token narrows)
    const r = await db.get<{ rows: number; avgdl: number }>(
      `SELECT COUNT(*) AS rows, COALESCE(AVG(${PG_WORDS}), 0) AS avgdl FROM ${table}_fts f WHERE ${rows.where} AND CAST($tenant AS TEXT) IS NOT NULL`,
      rows.params,
    );
    return { rows: r?.rows ?? 0, avgdl: r?.avgdl ?? 0 };
  }
}

/** The memory tables with a full-text index (their `_fts` tables). */
export const FTS_ITEM_TABLES = ["memory_milestones", "memory_knowledge", "memory_documents"] as const;

/**
 * PostgreSQL after `storage copy`: the FTS rows copied from SQLite hold the items' text as FTS5
 * indexes it, not the words PostgreSQL's index is built from (bodyOf). Rewrites every body that
 * differs (idempotent: a second run changes nothing; a page of 500 rows per transaction) and
 * returns how many it rewrote. Does nothing on SQLite. Run once after copying, before serving.
 */
export async function normalizeCopiedText(storage: AsyncStorage, pageSize = 500): Promise<number> {
  if (storage.dialect.name !== "postgres") return 0;
  const lex = new Lexical(storage.dialect, undefined);
  const g = storage.global("storage copy: rewrite every tenant's memory FTS rows into PostgreSQL's words");
  let changed = 0;
  for (const t of FTS_ITEM_TABLES) {
    for (let after = -1; ; ) {
      const rows = await g.all<{ rowid: number; body: string }>(`SELECT rowid, body FROM ${t}_fts WHERE rowid > $after ORDER BY rowid LIMIT $n`, { after, n: pageSize });
      if (!rows.length) break;
      after = rows.at(-1)!.rowid;
      const fix = rows.map((r) => ({ rowid: r.rowid, body: lex.bodyOf(r.body ?? "") })).filter((r, i) => r.body !== rows[i]!.body);
      if (fix.length)
        await storage.tx(async () => {
          for (const r of fix) await g.run(`UPDATE ${t}_fts SET body = CAST($body AS TEXT) WHERE rowid = $rowid`, r);
        });
      changed += fix.length;
    }
  }
  return changed;
}
