/**
 * The cache key text and its digest must not change between versions: entries stored under a key
 * made by an older build are found only if the same request gives the same text and hash. The
 * string-building canonicalJson is checked against the plain definition (sorted keys, undefined
 * members dropped, undefined array items as null) and one key is pinned.
 */
import { describe, expect, test } from "bun:test";
import { canonicalJson, sha256 } from "../../src/cache/partition";

function reference(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? "null" : reference(x))).join(",")}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${reference(o[k])}`).join(",")}}`;
}

const request = {
  v: 1,
  style: "openai-chat",
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "What is the capital of France? \"quoted\" \u00e9 \u2028" }, { role: "assistant", content: null }],
  temperature: 0.2,
  tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { b: { type: "string" }, a: { type: "number" } } } } }],
  skipped: undefined,
  nested: { z: [1, undefined, 2.5, -0, 1e21, true, false, null], a: {}, m: [] },
};

describe("cache key text", () => {
  test("matches the plain definition on nested values, escapes, undefined members and array items", () => {
    const values: unknown[] = [request, null, undefined, 0, "x", [], {}, [undefined], { a: undefined }, [[{ b: [{}] }]], { "k\"ey": { "\u0000": 1 } }];
    for (const v of values) expect(canonicalJson(v)).toBe(reference(v));
  });

  test("sha256 is the hex SHA-256 of the text; a pinned request keeps its key", () => {
    expect(sha256("abc")).toBe(new Bun.CryptoHasher("sha256").update("abc").digest("hex"));
    expect(sha256(canonicalJson(request))).toBe(new Bun.CryptoHasher("sha256").update(reference(request)).digest("hex"));
    expect(canonicalJson({ b: 1, a: [undefined, "x"], c: undefined })).toBe('{"a":[null,"x"],"b":1}');
  });
});
