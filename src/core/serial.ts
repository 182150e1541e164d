/**
 * One at a time per key, in this process: `serial.run(key, fn)` starts fn when every earlier fn of
 * the same key has settled (fulfilled or rejected); other keys do not wait. For transactions that
 * all update one counter row (a gap-free sequence): on PostgreSQL (SERIALIZABLE) concurrent ones
 * conflict and are re-run at most `txAttempts` times, so a burst larger than that in one replica
 * would fail with 503; queued here they do not conflict at all (replicas still rely on the re-runs).
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key);
    const result = prev ? prev.then(() => fn(), () => fn()) : fn();
    const tail = result.then(
      () => {},
      () => {},
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** keys with work queued or running (tests: nothing is kept once all settle) */
  get size(): number {
    return this.tails.size;
  }
}
