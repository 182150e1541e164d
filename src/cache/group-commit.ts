/**
 * Group commit of cache entries (SQLite): the entries stored in one turn of the event loop are
 * inserted in ONE transaction instead of one each. A SQLite commit writes every page the statement
 * touched to the WAL (the entry's table page and a page of each of its four indexes). Under load the
 * stores come together (measured: ~50 stores a turn at 64 connections of distinct questions — the
 * embedding workers answer lookups in batches, so their upstream calls and answers bunch up), and one
 * commit for them writes the shared index pages once: 120 → 70 → 50 µs of CPU a row alone, in groups
 * of 8, of 64 (a micro-measure on a 20,000-entry file).
 *
 * What a store promises is unchanged: its promise resolves once its row is committed (the engine
 * then adds it to the index and the exact LRU, and the pipeline answers the client: the next request
 * reads it), and rejects when its insert fails. A failure inside the group rolls the group back and
 * every job of it runs again on its own, as it did before grouping, so one bad row never costs the
 * others their entries — except when the database is unavailable (busy past busy_timeout, gone):
 * then every job fails with that error at once, since each one alone would block the event loop for
 * busy_timeout again. A store made inside an open transaction of its flow runs in that transaction,
 * at once (waiting for the group would wait on the transaction it is part of).
 */
import { txOf } from "../storage/async";
import { StorageUnavailableError } from "../storage/errors";

interface Job {
  run(): Promise<unknown>;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

export class GroupCommit {
  private queue: Job[] = [];
  private armed = false;
  /** groups flushed and the jobs they held (tests and diagnostics) */
  readonly stats = { groups: 0, jobs: 0 };

  /** @param tx runs fn in one transaction (AsyncStorage.tx); fn touches only the database, so a rolled-back group can run again */
  constructor(private readonly tx: (fn: () => Promise<void>) => Promise<void>) {}

  /** `fn` (database work only: it may run twice, see the header) in this turn's group; resolves once its group has committed. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    if (txOf()) return fn(); // inside an open transaction: in it, at once
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: fn, resolve: resolve as (v: unknown) => void, reject });
      if (this.armed) return;
      this.armed = true;
      setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    this.armed = false;
    const jobs = this.queue;
    this.queue = [];
    this.stats.groups++;
    this.stats.jobs += jobs.length;
    if (jobs.length === 1) return settle(jobs[0]!);
    const values: unknown[] = [];
    try {
      await this.tx(async () => {
        for (const j of jobs) values.push(await j.run());
      });
    } catch (e) {
      if (e instanceof StorageUnavailableError) {
        for (const j of jobs) j.reject(e);
        return;
      }
      // rolled back as a whole: each job again on its own, one after the other
      for (const j of jobs) await settle(j);
      return;
    }
    jobs.forEach((j, i) => j.resolve(values[i]));
  }
}

async function settle(j: Job): Promise<void> {
  try {
    j.resolve(await j.run());
  } catch (e) {
    j.reject(e);
  }
}
