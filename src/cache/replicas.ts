/**
 * One semantic cache across replicas (issue 24). Entries' rows are in the shared database; what
 * each replica keeps in memory (its USearch indexes per partition, the exact-tier LRU, the entry
 * count) follows a stream of the changes every replica makes:
 *  - `add`: an entry was stored (the followers add its vector, read from the database, to the
 *    partition's index when they have it loaded);
 *  - `drop`: entries were removed — replaced, evicted (LRU, decided by the database for the tenant:
 *    CacheStore.evictOver), expired (whichever replica's DELETE removed the row announces it),
 *    deleted through the API, superseded code context;
 *  - `purge`: every entry of the tenant; `settings`: the tenant's own decision settings changed;
 *    `feedback`: the tenant's wrong-hit feedback changed (the engine's FeedbackBook reads it again).
 * Appended with XADD after the database write, by the replica that made the change; each replica
 * follows the stream from its position (SharedLog) and skips its own entries by an origin id.
 *
 * Concurrent identical misses on several replicas reach upstream once: the replica that takes a
 * short lease (SET NX PX, renewed while the call runs) calls upstream; the others wait for the
 * entry to appear (its `add`, or a poll of the database) and answer from it. A holder that dies
 * stops renewing: its lease expires and one waiter takes over. Without Redis (unreachable) each
 * replica goes on alone.
 * On a single node none of this exists (no stream, no lease, no cost).
 */
import { script, type SharedLog, type SharedStore } from "../core/hotstate";
import type { Logger } from "../core/log";
import type { Removed } from "./store";
import type { CacheMetrics } from "./metrics";
import type { LRUCache } from "lru-cache";
import type { ExactRow } from "./store";
import type { TenantRegistry } from "./tenants";
import type { SessionTurns } from "./context";

export interface CacheSharing {
  store: SharedStore;
  log: SharedLog;
  /** Redis key prefix of this deployment */
  prefix: string;
}

/** o: the appending replica, q: its sequence number (a change sent again after a timeout may be in the stream twice: applied once) */
export type SyncEvent = { o: string; q: number; t: string } & (
  | { k: "add"; vk: number; p: string | null; ek: string }
  | { k: "drop"; r: Array<[number, string | null, string]> }
  | { k: "purge" | "settings" | "feedback" }
);

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** stream name (under the prefix) */
export const CACHE_STREAM = "cache:stream";
/** entries kept in the stream (approximate trim): a replica further behind than this resyncs from the database */
const STREAM_MAX = 100_000;
/** changes kept for a retry while Redis is unreachable (beyond: lost to the others until they reload the tenant) */
const RETRY_MAX = 10_000;
const SEEN_MAX = 50_000;

const APPEND = script("return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'p', ARGV[2])");
const ACQUIRE = script("if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0");
const RENEW = script("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0");
const RELEASE = script("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0");

/**
 * Another replica's change: bring this replica's memory (indexes, exact LRU, count) in line with the
 * database. A promise when part of it waits for the database (an added entry's vector, new settings):
 * it settles once the change is in effect here.
 */
export function applyChange(e: SyncEvent, tenants: TenantRegistry, exact: LRUCache<string, ExactRow>, sessions: SessionTurns): void | Promise<void> {
  const ts = tenants.peek(e.t);
  if (e.k === "add") {
    exact.delete(`${e.t}\u0000${e.ek}`);
    if (!ts) return;
    ts.count++;
    const idx = e.p ? ts.parts.get(e.p) : undefined;
    if (!idx) return;
    // the vector is read from the database; a drop of the same entry applied before the read
    // answers can leave its key in the index: the first lookup that meets it finds no row and drops it
    return ts.repo
      .candidate(e.vk)
      .then((c) => {
        if (c && ts.parts.get(e.p!) === idx) idx.add(e.vk, c.queryVec);
      })
      .catch(() => {}); // unreadable now: the entry is served once the tenant's index reloads
  } else if (e.k === "drop") {
    for (const [vk, p, ek] of e.r) {
      exact.delete(`${e.t}\u0000${ek}`);
      if (!ts) continue;
      if (p) ts.parts.get(p)?.remove(vk);
      ts.touches.delete(vk);
      ts.count--;
    }
  } else if (e.k === "purge") {
    for (const k of exact.keys()) if (k.startsWith(`${e.t}\u0000`)) exact.delete(k);
    tenants.drop(e.t);
    sessions.forgetTenant(e.t);
  } else return ts?.refreshSettings().catch(() => {});
}

export class CacheSync {
  readonly origin = crypto.randomUUID().slice(0, 8);
  private readonly stream: string;
  /** exact-key waiters of this replica (tenant \0 exactKey), woken by an `add` of that key */
  private readonly arrivals = new Map<string, Set<() => void>>();
  /** counters (tests, diagnostics) */
  readonly counts = { appended: 0, applied: 0, leaseWaits: 0, leaseTakeovers: 0, resyncs: 0 };
  private unannounced = 0;
  private seq = 0;
  /** ids of the changes applied lately (a retried change may be read twice) */
  private readonly seen = new Set<string>();
  /** changes Redis did not take, oldest first */
  private readonly retry: string[] = [];
  private retryTimer?: ReturnType<typeof setInterval>;
  private resending = false;
  private lastWarn = 0;

  constructor(
    private readonly s: CacheSharing,
    /** a promise: the change is in effect once it settles (the delay is measured to then) */
    apply: (e: SyncEvent) => void | Promise<void>,
    resync: () => void,
    private readonly logger?: Logger,
    private readonly metrics?: CacheMetrics,
  ) {
    this.stream = `${s.prefix}${CACHE_STREAM}`;
    s.log.follow(
      CACHE_STREAM,
      (payload, appendedAt) => {
        const e = JSON.parse(payload) as SyncEvent;
        if (e.o === this.origin) return;
        const id = `${e.o}:${e.q}`;
        if (this.seen.has(id)) return;
        this.seen.add(id);
        if (this.seen.size > SEEN_MAX) this.seen.delete(this.seen.values().next().value!);
        this.counts.applied++;
        const applied = () => {
          this.metrics?.applied.inc({ kind: e.k });
          this.metrics?.applyDelay.observe({}, Math.max(0, Date.now() - appendedAt) / 1000);
        };
        const pending = apply(e);
        if (pending) void pending.then(applied);
        else applied();
        if (e.k === "add") this.wake(e.t, e.ek);
      },
      () => {
        this.counts.resyncs++;
        resync();
      },
    );
  }

  /**
   * Append a change (after its database write). Never throws: a change Redis did not take is kept
   * (up to RETRY_MAX) and sent again every second — applying a change late is safe, since a
   * follower reads an added entry from the database (gone: skipped) and drops are idempotent.
   */
  async append(e: DistributiveOmit<SyncEvent, "o" | "q">): Promise<void> {
    const payload = JSON.stringify({ ...e, o: this.origin, q: ++this.seq });
    if (!(await this.send(payload)) && this.retry.length < RETRY_MAX) {
      this.retry.push(payload);
      this.retryTimer ??= setInterval(this.resend, 1_000);
      this.retryTimer.unref?.();
    }
  }

  private async send(payload: string): Promise<boolean> {
    try {
      await this.s.store.run(APPEND, [this.stream], [STREAM_MAX, payload]);
      this.counts.appended++;
      return true;
    } catch (err) {
      // once a second at most: an outage must not flood the log
      this.unannounced++;
      const now = Date.now();
      if (now - this.lastWarn >= 1_000) {
        this.logger?.warn("cache changes not yet announced to other replicas (redis unreachable); retried every second", { count: this.unannounced, error: String(err) });
        this.lastWarn = now;
        this.unannounced = 0;
      }
      return false;
    }
  }

  private resend = async () => {
    if (this.resending) return;
    this.resending = true;
    try {
      while (this.retry.length) {
        if (!(await this.send(this.retry[0]!))) return;
        this.retry.shift();
      }
      clearInterval(this.retryTimer);
      this.retryTimer = undefined;
    } finally {
      this.resending = false;
    }
  };

  close() {
    clearInterval(this.retryTimer);
  }

  added(t: string, vk: number, p: string | null, ek: string) {
    this.wake(t, ek);
    return this.append({ t, k: "add", vk, p, ek });
  }

  dropped(t: string, rows: Removed[]) {
    if (rows.length) void this.append({ t, k: "drop", r: rows.map((r) => [r.vecKey, r.partition, r.exactKey]) });
  }

  private wake(t: string, ek: string) {
    const k = `${t}\u0000${ek}`;
    const set = this.arrivals.get(k);
    if (!set) return;
    this.arrivals.delete(k);
    for (const w of set) w();
  }

  /** resolves when an entry with this exact key is announced, or after `ms` */
  private arrival(t: string, ek: string, ms: number): Promise<void> {
    const k = `${t}\u0000${ek}`;
    return new Promise((resolve) => {
      let set = this.arrivals.get(k);
      if (!set) this.arrivals.set(k, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        set!.delete(done);
        if (!set!.size && this.arrivals.get(k) === set) this.arrivals.delete(k);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }

  /**
   * Run `fn` as the one replica calling upstream for (tenant, exactKey), or wait for the replica
   * that does and answer with `fromEntry` once its entry is stored. Bounded by `waitMs` (then this
   * replica calls upstream itself, as the in-process single flight does).
   */
  async flight<T>(t: string, ek: string, o: { leaseMs: number; waitMs: number }, fn: () => Promise<T>, fromEntry: () => Promise<T | undefined>): Promise<T> {
    const lease = `${this.s.prefix}cache:lease:${new Bun.CryptoHasher("sha256").update(`${t}\u0000${ek}`).digest("hex").slice(0, 40)}`;
    const token = crypto.randomUUID();
    const deadline = performance.now() + o.waitMs;
    let waited = false;
    for (;;) {
      let got: boolean;
      try {
        got = (await this.s.store.run(ACQUIRE, [lease], [token, o.leaseMs])) === 1;
      } catch {
        return fn(); // no Redis: this replica alone, as on a single node
      }
      if (got) {
        if (waited) this.counts.leaseTakeovers++;
        // the entry may have landed between our last look and the lease (its holder released it)
        const ready = waited ? await fromEntry() : undefined;
        if (ready !== undefined) {
          void this.s.store.run(RELEASE, [lease], [token]).catch(() => {});
          return ready;
        }
        return this.hold(lease, token, o.leaseMs, fn);
      }
      if (!waited) {
        this.counts.leaseWaits++;
        this.metrics?.flightWaits.inc();
      }
      waited = true;
      const left = deadline - performance.now();
      if (left <= 0) return fn();
      // woken by the entry's announcement; the poll covers a lost announcement and a holder that gave up
      await this.arrival(t, ek, Math.min(left, Math.max(20, o.leaseMs / 4)));
      const r = await fromEntry();
      if (r !== undefined) return r;
    }
  }

  private async hold<T>(lease: string, token: string, leaseMs: number, fn: () => Promise<T>): Promise<T> {
    const renew = setInterval(() => void this.s.store.run(RENEW, [lease], [token, leaseMs]).catch(() => {}), Math.max(10, leaseMs / 3));
    try {
      return await fn();
    } finally {
      clearInterval(renew);
      void this.s.store.run(RELEASE, [lease], [token]).catch(() => {});
    }
  }
}
