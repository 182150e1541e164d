/**
 * Failed sign-in attempts, counted per account (the folded e-mail address, whether or not an
 * account has it: the answer must not tell) and per client address, in this process. `max`
 * failures within `windowMs` lock the key for `lockMs`; a success clears the account's count.
 * Kept in memory (bounded LRU): a restart forgets the counts, and each replica counts its own
 * attempts — recorded in the decisions; the per-account bound still holds per replica.
 */
import { LRUCache } from "lru-cache";

interface Count {
  failures: number;
  since: number;
  lockedUntil: number;
}

export interface LockoutLimits {
  max: number;
  windowMs: number;
  lockMs: number;
}

export class Lockout {
  // allocated by the first failure: an LRU of 100,000 preallocates its slot arrays (~3 ms of CPU
  // each, four per PasswordService), which every start paid before listening
  private counts?: LRUCache<string, Count>;

  constructor(private readonly limits: LockoutLimits, private readonly now: () => number) {}

  /** ms until the key may try again (0: it may) */
  lockedFor(key: string): number {
    const c = this.counts?.get(key);
    return c ? Math.max(0, c.lockedUntil - this.now()) : 0;
  }

  fail(key: string) {
    const now = this.now();
    this.counts ??= new LRUCache<string, Count>({ max: 100_000 });
    let c = this.counts.get(key);
    if (!c || now - c.since > this.limits.windowMs) c = { failures: 0, since: now, lockedUntil: 0 };
    c.failures++;
    if (c.failures >= this.limits.max) {
      c.lockedUntil = now + this.limits.lockMs;
      c.failures = 0;
      c.since = now;
    }
    this.counts.set(key, c);
  }

  clear(key: string) {
    this.counts?.delete(key);
  }
}
