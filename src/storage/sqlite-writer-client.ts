/**
 * The request thread's side of the SQLite writer thread (sqlite-writer.ts): sends a write-only
 * batch (its statements as JSON text) and resolves when the thread has committed it. The thread
 * starts with the first batch (never at start-up) and is restarted after a crash; while nothing is
 * in flight it does not keep the process alive.
 *
 * Failures come back as the storage errors the write-behinds act on (errors.ts): a constraint as
 * StorageConstraintError (the batch is rolled back and dropped), a busy database or a lost thread as
 * StorageUnavailableError (the batch is rolled back or never ran: it is queued again).
 */
import { sqliteStorageError, StorageUnavailableError } from "./errors";

/** the error a failed batch reports, as the request thread's statements would have reported it */
export function writerError(code: unknown, message: string): Error {
  return sqliteStorageError(code, message) ?? Object.assign(new Error(`sqlite writer: ${message}`), { code });
}

interface Pending {
  resolve(): void;
  reject(e: unknown): void;
  timer: ReturnType<typeof setTimeout>;
  /** the batch's promise (close waits for it) */
  done?: Promise<void>;
}

export interface WriterThreadOptions {
  /** how long the thread waits for the write lock (PRAGMA busy_timeout) */
  busyTimeoutMs?: number;
  /** a batch without an answer within this fails (StorageUnavailableError) and the thread is replaced */
  callTimeoutMs?: number;
  /** the thread's entry (tests: one that cannot start); default sqlite-writer.ts */
  entry?: string;
}

export class WriterThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closing: Promise<void> | undefined;
  /** whether the current thread has answered a batch */
  private answered = false;
  /**
   * set when a thread ended before answering any batch (it cannot start: e.g. a build without its
   * entry): the backend then runs batches on the request thread, as before the writer thread existed
   */
  broken = false;

  constructor(
    private readonly path: string,
    private readonly opts: WriterThreadOptions = {},
  ) {}

  /** Commit `text` (a recorded batch, write-batch.ts) as one transaction on the writer thread. */
  write(text: string): Promise<void> {
    if (this.closing) return Promise.reject(new StorageUnavailableError("storage is closing", 1));
    const w = this.worker ?? this.spawn();
    const id = this.nextId++;
    const callTimeoutMs = this.opts.callTimeoutMs ?? 60_000;
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(`gave no answer within ${callTimeoutMs} ms`), callTimeoutMs);
      (timer as { unref?: () => void }).unref?.();
      this.pending.set(id, { resolve, reject, timer });
      if (this.pending.size === 1) w.ref();
      w.postMessage({ type: "batch", id, text });
    });
    this.pending.get(id)!.done = done;
    return done;
  }

  /** Wait for every batch in flight, then stop the thread (its connection closed). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // (an answered or failed batch leaves `pending`)
      while (this.pending.size > 0) await Promise.allSettled([...this.pending.values()].map((p) => p.done));
      const w = this.worker;
      this.worker = null;
      if (!w) return;
      w.ref();
      const closed = new Promise<void>((r) => {
        w.addEventListener("message", (ev: MessageEvent) => (ev.data as { type: string }).type === "closed" && r());
        w.addEventListener("close", () => r());
      });
      w.postMessage({ type: "close" });
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([closed, new Promise<void>((r) => (timer = setTimeout(r, 5_000)))]);
      clearTimeout(timer);
      w.terminate();
    })();
    return this.closing;
  }

  private spawn(): Worker {
    // (the literal `new Worker(new URL(…, import.meta.url).href)` is what the binary's bundler embeds: keep that form)
    const w = this.opts.entry ? new Worker(this.opts.entry) : new Worker(new URL("./sqlite-writer.ts", import.meta.url).href);
    this.answered = false;
    w.onmessage = (ev: MessageEvent) => this.onMessage(ev.data);
    w.onerror = (ev: ErrorEvent) => this.fail(`crashed: ${ev.message ?? "unknown error"}`);
    w.addEventListener("close", () => {
      if (this.worker === w) this.fail("exited");
    });
    w.postMessage({ type: "open", path: this.path, busyTimeoutMs: this.opts.busyTimeoutMs ?? 5_000 });
    w.unref();
    this.worker = w;
    return w;
  }

  private onMessage(msg: { type: string; id?: number; code?: unknown; message?: string }) {
    const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id!);
    clearTimeout(p.timer);
    if (this.pending.size === 0) this.worker?.unref();
    this.answered = true;
    if (msg.type === "done") p.resolve();
    else p.reject(writerError(msg.code, msg.message ?? "unknown error"));
  }

  /** the thread is gone or stuck: every batch in flight fails as unavailable (queued again by its writer); the next batch starts a new thread */
  private fail(why: string) {
    const w = this.worker;
    this.worker = null;
    w?.terminate();
    if (w && !this.answered) this.broken = true;
    const err = new StorageUnavailableError(`sqlite writer thread ${why}`, 1);
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }
}
