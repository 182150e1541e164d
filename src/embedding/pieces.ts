/**
 * USE-lite's tokenisation for other domains (the cache's pair model aligns words by the model's token
 * table): the text prepared as the embedder prepares it, then its SentencePiece ids. The vocabulary
 * is read when the tokenizer is built, not at import.
 */
import { readUseLiteVocabularySync } from "../core/use-lite-files";
import { SentencePieceTokenizer, type Vocabulary } from "./sentencepiece";
import { prepareText } from "./use-lite-text";

export function useLitePieceTokenizer(): (text: string) => number[] {
  const sp = new SentencePieceTokenizer(readUseLiteVocabularySync() as Vocabulary);
  return (text) => sp.encode(prepareText(text));
}
