/**
 * The tests' deterministic stand-in for an embedding model: a bag of hashed words (FNV-1a of each
 * lower-cased [a-z0-9] word) counted into `dimensions` buckets, so the same words in another case,
 * order or punctuation embed alike. Shared by the in-process HashEmbedder (test/cache/helpers.ts)
 * and the fake OpenAI embeddings endpoints of the replica tests and benches.
 */
export function bagOfWords(text: string, dimensions = 64): number[] {
  const v = new Array<number>(dimensions).fill(0);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 2166136261;
    for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619);
    v[(h >>> 0) % dimensions]! += 1;
  }
  return v;
}

/** An OpenAI `POST /v1/embeddings` answer to `body` (one input or a list) with bagOfWords vectors. */
export function embeddingsAnswer(body: { input: string | string[]; model: string }, dimensions = 64): Response {
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const data = inputs.map((t, index) => ({ object: "embedding", index, embedding: bagOfWords(t, dimensions) }));
  return Response.json({ object: "list", model: body.model, data, usage: { prompt_tokens: 1, total_tokens: 1 } });
}
