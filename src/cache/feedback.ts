/**
 * Wrong-hit feedback (POST /api/v1/cache/feedback, issue 25): a client says a hit served the wrong
 * answer ("wrong") or the right one ("right"), naming the request by its X-Request-ID.
 *
 *   - every lookup that carries a request id is remembered (the most recent MAX_REQUESTS over all
 *     tenants, RecentRequests) with what it did: hit or miss, the entry it served, the question and its vector; the hits are also written
 *     to the database (feedback-store.ts, batched off the request path, pruned by age and count), so a
 *     verdict reaching another replica, or this one after a restart, still finds the request;
 *   - "wrong" on a semantic / context hit remembers the pair as a negative of the tenant: that entry is
 *     never served again to the same question or a near-identical one (cosine >= NEAR_IDENTICAL or the
 *     same text up to case and punctuation). "wrong" on an exact hit deletes the entry (the caller does);
 *   - the tenant's operating point (a cosine floor under every semantic decision) rises by STEP_UP on
 *     each "wrong" while the tenant's reported wrong-hit rate is above its budget (`maxWrongHitRate`), and
 *     falls back by STEP_DOWN toward the configured point only after 1 / maxWrongHitRate hits since the
 *     last step without a "wrong" ("right" verdicts count twice): it tightens at once and loosens slowly.
 *
 * Durable and shared (with `persistence`): a verdict answers only once its transaction committed —
 * the request marked judged (once, across replicas), the tenant's counters and point raise, its new
 * negative. The decision stays in memory: a tenant's counters and negatives are read on its first
 * decision (`load`) and kept; hits served move the in-memory point at once and are added to the
 * database's counters once a second (in a transaction: replicas add theirs, none overwrites another's).
 * Whenever a tenant's feedback changed in the database, `announce` tells the other replicas, which
 * read it again (`refresh`). Without `persistence` (unit tests) the book is memory only.
 *
 * Bounded: at most MAX_NEGATIVES negatives per tenant (oldest dropped, in the database too),
 * MAX_TENANTS tenants' state in memory (least recently used dropped: read again on next use),
 * MAX_REQUESTS remembered requests in memory, and per tenant MAX_STORED_HITS hits no older than
 * STORED_HIT_TTL_MS in the database. State is per tenant: one tenant's verdicts never move another's point.
 */
import { LRUCache } from "lru-cache";
import type { AsyncStorage } from "../storage/async";
import { AsyncWriteBehind } from "../storage/write-behind-async";
import type { Logger } from "../core/log";
import { dot } from "../core/vectors";
import { surfaceForm } from "./verify/text";
import { ApiError } from "../core/errors";
import { FeedbackStore, pruneHits, writeHits, type FeedbackCounters, type StoredHit } from "./feedback-store";
import { RecentRequests } from "./recent-requests";
export { RecentRequests } from "./recent-requests";

export const NEAR_IDENTICAL = 0.97;
export const STEP_UP = 0.01;
export const STEP_DOWN = 0.002;
export const MAX_POINT = 0.995;
export const MAX_NEGATIVES = 1000;
const MAX_TENANTS = 10_000;
/** remembered requests over all tenants (a hit holds its query vector: 2 KB at 512 dimensions, so <= ~40 MB) */
const MAX_REQUESTS = 20_000;
/** hits kept in the database per tenant, and for how long: a verdict must come within a day */
export const MAX_STORED_HITS = 20_000;
export const STORED_HIT_TTL_MS = 24 * 3_600_000;
/** a tenant's stored hits are counted against MAX_STORED_HITS once per this many written (so the bound may be passed by this many) */
export const PRUNE_EVERY_HITS = 1_000;
/** how soon a hit is in the database (a verdict sent to another replica within this window is a 404) */
const HIT_FLUSH_MS = 200;
/** how often served hits are added to the database's counters, and old hits pruned (every PRUNE_EVERY_MS) */
const COUNTER_FLUSH_MS = 1_000;
const PRUNE_EVERY_MS = 60_000;

export interface RememberedLookup {
  tenantId: string;
  /** who made the request (API key id, or the JWT subject): they may report on it */
  caller?: string;
  hit: boolean;
  tier?: "exact" | "semantic" | "l2_context";
  entryId?: string;
  query?: string;
  queryVec?: Float32Array;
  /** the verdict already given (a request is judged once) */
  verdict?: "wrong" | "right";
}

interface Negative {
  entryId: string;
  surface: string;
  vec: Float32Array | null;
}

interface TenantFeedback extends FeedbackCounters {
  negatives: Negative[];
  /** the tenant gave a verdict (it has a row): only then do its hits count */
  active: boolean;
  /** bumped by every change this replica commits (a refresh that read before one reads again) */
  version: number;
}

export interface FeedbackStats {
  wrong: number;
  right: number;
  /** the operating point (cosine floor) the tenant's lookups use now */
  point: number;
  /** how far reported wrong hits raised it above the configured point */
  raisedBy: number;
  maxWrongHitRate: number;
}

export interface FeedbackPersistence {
  storage: AsyncStorage;
  now: () => number;
  /** tell the other replicas the tenant's feedback changed in the database (they `refresh` it) */
  announce?: (tenantId: string) => Promise<void> | void;
  log?: Logger;
  /** the once-a-second counter flush and prune (default true; without it `flush()` does it) */
  timers?: boolean;
}

const zero = (): FeedbackCounters => ({ wrong: 0, right: 0, hits: 0, sinceStep: 0, raise: 0 });

/** `n` hits served: the raise comes down by STEP_DOWN per 1 / maxWrongHitRate of them. */
function serve(c: FeedbackCounters, n: number, maxWrongHitRate: number) {
  c.hits += n;
  c.sinceStep += n;
  const every = Math.ceil(1 / Math.max(1e-6, maxWrongHitRate));
  while (c.raise > 0 && c.sinceStep >= every) {
    c.raise = Math.max(0, c.raise - STEP_DOWN);
    c.sinceStep -= every;
  }
}

/** A verdict on the counters: "right" counts as two hits; "wrong" tightens while the reported rate is over budget. */
function count(c: FeedbackCounters, verdict: "wrong" | "right", tier: RememberedLookup["tier"], configuredPoint: number, maxWrongHitRate: number) {
  if (verdict === "right") {
    c.right++;
    serve(c, 2, maxWrongHitRate);
    return;
  }
  c.wrong++;
  if (tier === "exact") return;
  // tighten while the reported wrong-hit rate is over budget (every "wrong" is over budget until
  // 1 / maxWrongHitRate hits have been served)
  if (c.wrong / Math.max(1, c.hits) > maxWrongHitRate) {
    c.raise = Math.min(Math.max(0, MAX_POINT - configuredPoint), c.raise + STEP_UP);
    c.sinceStep = 0;
  }
}

const negativeOf = (r: RememberedLookup): Negative | undefined =>
  r.tier !== "exact" && r.entryId !== undefined && r.query !== undefined ? { entryId: r.entryId, surface: surfaceForm(r.query), vec: r.queryVec ?? null } : undefined;

function pushNegative(s: TenantFeedback, n: Negative) {
  s.negatives.push(n);
  if (s.negatives.length > MAX_NEGATIVES) s.negatives.splice(0, s.negatives.length - MAX_NEGATIVES);
}

/** thrown inside a verdict's transaction when the request was judged already (rolls it back) */
class AlreadyJudged extends Error {}

export class FeedbackBook {
  private readonly requests = new RecentRequests<RememberedLookup>(MAX_REQUESTS);
  private readonly tenants = new LRUCache<string, TenantFeedback>({ max: MAX_TENANTS });
  /** tenants being read (concurrent first uses share one read) */
  private readonly loading = new Map<string, Promise<TenantFeedback>>();
  /** hits served per tenant, not yet added to the database's counters */
  private readonly pendingHits = new Map<string, number>();
  /** one database change of a tenant at a time on this replica (their results reach memory in commit order) */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly hitWriter?: AsyncWriteBehind<StoredHit>;
  private readonly timer?: ReturnType<typeof setInterval>;
  private lastPrune = 0;
  private closed = false;

  constructor(
    private readonly maxWrongHitRate: number,
    private readonly p?: FeedbackPersistence,
  ) {
    if (!p) return;
    this.lastPrune = p.now();
    this.hitWriter = new AsyncWriteBehind<StoredHit>(p.storage, {
      write: (db, rows) => writeHits(db, rows, p.now() - STORED_HIT_TTL_MS, MAX_STORED_HITS, this.dueForPrune(db.tenantId, rows.length)),
      flushMs: HIT_FLUSH_MS,
      max: 512,
      onError: (e, lost) => p.log?.warn("cache feedback: hits not written (verdicts on them answer 404 on other replicas)", { lost, error: String(e) }),
    });
    if (p.timers !== false) {
      this.timer = setInterval(() => void this.flush().catch((e) => p.log?.warn("cache feedback: counters not flushed (retried next second)", { error: String(e) })), COUNTER_FLUSH_MS);
      this.timer.unref?.();
    }
  }

  /** hits written per tenant since its count bound was last enforced (writeHits' prune) */
  private readonly sincePrune = new Map<string, number>();

  /** the count bound is enforced every PRUNE_EVERY_HITS rows of a tenant, not every 200 ms batch (a walk over the newest 20,000 entries of the age index) */
  private dueForPrune(tenantId: string, rows: number): boolean {
    const n = (this.sincePrune.get(tenantId) ?? 0) + rows;
    if (n < PRUNE_EVERY_HITS) {
      if (this.sincePrune.size >= 10_000 && !this.sincePrune.has(tenantId)) this.sincePrune.clear(); // bounded: a cleared count only prunes sooner
      this.sincePrune.set(tenantId, n);
      return false;
    }
    this.sincePrune.delete(tenantId);
    return true;
  }

  /** memory only: the tenant's state, created by its first verdict */
  private state(tenantId: string): TenantFeedback {
    let s = this.tenants.get(tenantId);
    if (!s) {
      s = { ...zero(), negatives: [], active: true, version: 0 };
      this.tenants.set(tenantId, s);
    }
    return s;
  }

  private store(tenantId: string) {
    return new FeedbackStore(this.p!.storage.tenant(tenantId));
  }

  /** true when the tenant's feedback is in memory (a decision needs no promise) */
  loaded(tenantId: string): boolean {
    return !this.p || this.tenants.has(tenantId);
  }

  /**
   * Read the tenant's counters and negatives from the database (once; kept while in memory).
   * A read dropped while in flight (a change announced, a purge, a resync) is read again: the
   * decision that waits for it never runs without the tenant's feedback.
   */
  async load(tenantId: string): Promise<void> {
    let last: TenantFeedback | undefined;
    for (let attempt = 0; attempt < 3 && !this.loaded(tenantId); attempt++) last = await this.loadOnce(tenantId);
    if (!this.loaded(tenantId) && last) this.tenants.set(tenantId, last);
  }

  private loadOnce(tenantId: string): Promise<TenantFeedback> {
    let p = this.loading.get(tenantId);
    if (!p) {
      const read: Promise<TenantFeedback> = this.read(tenantId).then(
        (s) => {
          if (this.loading.get(tenantId) === read) {
            this.loading.delete(tenantId);
            this.tenants.set(tenantId, s);
          }
          return s;
        },
        (e) => {
          if (this.loading.get(tenantId) === read) this.loading.delete(tenantId);
          throw e;
        },
      );
      this.loading.set(tenantId, (p = read));
    }
    return p;
  }

  private async read(tenantId: string): Promise<TenantFeedback> {
    const st = this.store(tenantId);
    const c = await st.counters();
    const negatives = c ? await st.negatives() : [];
    const s: TenantFeedback = { ...(c ?? zero()), negatives: negatives.slice(-MAX_NEGATIVES), active: !!c, version: 0 };
    // this replica's hits not yet in the database's counters
    if (s.active) serve(s, this.pendingHits.get(tenantId) ?? 0, this.maxWrongHitRate);
    return s;
  }

  /**
   * Another replica changed the tenant's feedback in the database: read it again (in the
   * background; until then decisions use what memory has). A tenant not in memory is read on its next use.
   */
  async refresh(tenantId: string): Promise<void> {
    // a read in flight may predate the change: once it is in memory, read again
    await this.loading.get(tenantId)?.catch(() => {});
    for (let attempt = 0; attempt < 5; attempt++) {
      const before = this.tenants.peek(tenantId);
      if (!before) return; // not in memory: read on its next use
      const s = await this.read(tenantId);
      const now = this.tenants.peek(tenantId);
      if (!now) return;
      if (now.version !== before.version) continue; // this replica committed meanwhile: its memory may be newer than what was read
      s.version = now.version;
      this.tenants.set(tenantId, s);
      return;
    }
  }

  remember(requestId: string, r: RememberedLookup) {
    this.requests.set(`${r.tenantId}\u0000${requestId}`, r);
    if (r.hit && this.hitWriter && r.tier && r.entryId !== undefined)
      this.hitWriter.push(r.tenantId, { requestId, caller: r.caller ?? null, tier: r.tier, entryId: r.entryId, query: r.query ?? null, queryVec: r.queryVec ?? null, createdAt: this.p!.now() });
    if (r.hit && r.tier !== "exact") this.served(r.tenantId, 1);
  }

  /** the remembered lookup of a request of this tenant (another tenant's request id is unknown here) */
  lookup(tenantId: string, requestId: string): RememberedLookup | undefined {
    return this.requests.get(`${tenantId}\u0000${requestId}`);
  }

  private served(tenantId: string, n: number) {
    const s = this.tenants.get(tenantId);
    if (s ? !s.active : !this.p) return; // a tenant that never reported anything stays at the configured point
    if (s) serve(s, n, this.maxWrongHitRate);
    if (this.p) this.pendingHits.set(tenantId, (this.pendingHits.get(tenantId) ?? 0) + n);
  }

  /** Memory only (no persistence): record a verdict. Returns what the caller must do beyond this book (drop an exact entry). */
  judge(r: RememberedLookup, verdict: "wrong" | "right", configuredPoint: number): { deleteEntry: boolean } {
    const s = this.state(r.tenantId);
    r.verdict = verdict;
    count(s, verdict, r.tier, configuredPoint, this.maxWrongHitRate);
    if (verdict === "wrong" && r.tier === "exact") return { deleteEntry: true };
    const n = verdict === "wrong" ? negativeOf(r) : undefined;
    if (n) pushNegative(s, n);
    return { deleteEntry: false };
  }

  /** the tenant's operating point: the configured one plus what wrong hits added */
  point(tenantId: string, configured: number): number {
    const s = this.tenants.get(tenantId);
    return s ? Math.min(Math.max(configured, MAX_POINT), configured + s.raise) : configured;
  }

  /** true when the tenant said this entry answered this question (or a near-identical one) wrongly */
  blocked(tenantId: string, entryId: string, query: string, vec: Float32Array | undefined): boolean {
    const s = this.tenants.get(tenantId);
    if (!s || s.negatives.length === 0) return false;
    let surface: string | undefined;
    for (const n of s.negatives) {
      if (n.entryId !== entryId) continue;
      surface ??= surfaceForm(query);
      if (n.surface === surface) return true;
      if (n.vec && vec && n.vec.length === vec.length && dot(n.vec, vec) >= NEAR_IDENTICAL) return true;
    }
    return false;
  }

  stats(tenantId: string, configured: number): FeedbackStats {
    const s = this.tenants.get(tenantId);
    return { wrong: s?.wrong ?? 0, right: s?.right ?? 0, point: this.point(tenantId, configured), raisedBy: s?.raise ?? 0, maxWrongHitRate: this.maxWrongHitRate };
  }

  /**
   * A verdict on a request of this tenant. `caller`: who reports (API key id or "sub:" + JWT subject);
   * `manager`: holds ManageConfig (may report on any of the tenant's requests); `deleteEntry` drops an
   * entry (a "wrong" exact hit). 404: unknown request id (or another tenant's); 403: someone else's
   * request; 409: the request did not hit, or was judged already (here or on another replica).
   * With persistence it resolves once the verdict is committed.
   */
  async report(
    tenantId: string,
    requestId: string,
    verdict: "wrong" | "right",
    caller: string | undefined,
    manager: boolean,
    configuredPoint: number,
    deleteEntry: (entryId: string) => Promise<unknown> | void,
  ): Promise<FeedbackStats & { requestId: string; verdict: "wrong" | "right" }> {
    const r = this.lookup(tenantId, requestId) ?? (await this.storedLookup(tenantId, requestId));
    if (!r) throw new ApiError("not_found", `request ${requestId} not found (no cache lookup of this tenant with that X-Request-ID is remembered)`);
    if (!manager && (!caller || r.caller !== caller)) throw new ApiError("authorization_error", "only the key that made the request, or ManageConfig, may report on it");
    if (!r.hit) throw new ApiError("conflict", `request ${requestId} was not served from the cache`);
    if (r.verdict) throw new ApiError("conflict", `request ${requestId} was already reported ${r.verdict}`);
    if (!this.p) {
      if (this.judge(r, verdict, configuredPoint).deleteEntry && r.entryId) await deleteEntry(r.entryId);
    } else {
      await this.load(tenantId);
      await this.exclusive(tenantId, () => this.commitVerdict(tenantId, requestId, r, verdict, configuredPoint));
      if (verdict === "wrong" && r.tier === "exact" && r.entryId) await deleteEntry(r.entryId);
      await this.p.announce?.(tenantId);
    }
    return { requestId, verdict, ...this.stats(tenantId, configuredPoint) };
  }

  /** a hit this replica does not remember (served by another replica, or before a restart) */
  private async storedLookup(tenantId: string, requestId: string): Promise<RememberedLookup | undefined> {
    if (!this.p) return undefined;
    const h = await this.store(tenantId).hit(requestId);
    if (!h) return undefined;
    return {
      tenantId,
      hit: true,
      tier: h.tier,
      entryId: h.entryId,
      ...(h.caller !== null ? { caller: h.caller } : {}),
      ...(h.query !== null ? { query: h.query } : {}),
      ...(h.queryVec ? { queryVec: h.queryVec } : {}),
      ...(h.verdict ? { verdict: h.verdict } : {}),
    };
  }

  private async commitVerdict(tenantId: string, requestId: string, r: RememberedLookup, verdict: "wrong" | "right", configuredPoint: number) {
    const p = this.p!;
    const st = this.store(tenantId);
    const now = p.now();
    const negative = verdict === "wrong" ? negativeOf(r) : undefined;
    // this replica's hits not yet counted go in with the verdict (the rate it is judged by includes them)
    const pending = this.pendingHits.get(tenantId) ?? 0;
    this.pendingHits.delete(tenantId);
    let c: FeedbackCounters;
    try {
      c = await p.storage.tx(async () => {
        const hit = { requestId, caller: r.caller ?? null, tier: r.tier!, entryId: r.entryId!, query: r.query ?? null, queryVec: r.queryVec ?? null, createdAt: now };
        if (!(await st.claim(hit, verdict))) throw new AlreadyJudged();
        const row = await st.counters();
        const c = row ?? zero();
        if (row) serve(c, pending, this.maxWrongHitRate);
        count(c, verdict, r.tier, configuredPoint, this.maxWrongHitRate);
        await st.putCounters(c, now);
        if (negative) await st.addNegative(negative, now, MAX_NEGATIVES);
        return c;
      });
    } catch (e) {
      if (pending) this.pendingHits.set(tenantId, (this.pendingHits.get(tenantId) ?? 0) + pending);
      if (!(e instanceof AlreadyJudged)) throw e;
      const judged = (await st.hit(requestId))?.verdict;
      if (judged) r.verdict = judged;
      throw new ApiError("conflict", `request ${requestId} was already reported${judged ? ` ${judged}` : ""}`);
    }
    r.verdict = verdict;
    this.adopt(tenantId, c, negative);
  }

  /** Memory follows a commit of this replica: the counters as committed, plus the hits served since. */
  private adopt(tenantId: string, c: FeedbackCounters, negative?: Negative) {
    const s = this.tenants.peek(tenantId);
    if (!s) return; // not in memory: read from the database on next use
    Object.assign(s, c, { active: true, version: s.version + 1 });
    serve(s, this.pendingHits.get(tenantId) ?? 0, this.maxWrongHitRate);
    if (negative) pushNegative(s, negative);
  }

  private exclusive(tenantId: string, fn: () => Promise<void>): Promise<void> {
    const run = (this.chains.get(tenantId) ?? Promise.resolve()).then(fn);
    const tail = run.catch(() => {});
    this.chains.set(tenantId, tail);
    void tail.then(() => {
      if (this.chains.get(tenantId) === tail) this.chains.delete(tenantId);
    });
    return run;
  }

  /**
   * Add the hits served to the database's counters (each tenant in its own transaction; a point that
   * moved is announced), write the remembered hits queued, and prune old hits once a minute.
   */
  async flush(): Promise<void> {
    const p = this.p;
    if (!p) return;
    const work: Promise<void>[] = [this.hitWriter!.flush()];
    for (const [tenantId, n] of [...this.pendingHits]) {
      this.pendingHits.delete(tenantId);
      work.push(
        this.exclusive(tenantId, () => this.commitHits(tenantId, n)).catch((e) => {
          this.pendingHits.set(tenantId, (this.pendingHits.get(tenantId) ?? 0) + n);
          throw e;
        }),
      );
    }
    const now = p.now();
    if (now - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now;
      work.push(pruneHits(p.storage, now - STORED_HIT_TTL_MS).then(() => {}));
    }
    const failed = (await Promise.allSettled(work)).find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  private async commitHits(tenantId: string, n: number) {
    const p = this.p!;
    const st = this.store(tenantId);
    const r = await p.storage.tx(async () => {
      const c = await st.counters();
      if (!c) return undefined; // no verdict yet: hits do not count
      const before = c.raise;
      serve(c, n, this.maxWrongHitRate);
      await st.putCounters(c, p.now());
      return { c, moved: c.raise !== before };
    });
    if (!r) return;
    this.adopt(tenantId, r.c);
    if (r.moved) await p.announce?.(tenantId);
  }

  /** The tenant's cache was purged: its feedback goes too (here and, with `inDatabase`, in the database). */
  async forgetTenant(tenantId: string, inDatabase = false) {
    this.tenants.delete(tenantId);
    this.loading.delete(tenantId);
    this.pendingHits.delete(tenantId);
    if (inDatabase && this.p) {
      await this.hitWriter!.flush(tenantId);
      await this.store(tenantId).forget();
    }
  }

  /** Every tenant's memory goes (changes may have been missed): each is read again on next use. */
  forgetAll() {
    this.tenants.clear();
    this.loading.clear();
  }

  /** Write what is pending (counters, hits) and stop. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    if (!this.p) return;
    await this.flush().catch((e) => this.p!.log?.warn("cache feedback: counters not flushed at close", { error: String(e) }));
    await this.hitWriter!.close();
  }
}
