/**
 * Built-in local embedder: Universal Sentence Encoder lite (512-d), running in
 * a Bun Worker with micro-batching. Engine (option `engine` or env
 * SVC_EMBEDDING__ENGINE): "fast" (default; TS + WASM SIMD forward pass, see
 * use-lite-fast.ts) or "tfjs" (the package's graph on TF.js WASM); same vectors.
 *
 * - Off the request thread: inference (~3-20 ms per query) runs in a worker,
 *   so the event loop keeps serving other requests.
 * - Micro-batching: calls that arrive in the same event-loop turn (or within
 *   `batchWindowMs` when set > 0) or
 *   while a batch is running are embedded together in one model call (up to
 *   `maxBatch` texts). Batching roughly doubles throughput on this model.
 * - Identical texts within a batch are embedded once.
 * - Model workers (`workers`, default `defaultWorkers()`): with n > 1, a batch that waits while every
 *   loaded worker is busy starts another worker (its own copy of the model, loaded then), up to n;
 *   batches then run side by side on the cores instead of queueing behind one forward pass. While
 *   one worker computes a batch of ≥ `busyBatch` texts (default `defaultBusyBatch()`, 8: the
 *   embedder is saturated), a free one starts a call once `busyBatch` texts are queued or when the
 *   busy one finishes: fewer, larger calls under load, no wait at low load.
 *
 * Set `worker: false` (or env SVC_EMBEDDING__WORKER=false) to run in-process, e.g.
 * for a bundled build where the worker file cannot be resolved.
 */
import { createUseLiteEngine, defaultEngine, type EngineChoice, type UseLiteEngine, type UseLiteEngineName, type UseLiteKernel } from "./engine";
import { EmbeddingError, type Embedder } from "./types";
import { DEFAULT_MAX_CHARS, USE_LITE_DIMS, USE_LITE_ID, prepareText } from "./use-lite-text";
import { envInteger } from "./env";

export interface LocalEmbedderOptions {
  /** Model implementation (default env SVC_EMBEDDING__ENGINE, else "fast"); "tfjs" is the original TF.js backend. */
  engine?: UseLiteEngineName;
  /** Matmul kernel of the "fast" engine (default env SVC_EMBEDDING__KERNEL, else "auto": the fastest the runtime supports). */
  kernel?: UseLiteKernel;
  /** Threads sharing each dense product (default env SVC_EMBEDDING__THREADS, else 1). */
  threads?: number;
  /** Model workers running batches side by side (default `defaultWorkers()`; 1 without `worker`). */
  workers?: number;
  /** Run the model in a Bun Worker (default true unless env SVC_EMBEDDING__WORKER=false). */
  worker?: boolean;
  /** How long to wait for more calls before running a batch, in ms (default 0 = the end of the current event-loop turn, via setImmediate). */
  batchWindowMs?: number;
  /** Max texts per model call (default 64). */
  maxBatch?: number;
  /**
   * While another model worker computes a batch of at least this many texts, a free one waits for
   * this many queued texts (or for the busy one to finish) before it starts a call (default
   * `defaultBusyBatch()`; 1 = take whatever is queued at once).
   */
  busyBatch?: number;
  /** Texts are truncated to this many characters (default 2048). */
  maxChars?: number;
  /** Timeout for loading the model, in ms (default 120000). */
  loadTimeoutMs?: number;
  /** Timeout for one model call, in ms (default 30000). */
  callTimeoutMs?: number;
}

interface Backend {
  /** False after the worker crashed or exited; the next call reloads. */
  alive(): boolean;
  load(): Promise<string>;
  embedFlat(texts: string[]): Promise<Float32Array>;
  close(): Promise<void>;
}

class InProcessBackend implements Backend {
  private model: UseLiteEngine | null = null;
  constructor(private readonly choice: EngineChoice) {}
  alive(): boolean {
    return this.model !== null;
  }
  async load(): Promise<string> {
    const m = await createUseLiteEngine(this.choice);
    await m.load();
    this.model = m;
    return m.backend();
  }
  embedFlat(texts: string[]): Promise<Float32Array> {
    if (!this.model) return Promise.reject(new Error("model not loaded"));
    try {
      return Promise.resolve(this.model.embedFlat(texts));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  async close(): Promise<void> {
    this.model?.close?.();
    this.model = null;
  }
}

interface PendingCall {
  resolve: (v: Float32Array) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

class WorkerBackend implements Backend {
  private worker: Worker | null = null;
  private nextId = 1;
  private calls = new Map<number, PendingCall>();
  private loadWaiter: PendingCall | null = null;
  private backendName = "";

  constructor(
    private readonly choice: EngineChoice,
    private readonly loadTimeoutMs: number,
    private readonly callTimeoutMs: number,
  ) {}

  alive(): boolean {
    return this.worker !== null;
  }

  private spawn(): Worker {
    const w = new Worker(new URL("./local-worker.ts", import.meta.url).href);
    w.onmessage = (ev: MessageEvent) => this.onMessage(ev.data);
    w.onerror = (ev: ErrorEvent) => this.fail(`embedding worker crashed: ${ev.message ?? "unknown error"}`);
    w.addEventListener("close", () => {
      if (this.worker === w) this.fail("embedding worker exited");
    });
    this.worker = w;
    return w;
  }

  private fail(message: string): void {
    const w = this.worker;
    this.worker = null;
    if (w) w.terminate();
    const err = new EmbeddingError(message);
    if (this.loadWaiter) {
      clearTimeout(this.loadWaiter.timer);
      this.loadWaiter.reject(err);
      this.loadWaiter = null;
    }
    for (const c of this.calls.values()) {
      clearTimeout(c.timer);
      c.reject(err);
    }
    this.calls.clear();
  }

  private onMessage(msg: { type: string; id?: number; flat?: Float32Array; backend?: string; message?: string }): void {
    if (msg.type === "ready") {
      const lw = this.loadWaiter;
      this.loadWaiter = null;
      if (lw) {
        clearTimeout(lw.timer);
        lw.resolve(new Float32Array(0));
        if (msg.backend) this.backendName = msg.backend;
      }
      this.updateRef();
      return;
    }
    if (msg.type === "error" && msg.id === undefined) {
      const lw = this.loadWaiter;
      this.loadWaiter = null;
      if (lw) {
        clearTimeout(lw.timer);
        lw.reject(new EmbeddingError(`local embedding model failed to load: ${msg.message}`));
      }
      this.updateRef();
      return;
    }
    const c = msg.id !== undefined ? this.calls.get(msg.id) : undefined;
    if (!c) return;
    this.calls.delete(msg.id!);
    clearTimeout(c.timer);
    if (msg.type === "result" && msg.flat) c.resolve(msg.flat);
    else c.reject(new EmbeddingError(`local embedding failed: ${msg.message ?? "unknown error"}`));
    this.updateRef();
  }

  /** Keep the process alive only while the worker has work in flight. */
  private updateRef(): void {
    const w = this.worker as (Worker & { ref?: () => void; unref?: () => void }) | null;
    if (!w) return;
    if (this.calls.size > 0 || this.loadWaiter) w.ref?.();
    else w.unref?.();
  }

  async load(): Promise<string> {
    const w = this.worker ?? this.spawn();
    await new Promise<Float32Array>((resolve, reject) => {
      const timer = setTimeout(() => this.fail("timed out loading the local embedding model"), this.loadTimeoutMs);
      this.loadWaiter = { resolve, reject, timer };
      this.updateRef();
      w.postMessage({ type: "load", choice: this.choice });
    });
    return this.backendName;
  }

  embedFlat(texts: string[]): Promise<Float32Array> {
    const w = this.worker;
    if (!w) return Promise.reject(new EmbeddingError("embedding worker is not running"));
    const id = this.nextId++;
    return new Promise<Float32Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        // A call this late means the worker is stuck: fail everything in flight and restart on the next call.
        if (this.calls.has(id)) this.fail(`local embedding timed out after ${this.callTimeoutMs} ms`);
      }, this.callTimeoutMs);
      this.calls.set(id, { resolve, reject, timer });
      this.updateRef();
      w.postMessage({ type: "embed", id, texts });
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    for (const c of this.calls.values()) {
      clearTimeout(c.timer);
      c.reject(new EmbeddingError("embedder closed"));
    }
    this.calls.clear();
    if (w) w.terminate();
  }
}

/**
 * Model workers (env SVC_EMBEDDING__WORKERS, else 2 on a machine with 2 or more cores, else 1).
 * The second one starts only when a batch had to wait for the first (concurrent load), so an idle
 * or lightly used gateway keeps one model in memory.
 */
export function defaultWorkers(): number {
  return envInteger("SVC_EMBEDDING__WORKERS", 1, 8, () => ((navigator.hardwareConcurrency ?? 1) >= 2 ? 2 : 1));
}

/**
 * Texts a free model worker waits for while another one computes a batch of at least as many
 * (env SVC_EMBEDDING__BUSY_BATCH, else 8). Under a burst (64 connections of distinct questions)
 * the free worker then takes ~33 texts per call instead of one (216 against 689 model calls, gateway
 * CPU per miss 3.46 against 3.70 ms, req/s 1.03×, scripts/bench/embedding-miss.ts); at 8
 * connections, where batches stay small, calls start at once as before (req/s 1.00×; waiting
 * whenever the other worker was busy cost 0.6–0.9× there). A lone call never waits.
 */
export function defaultBusyBatch(): number {
  return envInteger("SVC_EMBEDDING__BUSY_BATCH", 1, 64, () => 8);
}

interface QueuedCall {
  texts: string[];
  resolve: (v: Float32Array[]) => void;
  reject: (e: Error) => void;
}

export class LocalEmbedder implements Embedder {
  readonly id = USE_LITE_ID;
  readonly dimensions = USE_LITE_DIMS;
  /** Backend in use once loaded: "ts+wasm" / "ts+js" (engine "fast") or the TF.js backend name, e.g. "wasm". */
  backendName = "";
  /** Model implementation: "fast" or "tfjs". */
  readonly engine: UseLiteEngineName;

  private readonly backend: Backend;
  /** Workers beyond the first (started by grow()), and what starts one (null in-process). */
  private extras: Backend[] = [];
  private readonly makeExtra: (() => Backend) | null;
  private readonly workers: number;
  private growing = false;
  /** Set when an extra worker failed to load: the embedder keeps serving on the ones it has. */
  extraWorkerError: string | null = null;
  private busy = new Set<Backend>();
  private readonly batchWindowMs: number;
  private readonly maxBatch: number;
  private readonly busyBatch: number;
  private readonly maxChars: number;
  private loading: Promise<void> | null = null;
  private ready = false;
  private closed = false;
  private queue: QueuedCall[] = [];
  private queuedTexts = 0;
  /** Texts of the batches the workers are computing now. */
  private runningTexts = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private immediate = false;

  /** Number of model calls made (for tests and metrics). */
  batchesRun = 0;
  /** Number of texts sent to the model (after in-batch de-duplication). */
  textsEmbedded = 0;
  /** Most batches ever running at once (one per worker; diagnostics, tests). */
  peakConcurrentBatches = 0;
  /** Model workers loaded (1 until a second one was needed and loaded). */
  get workersLoaded(): number {
    return (this.ready ? 1 : 0) + this.extras.filter((b) => b.alive()).length;
  }

  constructor(opts: LocalEmbedderOptions = {}) {
    const useWorker = opts.worker ?? !["0", "false"].includes(process.env.SVC_EMBEDDING__WORKER ?? "");
    const engine = opts.engine ?? defaultEngine();
    this.engine = engine;
    const choice: EngineChoice = { engine, kernel: opts.kernel, threads: opts.threads };
    this.batchWindowMs = opts.batchWindowMs ?? 0;
    this.maxBatch = Math.max(1, opts.maxBatch ?? 64);
    this.busyBatch = Math.min(this.maxBatch, Math.max(1, opts.busyBatch ?? defaultBusyBatch()));
    this.maxChars = opts.maxChars ?? DEFAULT_MAX_CHARS;
    const loadTimeoutMs = opts.loadTimeoutMs ?? 120_000, callTimeoutMs = opts.callTimeoutMs ?? 30_000;
    this.backend = useWorker ? new WorkerBackend(choice, loadTimeoutMs, callTimeoutMs) : new InProcessBackend(choice);
    this.workers = useWorker ? (opts.workers ?? defaultWorkers()) : 1;
    this.makeExtra = useWorker ? () => new WorkerBackend(choice, loadTimeoutMs, callTimeoutMs) : null;
  }

  load(): Promise<void> {
    if (this.closed) return Promise.reject(new EmbeddingError("embedder closed"));
    this.loading ??= this.backend.load().then(
      (name) => {
        this.backendName = name;
        this.ready = true;
      },
      (err: unknown) => {
        this.loading = null;
        throw err instanceof EmbeddingError ? err : new EmbeddingError(`local embedding model failed to load: ${String(err)}`, { cause: err });
      },
    );
    return this.loading;
  }

  isReady(): boolean {
    return this.ready && !this.closed;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) throw new EmbeddingError("embedder closed");
    if (texts.length === 0) return [];
    if (!this.ready || !this.backend.alive()) {
      // First use, or the worker died (crash/timeout): start it again.
      if (this.ready) {
        this.ready = false;
        this.loading = null;
      }
      await this.load();
    }
    const prepared = texts.map((t) => prepareText(t, this.maxChars));
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.queue.push({ texts: prepared, resolve, reject });
      this.queuedTexts += prepared.length;
      this.schedule();
    });
  }

  private schedule(): void {
    if (!this.idle()) {
      this.grow(); // pumped when a batch finishes or another worker is ready
      return;
    }
    if (this.queuedTexts >= this.maxBatch) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.pump();
      return;
    }
    if (this.timer || this.immediate) return;
    if (this.batchWindowMs > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.pump();
      }, this.batchWindowMs);
    } else {
      // Calls made in the same event-loop turn still share a batch, without a timer's ~1 ms delay.
      this.immediate = true;
      setImmediate(() => {
        this.immediate = false;
        this.pump();
      });
    }
  }

  /** A worker free to take a batch: the first one, else a loaded extra one (dead extras are dropped). */
  private idle(): Backend | undefined {
    if (!this.busy.has(this.backend)) return this.backend;
    this.extras = this.extras.filter((b) => b.alive() || this.busy.has(b));
    return this.extras.find((b) => !this.busy.has(b));
  }

  /** Start one more worker (up to `workers`) in the background; it takes batches once loaded. */
  private grow(): void {
    if (!this.makeExtra || this.growing || this.closed || this.extraWorkerError !== null) return;
    this.extras = this.extras.filter((b) => b.alive() || this.busy.has(b)); // a crashed one is replaced
    if (1 + this.extras.length >= this.workers) return;
    this.growing = true;
    const b = this.makeExtra();
    b.load().then(
      () => {
        this.growing = false;
        if (this.closed) return void b.close();
        this.extras.push(b);
        this.pump();
      },
      (err: unknown) => {
        this.growing = false;
        this.extraWorkerError = err instanceof Error ? err.message : String(err);
        void b.close();
      },
    );
  }

  /** Hand queued calls to free workers, one batch each (whole calls, up to maxBatch texts). */
  private pump(): void {
    while (this.queue.length > 0 && !this.closed) {
      const b = this.idle();
      if (!b) {
        this.grow();
        return;
      }
      // another worker is computing a large batch (a sign of a saturated embedder): let the queue
      // fill up to busyBatch texts (pumped again by the next call's schedule() or when a batch
      // finishes) rather than start a call for a few texts
      if (this.runningTexts >= this.busyBatch && this.queuedTexts < this.busyBatch) return;
      const batch: QueuedCall[] = [];
      let n = 0;
      while (this.queue.length > 0 && (batch.length === 0 || n + this.queue[0]!.texts.length <= this.maxBatch)) {
        const c = this.queue.shift()!;
        batch.push(c);
        n += c.texts.length;
      }
      this.queuedTexts -= n;
      this.runningTexts += n;
      this.busy.add(b);
      if (this.busy.size > this.peakConcurrentBatches) this.peakConcurrentBatches = this.busy.size;
      void this.runBatch(batch, b).finally(() => {
        this.runningTexts -= n;
        this.busy.delete(b);
        this.pump();
      });
    }
  }

  private async runBatch(batch: QueuedCall[], backend: Backend): Promise<void> {
    // De-duplicate texts across the calls of this batch.
    const slot = new Map<string, number>();
    const unique: string[] = [];
    for (const c of batch) {
      for (const t of c.texts) {
        if (!slot.has(t)) {
          slot.set(t, unique.length);
          unique.push(t);
        }
      }
    }
    try {
      const flat = new Float32Array(unique.length * this.dimensions);
      for (let i = 0; i < unique.length; i += this.maxBatch) {
        const chunk = unique.slice(i, i + this.maxBatch);
        const out = await backend.embedFlat(chunk);
        if (out.length !== chunk.length * this.dimensions) throw new EmbeddingError("local embedding returned a wrong number of values");
        flat.set(out, i * this.dimensions);
        this.batchesRun++;
        this.textsEmbedded += chunk.length;
      }
      for (const c of batch) {
        c.resolve(
          c.texts.map((t) => {
            const k = slot.get(t)!;
            return flat.slice(k * this.dimensions, (k + 1) * this.dimensions);
          }),
        );
      }
    } catch (err) {
      const e = err instanceof EmbeddingError ? err : new EmbeddingError(`local embedding failed: ${String(err)}`, { cause: err });
      for (const c of batch) c.reject(e);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ready = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const err = new EmbeddingError("embedder closed");
    for (const c of this.queue) c.reject(err);
    this.queue = [];
    this.queuedTexts = 0;
    const extras = this.extras;
    this.extras = [];
    await Promise.all([this.backend.close(), ...extras.map((b) => b.close())]);
  }
}
