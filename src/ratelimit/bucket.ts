/**
 * Token buckets with an injectable clock. A bucket holds up to `capacity` tokens and refills
 * continuously at `capacity / periodMs` per millisecond, so "60 per second" allows a burst of 60
 * and then one every 1/60 s. Refill is computed lazily on access: no timers, O(1) per check.
 */

/** Milliseconds, monotonic. Tests pass a FakeClock. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => performance.now() };

export class FakeClock implements Clock {
  constructor(private t = 0) {}
  now() {
    return this.t;
  }
  advance(ms: number) {
    this.t += ms;
  }
}

export class TokenBucket {
  private tokens: number;
  private last: number;
  /** tokens per millisecond */
  readonly rate: number;

  constructor(
    readonly capacity: number,
    readonly periodMs: number,
    private readonly clock: Clock,
  ) {
    this.tokens = capacity;
    this.last = clock.now();
    this.rate = capacity / periodMs;
  }

  /** Tokens available now (may be negative for a bucket charged after the fact). */
  level(): number {
    const t = this.clock.now();
    if (t > this.last) {
      this.tokens = Math.min(this.capacity, this.tokens + (t - this.last) * this.rate);
      this.last = t;
    }
    return this.tokens;
  }

  /** Milliseconds until the level reaches `need` (0 if already there). */
  msUntil(need: number): number {
    const lvl = this.level();
    return lvl >= need ? 0 : (need - lvl) / this.rate;
  }

  /** Milliseconds until the bucket is full again. */
  msUntilFull(): number {
    return this.msUntil(this.capacity);
  }

  /** Set the current level (e.g. carry a token debt over to a new bucket). */
  setLevel(tokens: number) {
    this.level();
    this.tokens = Math.min(this.capacity, tokens);
  }

  take(n = 1) {
    this.level();
    this.tokens -= n;
  }
}
