/**
 * The cache engine's state and its lookup (engine.ts extends this with warm-up, store, single flight
 * and administration): construction of the decision (adapter, learned pair model, hand rules), the
 * exact and semantic tiers, and the bookkeeping shared by both halves. See engine.ts for the tiers.
 */
import { LRUCache } from "lru-cache";
import type { CacheKeyInput, LookupResult, CacheTier } from "./types";
import { ApiError } from "../core/errors";
import { counterSeries, histogramSeries, SeriesCache, type CounterSeries, type HistogramSeries } from "../core/metrics";
import { dot } from "../core/vectors";
import type { Embedder } from "./ports";
import { DEFAULT_VERIFY_OPTIONS, LOW_SCORE, verifyPair } from "./verify";
import type { DecisionModel } from "./verify/pair-model";
import { defaultLearnedModel } from "./verify/learned-default";
import { AdaptedEmbedder } from "./adapter";
import { defaultAdapter } from "./adapter-default";
import { deriveKeys, exactKeyOf, type DerivedKeys } from "./partition";
import { CacheStore, type ExactRow, type Removed } from "./store";
import { SessionTurns, contextWindow, fuseContext } from "./context";
import { SingleFlight } from "./single-flight";
import { GroupCommit } from "./group-commit";
import { TenantRegistry, type TenantState } from "./tenants";
import type { TenantCacheSettings } from "./store";
import { FeedbackBook } from "./feedback";
import { CacheSync, applyChange } from "./replicas";
import { CONTEXT_REWORDED_THRESHOLD, type DecisionPoint, type EngineOptions, type EngineSettings, type Verifier } from "./engine-options";

export { CONTEXT_REWORDED_THRESHOLD, type DecisionPoint, type EngineOptions, type EngineSettings, type Verifier } from "./engine-options";

/** what lookup() derived for this input (keys, embeddings), carried by its miss so store/singleFlight do not redo it */
export const stateOf = (miss?: LookupResult): LookupState | undefined => (miss && !miss.hit ? (miss.state as LookupState | undefined) : undefined);

export interface LookupState {
  /** absent when the cache is disabled (nothing to look up or store: singleFlight derives the exact key itself) */
  keys?: DerivedKeys;
  queryVec?: Float32Array;
  contextVec?: Float32Array;
  /** earlier user turns (context mode) */
  contextUsers?: Array<{ text: string; vec: Float32Array }>;
  /** fail-open embedding failure: serve uncached, write nothing */
  noStore?: boolean;
  /** similarity of the nearest candidate looked at (reported on a miss) */
  nearest?: number;
  /** the operating point the semantic tiers used */
  point?: DecisionPoint;
}

/** Similarity slack when picking candidates from an f16 index (the decision uses the exact f32 cosine). */
const INDEX_SLACK = 0.01;

/**
 * A cosine as reported (doc1 §4.4 `similarity (number 0.0-1.0)`): the dot product of two
 * L2-normalised float32 vectors lands up to ~1e-6 outside [-1, 1] (a reworded question with the
 * same embedding scored 1.000000008), and the nearest question on a miss can point the other way
 * (a negative cosine, reported as 0: no likeness). Reports only: hit decisions use the dot product itself.
 */
const reported = (cosine: number) => Math.min(1, Math.max(0, cosine));

export abstract class CacheEngineBase {
  protected readonly tenants: TenantRegistry;
  protected readonly exact: LRUCache<string, ExactRow>;
  protected readonly sessions = new SessionTurns();
  protected readonly flights: SingleFlight;
  protected readonly timers: Array<ReturnType<typeof setInterval>> = [];
  protected readonly now: () => number;
  protected readonly verify: Verifier;
  /** the learned stage in use (null: the embedder is not the one it was trained on, or it is switched off) */
  readonly learned: DecisionModel | null;
  /** the configured single-turn operating point (cosine floor) */
  readonly singlePoint: number;
  /** the embedder the cache compares: the configured one, through the adapter when it applies */
  protected readonly emb: Embedder;
  protected closed = false;
  /** false while warmUp runs (/ready waits for it; /health does not) */
  protected warm = true;
  /** wrong-hit feedback: per-tenant negatives and operating points (feedback.ts) */
  readonly feedback: FeedbackBook;
  /** replicas: the stream of entry changes and the shared single flight (absent on a single node) */
  readonly sync?: CacheSync;
  /** the group commit of cache entries where one connection commits every write (group-commit.ts; SQLite); absent on PostgreSQL */
  readonly inserts?: GroupCommit;

  constructor(protected readonly o: EngineOptions) {
    this.now = o.now ?? Date.now;
    // durable and shared: verdicts in the database, other replicas told through the change stream
    this.feedback = new FeedbackBook(o.settings.maxWrongHitRate ?? 0.01, {
      storage: o.storage,
      now: this.now,
      announce: (t) => this.sync?.append({ t, k: "feedback" }),
      log: o.log,
      timers: o.timers,
    });
    const adapter = o.settings.adaptEmbeddings === false ? null : o.adapter === undefined ? defaultAdapter() : o.adapter;
    this.emb = adapter && adapter.baseEmbedderId === o.embedder.id && adapter.dims === o.embedder.dimensions ? new AdaptedEmbedder(o.embedder, adapter) : o.embedder;
    const emb = this.emb;
    const model = o.learned === undefined ? defaultLearnedModel() : o.learned;
    // the learned model judges the vectors it was trained on: the adapted ones, or the raw ones (recovered
    // exactly from the adapted vectors the cache stores: the adapter is invertible)
    const onAdapted = !!model && model.embedderId === emb.id;
    const onRaw = !!model && emb !== o.embedder && model.embedderId === o.embedder.id;
    this.learned = !o.verify && o.settings.learnedDecision !== false && model && (onAdapted || onRaw) && model.dims === emb.dimensions ? model : null;
    const learned = this.learned;
    this.singlePoint = o.settings.similarityThreshold ?? (learned ? learned.minCosine : DEFAULT_VERIFY_OPTIONS.minScore);
    // (verifyPair's 4th parameter is its options: never hand it the vectors)
    const hand: Verifier = (q, c, cos, _v, _t, minScore) => verifyPair(q, c, cos, minScore !== undefined ? { minScore } : undefined);
    const withRules = o.settings.learnedMode === "with_rules";
    const raw = onRaw && emb instanceof AdaptedEmbedder ? emb.adapter : null;
    // the query's raw vector is recovered once per lookup, not once per candidate
    let lastQ: Float32Array | undefined, lastRaw: Float32Array | undefined;
    const rawOf = (q: Float32Array) => (q === lastQ ? lastRaw! : ((lastQ = q), (lastRaw = raw!.invert(q))));
    this.verify =
      o.verify ??
      (learned
        ? (q, c, cos, v, t, minScore) => {
            if (!v) return hand(q, c, cos);
            if (!raw) return learned.decide(q, c, cos, v.query, v.candidate, t, withRules, cos, minScore);
            const rq = rawOf(v.query), rc = raw.invert(v.candidate);
            return learned.decide(q, c, cos, rq, rc, t, withRules, dot(rq, rc), minScore);
          }
        : hand);
    this.flights = new SingleFlight(o.settings.singleFlightWaitMs);
    const d = o.storage.dialect;
    this.inserts = d.oneWriter ? new GroupCommit((fn) => o.storage.tx(fn)) : undefined;
    this.exact = new LRUCache<string, ExactRow>({ maxSize: 64 * 1024 * 1024, sizeCalculation: (v) => v.payload.length + 200 });
    const s = o.settings;
    this.tenants = new TenantRegistry({
      // blobs in buffers of their own (SQLite): candidates' vectors are read without a second copy;
      // one connection commits every insert (SQLite): the entries stored in one event-loop turn share a commit
      store: (tenantId) => new CacheStore(o.storage.tenant(tenantId), d.blobsOwned, this.inserts),
      now: this.now,
      dimensions: () => emb.dimensions,
      index: { quantization: s.quantization, efSearch: s.efSearch, connectivity: s.connectivity, efConstruction: s.efConstruction },
      indexDir: o.indexDir,
      bounds: () => ({ idleSecs: s.tenantIdleSecs, maxLoaded: s.maxLoadedTenants }),
      log: o.log,
    });
    if (o.timers !== false) this.startTimers();
    if (o.shared)
      this.sync = new CacheSync(
        o.shared,
        (e) => {
          if (e.k === "feedback") return void this.feedback.refresh(e.t).catch(() => {}); // unreadable now: read again on the next change or reload
          applyChange(e, this.tenants, this.exact, this.sessions);
          if (e.k === "purge") void this.feedback.forgetTenant(e.t);
        },
        this.resync,
        o.log,
        o.metrics,
      );
  }

  /** Changes may have been missed (Redis restarted or flushed): drop what memory holds; it reloads from the database. */
  protected resync = () => {
    this.exact.clear();
    this.tenants.dropAll();
    this.feedback.forgetAll();
  };

  /** Hit bookkeeping and the gauge every second; TTL sweep and idle unloading every minute. */
  protected startTimers() {
    const flush = setInterval(() => {
      void this.tenants.flushTouches();
      this.o.metrics?.entries.set(this.tenants.indexedVectors());
    }, 1000);
    const sweep = setInterval(() => {
      this.sweepExpired().catch((e) => this.o.log?.warn("cache TTL sweep failed (retried next round)", { error: String(e) }));
      void this.tenants.unloadIdle();
    }, this.o.sweepIntervalMs ?? 60_000);
    flush.unref?.();
    sweep.unref?.();
    this.timers.push(flush, sweep);
  }

  get settings(): EngineSettings {
    return this.o.settings;
  }
  /** the embedder whose vectors the cache stores and compares (adapted when the adapter applies) */
  get embedder(): Embedder {
    return this.emb;
  }

  // ---------------------------------------------------------------- lookup

  async lookup(input: CacheKeyInput): Promise<LookupResult> {
    const r = await this.decide(input);
    // remembered for POST /api/v1/cache/feedback: a miss only as "did not hit" (409), a hit with what it served
    if (input.requestId && this.o.settings.enabled)
      this.feedback.remember(
        input.requestId,
        r.hit
          ? { tenantId: input.tenantId, caller: input.caller, hit: true, tier: r.tier, entryId: r.entryId, query: r.query, queryVec: r.queryVec }
          : { tenantId: input.tenantId, caller: input.caller, hit: false },
      );
    const m = this.o.metrics;
    if (m) {
      const tier = r.hit ? r.tier : "none";
      const result = r.hit ? "hit" : "miss";
      const series = this.series.get(`${input.style}\u0000${tier}\u0000${result}`, () => ({
        lookups: counterSeries(m.lookups, { style: input.style, tier, result }),
        duration: histogramSeries(m.lookupDuration, { tier }),
      }));
      series.duration.observe(r.lookupMs / 1000);
      series.lookups.inc();
    }
    return r;
  }

  /** A request that skipped the cache (X-Svc-Skip-Cache), counted like a lookup. */
  bypassed(style: string) {
    this.o.metrics?.lookups.inc({ style, tier: "none", result: "bypass" });
  }

  /** the lookup counter's and duration histogram's series per style, tier and result (prom-client's per-call label work done once) */
  protected readonly series = new SeriesCache<{ lookups: CounterSeries; duration: HistogramSeries }>();

  protected async decide(input: CacheKeyInput): Promise<LookupResult> {
    const t0 = performance.now();
    const s = this.o.settings;
    // disabled: no keys (two SHA-256 of the canonical conversation, ~50 µs of a streamed request's
    // time to first byte after an idle gap); only a non-streamed miss's single flight needs one
    if (!s.enabled) return { hit: false, lookupMs: performance.now() - t0, state: { noStore: true } satisfies LookupState };
    // the exact key first: an exact hit needs nothing else (the partition key is derived on its miss)
    const exactKey = exactKeyOf(input);
    const now = this.now();
    // warm state answers without a promise: only a tenant's first use awaits its load
    const ts = this.tenants.use(input.tenantId) ?? (await this.tenants.get(input.tenantId));
    ts.stats.lookups++;

    // the LRU is asked once: a miss (absent or expired) goes on to the database with what it found
    const k = `${input.tenantId}\u0000${exactKey}`;
    const cached = this.exact.get(k);
    const ex = cached && (cached.expiresAt === null || cached.expiresAt > now) ? cached : await this.exactGet(input.tenantId, ts, k, exactKey, now, cached);
    if (ex) return this.hit(input.tenantId, ts, "exact", ex, 1, undefined, t0, undefined, { value: 1, source: "exact" });

    const keys = deriveKeys(input, this.emb.id, exactKey);
    const state: LookupState = { keys };
    const miss = (): LookupResult => {
      ts.stats.misses++;
      return {
        hit: false,
        lookupMs: performance.now() - t0,
        state,
        ...(state.nearest !== undefined ? { nearestSimilarity: state.nearest } : {}),
        ...(state.point ? { decisionPoint: state.point.value, pointSource: state.point.source } : {}),
      };
    };
    if (!keys.partition || !keys.query) return miss();
    if (keys.mode === "context" && !s.context.enabled) return miss();

    try {
      await this.embedFor(input, keys, state);
    } catch (e) {
      const err = e instanceof ApiError && e.type === "embedding_error" ? e : new ApiError("embedding_error", `embedding service unavailable: embedding failed: ${(e as Error)?.message ?? e}`);
      if (!s.failOpen) throw err;
      this.o.log?.warn("embedding failed; serving uncached (fail-open)", { error: err.message });
      state.noStore = true;
      return miss();
    }

    const index = this.tenants.loadedIndex(ts, keys.partition) ?? (await this.tenants.index(input.tenantId, ts, keys.partition));
    const qv = state.queryVec!;
    // the operating point: the configured floor, raised by the tenant's wrong-hit feedback, raised by
    // this request's X-Svc-Cache-Min-Similarity (which can only make matching stricter)
    const configured = keys.mode === "single" ? this.singlePoint : s.context.stage1Threshold;
    if (!this.feedback.loaded(input.tenantId)) await this.feedback.load(input.tenantId);
    const tenantPoint = this.feedback.point(input.tenantId, configured);
    const minSim = Math.max(tenantPoint, input.minSimilarity ?? 0);
    const point: DecisionPoint = { value: minSim, source: input.minSimilarity !== undefined && input.minSimilarity > tenantPoint ? "request" : tenantPoint > configured ? "feedback" : "config" };

    const found = index.search(qv, s.candidates);
    // the nearest cached question is also judged below the point when it is a surface match (the same
    // question up to case, punctuation, whitespace or one misspelt word: the decision model's surfaceMatch;
    // a typo moves the vector more than many rewordings), down to the model's surfaceMinCosine but never
    // below this request's own floor: at most one more candidate row per lookup
    const surfaceMatch = keys.mode === "single" && this.learned?.surfaceMatch && this.learned.surfaceMinCosine !== undefined ? this.learned : null;
    const surfaceFloor = surfaceMatch ? Math.max(input.minSimilarity ?? 0, Math.min(minSim, surfaceMatch.surfaceMinCosine!)) : minSim;
    const neighbours = found.filter((n, i) => n.similarity >= (i === 0 ? surfaceFloor : minSim) - INDEX_SLACK);
    const threshold = this.decisionThreshold(ts);
    // the nearest candidate's similarity, reported on a miss: the exact f32 cosine of the candidates
    // compared, else the index's similarity of the nearest neighbour (below the candidate floor)
    let nearest: number | undefined;

    let best: { vecKey: number; sim: number; ctxSim?: number; score: number; learned?: number } | undefined;
    // the candidates' rows in one round (one await; on PostgreSQL concurrent queries, not one round trip each)
    const rows = neighbours.length ? await Promise.all(neighbours.map((n) => ts.repo.candidate(n.key))) : [];
    for (let i = 0; i < neighbours.length; i++) {
      const c = rows[i];
      if (!c) {
        index.remove(neighbours[i]!.key);
        continue;
      }
      if (c.expiresAt !== null && c.expiresAt <= now) {
        const r = await ts.repo.deleteByVecKey(c.vecKey);
        if (r) this.dropRows(input.tenantId, ts, [r]);
        continue;
      }
      const sim = dot(qv, c.queryVec);
      nearest = Math.max(nearest ?? -1, sim);
      if (sim < minSim && !(surfaceMatch && sim >= surfaceFloor && surfaceMatch.surfaceMatch!(keys.query, c.queryText))) continue;
      if (this.feedback.blocked(input.tenantId, c.id, keys.query, qv)) continue;
      if (keys.mode === "single") {
        if (best && sim <= best.score) continue;
        const v = this.verify(keys.query, c.queryText, sim, { query: qv, candidate: c.queryVec }, threshold, minSim);
        if (!v.accept) continue;
        best = { vecKey: c.vecKey, sim, score: sim, learned: v.learned };
      } else {
        if (!c.contextVec || !state.contextVec) continue;
        const ctxSim = dot(state.contextVec, c.contextVec);
        const score = s.context.queryWeight * sim + s.context.contextWeight * ctxSim;
        if (score < s.context.contextHitThreshold) continue;
        if (best && score <= best.score) continue;
        let learned: number | undefined;
        if (s.verifyContextQuery) {
          const v = this.verify(keys.query, c.queryText, sim, { query: qv, candidate: c.queryVec }, threshold);
          if (!v.accept) continue;
          learned = v.learned;
        }
        if (s.verifyContextTurns) {
          const turns = this.sameUserTurns(state.contextUsers ?? [], c.contextUsers, threshold);
          if (turns === "differ") continue;
          if (turns === "reworded" && score < (s.contextReworded ?? CONTEXT_REWORDED_THRESHOLD)) continue;
        }
        best = { vecKey: c.vecKey, sim, ctxSim, score, learned };
      }
    }
    state.nearest = nearest !== undefined ? reported(nearest) : found.length ? reported(found[0]!.similarity) : undefined;
    // a miss names the operating point only when there was a cached question to judge against it
    if (found.length) state.point = point;
    if (best) {
      const row = await ts.repo.payload(best.vecKey);
      if (row) {
        const tier: CacheTier = keys.mode === "single" ? "semantic" : "l2_context";
        return this.hit(input.tenantId, ts, tier, row, best.sim, best.ctxSim, t0, best.learned, point, keys.query, qv);
      }
    }
    return miss();
  }

  protected hit(tenantId: string, ts: TenantState, tier: CacheTier, row: ExactRow, sim: number, ctxSim: number | undefined, t0: number, learned: number | undefined, point: DecisionPoint, query?: string, queryVec?: Float32Array): LookupResult {
    ts.stats.hits[tier]++;
    this.tenants.touch(ts, row.vecKey);
    const lookupMs = performance.now() - t0;
    return {
      hit: true,
      tier,
      entryId: row.id,
      similarity: reported(sim),
      ...(ctxSim !== undefined ? { contextSimilarity: reported(ctxSim) } : {}),
      ...(learned !== undefined ? { learnedScore: learned } : {}),
      decisionPoint: point.value,
      pointSource: point.source,
      ...(query !== undefined ? { query, queryVec } : {}),
      payload: { body: JSON.parse(row.payload), usage: { inputTokens: row.inputTokens, outputTokens: row.outputTokens } },
      lookupMs,
    };
  }

  /**
   * Earlier user turns, pairwise by position: "same" when the verifier accepts every pair,
   * "reworded" when some pair fails only the verifier's score check (no hard reject), else "differ".
   */
  protected sameUserTurns(
    mine: Array<{ text: string; vec: Float32Array }>,
    theirs: Array<{ text: string; vec: Float32Array }> | null,
    threshold: number | undefined,
  ): "same" | "reworded" | "differ" {
    if (!theirs || theirs.length !== mine.length) return "differ";
    let out: "same" | "reworded" = "same";
    for (let i = 0; i < mine.length; i++) {
      const a = mine[i]!;
      const b = theirs[i]!;
      const r = this.verify(a.text, b.text, dot(a.vec, b.vec), { query: a.vec, candidate: b.vec }, threshold);
      if (r.accept) continue;
      if (r.reason !== LOW_SCORE) return "differ";
      out = "reworded";
    }
    return out;
  }

  /**
   * The exact tier past the LRU (`k` its key, `m` what it held: nothing or an expired entry): an
   * expired LRU entry is deleted, else the row is read from the database.
   */
  protected async exactGet(tenantId: string, ts: TenantState, k: string, exactKey: string, now: number, m: ExactRow | undefined): Promise<ExactRow | undefined> {
    if (!m) {
      const row = await ts.repo.findExact(exactKey, now);
      if (!row) return undefined;
      m = row;
      this.exact.set(k, m);
    }
    if (m.expiresAt !== null && m.expiresAt <= now) {
      this.exact.delete(k);
      const r = await ts.repo.deleteByVecKey(m.vecKey);
      if (r) this.dropRows(tenantId, ts, [r]);
      return undefined;
    }
    return m;
  }

  /** Fill state.queryVec (and state.contextVec in context mode). */
  protected async embedFor(input: CacheKeyInput, keys: DerivedKeys, state: LookupState) {
    const emb = this.emb;
    if (keys.mode === "single") {
      const [v] = await emb.embed([keys.query!]);
      state.queryVec = v!;
    } else {
      const window = contextWindow(keys.history, this.o.settings.context.maxTurns);
      const texts = [...window.map((t) => t.text), keys.query!];
      const vecs: (Float32Array | undefined)[] = texts.map((t) => this.sessions.get(input.tenantId, input.sessionId, t));
      const missing = [...new Set(texts.filter((_, i) => !vecs[i]))];
      if (missing.length) {
        const got = await emb.embed(missing);
        const byText = new Map(missing.map((t, i) => [t, got[i]!]));
        texts.forEach((t, i) => {
          if (!vecs[i]) {
            vecs[i] = byText.get(t)!;
            this.sessions.set(input.tenantId, input.sessionId, t, vecs[i]!);
          }
        });
      }
      state.queryVec = vecs[vecs.length - 1]!;
      state.contextVec = fuseContext(vecs.slice(0, -1) as Float32Array[], emb.dimensions);
      state.contextUsers = window.flatMap((t, i) => (t.role === "user" ? [{ text: t.text, vec: vecs[i]! }] : []));
    }
  }

  /** The learned stage's operating point for this tenant (its own setting, else the configured, else the model's). */
  protected decisionThreshold(ts: TenantState): number | undefined {
    if (!this.learned) return undefined;
    return ts.settings().decisionThreshold ?? this.o.settings.decisionThreshold ?? this.learned.threshold;
  }

  /** A tenant's own hit-decision settings (null = the default). */
  async tenantSettings(tenantId: string): Promise<TenantCacheSettings> {
    return (await this.tenants.get(tenantId)).settings();
  }

  /** Set (or with null clear) a tenant's own operating point of the learned stage (0..1: higher = fewer, surer hits). */
  async setTenantSettings(tenantId: string, next: TenantCacheSettings): Promise<TenantCacheSettings> {
    const ts = await this.tenants.get(tenantId);
    await ts.repo.putSettings(next, this.now());
    await ts.refreshSettings();
    void this.sync?.append({ t: tenantId, k: "settings" });
    return ts.settings();
  }

  /** The operating point the tenant's lookups use, and where it comes from. */
  async effectiveDecision(tenantId: string): Promise<{ learned: boolean; threshold: number | null; source: "tenant" | "config" | "model" | null; modelThreshold: number | null }> {
    if (!this.learned) return { learned: false, threshold: null, source: null, modelThreshold: null };
    const own = (await this.tenantSettings(tenantId)).decisionThreshold;
    const cfg = this.o.settings.decisionThreshold;
    const source = own !== null ? "tenant" : cfg !== undefined ? "config" : "model";
    return { learned: true, threshold: own ?? cfg ?? this.learned.threshold, source, modelThreshold: this.learned.threshold };
  }

  // ---------------------------------------------------------------- internals

  protected dropRows(tenantId: string, ts: TenantState, rows: Removed[]) {
    this.sync?.dropped(tenantId, rows);
    for (const r of rows) {
      if (r.partition) ts.parts.get(r.partition)?.remove(r.vecKey);
      this.exact.delete(`${tenantId}\u0000${r.exactKey}`);
      ts.touches.delete(r.vecKey);
      ts.count--;
    }
  }

  abstract sweepExpired(): Promise<number>;
}
