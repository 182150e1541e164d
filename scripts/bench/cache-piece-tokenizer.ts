/**
 * What src/app.ts installs for the cache's pair model: its alignment features (src/cache/verify/align.ts)
 * tokenise with USE-lite's SentencePiece, which the cache may not import (a port). Scripts and tests
 * that judge pairs without building the app install the same here.
 */
import { hasPieceTokenizer, usePieceTokenizer } from "../../src/cache/verify/align";
import { SentencePieceTokenizer, type Vocabulary } from "../../src/embedding/sentencepiece";
import { prepareText } from "../../src/embedding/use-lite-text";
import { readUseLiteVocabularySync } from "../../src/core/use-lite-files";

export function installPieceTokenizer(): void {
  if (hasPieceTokenizer()) return;
  usePieceTokenizer(() => {
    const sp = new SentencePieceTokenizer(readUseLiteVocabularySync() as Vocabulary);
    return (text) => sp.encode(prepareText(text));
  });
}
