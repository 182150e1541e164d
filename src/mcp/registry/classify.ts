/**
 * Tool classification (READ / WRITE / IDEMPOTENT / UNKNOWN) and the cacheConfig a new tool gets.
 *
 * Order of evidence (docs/decisions.md "MCP gateway"):
 *  1. the tool's annotations, when they carry a behaviour hint: readOnlyHint → READ (0.95);
 *     otherwise idempotentHint → IDEMPOTENT (0.9); otherwise (destructive or explicitly not
 *     read-only) → WRITE (0.9);
 *  2. the verb the name starts with (get_, list, search…, create_, delete…, put/upsert…) (0.7);
 *  3. verbs in the description (0.5);
 *  4. UNKNOWN (0).
 * A manual category (PATCH …/config) has confidence 1 and is never re-derived.
 */
import type { CacheConfig, Category, ToolAnnotations } from "../types";

export interface Classification {
  category: Category;
  confidence: number;
}

const READ_VERBS = ["get", "list", "read", "search", "find", "fetch", "query", "describe", "show", "lookup", "look", "count", "view", "check", "browse", "retrieve", "inspect", "download", "stat", "echo", "is", "has", "can", "explain", "summarize", "export"];
const WRITE_VERBS = ["create", "add", "insert", "post", "send", "write", "delete", "remove", "destroy", "drop", "update", "patch", "modify", "edit", "move", "rename", "upload", "close", "merge", "assign", "unassign", "execute", "run", "trigger", "start", "stop", "cancel", "archive", "publish", "approve", "reject", "comment", "reply", "transfer", "pay", "charge", "book", "invite", "fork", "push", "commit", "increment", "append", "toggle"];
const IDEMPOTENT_VERBS = ["put", "upsert", "replace", "ensure", "sync", "set", "enable", "disable", "configure", "mark"];

/** First word of a tool name: get_issue, getIssue, get-issue, github.get_issue → "get". */
function leadingVerb(name: string): string {
  const last = name.split(/[./:]/).pop() ?? name;
  const spaced = last.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_\-\s]+/g, " ").trim().toLowerCase();
  return spaced.split(" ")[0] ?? "";
}

function byVerb(verb: string): Category | undefined {
  if (READ_VERBS.includes(verb)) return "READ";
  if (IDEMPOTENT_VERBS.includes(verb)) return "IDEMPOTENT";
  if (WRITE_VERBS.includes(verb)) return "WRITE";
  return undefined;
}

/** The first verb of the description's first sentence that names a category ("Returns…", "Deletes…"). */
function byDescription(description: string): Category | undefined {
  const words = description.toLowerCase().split(/[.!?\n]/)[0]!.match(/[a-z]+/g) ?? [];
  for (const w of words.slice(0, 6)) {
    const stem = w.replace(/(ies)$/, "y").replace(/(es|s)$/, "");
    const c = byVerb(w) ?? byVerb(stem) ?? (w === "returns" || w === "retrieves" || w === "lists" ? "READ" : undefined);
    if (c) return c;
  }
  return undefined;
}

const hasBehaviourHint = (a: ToolAnnotations | null | undefined) =>
  !!a && (typeof a.readOnlyHint === "boolean" || typeof a.idempotentHint === "boolean" || typeof a.destructiveHint === "boolean");

export function classify(tool: { name: string; description?: string; annotations?: ToolAnnotations | null }): Classification {
  const a = tool.annotations;
  if (hasBehaviourHint(a)) {
    if (a!.readOnlyHint === true) return { category: "READ", confidence: 0.95 };
    if (a!.idempotentHint === true) return { category: "IDEMPOTENT", confidence: 0.9 };
    return { category: "WRITE", confidence: 0.9 };
  }
  const fromName = byVerb(leadingVerb(tool.name));
  if (fromName) return { category: fromName, confidence: 0.7 };
  const fromDescription = byDescription(tool.description ?? "");
  if (fromDescription) return { category: fromDescription, confidence: 0.5 };
  return { category: "UNKNOWN", confidence: 0 };
}

/**
 * cacheConfig of a newly discovered tool, by category: READ results are cached for 5 minutes,
 * per agent, exact match only (semantic matching of arguments is opt-in per tool: "issue-41" and
 * "issue-42" embed almost identically), identical concurrent calls within 1 s share one upstream
 * call; IDEMPOTENT tools are coalesced but not cached until enabled (a call has an effect);
 * WRITE and UNKNOWN are never cached nor coalesced (two writes must both run).
 */
export function defaultCacheConfig(category: Category): CacheConfig {
  const base = { ttlSecs: 300, semanticThreshold: 1, crossAgent: false };
  switch (category) {
    case "READ":
      return { ...base, enabled: true, coalescingWindowMs: 1_000 };
    case "IDEMPOTENT":
      return { ...base, enabled: false, coalescingWindowMs: 1_000 };
    default:
      return { ...base, enabled: false, coalescingWindowMs: 0 };
  }
}

/** Categories whose results may be cached (WRITE and UNKNOWN never are). */
export const CACHEABLE: readonly Category[] = ["READ", "IDEMPOTENT"];
