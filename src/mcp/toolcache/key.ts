/**
 * Cache keys of tool results.
 *
 *  - canonical(args): JSON with object keys sorted at every level — `{"b":1,"a":2}` and
 *    `{"a":2,"b":1}` are the same call;
 *  - cache_key = the first 8 bytes of SHA-256 over [tenant, serverId, tool name, agent scope,
 *    canonical args], top bit cleared: a 63-bit non-negative integer, so it is the same value as
 *    an unsigned or a signed 64-bit integer and fits SQLite's INTEGER exactly;
 *  - the agent scope is the calling agent's id, or "" when the tool's cacheConfig.crossAgent is on;
 *  - structKey: the arguments with every string value blanked except entity-mapped parameters —
 *    semantic lookup only compares calls whose numbers, booleans, shape and entity ids are equal,
 *    so only free text can differ;
 *  - argsText: what is embedded for semantic lookup and search by text.
 */
import { ApiError } from "../../core/errors";

const MASK_63 = (1n << 63n) - 1n;
export const MAX_CACHE_KEY = MASK_63;

export function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const o = value as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(",")}}`;
}

export function cacheKeyOf(tenantId: string, serverId: string, toolName: string, agentScope: string, canonicalArgs: string): bigint {
  const h = new Bun.CryptoHasher("sha256");
  h.update(JSON.stringify([tenantId, serverId, toolName, agentScope]));
  h.update("\n");
  h.update(canonicalArgs);
  const digest = h.digest();
  return new DataView(digest.buffer, digest.byteOffset, 8).getBigUint64(0) & MASK_63;
}

/** The value at a parameter path (`issue_id`, or `repo.owner` for nested arguments). */
export function valueAt(args: Record<string, unknown>, path: string): unknown {
  let v: unknown = args;
  for (const part of path.split(".")) {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** An entity id as it is tagged and matched: strings as they are, other values as canonical JSON (42 and "42" match). */
export function entityValue(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  return typeof v === "string" ? v : canonical(v);
}

export function structKeyOf(args: Record<string, unknown>, keep: ReadonlySet<string>): string {
  const mask = (v: unknown, path: string): unknown => {
    if (typeof v === "string") return keep.has(path) ? v : "\u0000text";
    if (Array.isArray(v)) return v.map((x, i) => mask(x, `${path}.${i}`));
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, keep.has(path ? `${path}.${k}` : k) ? x : mask(x, path ? `${path}.${k}` : k)]));
    return v;
  };
  return canonical(mask(args, ""));
}

/** `get_weather city: Paris, units: metric` — the tool name and every leaf, keys sorted. */
export function argsTextOf(toolName: string, args: Record<string, unknown>): string {
  const parts: string[] = [];
  const walk = (v: unknown, path: string) => {
    if (v && typeof v === "object") {
      const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
      for (const [k, x] of entries) walk(x, path ? `${path}.${k}` : k);
    } else if (v !== undefined) parts.push(`${path}: ${typeof v === "string" ? v : JSON.stringify(v)}`);
  };
  walk(args, "");
  return `${toolName} ${parts.join(", ")}`.slice(0, 8_000);
}

const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);

/**
 * A cache_key from a path segment or a JSON body: an integer (a digit string, a safe JS integer,
 * or a bigint from exact JSON parsing) within the 64-bit range (signed or unsigned); anything
 * else is 400 validation_error. Keys outside 0..2^63-1 are valid but never exist (404).
 */
export function parseCacheKey(v: unknown, field = "cache_key"): bigint {
  let n: bigint | undefined;
  if (typeof v === "bigint") n = v;
  else if (typeof v === "number" && Number.isSafeInteger(v)) n = BigInt(v);
  else if (typeof v === "string" && /^-?\d{1,20}$/.test(v)) n = BigInt(v);
  if (n === undefined || n < I64_MIN || n > U64_MAX) throw new ApiError("validation_error", `${field} must be a 64-bit integer`);
  return n;
}

/** Whether a key can name an entry (the keys svc makes are 0..2^63-1). */
export const storableKey = (k: bigint) => k >= 0n && k <= MAX_CACHE_KEY;
