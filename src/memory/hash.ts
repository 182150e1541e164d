/**
 * The milestone content hash (doc1 §2.2): a signed 64-bit integer, the first 8 bytes (big-endian,
 * two's complement) of SHA-256 over
 *     UTF-8(branchPurpose) 0x00 UTF-8(cumulativeProgress) 0x00 UTF-8(thisContribution)
 * NUL never occurs inside a field (request bodies refuse it), so the separator makes the
 * concatenation unambiguous ("ab"+"c" ≠ "a"+"bc"). SHA-256 is a fixed standard: the value is the
 * same in every process, version and language. Signed, so it fits SQLite's INTEGER and a Java/Go
 * int64 exactly; JSON carries it as an exact integer (json.ts), `contentHashHex` as 16 hex digits.
 */
import { createHash } from "node:crypto";

export function contentHash(...parts: string[]): bigint {
  const h = createHash("sha256");
  parts.forEach((p, i) => {
    if (i > 0) h.update(Buffer.from([0]));
    h.update(p, "utf8");
  });
  return h.digest().readBigInt64BE(0);
}

/** 16 lower-case hex digits of the hash's 64 bits (unsigned view). */
export const hashHex = (h: bigint): string => BigInt.asUintN(64, h).toString(16).padStart(16, "0");
