/**
 * WriteBehind (write-behind.ts) over the async storage, for per-request rows (usage records, call
 * logs) on either backend: rows are queued in memory per tenant and written in one transaction
 * `flushMs` after the first queued row, at once when `max` rows are queued, when a reader that must
 * see them awaits `flush` (its tenant, or all), and on `close` (a clean shutdown loses nothing). A
 * crash loses at most what was queued: the last `flushMs` window (at most `max` rows).
 *
 * A batch that fails because the database is unavailable (StorageUnavailableError) goes back to the
 * front of the queue and is retried with the next flush, as long as the queue stays within
 * `maxQueued`; beyond that the oldest rows are dropped and reported. Any other failure (a bad row)
 * drops its batch (its transaction rolled back as a whole) and reports it to onError.
 */
import type { AsyncStorage, AsyncTenantDb } from "./async";
import { StorageUnavailableError } from "./errors";

export interface AsyncWriteBehindOptions<T> {
  /** writes one tenant's rows, in queue order, inside the batch's transaction: statements only (`run`), no reads (storage/async.ts writeBatch) */
  write(db: AsyncTenantDb, rows: T[]): Promise<void>;
  flushMs: number;
  max: number;
  /** rows kept queued while the database is unavailable; default 20 × max */
  maxQueued?: number;
  /** a dropped batch (or rows dropped past maxQueued): the error and how many rows were lost */
  onError?(e: unknown, lostRows: number): void;
}

export class AsyncWriteBehind<T> {
  private queued = new Map<string, T[]>();
  private size = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  /**
   * the last batch write: batches are written one after the other. Batches written at once lock the
   * same tenants' rows (rollups) in different orders: on PostgreSQL under load they deadlocked and
   * failed serialization over and over.
   */
  private tail: Promise<void> = Promise.resolve();

  constructor(
    private readonly storage: AsyncStorage,
    private readonly opts: AsyncWriteBehindOptions<T>,
  ) {}

  /** rows queued and not yet written */
  get pending(): number {
    return this.size;
  }

  push(tenantId: string, row: T) {
    if (this.closed) return;
    const rows = this.queued.get(tenantId);
    if (rows) rows.push(row);
    else this.queued.set(tenantId, [row]);
    if (++this.size >= this.opts.max) void this.flush();
    else this.arm();
  }

  private arm() {
    if (this.timer || this.size === 0 || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.opts.flushMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Write what is queued (one tenant's rows, or every tenant's); resolves when it and every batch already in flight are written. */
  flush(tenantId?: string): Promise<void> {
    const batch = this.take(tenantId);
    // written after every batch taken before it (write() never rejects: a failure is requeued or reported there)
    if (batch.size > 0) this.tail = this.tail.then(() => this.write(batch));
    return this.tail;
  }

  private take(tenantId: string | undefined): Map<string, T[]> {
    let batch: Map<string, T[]>;
    if (tenantId === undefined) {
      batch = this.queued;
      this.queued = new Map();
    } else {
      const rows = this.queued.get(tenantId);
      if (!rows) return new Map();
      this.queued.delete(tenantId);
      batch = new Map([[tenantId, rows]]);
    }
    for (const rows of batch.values()) this.size -= rows.length;
    if (this.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    return batch;
  }

  private async write(batch: Map<string, T[]>): Promise<void> {
    try {
      // a write-only batch: on SQLite it commits on the writer thread, not this one (storage/async.ts writeBatch)
      await this.storage.writeBatch(async (w) => {
        // tenants in one order in every batch of every replica: writers of the same tenants wait for each other instead of deadlocking
        for (const tenant of [...batch.keys()].sort()) await this.opts.write(w.tenant(tenant), batch.get(tenant)!);
      });
    } catch (e) {
      let lost = 0;
      for (const rows of batch.values()) lost += rows.length;
      if (e instanceof StorageUnavailableError && !this.closed) {
        lost = this.requeue(batch);
        if (lost > 0) this.opts.onError?.(e, lost);
        this.arm();
      } else this.opts.onError?.(e, lost);
    }
  }

  /** put a failed batch back in front of what was queued since; the rows that do not fit are dropped (oldest first): how many */
  private requeue(batch: Map<string, T[]>): number {
    const cap = this.opts.maxQueued ?? this.opts.max * 20;
    for (const [tenant, rows] of batch) {
      const later = this.queued.get(tenant) ?? [];
      this.queued.delete(tenant);
      this.queued.set(tenant, [...rows, ...later]);
      this.size += rows.length;
    }
    let dropped = 0;
    for (const [tenant, rows] of this.queued) {
      if (this.size <= cap) break;
      const n = Math.min(rows.length, this.size - cap);
      rows.splice(0, n);
      if (rows.length === 0) this.queued.delete(tenant);
      this.size -= n;
      dropped += n;
    }
    return dropped;
  }

  /** Write what is queued and stop queueing (before the database closes). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
