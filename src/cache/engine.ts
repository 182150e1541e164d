/**
 * The semantic cache engine (implements CacheEngine, src/cache/types.ts).
 *
 * lookup():
 *   1. exact tier — hash of the whole cacheable request (partition.ts), served from an in-memory
 *      LRU of serialized payloads in front of SQLite; no embedding.
 *   2. single-turn semantic tier (no earlier turns) — embed the query, nearest neighbours in the
 *      (tenant, partition) USearch index, exact cosine from the stored f32 vector >= threshold,
 *      then the verifier (src/cache/verify) must accept the pair.
 *   3. multi-turn context tier (earlier turns present, doc1 §4.7) — every message embedded
 *      (reused within a session_id), fused into a context vector (context.ts); stage 1: neighbours
 *      of the last query with cosine >= STAGE1_THRESHOLD; stage 2: QUERY_WEIGHT·q + CONTEXT_WEIGHT·c
 *      >= CONTEXT_HIT_THRESHOLD; the verifier must accept the two last queries, and the earlier user
 *      turns must pass its hard rules pairwise (reworded turns need stage 2 >= contextReworded).
 * store(): after a complete upstream answer; reuses the lookup's embeddings.
 *
 * Every embedding above is the embedder's vector through the learned adapter (adapter.ts, its own
 * embedder id) when it applies: thresholds, §4.7's stages and the hand rules compare adapted cosines;
 * the learned pair model gets the raw vectors back through the adapter's exact inverse.
 *
 * Entries live in the database (store.ts: SQLite or PostgreSQL); the per-tenant state — indexes
 * per partition, loaded from a saved file or rebuilt from the database, the loaded-tenants bound,
 * hit bookkeeping — is tenants.ts. A hit on warm state (tenant loaded, exact LRU or loaded index)
 * awaits the database only for the rows it reads (semantic tiers: the candidates and the payload).
 */
import type { CacheKeyInput, CachedPayload, LookupResult, CacheStats } from "./types";
import { CacheEngineBase, stateOf, type LookupState } from "./engine-lookup";
import { loadTokenTable } from "./verify/align";
import { deriveKeys, flightKeyOf } from "./partition";
import { recentPartitions } from "./store";
import type { FeedbackStats } from "./feedback";

export { CONTEXT_REWORDED_THRESHOLD, type DecisionPoint, type EngineOptions, type EngineSettings, type Verifier } from "./engine-options";

export class SemanticCacheEngine extends CacheEngineBase {
  /**
   * Load the indexes of the partitions used last (up to `partitions`, within the loaded-tenants
   * bound) from the database — saved index files when they match it — so the first lookups after a
   * start do not rebuild them. Started by the composition root after migrations; `ready()` is false
   * until it ends (a failure is logged: the indexes then load on first use, as they always can).
   */
  async warmUp(partitions = 256): Promise<number> {
    if (!this.o.settings.enabled || this.closed) return 0;
    // the pair model's token table (8 MB) read now, in the background, rather than by the first
    // decision; /ready does not wait for it (a decision before it ends reads it itself)
    if (this.learned) void loadTokenTable().catch((e) => this.o.log?.warn("cache: token table not loaded at start (read on first decision)", { error: String(e) }));
    this.warm = false;
    let n = 0;
    try {
      const max = Math.min(partitions, this.o.settings.maxLoadedTenants ?? 10_000);
      const seen = new Set<string>();
      for (const r of await recentPartitions(this.o.storage, partitions)) {
        if (this.closed) break;
        if (!seen.has(r.tenantId) && seen.size >= max) continue;
        seen.add(r.tenantId);
        const ts = await this.tenants.get(r.tenantId);
        await this.tenants.index(r.tenantId, ts, r.partition);
        n++;
      }
      if (n) this.o.log?.info("cache indexes loaded at start", { partitions: n, tenants: seen.size });
    } catch (e) {
      this.o.log?.warn("cache indexes not loaded at start (they load on first use)", { error: String(e) });
    } finally {
      this.warm = true;
    }
    return n;
  }

  /** readiness: false while the start-up index load runs */
  ready(): boolean {
    return this.warm;
  }

  // ---------------------------------------------------------------- store

  async store(input: CacheKeyInput, payload: CachedPayload, miss?: LookupResult): Promise<void> {
    const s = this.o.settings;
    if (!s.enabled || this.closed) return;
    const st = stateOf(miss);
    if (st?.noStore) return;
    const keys = st?.keys ?? deriveKeys(input, this.emb.id);
    const state: LookupState = st ?? { keys };
    let semantic = !!keys.partition && !!keys.query && (keys.mode === "single" || s.context.enabled);
    if (semantic && !state.queryVec) {
      try {
        await this.embedFor(input, keys, state);
      } catch (e) {
        // The answer is already delivered; keep it for the exact tier only.
        this.o.log?.warn("embedding failed at store; entry kept for the exact tier only", { error: String((e as Error)?.message ?? e) });
        semantic = false;
      }
    }
    const ts = await this.tenants.get(input.tenantId);
    const now = this.now();
    if (keys.code?.scope) this.dropRows(input.tenantId, ts, await ts.repo.deleteCodeScopeExcept(keys.code.scope, keys.code.hash));
    const body = JSON.stringify(payload.body);
    const expiresAt = s.ttlSecs > 0 ? now + s.ttlSecs * 1000 : null;
    const id = crypto.randomUUID();
    const { vecKey, replaced } = await ts.repo.insert({
      id,
      exactKey: keys.exactKey,
      partition: semantic ? keys.partition! : null,
      mode: semantic ? keys.mode! : "exact",
      style: input.style,
      model: input.model,
      queryText: keys.query ?? null,
      queryVec: semantic ? state.queryVec! : null,
      contextVec: semantic && keys.mode === "context" ? state.contextVec! : null,
      contextUsers: semantic && keys.mode === "context" ? (state.contextUsers ?? []) : null,
      codeScope: keys.code?.scope ?? null,
      codeHash: keys.code?.hash ?? null,
      payload: body,
      inputTokens: payload.usage.inputTokens,
      outputTokens: payload.usage.outputTokens,
      createdAt: now,
      expiresAt,
    });
    this.dropRows(input.tenantId, ts, replaced);
    ts.count++;
    ts.stats.stores++;
    if (semantic) (this.tenants.loadedIndex(ts, keys.partition!) ?? (await this.tenants.index(input.tenantId, ts, keys.partition!))).add(vecKey, state.queryVec!);
    // announced before the answer leaves this replica: the others serve it as soon as the client has it
    const announced = this.sync?.added(input.tenantId, vecKey, semantic ? keys.partition! : null, keys.exactKey);
    this.exact.set(`${input.tenantId}\u0000${keys.exactKey}`, {
      vecKey,
      id,
      payload: body,
      inputTokens: payload.usage.inputTokens,
      outputTokens: payload.usage.outputTokens,
      expiresAt,
    });
    // with replicas this replica's count follows the others' changes through the stream: near the bound, the database's count decides
    if (ts.count > s.maxEntriesPerTenant || (this.sync && ts.count * 10 >= s.maxEntriesPerTenant * 9)) {
      await this.tenants.flushTouches(ts);
      // the database decides how many go (its count, not this replica's): with several replicas the
      // LRU eviction happens once for the tenant, by whichever replica's statement runs first
      const evicted = await ts.repo.evictOver(s.maxEntriesPerTenant);
      ts.stats.evictions += evicted.length;
      this.dropRows(input.tenantId, ts, evicted);
      if (this.sync) ts.count = await ts.repo.count();
    }
    await announced;
  }

  /**
   * Coalesce concurrent identical misses (in process; with `replay` and replicas, across replicas:
   * a waiter on another replica answers `replay(entry)` once the holder's answer is stored).
   */
  singleFlight<T>(input: CacheKeyInput, fn: () => Promise<T>, miss?: LookupResult, replay?: (p: CachedPayload) => T): Promise<T> {
    const known = stateOf(miss)?.keys;
    const sync = this.sync;
    // a disabled cache (or no other replica to wait for) needs only a key of this process's flights: the lookup's exact
    // key when there was a lookup, else the request's fields as they came (no canonical form, no hash: a disabled cache
    // keys nothing else by it)
    if (!sync || !replay || !this.o.settings.enabled) return this.flights.run(known ? `${input.tenantId}\u0000${known.exactKey}` : `${input.tenantId}\u0001${flightKeyOf(input)}`, fn);
    const keys = known ?? deriveKeys(input, this.emb.id);
    const t = input.tenantId;
    const fromEntry = async () => {
      const row = this.closed ? undefined : await (await this.tenants.get(t)).repo.findExact(keys.exactKey, this.now());
      return row ? replay({ body: JSON.parse(row.payload), usage: { inputTokens: row.inputTokens, outputTokens: row.outputTokens } }) : undefined;
    };
    const opts = { leaseMs: this.o.settings.singleFlightLeaseMs ?? 3_000, waitMs: this.o.settings.singleFlightWaitMs };
    return this.flights.run(`${t}\u0000${keys.exactKey}`, () => sync.flight(t, keys.exactKey, opts, fn, fromEntry));
  }

  // ---------------------------------------------------------------- admin

  async purge(tenantId: string): Promise<number> {
    const ts = await this.tenants.get(tenantId);
    const removed = await ts.repo.deleteAll();
    for (const k of this.exact.keys()) if (k.startsWith(`${tenantId}\u0000`)) this.exact.delete(k);
    this.tenants.forget(tenantId);
    this.sessions.forgetTenant(tenantId);
    await this.feedback.forgetTenant(tenantId, true);
    await this.sync?.append({ t: tenantId, k: "purge" });
    return removed.length;
  }

  /** Delete one entry; false when the tenant has no entry with that id. */
  async deleteEntry(tenantId: string, id: string): Promise<boolean> {
    const ts = await this.tenants.get(tenantId);
    const r = await ts.repo.deleteById(id);
    if (!r) return false;
    this.dropRows(tenantId, ts, [r]);
    return true;
  }

  async listEntries(tenantId: string, limit: number, offset: number) {
    const ts = await this.tenants.get(tenantId);
    await this.tenants.flushTouches(ts);
    return ts.repo.list(limit, offset);
  }

  /** The tenant's entry count (from the database) and counters since it was loaded, and its feedback. */
  async stats(tenantId: string): Promise<CacheStats> {
    const ts = await this.tenants.get(tenantId);
    await this.feedback.load(tenantId);
    return { entries: ts.count, ...structuredClone(ts.stats), feedback: this.feedbackStats(tenantId) };
  }

  feedbackStats(tenantId: string): FeedbackStats {
    return this.feedback.stats(tenantId, this.singlePoint);
  }

  /** A verdict on a request of this tenant (POST /api/v1/cache/feedback; FeedbackBook.report says what each status means). */
  async reportFeedback(tenantId: string, requestId: string, verdict: "wrong" | "right", caller: string | undefined, manager: boolean) {
    return this.feedback.report(tenantId, requestId, verdict, caller, manager, this.singlePoint, (id) => this.deleteEntry(tenantId, id));
  }

  /** Delete expired entries of every tenant loaded in memory (also done lazily on lookup). */
  async sweepExpired(): Promise<number> {
    const now = this.now();
    let n = 0;
    for (const [tenantId, ts] of [...this.tenants.entries()]) {
      const removed = await ts.repo.deleteExpired(now);
      n += removed.length;
      this.dropRows(tenantId, ts, removed);
    }
    return n;
  }

  /** Drop tenants idle for tenantIdleSecs from memory (the sweep timer does it every minute). */
  unloadIdleTenants(): Promise<number> {
    return this.tenants.unloadIdle();
  }

  /** Tenants whose state is in memory (diagnostics and tests). */
  loadedTenants(): string[] {
    return this.tenants.loaded();
  }

  /** Write pending hit bookkeeping now (the timer does it every second). */
  flushTouches(): Promise<void> {
    return this.tenants.flushTouches();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.feedback.close();
    this.sync?.close();
    this.exact.clear();
    await this.tenants.close();
  }

}
