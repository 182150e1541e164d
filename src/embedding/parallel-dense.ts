/**
 * Column-parallel dense products for the USE-lite forward pass: the second core works on the same
 * forward pass (a batch's, or a long text's) instead of idling.
 *
 * The weights and activations live in one shared WebAssembly.Memory. The thread running the forward
 * pass (the leader) quantises the rows of x once, publishes the product's parameters in a control
 * block of that memory, and then both it and every helper thread claim strips of output columns
 * from an atomic counter until none is left; the leader waits until every claimed strip is done.
 * A helper that is not scheduled (a busy machine) claims nothing, and the leader computes every
 * strip itself: never slower than one thread by more than the bookkeeping (~1 µs per product).
 * Each column is computed by the same kernel call whichever thread takes it, so the vectors are
 * bit-identical to the single-threaded kernel's.
 *
 * Claims are one word, (sequence << 10) | next strip, changed only by compare-and-swap: a helper
 * that read an older product's parameters cannot claim a strip of a newer one.
 */
import type { MatmulI16 } from "./simd-matmul";

/** Int32 words of the control block (16-byte aligned, in the shared memory). */
export const CTL_WORDS = 32;
const CLAIM = 0, DONE = 1, WAKE = 2, STOP = 3, P = 8; // P..P+11: the product's parameters
const SEQ_MASK = 0x1fffff;
/**
 * Below this many multiply-adds a product runs on the leader alone. A single query's products
 * (≤ 13 M for 17 tokens, ~0.4 ms) stay on one thread: waking a sleeping helper, and waiting for a
 * strip it claimed when a busy machine preempts it, cost more than it saves — measured on the
 * gateway at 1 connection with 2^21: the cache-enabled miss +1 ms p50 in every round. Batches (row
 * blocks of 64: 50 M per FFN product) and long texts are shared.
 */
const MIN_PARALLEL_MACS = 1 << 25;

interface Product {
  scratch: number;
  rowScale: number;
  w: number;
  colScale: number;
  bias: number;
  out: number;
  M: number;
  K: number;
  N: number;
  relu: boolean;
}

/** Columns per strip: ~16 strips per product, whole 8-column panels. */
function stripCols(N: number): number {
  return Math.max(8, Math.ceil(N / 16 / 8) * 8);
}

function runStrip(mm: MatmulI16, c: Int32Array, strip: number): void {
  const N = c[P + 8]!, cols = c[P + 10]!;
  const j0 = strip * cols, j1 = Math.min(N, j0 + cols);
  mm.runCols(c[P]!, c[P + 1]!, c[P + 2]!, c[P + 3]!, c[P + 4]!, c[P + 5]!, c[P + 6]!, c[P + 7]!, N, c[P + 9]! === 1, j0, j1);
}

/** Claim strips of the published product until none is left; returns how many this thread ran. */
function claimAndRun(mm: MatmulI16, c: Int32Array, seq: number): number {
  let ran = 0;
  for (;;) {
    const w = Atomics.load(c, CLAIM);
    if (w >>> 10 !== seq) return ran;
    const strips = c[P + 11]!; // read after the claim word: the parameters of product `seq`
    const next = w & 1023;
    if (next >= strips) return ran;
    if (Atomics.compareExchange(c, CLAIM, w, w + 1) !== w) continue;
    runStrip(mm, c, next);
    Atomics.add(c, DONE, 1);
    Atomics.notify(c, DONE); // wakes a leader waiting for this strip (no waiter: no system call)
    ran++;
  }
}

export class ParallelDense {
  private readonly c: Int32Array;
  private seq = 0;
  /** Products run, and strips the helpers took (diagnostics, tests). */
  products = 0;
  helperStrips = 0;

  /** `startHelpers` is called once, before the first product large enough to share. */
  constructor(private readonly mm: MatmulI16, ctl: number, private startHelpers?: () => void) {
    this.c = new Int32Array(mm.memory.buffer, ctl, CTL_WORDS);
  }

  /** True once the helpers were asked to start (a product was large enough to share). */
  get helpersStarted(): boolean {
    return this.startHelpers === undefined;
  }

  /** out = act(quantised x · W + bias), strips shared with the helpers. */
  run(p: Product): void {
    const macs = p.M * p.K * p.N;
    if (macs < MIN_PARALLEL_MACS) {
      this.mm.runCols(p.scratch, p.rowScale, p.w, p.colScale, p.bias, p.out, p.M, p.K, p.N, p.relu, 0, p.N);
      return;
    }
    if (this.startHelpers) {
      const start = this.startHelpers;
      this.startHelpers = undefined;
      start();
    }
    const c = this.c, cols = stripCols(p.N);
    c[P] = p.scratch;
    c[P + 1] = p.rowScale;
    c[P + 2] = p.w;
    c[P + 3] = p.colScale;
    c[P + 4] = p.bias;
    c[P + 5] = p.out;
    c[P + 6] = p.M;
    c[P + 7] = p.K;
    c[P + 8] = p.N;
    c[P + 9] = p.relu ? 1 : 0;
    c[P + 10] = cols;
    const strips = Math.ceil(p.N / cols);
    c[P + 11] = strips;
    Atomics.store(c, DONE, 0);
    this.seq = (this.seq + 1) & SEQ_MASK;
    Atomics.store(c, CLAIM, this.seq << 10); // publishes the parameters above
    Atomics.store(c, WAKE, this.seq);
    Atomics.notify(c, WAKE);
    const mine = claimAndRun(this.mm, c, this.seq);
    // A helper holds the strips left: it claimed them while running, so they finish soon unless the
    // machine preempted it — then sleep instead of spinning on the core it needs.
    for (let spins = 0; ; spins++) {
      const done = Atomics.load(c, DONE);
      if (done >= strips) break;
      if (spins > 2000) Atomics.wait(c, DONE, done, 1);
    }
    this.products++;
    this.helperStrips += strips - mine;
  }

  /** Tell the helpers to exit. */
  stop(): void {
    Atomics.store(this.c, STOP, 1);
    Atomics.add(this.c, WAKE, 1);
    Atomics.notify(this.c, WAKE);
  }
}

/**
 * A helper thread's loop: sleep until a product is published, claim strips, repeat until stopped.
 * After a product it keeps polling for ~`spinMs` before sleeping: the next product of the same
 * forward pass follows within a fraction of a millisecond (attention and layer norms run between
 * them on the leader), and a wake-up from sleep costs tens of microseconds.
 */
export function helperLoop(mm: MatmulI16, ctl: number, spinMs = 0.3): void {
  const c = new Int32Array(mm.memory.buffer, ctl, CTL_WORDS);
  let seen = Atomics.load(c, WAKE);
  for (;;) {
    if (Atomics.load(c, STOP) === 1) return;
    const now = Atomics.load(c, WAKE);
    if (now !== seen) {
      seen = now;
      claimAndRun(mm, c, Atomics.load(c, CLAIM) >>> 10);
      continue;
    }
    const until = performance.now() + spinMs;
    let woke = false;
    while (performance.now() < until) {
      if (Atomics.load(c, WAKE) !== seen) {
        woke = true;
        break;
      }
    }
    if (!woke) Atomics.wait(c, WAKE, seen, 1000);
  }
}
