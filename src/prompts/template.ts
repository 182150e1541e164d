/**
 * Prompt template syntax (docs/decisions.md, "Prompts, folders, chains"):
 *
 *   {{name}}                 string variable, required
 *   {{name:type}}            typed variable; type is string | number | integer | boolean | json
 *   {{name=default}}         string variable with a default (the default is the text up to `}}`)
 *   {{name:type=default}}    typed variable with a default (the default must parse as the type)
 *   \{{                      a literal `{{` (the backslash is removed when rendering)
 *
 * Names match [A-Za-z_][A-Za-z0-9_.-]*; spaces inside the braces around the name and type are
 * ignored. A name used several times must be declared the same way each time (or bare: a bare
 * `{{name}}` after `{{name:number=1}}` refers to the same variable).
 */
import { badRequest } from "../core/errors";

export const VAR_TYPES = ["string", "number", "integer", "boolean", "json"] as const;
export type VarType = (typeof VAR_TYPES)[number];

export interface Variable {
  name: string;
  varType: VarType;
  defaultValue: string | null;
}

type Segment = { text: string } | { name: string; varType?: VarType; defaultValue?: string };

const PLACEHOLDER = /\\\{\{|\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*(?::\s*([A-Za-z]+)\s*)?(?:=([\s\S]*?))?\}\}/g;

function parse(template: string): Segment[] {
  const out: Segment[] = [];
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    const at = m.index!;
    if (at > last) out.push({ text: template.slice(last, at) });
    last = at + m[0].length;
    if (m[0] === "\\{{") {
      out.push({ text: "{{" });
      continue;
    }
    const [, name, type, def] = m;
    if (type !== undefined && !VAR_TYPES.includes(type as VarType))
      throw badRequest(`template variable '${name}' has unknown type '${type}' (one of ${VAR_TYPES.join(", ")})`);
    out.push({ name: name!, varType: type as VarType | undefined, defaultValue: def });
  }
  if (last < template.length) out.push({ text: template.slice(last) });
  return out;
}

/** Convert a value to the variable's type; undefined when it does not fit. */
function coerce(value: unknown, type: VarType): string | undefined {
  switch (type) {
    case "string":
      return typeof value === "string" ? value : typeof value === "number" || typeof value === "boolean" ? String(value) : undefined;
    case "number": {
      const n = typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : NaN;
      return Number.isFinite(n) ? String(n) : undefined;
    }
    case "integer": {
      const n = typeof value === "number" ? value : typeof value === "string" && /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
      return Number.isSafeInteger(n) ? String(n) : undefined;
    }
    case "boolean":
      if (typeof value === "boolean") return String(value);
      if (value === "true" || value === "false") return value;
      return undefined;
    case "json":
      // a string is taken as JSON text and must parse (as a default must); other values are encoded
      if (value === undefined) return undefined;
      return typeof value === "string" ? (checkJson(value) ? value : undefined) : JSON.stringify(value);
  }
}

function checkJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The template's variables in order of first appearance. Throws 400 validation_error on a bad declaration. */
export function extractVariables(template: string): Variable[] {
  const vars = new Map<string, Variable & { declared: boolean }>();
  for (const s of parse(template)) {
    if (!("name" in s)) continue;
    const declared = s.varType !== undefined || s.defaultValue !== undefined;
    const v: Variable = { name: s.name, varType: s.varType ?? "string", defaultValue: s.defaultValue ?? null };
    if (v.defaultValue !== null) {
      const ok = v.varType === "json" ? checkJson(v.defaultValue) : coerce(v.defaultValue, v.varType) !== undefined;
      if (!ok) throw badRequest(`template variable '${v.name}': default '${v.defaultValue}' is not a valid ${v.varType}`);
    }
    const prev = vars.get(v.name);
    if (!prev) vars.set(v.name, { ...v, declared });
    else if (declared) {
      if (!prev.declared) vars.set(v.name, { ...v, declared });
      else if (prev.varType !== v.varType || prev.defaultValue !== v.defaultValue)
        throw badRequest(`template variable '${v.name}' is declared twice with different type or default`);
    }
  }
  return [...vars.values()].map(({ name, varType, defaultValue }) => ({ name, varType, defaultValue }));
}

/**
 * Substitute every variable. A variable without a value and without a default, or a value that
 * does not fit the declared type, is a 400 validation_error naming the variable. Values for names
 * the template does not use are ignored.
 */
export function render(template: string, values: Record<string, unknown> = {}): string {
  const vars = new Map(extractVariables(template).map((v) => [v.name, v]));
  const missing: string[] = [];
  const rendered = new Map<string, string>();
  for (const v of vars.values()) {
    const given = Object.prototype.hasOwnProperty.call(values, v.name) ? values[v.name] : undefined;
    if (given === undefined || given === null) {
      if (v.defaultValue === null) missing.push(v.name);
      else rendered.set(v.name, v.defaultValue);
      continue;
    }
    const text = coerce(given, v.varType);
    if (text === undefined) throw badRequest(`variable '${v.name}' must be of type ${v.varType}`);
    rendered.set(v.name, text);
  }
  if (missing.length) throw badRequest(`missing value for template variable${missing.length > 1 ? "s" : ""} ${missing.map((m) => `'${m}'`).join(", ")}`);
  return parse(template)
    .map((s) => ("text" in s ? s.text : rendered.get(s.name)!))
    .join("");
}

/** Rough token estimate for a rendered prompt: ~4 characters per token (at least 1 for non-empty text). */
export function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4));
}
