/**
 * Input bounds and validation messages, shared by every route:
 *  - boundedParse: size, nesting and entry bounds checked by linear scans before any other
 *    parser of request text runs (YAML, XML, filters) — nestingExceeds generalises the JSON scan;
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

/**
 * How a text nests, for a depth scan before its parser runs: the brackets that open and close a
 * level, and the quotes whose content is skipped. `quoteAt` says whether a quote character at that
 * position starts a quoted string (YAML: only where a node can start, so the apostrophe of a plain
 * `it's` does not hide the brackets after it); default: everywhere (JSON).
 */
export interface NestingSyntax {
  open: string;
  close: string;
  /** quote characters; a backslash escapes the next character inside `"` only */
  quotes: string;
  quoteAt?: (text: string, i: number) => boolean;
}

export const JSON_NESTING: NestingSyntax = { open: "{[", close: "}]", quotes: '"' };

/** YAML flow collections; a quote opens a scalar only at a node's start (after space, `[`, `{`, `,`, `:` or at a line start). */
export const YAML_FLOW_NESTING: NestingSyntax = {
  open: "{[",
  close: "}]",
  quotes: "\"'",
  quoteAt: (text, i) => i === 0 || " \t\n\r[{,:-?".includes(text[i - 1]!),
};

/** Nesting deeper than `limit` in `text` (by `syntax`, JSON by default), scanning at most until it exceeds. */
export function nestingExceeds(text: string, limit: number, syntax: NestingSyntax = JSON_NESTING): boolean {
  if (!hasMoreOpenings(text, limit, syntax.open)) return false; // the common case, with native searches only
  const open = new Set([...syntax.open].map((c) => c.charCodeAt(0)));
  const close = new Set([...syntax.close].map((c) => c.charCodeAt(0)));
  const quotes = new Set([...syntax.quotes].map((c) => c.charCodeAt(0)));
  let depth = 0;
  let quote = 0; // the open quote's character code, 0 outside
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (quote) {
      if (c === 92 /* \ */ && quote === 34 /* " */) i++;
      else if (c === quote) quote = 0;
    } else if (quotes.has(c) && (!syntax.quoteAt || syntax.quoteAt(text, i))) quote = c;
    else if (open.has(c)) {
      if (++depth > limit) return true;
    } else if (close.has(c) && depth > 0) depth--;
  }
  return false;
}

/** Nesting depth of JSON text above `limit` (strings skipped). */
export const jsonDepthExceeds = (text: string, limit: number) => nestingExceeds(text, limit, JSON_NESTING);

/** More than `n` opening brackets anywhere (strings included: an upper bound of the nesting depth). */
function hasMoreOpenings(text: string, n: number, openers: string): boolean {
  let count = 0;
  for (const bracket of openers) for (let i = text.indexOf(bracket); i >= 0; i = text.indexOf(bracket, i + 1)) if (++count > n) return true;
  return false;
}

/** Occurrences of any of `chars` in `text`, counting at most until it exceeds `limit`. */
function countExceeds(text: string, chars: string, limit: number): boolean {
  let count = 0;
  for (const ch of chars) for (let i = text.indexOf(ch); i >= 0; i = text.indexOf(ch, i + 1)) if (++count > limit) return true;
  return false;
}

export interface ParseBounds {
  /** what the text is, for the messages ("configuration", "filter") */
  what: string;
  /** largest accepted text, in UTF-8 bytes (413 above) */
  maxBytes: number;
  /** deepest accepted nesting, by `syntax` */
  maxDepth: number;
  syntax: NestingSyntax;
  /**
   * most entries: occurrences of `separators` (e.g. newlines and commas), an upper bound of the
   * nodes a parser builds — its cost grows with them even when the nesting is flat
   */
  maxEntries?: number;
  separators?: string;
}

/**
 * The one rule for every parser of request text that is not the kernel's JSON (YAML imports,
 * SAML XML, SCIM filters): size, nesting and entry count are checked by linear scans *before* the
 * parser runs, so a pathological body costs a scan, never a parse (a YAML parser given 1 MB of
 * `[` ran 28 s). Too large -> 413; too deep or too many entries -> 400 validation_error naming
 * the bound. Returns what `parse` returns (its own errors pass through).
 */
export function boundedParse<T>(text: string, bounds: ParseBounds, parse: (text: string) => T): T {
  const { what } = bounds;
  // length is UTF-16 units: at most the UTF-8 byte count for ASCII, and at least a third of it
  if (text.length > bounds.maxBytes || (text.length * 3 > bounds.maxBytes && Buffer.byteLength(text, "utf8") > bounds.maxBytes))
    throw new ApiError("invalid_request_error", `${what} larger than ${bounds.maxBytes} bytes`, undefined, undefined, 413);
  if (nestingExceeds(text, bounds.maxDepth, bounds.syntax)) throw new ApiError("validation_error", `${what} nests deeper than ${bounds.maxDepth} levels`);
  if (bounds.maxEntries !== undefined && countExceeds(text, bounds.separators ?? "\n,", bounds.maxEntries))
    throw new ApiError("validation_error", `${what} has more than ${bounds.maxEntries} entries (lines and list items)`);
  return parse(text);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A request body as text, refusing bytes that are not UTF-8 (400 invalid_request_error): Request.text()
 * would replace them with U+FFFD and the replacement would be stored as if the client had sent it.
 */
export async function readUtf8Body(request: Request): Promise<string> {
  const bytes = await request.arrayBuffer();
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ApiError("invalid_request_error", "malformed request body: not valid UTF-8");
  }
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
  if (nestingExceeds(text, limit, JSON_NESTING)) throw new ApiError("validation_error", `request body nests deeper than ${limit} levels`);
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
