/**
 * Input bounds and validation messages, shared by every route:
 *  - parseJsonBody: JSON text -> value, refusing nesting deeper than MAX_JSON_DEPTH *before*
 *    JSON.parse runs (a 60 KB `{"a":{"a":…}}` must cost microseconds, not seconds), and optionally
 *    strings that are not well-formed text (NUL, lone surrogates);
 *  - describeValueError: the one formatter of a TypeBox error — `<where> field '<path>': <message>` —
 *    that never renders the rejected value (it can be megabytes);
 *  - safeDecodeURIComponent: percent-decoding that answers null instead of throwing URIError.
 */
import type { TSchema } from "@sinclair/typebox";
import type { ValueError } from "@sinclair/typebox/errors";
import { ApiError } from "./errors";

/** Deepest accepted nesting of arrays/objects in a JSON body (tool schemas nest ~10 levels). */
export const MAX_JSON_DEPTH = 64;

/** Nesting depth of JSON text, scanning at most until it exceeds `limit` (strings skipped). */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  if (!hasMoreOpenings(text, limit)) return false; // the common case, with native searches only
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}

/** More than `n` opening brackets anywhere (strings included: an upper bound of the nesting depth). */
function hasMoreOpenings(text: string, n: number): boolean {
  let count = 0;
  for (const bracket of ["{", "["]) for (let i = text.indexOf(bracket); i >= 0; i = text.indexOf(bracket, i + 1)) if (++count > n) return true;
  return false;
}

const malformed = () => new ApiError("invalid_request_error", "malformed request body: expected valid JSON");

/** The first string (value or key) that holds NUL or a lone surrogate, as a path; undefined if none. */
export function illFormedStringPath(value: unknown, path = ""): string | undefined {
  if (typeof value === "string") return value.includes("\0") || !value.isWellFormed() ? path || "(root)" : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = illFormedStringPath(value[i], path ? `${path}.${i}` : String(i));
      if (p) return p;
    }
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const p = path ? `${path}.${k}` : k;
      if (k.includes("\0") || !k.isWellFormed()) return p;
      const q = illFormedStringPath(v, p);
      if (q) return q;
    }
  }
  return undefined;
}

/**
 * Parse a request body. Empty text is `undefined` (no body). Too deep -> 400 validation_error;
 * not JSON -> 400 invalid_request_error; with `wellFormed`, a string holding NUL or a lone
 * surrogate -> 400 validation_error naming the field.
 */
export function parseJsonBody(text: string, opts: { wellFormed?: boolean; maxDepth?: number } = {}): unknown {
  if (text.length === 0 || /^\s*$/.test(text)) return undefined;
  const limit = opts.maxDepth ?? MAX_JSON_DEPTH;
  if (jsonDepthExceeds(text, limit)) throw new ApiError("validation_error", `request body nests deeper than ${limit} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed();
  }
  if (opts.wellFormed) {
    const bad = illFormedStringPath(value);
    if (bad) throw new ApiError("validation_error", `body field '${bad}': text must not contain NUL characters or unpaired surrogates`);
  }
  return value;
}

/**
 * TypeBox says "Expected union value"; name what was expected instead: the allowed values of a
 * union of literals, or the kind (and range) of a number/integer/boolean union.
 */
function unionExpectation(schema: TSchema | undefined): string | undefined {
  const branches: any[] | undefined = (schema as { anyOf?: any[] } | undefined)?.anyOf;
  if (!Array.isArray(branches) || branches.length === 0) return undefined;
  if (branches.every((b) => b && "const" in b)) return `Expected one of ${branches.map((b) => JSON.stringify(b.const)).join(", ")}`;
  // a nullable field (`T | null`): name T's expectation and add "or null"
  // (one level of nesting flattened: Elysia's t.Integer is itself a union of an integer and an integer-formatted string)
  const flat = branches.flatMap((b) => (b && !b.type && Array.isArray(b.anyOf) ? b.anyOf : [b]));
  const nonNull = flat.filter((b) => b?.type !== "null");
  const orNull = nonNull.length < flat.length ? " or null" : "";
  if (nonNull.length === 0) return undefined;
  const kinds = new Set(nonNull.map((b) => (b?.type === "string" && b.format ? b.format : b?.type)));
  if (kinds.size !== 1) return undefined;
  const kind = [...kinds][0];
  if (orNull && nonNull.length === 1 && nonNull[0]?.type === "string") {
    const str = nonNull[0];
    if (str.format) return `Expected a string in ${str.format} format or null`;
    const len = str.minLength !== undefined && str.maxLength !== undefined ? ` of ${str.minLength} to ${str.maxLength} characters`
      : str.maxLength !== undefined ? ` of at most ${str.maxLength} characters` : str.minLength !== undefined ? ` of at least ${str.minLength} characters` : "";
    return str.pattern ? undefined : `Expected a string${len} or null`;
  }
  if (kind !== "integer" && kind !== "number" && kind !== "boolean") return undefined;
  const s = schema as { minimum?: number; maximum?: number };
  const min = s.minimum ?? nonNull.find((b) => b.minimum !== undefined)?.minimum;
  const max = s.maximum ?? nonNull.find((b) => b.maximum !== undefined)?.maximum;
  const bounds = min !== undefined && max !== undefined ? ` from ${min} to ${max}` : min !== undefined ? ` >= ${min}` : max !== undefined ? ` <= ${max}` : "";
  return `Expected ${kind === "integer" ? "an integer" : `a ${kind}`}${bounds}${orNull}`;
}

/** `/a/0/b` -> `a.0.b` */
export const dottedPath = (pointer: string | undefined) => (pointer ?? "").replace(/^\//, "").replace(/\//g, ".");

/** The message of a TypeBox error, with what a union expected spelled out. */
export const valueErrorMessage = (error: Pick<ValueError, "message" | "schema">) =>
  (error.message === "Expected union value" && unionExpectation(error.schema)) || error.message;

/** One line naming where and what, e.g. `body field 'messages.0.role': Expected one of "user", "assistant"`. */
export function describeValueError(error: Pick<ValueError, "path" | "message" | "schema"> | undefined, where: string, name?: string): string {
  if (!error) return `${where}: invalid`;
  const message = valueErrorMessage(error);
  const field = name ?? dottedPath(error.path);
  const hint = (error.schema as { description?: string } | undefined)?.description;
  const named = field ? (where === "header" ? ` '${field}'` : ` field '${field}'`) : "";
  return `${where}${named}: ${message}${hint && where === "header" ? ` (${hint})` : ""}`;
}

/** decodeURIComponent that returns null for malformed percent-encoding (instead of a URIError). */
export function safeDecodeURIComponent(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}
