/**
 * Rows written behind the request that produced them: queued in memory per tenant and written
 * in one transaction `flushMs` after the first queued row, at once when `max` rows are queued
 * (the queue cannot grow beyond it), when a reader that must see them calls flush (its tenant,
 * or all), and on close. After close nothing more is queued (the database closes next).
 *
 * A failed batch is reported to onError and dropped (its transaction rolled back as a whole).
 */
import type { Storage, TenantDb } from "./scoped";

export interface WriteBehindOptions<T> {
  /** writes one tenant's rows, in queue order, inside the batch's transaction */
  write(db: TenantDb, rows: T[]): void;
  flushMs: number;
  max: number;
  onError?(e: unknown): void;
}

export class WriteBehind<T> {
  private queued = new Map<string, T[]>();
  private size = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    private readonly storage: Storage,
    private readonly opts: WriteBehindOptions<T>,
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
    if (++this.size >= this.opts.max) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.opts.flushMs);
      (this.timer as { unref?: () => void }).unref?.();
    }
  }

  /** Write what is queued: one tenant's rows, or every tenant's. */
  flush(tenantId?: string) {
    if (this.size === 0) return;
    let batch: Map<string, T[]>;
    if (tenantId === undefined) {
      batch = this.queued;
      this.queued = new Map();
    } else {
      const rows = this.queued.get(tenantId);
      if (!rows) return;
      this.queued.delete(tenantId);
      batch = new Map([[tenantId, rows]]);
    }
    for (const rows of batch.values()) this.size -= rows.length;
    if (this.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    try {
      this.storage.tx(() => {
        for (const [tenant, rows] of batch) this.opts.write(this.storage.tenant(tenant), rows);
      });
    } catch (e) {
      this.opts.onError?.(e);
    }
  }

  /** Write what is queued and stop queueing (before the database closes). */
  close() {
    this.flush();
    this.closed = true;
  }
}
