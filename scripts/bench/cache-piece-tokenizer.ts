/**
 * What src/app.ts installs for the cache's pair model: its alignment features (src/cache/verify/align.ts)
 * tokenise with USE-lite's SentencePiece, which the cache may not import (a port). Scripts and tests
 * that judge pairs without building the app install the same here.
 */
import { hasPieceTokenizer, usePieceTokenizer } from "../../src/cache/verify/align";
import { useLitePieceTokenizer } from "../../src/embedding/pieces";

export function installPieceTokenizer(): void {
  if (hasPieceTokenizer()) return;
  usePieceTokenizer(useLitePieceTokenizer);
}
