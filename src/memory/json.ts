/**
 * JSON with exact 64-bit integers: a `bigint` anywhere in the value is written as a bare JSON
 * integer (JSON.stringify cannot; a JS number is exact only up to 2^53), so `contentHash`
 * reaches clients digit for digit. Every memory response that can carry a milestone uses it.
 */
const MARK = "\u0000bigint:";
const MARKED = /"\\u0000bigint:(-?\d+)"/g;

export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? MARK + v.toString() : v)).replace(MARKED, "$1");
}

export function jsonResponse(value: unknown, status = 200): Response {
  return new Response(toJson(value), { status, headers: { "content-type": "application/json" } });
}
