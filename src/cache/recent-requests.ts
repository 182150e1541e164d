/**
 * The most recent requests, by key, bounded to `max`: the oldest inserted goes first (a ring of
 * keys over a Map). Every proxied lookup adds one, so this is on the hit path: lru-cache's set
 * (recency lists, ~4 µs a hit under load in the gateway profile) bought nothing here — a request is
 * read back at most once or twice, by a verdict, and its age, not its last read, decides how long
 * it is kept.
 */
export class RecentRequests<V> {
  private readonly byKey = new Map<string, V>();
  private readonly ring: Array<string | undefined>;
  private next = 0;

  constructor(private readonly max: number) {
    this.ring = new Array<string | undefined>(max);
  }

  get size(): number {
    return this.byKey.size;
  }

  /** a key already there keeps its place (and age) and takes the new value */
  set(key: string, value: V) {
    if (this.byKey.has(key)) {
      this.byKey.set(key, value);
      return;
    }
    const oldest = this.ring[this.next];
    if (oldest !== undefined) this.byKey.delete(oldest);
    this.ring[this.next] = key;
    this.next = this.next + 1 === this.max ? 0 : this.next + 1;
    this.byKey.set(key, value);
  }

  get(key: string): V | undefined {
    return this.byKey.get(key);
  }
}
