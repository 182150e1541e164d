/**
 * Cache keys. Two keys are derived from a CacheKeyInput:
 *
 * - exact key: SHA-256 of the canonical JSON of everything in the request that can change the
 *   answer (style, model, full scope, workspace context, code-context hash, every turn). Equal
 *   exact keys = identical request; answered without embedding.
 * - partition: SHA-256 of the same minus the conversation, with the temperature bucketed, the
 *   embedder id and the lookup mode ("single" = no earlier turns, "context" = with history).
 *   Semantic / context matching only ever compares entries of one partition, so a paraphrase
 *   under another model, system prompt, tool set, parameter, workspace or code context misses,
 *   and a context-free question never matches one asked after a conversation (nor vice versa).
 */
import type { CacheKeyInput, Turn } from "./types";

export type Mode = "single" | "context";

/** JSON with object keys sorted at every level; undefined values dropped. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  // built as one string (no intermediate arrays of parts): every cached request and every
  // cache-off miss hashes its key text once
  if (Array.isArray(v)) {
    let s = "[";
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      s += (i === 0 ? "" : ",") + (x === undefined ? "null" : canonicalJson(x));
    }
    return s + "]";
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).sort();
  let s = "{";
  let first = true;
  for (const k of keys) {
    const x = o[k];
    if (x === undefined) continue;
    s += (first ? "" : ",") + JSON.stringify(k) + ":" + canonicalJson(x);
    first = false;
  }
  return s + "}";
}

export const sha256 = (s: string): string => Bun.SHA256.hash(s, "hex") as string;

/**
 * Temperature buckets for the semantic partition: answers sampled at 0 and at 0.05 are
 * interchangeable, answers at 0 and at 1.2 are not. Missing = the provider default.
 */
export function temperatureBucket(t: unknown): string {
  if (typeof t !== "number" || !Number.isFinite(t)) return "default";
  if (t <= 0.1) return "t0";
  if (t <= 0.5) return "t1";
  if (t <= 1.0) return "t2";
  return "t3";
}

const TEMPERATURE_KEYS = new Set(["temperature"]);

/** Scope with temperature replaced by its bucket (for the partition). */
function bucketedScope(scope: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(scope)) {
    if (TEMPERATURE_KEYS.has(k)) out[k] = temperatureBucket(v);
    else out[k] = v;
  }
  return out;
}

export interface CodeScope {
  /** identity of what the context is about (repo + file(s)); null = no identity, partition only */
  scope: string | null;
  /** hash of the whole normalized code context */
  hash: string;
}

function pickString(o: Record<string, unknown>, names: string[]): string | undefined {
  for (const n of names) {
    const v = o[n];
    if (typeof v === "string" && v.trim()) return v.trim();
  }
  return undefined;
}

/**
 * X-Svc-Code-Context rule: the normalized hash of the whole JSON value is part of the partition
 * and the exact key; when it names a repository and/or file(s) (repo|repository|project,
 * file|path|filePath|file_path|files[]), that identity is its scope, and storing an entry under
 * a new hash for a scope deletes the scope's entries built on any other hash (the older code).
 */
export function codeScopeOf(codeContext: unknown): CodeScope | undefined {
  if (codeContext === undefined || codeContext === null) return undefined;
  const hash = sha256(canonicalJson(codeContext)).slice(0, 32);
  let scope: string | null = null;
  if (typeof codeContext === "object" && !Array.isArray(codeContext)) {
    const o = codeContext as Record<string, unknown>;
    const repo = pickString(o, ["repo", "repository", "project", "repo_url", "repoUrl"]);
    let files: string[] = [];
    const file = pickString(o, ["file", "path", "filePath", "file_path", "filename"]);
    if (file) files = [file];
    else if (Array.isArray(o.files))
      files = o.files
        .map((f) => (typeof f === "string" ? f : f && typeof f === "object" ? pickString(f as Record<string, unknown>, ["path", "file", "name"]) : undefined))
        .filter((f): f is string => !!f)
        .sort();
    if (repo || files.length) scope = sha256(canonicalJson({ repo: repo ?? null, files })).slice(0, 32);
  }
  return { scope, hash };
}

/** X-Svc-Workspace-Context: an empty header is no workspace (as if it were absent). */
const wsOf = (ws: string | undefined): string | null => (ws ? ws : null);

export interface DerivedKeys {
  exactKey: string;
  /** semantic partition, or undefined when the request is exact-only (no trailing user turn) */
  partition?: string;
  mode?: Mode;
  /** last user turn (the query) */
  query?: string;
  /** turns before the query (the context), oldest first */
  history: Turn[];
  code?: CodeScope;
}

/**
 * Everything in a request that can change its answer (style, model, full scope, workspace context,
 * code-context hash, every turn, namespace): what the exact key hashes, and what the single flight of
 * a disabled cache keys by. One list for both, so a field added to one is in the other.
 */
function answerFields(input: CacheKeyInput, code: ReturnType<typeof codeScopeOf>) {
  return {
    v: 1,
    style: input.style,
    model: input.model,
    scope: input.scope ?? {},
    ws: wsOf(input.workspaceContext),
    code: code?.hash ?? null,
    turns: input.turns.map((t) => [t.role, t.text]),
    // X-Svc-Cache-Namespace: absent keeps the keys entries had before the header existed
    ...(input.namespace ? { ns: input.namespace } : {}),
  };
}

/**
 * The single flight's key for a request that was not looked up (a disabled cache): the exact key's
 * fields as they came (JSON.stringify, no key sorting, no hash). Byte-identical requests coalesce;
 * the same request with its keys in another order may not, which costs one more upstream call,
 * never a wrong answer. The canonical form and its hash were ~3 µs of every cache-off request.
 */
export function flightKeyOf(input: CacheKeyInput): string {
  return JSON.stringify(answerFields(input, codeScopeOf(input.codeContext)));
}

/** The exact key alone (what the cache lookup needs first; deriveKeys computes it the same way). */
export function exactKeyOf(input: CacheKeyInput): string {
  return exactKeyWith(input, codeScopeOf(input.codeContext));
}

function exactKeyWith(input: CacheKeyInput, code: ReturnType<typeof codeScopeOf>): string {
  return sha256(canonicalJson(answerFields(input, code)));
}

/**
 * Split the conversation: the query is the last turn when it is a user turn. A request ending in
 * an assistant or tool turn (a tool result being fed back) is exact-only: its answer depends on
 * the tool output, which the semantic tiers do not compare.
 */
export function deriveKeys(input: CacheKeyInput, embedderId: string, knownExactKey?: string): DerivedKeys {
  const code = codeScopeOf(input.codeContext);
  const exactKey = knownExactKey ?? exactKeyWith(input, code);
  const last = input.turns[input.turns.length - 1];
  if (!last || last.role !== "user" || !last.text.trim()) return { exactKey, history: [], code };
  const history = input.turns.slice(0, -1);
  const mode: Mode = history.length === 0 ? "single" : "context";
  const partition = sha256(
    canonicalJson({
      v: 1,
      style: input.style,
      model: input.model,
      scope: bucketedScope(input.scope ?? {}),
      ws: wsOf(input.workspaceContext),
      code: code?.hash ?? null,
      embedder: embedderId,
      mode,
      ...(input.namespace ? { ns: input.namespace } : {}),
    }),
  ).slice(0, 32);
  return { exactKey, partition, mode, query: last.text, history, code };
}
