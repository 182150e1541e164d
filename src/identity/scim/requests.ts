/**
 * What the SCIM service provider does to a request before SCIMMY sees it:
 *  - bounds: a filter, attribute list or PATCH path is refused with 400 (SCIM error schema) when it
 *    is longer than FILTER_LIMITS allow, nests brackets/parentheses deeper, or joins more terms with
 *    and/or than allowed — checked by one linear scan before SCIMMY parses it (SCIMMY's filter
 *    parser takes seconds on a few hundred KB of `or` terms);
 *  - list parameters from a query string or a SearchRequest body (`POST /.search`, RFC 7644 §3.4.3,
 *    validated by SCIMMY's own SearchRequest message);
 *  - attribute names in PATCH paths and values in the schema's spelling (RFC 7643 §2.1: attribute
 *    names are case-insensitive; SCIMMY matches them exactly and fails with a JavaScript error);
 *  - "True"/"False" strings of boolean attributes as booleans (Entra ID sends them).
 */
import SCIMMY from "scimmy";
import { ApiError } from "../../core/errors";

export const MAX_RESULTS = 200;

/** Bounds on the small languages SCIM requests carry. Real filters are < 300 characters, 1–5 terms. */
export const FILTER_LIMITS = { maxChars: 4_096, maxDepth: 8, maxTerms: 64 } as const;

const invalidFilter = (message: string) => new ApiError("validation_error", message, { scimType: "invalidFilter" });
const invalidPath = (message: string) => new ApiError("validation_error", message, { scimType: "invalidPath" });

/** Refuses (400 with `scimType`) a filter-like text over the bounds; linear, quoted strings skipped. */
export function checkBounded(text: string, field: string, problem: (m: string) => ApiError = invalidFilter): void {
  if (text.length > FILTER_LIMITS.maxChars) throw problem(`${field}: longer than ${FILTER_LIMITS.maxChars} characters`);
  let depth = 0;
  let terms = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "(" || c === "[") {
      if (++depth > FILTER_LIMITS.maxDepth) throw problem(`${field}: nested deeper than ${FILTER_LIMITS.maxDepth} levels`);
    } else if (c === ")" || c === "]") depth--;
    else if ((c === "a" || c === "A" || c === "o" || c === "O") && /\s/.test(text[i - 1] ?? "")) {
      const word = text.slice(i, i + 4).toLowerCase();
      if ((word === "and " || word.startsWith("or ")) && ++terms > FILTER_LIMITS.maxTerms) throw problem(`${field}: more than ${FILTER_LIMITS.maxTerms} and/or terms`);
    }
  }
}

/** list parameters as SCIMMY takes them (numbers as numbers; count capped at maxResults), bounded */
export function listParams(q: Record<string, unknown>) {
  const out: Record<string, unknown> = {};
  for (const k of ["filter", "attributes", "excludedAttributes", "sortBy", "sortOrder"]) {
    const v = q[k];
    if (v === undefined) continue;
    if (typeof v !== "string") throw new ApiError("validation_error", `${k}: expected a string`, { scimType: "invalidValue" });
    checkBounded(v, k);
    out[k] = v;
  }
  for (const k of ["startIndex", "count"]) {
    if (q[k] === undefined) continue;
    const n = Number(q[k]);
    if (!Number.isInteger(n)) throw new ApiError("validation_error", `${k}: expected an integer`, { scimType: "invalidValue" });
    out[k] = k === "count" ? Math.min(Math.max(n, 0), MAX_RESULTS) : Math.max(n, 1);
  }
  if (out.count === undefined) out.count = MAX_RESULTS;
  return out;
}

/** A SearchRequest body (RFC 7644 §3.4.3) as list parameters; SCIMMY validates its shape (400 invalidSyntax otherwise). */
export function searchParams(body: unknown): Record<string, unknown> {
  const b = (body ?? {}) as Record<string, unknown>;
  // bounds first: SCIMMY's SearchRequest does not parse the filter, but it is parsed right after
  for (const k of ["filter", "sortBy"]) if (typeof b[k] === "string") checkBounded(b[k] as string, k);
  for (const k of ["attributes", "excludedAttributes"])
    if (Array.isArray(b[k])) {
      if ((b[k] as unknown[]).length > FILTER_LIMITS.maxTerms) throw invalidFilter(`${k}: more than ${FILTER_LIMITS.maxTerms} attributes`);
      checkBounded((b[k] as unknown[]).join(","), k);
    }
  let req: Record<string, unknown>;
  try {
    req = new SCIMMY.Messages.SearchRequest(b as never) as unknown as Record<string, unknown>;
  } catch (e) {
    const err = e as { status?: number; scimType?: string; message?: string };
    throw new ApiError("validation_error", String(err.message ?? e), { scimType: err.scimType ?? "invalidSyntax" });
  }
  const q: Record<string, unknown> = {};
  for (const k of ["filter", "sortBy", "sortOrder", "startIndex", "count"]) if (req[k] !== undefined) q[k] = req[k];
  for (const k of ["attributes", "excludedAttributes"]) if (Array.isArray(req[k]) && (req[k] as string[]).length) q[k] = (req[k] as string[]).join(",");
  return listParams(q);
}

// ---------------------------------------------------------------- attribute names, case-insensitively

interface Names {
  /** lower-case name -> the schema's spelling and its sub-attributes */
  byLower: Map<string, { name: string; sub?: Names }>;
}

interface AttributeDef {
  name: string;
  subAttributes?: AttributeDef[];
}

const namesOf = (attrs: AttributeDef[]): Names => ({
  byLower: new Map(attrs.map((a) => [a.name.toLowerCase(), { name: a.name, ...(a.subAttributes?.length ? { sub: namesOf(a.subAttributes) } : {}) }])),
});

interface SchemaNames {
  core: Names;
  /** extension schema id (lower case) -> its id and names */
  extensions: Map<string, { id: string; names: Names }>;
}

let tables: Record<"Users" | "Groups", SchemaNames> | undefined;

function schemaNames(kind: "Users" | "Groups"): SchemaNames {
  if (!tables) {
    const def = (s: unknown) => (s as { definition: { id: string; attributes: AttributeDef[] } }).definition;
    const ent = def(SCIMMY.Schemas.EnterpriseUser);
    tables = {
      Users: { core: namesOf(def(SCIMMY.Schemas.User).attributes), extensions: new Map([[ent.id.toLowerCase(), { id: ent.id, names: namesOf(ent.attributes) }]]) },
      Groups: { core: namesOf(def(SCIMMY.Schemas.Group).attributes), extensions: new Map() },
    };
  }
  return tables[kind];
}

const canon = (names: Names | undefined, raw: string) => names?.byLower.get(raw.toLowerCase());

/** bare words of a value filter (`type eq "work"`) that name sub-attributes, in the schema's spelling */
function canonFilter(filter: string, names: Names | undefined): string {
  if (!names) return filter;
  return filter.replace(/"(?:[^"\\]|\\.)*"|[A-Za-z$][\w$-]*/g, (tok) => (tok.startsWith('"') ? tok : canon(names, tok)?.name ?? tok));
}

/** `attr[filter].sub`, `attr.sub` or `urn:…:attr.sub`, with each attribute name in the schema's spelling */
export function canonicalPath(kind: "Users" | "Groups", path: string): string {
  const t = schemaNames(kind);
  let names = t.core;
  let prefix = "";
  let rest = path;
  if (/^urn:/i.test(path)) {
    const lower = path.toLowerCase();
    const ext = [...t.extensions.entries()].find(([id]) => lower.startsWith(`${id}:`) || lower === id);
    if (ext) {
      prefix = `${ext[1].id}:`;
      rest = path.slice(ext[1].id.length + 1);
      names = ext[1].names;
    } else {
      const core = (SCIMMY.Schemas[kind === "Users" ? "User" : "Group"] as unknown as { definition: { id: string } }).definition.id;
      if (!lower.startsWith(`${core.toLowerCase()}:`)) return path;
      prefix = `${core}:`;
      rest = path.slice(core.length + 1);
    }
  }
  const m = /^([A-Za-z$][\w$-]*)(\[(.*)\])?(?:\.([A-Za-z$][\w$-]*))?$/s.exec(rest);
  if (!m) return path;
  const attr = canon(names, m[1]!);
  const sub = attr?.sub;
  const filter = m[3] !== undefined ? `[${canonFilter(m[3], sub)}]` : "";
  const subName = m[4] !== undefined ? `.${canon(sub, m[4])?.name ?? m[4]}` : "";
  return `${prefix}${attr?.name ?? m[1]}${filter}${subName}`;
}

/** object keys in the schema's spelling (complex values: their sub-attributes; extension objects: theirs) */
function canonValue(value: unknown, names: Names | undefined, t: SchemaNames): unknown {
  if (Array.isArray(value)) return value.map((v) => canonValue(v, names, t));
  if (!names || !value || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const ext = t.extensions.get(k.toLowerCase());
    if (ext) {
      out[ext.id] = canonValue(v, ext.names, t);
      continue;
    }
    const a = canon(names, k);
    out[a?.name ?? k] = a?.sub ? canonValue(v, a.sub, t) : v;
  }
  return out;
}

/** the names a path ends at (for its value's keys) */
function namesAt(kind: "Users" | "Groups", path: string): Names | undefined {
  const t = schemaNames(kind);
  const ext = [...t.extensions.values()].find((e) => path.startsWith(`${e.id}:`));
  const names = ext ? ext.names : t.core;
  const rest = ext ? path.slice(ext.id.length + 1) : path.replace(/^urn:.*:/, "");
  const m = /^([A-Za-z$][\w$-]*)(\[.*\])?(\.[A-Za-z$][\w$-]*)?$/s.exec(rest);
  if (!m || m[3]) return undefined;
  return canon(names, m[1]!)?.sub;
}

/**
 * A PatchOp with attribute names in the schema's spelling: each operation's path (bounded first) and
 * the keys of its value. Anything that is not a PatchOp passes untouched (SCIMMY explains what is wrong).
 */
export function canonicalPatch(kind: "Users" | "Groups", body: unknown): unknown {
  const b = body as { Operations?: unknown };
  if (!b || typeof b !== "object" || !Array.isArray(b.Operations)) return body;
  const t = schemaNames(kind);
  const ops = b.Operations.map((op: unknown) => {
    if (!op || typeof op !== "object") return op;
    const o = { ...(op as Record<string, unknown>) };
    if (typeof o.path === "string") {
      checkBounded(o.path, "path", invalidPath);
      o.path = canonicalPath(kind, o.path);
      if ("value" in o) {
        const at = namesAt(kind, o.path as string);
        if (at) o.value = canonValue(o.value, at, t);
      }
    } else if ("value" in o) o.value = canonValue(o.value, t.core, t);
    return o;
  });
  return { ...b, Operations: ops };
}

// ---------------------------------------------------------------- booleans as strings

const BOOLEAN_ATTRS = new Set(["active", "primary"]);

/** "True"/"false" strings of boolean attributes as booleans (Entra ID), in resources and PatchOp values. */
export function normaliseBooleans(value: unknown, key?: string): unknown {
  if (typeof value === "string" && key !== undefined && BOOLEAN_ATTRS.has(key.toLowerCase())) {
    const v = value.trim().toLowerCase();
    if (v === "true") return true;
    if (v === "false") return false;
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => normaliseBooleans(v, key));
  if (value && typeof value === "object") {
    const o = value as Record<string, unknown>;
    // a PatchOp operation: the path names the attribute its value is for
    if (typeof o.op === "string" && "value" in o) {
      const leaf = typeof o.path === "string" ? o.path.replace(/\[[^\]]*\]/g, "").split(/[.:]/).at(-1) : undefined;
      return { ...o, value: normaliseBooleans(o.value, leaf) };
    }
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, normaliseBooleans(v, k.split(".").at(-1))]));
  }
  return value;
}
