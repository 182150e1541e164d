/**
 * Values remembered until a deadline on the caller's clock (Date.now for a token's exp,
 * performance.now for a fixed lifetime), bounded: when full it starts over (a value forgotten is
 * made again). A Map, not lru-cache: on the per-request credential paths lru-cache's recency and TTL
 * bookkeeping cost more than the lookup whose only rule is "until then".
 */
export class ExpiringMemo<V> {
  private readonly m = new Map<string, { v: V; until: number }>();
  constructor(private readonly max: number) {}

  /** the value remembered for `key` if `now` is before its deadline (an expired one is dropped) */
  get(key: string, now: number): V | undefined {
    const e = this.m.get(key);
    if (e === undefined) return undefined;
    if (now < e.until) return e.v;
    this.m.delete(key);
    return undefined;
  }

  set(key: string, v: V, until: number): void {
    if (this.m.size >= this.max) this.m.clear();
    this.m.set(key, { v, until });
  }

  clear(): void {
    this.m.clear();
  }
}
