/**
 * Coalesce concurrent identical misses. The first caller for a key (the leader) runs fn(); callers
 * arriving while it runs wait for its result, at most `waitMs`.
 *
 * - leader succeeds: every waiter gets the same result.
 * - leader fails: each waiter proceeds on its own (runs its own fn()), so one bad upstream
 *   response or a leader's client disconnect does not fail everyone; the waiters do not
 *   coalesce again among themselves, which bounds the delay to one extra upstream call.
 * - wait exceeds waitMs: that waiter proceeds on its own.
 */
export class SingleFlight {
  private readonly inflight = new Map<string, Promise<unknown>>();
  coalesced = 0;

  constructor(private readonly waitMs: number) {}

  get size(): number {
    return this.inflight.size;
  }

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const current = this.inflight.get(key) as Promise<T> | undefined;
    if (current) {
      this.coalesced++;
      const outcome = await this.waitFor(current);
      if (outcome.ok) return outcome.value;
      return fn();
    }
    const p = fn();
    this.inflight.set(key, p);
    try {
      return await p;
    } finally {
      if (this.inflight.get(key) === p) this.inflight.delete(key);
    }
  }

  private waitFor<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ ok: false }), this.waitMs);
      p.then(
        (value) => {
          clearTimeout(timer);
          resolve({ ok: true, value });
        },
        () => {
          clearTimeout(timer);
          resolve({ ok: false });
        },
      );
    });
  }
}
