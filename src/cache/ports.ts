/**
 * What the cache needs from the embedding domain, declared here by the caller: texts to
 * L2-normalised vectors. A failure is an ApiError `embedding_error` (503); the composition root
 * hands in the embedding domain's embedder.
 */
export interface Embedder {
  /** stable id of the model; part of every partition key (vectors of different ids never compare) */
  readonly id: string;
  readonly dimensions: number;
  isReady(): boolean;
  embed(texts: string[]): Promise<Float32Array[]>;
}
