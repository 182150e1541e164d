/**
 * The two implementations of USE-lite behind the local embedder:
 *  - "fast" (default): use-lite-fast.ts — the graph written out in TS with a WASM SIMD matmul,
 *    no TF.js (~2.5× faster per query, less memory);
 *  - "tfjs": use-lite.ts — the package's graph run by TF.js WASM (the original backend; kept to
 *    compare against). Both produce the same vectors (cosine ≥ 0.9999, checked by
 *    scripts/bench/embedding-equivalence.ts and test/cache/embedding.test.ts).
 * Modules are imported lazily so the unused one (and TF.js) is never loaded.
 */
export type UseLiteEngineName = "fast" | "tfjs";

export interface UseLiteEngine {
  load(): Promise<void>;
  backend(): string;
  /** Already-prepared texts → texts.length * 512 floats, L2-normalised rows. */
  embedFlat(texts: string[]): Float32Array | Promise<Float32Array>;
  /** Stop helper threads, if any. */
  close?(): void;
}

/** Which implementation, and for "fast" which matmul kernel (config embedding.engine / embedding.kernel). */
export interface EngineChoice {
  engine: UseLiteEngineName;
  kernel?: UseLiteKernel;
  /** "fast" engine, 16-bit kernel: threads sharing each dense product (default 1; see use-lite-fast.ts). */
  threads?: number;
}
export type UseLiteKernel = "auto" | "native-i16" | "wasm-i16" | "wasm" | "js";

/**
 * Engine named by SVC_EMBEDDING__ENGINE ("fast" | "tfjs"), default "fast" — the fallback for code
 * that builds a LocalEmbedder without options (benchmarks); the gateway passes its config.
 */
export function defaultEngine(): UseLiteEngineName {
  const v = process.env.SVC_EMBEDDING__ENGINE;
  if (v === undefined || v === "" || v === "fast") return "fast";
  if (v === "tfjs") return "tfjs";
  throw new Error(`SVC_EMBEDDING__ENGINE must be "fast" or "tfjs", got ${JSON.stringify(v)}`);
}

export async function createUseLiteEngine(choice: EngineChoice): Promise<UseLiteEngine> {
  if (choice.engine === "tfjs") {
    const { UseLiteModel } = await import("./use-lite");
    return new UseLiteModel();
  }
  const { UseLiteFast } = await import("./use-lite-fast");
  return new UseLiteFast(choice.kernel, choice.threads);
}
