/**
 * One local model per process, shared by every embedder `createEmbedder({provider:"local"})` hands
 * out (several gateways in one process: the test suite, an embedding host). The weights are
 * immutable, so sharing is safe; each caller gets a handle, and the model (worker thread + ~100 MB
 * of weights) is closed when the last handle is closed. Without this, N gateways started N workers
 * that each parsed the weights at the same time on 2 cores, and a readiness probe could wait for
 * all of them.
 */
import { LocalEmbedder, type LocalEmbedderOptions } from "./local";
import { EmbeddingError, type Embedder } from "./types";

interface Shared {
  model: LocalEmbedder;
  refs: number;
}

const shared = new Map<string, Shared>();

/** Number of distinct local models alive in this process (tests, diagnostics). */
export function sharedLocalModels(): number {
  return shared.size;
}

export class SharedLocalHandle implements Embedder {
  private closed = false;
  constructor(private readonly key: string, private readonly entry: Shared) {}
  get id(): string {
    return this.entry.model.id;
  }
  get dimensions(): number {
    return this.entry.model.dimensions;
  }
  /** The shared model (for tests and metrics). */
  get model(): LocalEmbedder {
    return this.entry.model;
  }
  load(): Promise<void> {
    if (this.closed) return Promise.reject(new EmbeddingError("embedder closed"));
    return this.entry.model.load();
  }
  isReady(): boolean {
    return !this.closed && this.entry.model.isReady();
  }
  embed(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) return Promise.reject(new EmbeddingError("embedder closed"));
    return this.entry.model.embed(texts);
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (--this.entry.refs > 0) return;
    if (shared.get(this.key) === this.entry) shared.delete(this.key);
    await this.entry.model.close();
  }
}

/** A handle on the process-wide local model with these options (same options → same model). */
export function acquireLocalEmbedder(opts: LocalEmbedderOptions = {}): SharedLocalHandle {
  const key = JSON.stringify([opts.engine ?? "", opts.kernel ?? "", opts.threads ?? "", opts.workers ?? "", opts.busyBatch ?? "", opts.worker ?? "", opts.callTimeoutMs ?? "", opts.loadTimeoutMs ?? "", opts.maxBatch ?? "", opts.maxChars ?? "", opts.batchWindowMs ?? ""]);
  let entry = shared.get(key);
  if (!entry) {
    entry = { model: new LocalEmbedder(opts), refs: 0 };
    shared.set(key, entry);
  }
  entry.refs++;
  return new SharedLocalHandle(key, entry);
}
