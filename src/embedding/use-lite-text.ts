/**
 * Identity and text canonicalisation of the built-in USE-lite embedder. Kept apart from the model
 * code so that importing them loads neither TF.js nor the weights.
 */
export const USE_LITE_ID = "local:use-lite-512";
export const USE_LITE_DIMS = 512;
/** Inputs longer than this (in characters) are cut before tokenising; the model clips long inputs anyway. */
export const DEFAULT_MAX_CHARS = 2048;

/**
 * Canonical form of a text before embedding: Unicode NFKC, lower case,
 * whitespace collapsed, trimmed, truncated. USE-lite's vocabulary is
 * case-sensitive and a case-only change ("what is X" / "What Is X") costs
 * ~0.1 cosine, which hurts paraphrase recall without helping any negative
 * (measured on the dev set, see docs/notes/embedding-quality.md).
 */
export function prepareText(text: string, maxChars = DEFAULT_MAX_CHARS): string {
  let t = text.normalize("NFKC").replace(/\s+/g, " ").trim().toLowerCase();
  if (t.length > maxChars) t = t.slice(0, maxChars);
  return t;
}
