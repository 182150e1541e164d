/**
 * JSON with exact 64-bit integers: a `bigint` anywhere in the value is written as a bare JSON
 * integer (JSON.stringify cannot, and a JS number holds integers exactly only up to 2^53), so a
 * `cacheKey` reaches clients digit for digit. Used for every response and event that carries one.
 */
const MARK = "\u0000bigint:";
const MARKED = /"\\u0000bigint:(-?\d+)"/g;

export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? MARK + v.toString() : v)).replace(MARKED, "$1");
}

/** A JSON response whose bigints are exact integers. */
export function jsonResponse(value: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(toJson(value), { status, headers: { "content-type": "application/json", ...headers } });
}

/**
 * Parse JSON text keeping integers beyond 2^53 exact: such integer literals come back as
 * bigint (read from the literal's source text), every other value as JSON.parse gives it.
 */
export function parseJsonExact(text: string): unknown {
  return JSON.parse(text, function (_k, v, ctx?: { source?: string }) {
    if (typeof v === "number" && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source)) return BigInt(ctx.source);
    return v;
  } as (this: unknown, k: string, v: unknown) => unknown);
}
