#!/usr/bin/env bun
/**
 * Generates docs/config.example.yaml from the configuration schema (src/config.ts): every setting,
 * in schema order, with its environment variable, type, bounds and default, and the comment its
 * section's source gives it (the `/** ... *\/` above the property in src/<domain>/config.ts or
 * src/core/config.ts). Settings with a default are written with it (the file loads to exactly the
 * defaults); optional ones without a default are written commented out.
 *
 *   bun scripts/config-example.ts            write docs/config.example.yaml
 *   bun scripts/config-example.ts --check    exit 1 if the committed file is out of date
 */
import { readFileSync, writeFileSync, readdirSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { TSchema } from "@sinclair/typebox";
import { ConfigSchema } from "../src/config";

const ROOT = resolve(import.meta.dir, "..");
export const EXAMPLE_PATH = join(ROOT, "docs/config.example.yaml");

/** Examples for map-valued settings (their default is empty). */
const EXAMPLES: Record<string, string[]> = {
  "models.routes": ['"mistral-*": openai        # an OpenAI-compatible server (vLLM, Ollama) serves these', '"my-claude": anthropic'],
  "models.fallbacks": [
    '"gpt-4o":',
    "  - { name: azure-backup, provider: openai, base_url: \"https://backup.example.com/v1\", api_key: \"sk-...\" }",
    "  - { provider: anthropic, model: claude-sonnet-4-5 }   # another provider: the conversation is translated",
    '"gpt-4.1*":',
    "  - { provider: openai, model: gpt-4o-mini }",
  ],
  "prices.overrides": ['"my-finetune": { input: 3.0, output: 12.0 }   # USD per 1M tokens, longest prefix wins'],
};

/** Comments for settings whose source has none. */
const FALLBACK: Record<string, string> = {
  "server.host": "listen address (0.0.0.0: every interface; 127.0.0.1: this machine only)",
  "server.port": "listen port (0: any free port)",
  "storage.path": "the SQLite database (WAL); its directory is the data directory: the database, jwt-secret (generated when auth.jwt_secret is unset) and cache-index/. A relative path resolves against the working directory: production installs set an absolute one",
  "auth.jwt_secret": "HS256 key of access tokens; unset: generated once into <data directory>/jwt-secret (with a warning)",
  "auth.jwks_url": "also accept RS256/ES256 access tokens signed by a key of this JWKS",
  "embedding.provider": "local: the built-in model (no network); openai: any OpenAI-compatible /v1/embeddings server",
  "embedding.base_url": "with provider openai: the server's origin, with or without /v1 (e.g. http://localhost:11434/v1)",
  "embedding.lru_size": "texts whose embeddings are kept in memory (0 = none)",
  "cache.enabled": "the semantic response cache (false: every request goes upstream, /api/v1/query answers 503)",
  "context_cache.enabled": "multi-turn context cache (doc1 §4.7); false: requests with history use the exact tier only",
  "context_cache.stage1_threshold": "stage 1: minimum similarity of the last query to a candidate's",
  "context_cache.context_hit_threshold": "stage 2: minimum weighted query + context similarity for a hit",
  "context_cache.query_weight": "stage 2 weight of the query similarity (query_weight + context_weight = 1)",
  "context_cache.context_weight": "stage 2 weight of the earlier turns' similarity",
  "context_cache.max_turns": "earlier turns compared",
  "rate_limits.enabled": "enforce the per-tenant tiers and endpoint-group limits (doc1 §8)",
  "identity.smtp.host": "SMTP server for invitation e-mail (unset: admins deliver invitation links by hand)",
  "identity.smtp.user": "SMTP login (with password)",
  "identity.smtp.port": "SMTP port (587: submission with STARTTLS; 465 with secure: true)",
  "identity.smtp.password": "SMTP password (prefer SVC_IDENTITY__SMTP__PASSWORD in the environment over this file)",
  "identity.smtp.from": "sender of invitation e-mail",
  "identity.smtp.timeout_ms": "SMTP connection and send timeout",
  "readiness.probe_timeout_ms": "how long one probe may take (then the provider counts as down for that probe)",
};

/** `/** comment *\/` above `key:` in every config source, by (enclosing section name | "*", key). */
function sourceComments(): Map<string, string> {
  const files = [join(ROOT, "src/core/config.ts")];
  for (const d of readdirSync(join(ROOT, "src"))) if (existsSync(join(ROOT, "src", d, "config.ts"))) files.push(join(ROOT, "src", d, "config.ts"));
  const out = new Map<string, string>();
  for (const file of files) {
    const lines = readFileSync(file, "utf8").split("\n");
    const sections: Array<{ indent: number; name: string }> = [];
    let pending: string[] | undefined;
    let inComment = false;
    for (const line of lines) {
      const indent = line.search(/\S/);
      const trimmed = line.trim();
      if (inComment || trimmed.startsWith("/**")) {
        const text = trimmed.replace(/^\/\*\*\s?/, "").replace(/\s?\*\/$/, "").replace(/^\*\s?/, "");
        if (!inComment) pending = [];
        if (text && text !== "/") pending!.push(text);
        inComment = !trimmed.endsWith("*/");
        continue;
      }
      while (sections.length && indent >= 0 && indent <= sections[sections.length - 1]!.indent && trimmed.startsWith("}")) sections.pop();
      const m = /^(\w+)\s*:/.exec(trimmed);
      if (m) {
        const section = sections.length ? sections[sections.length - 1]!.name : "*";
        if (pending?.length) out.set(`${section}.${m[1]}`, pending.join(" "));
        if (/Section\(\{?\s*$|Section\(\{$|T\.Object\(\s*\{?\s*$/.test(trimmed) || /:\s*Section\(/.test(trimmed)) sections.push({ indent, name: m[1]! });
      }
      if (trimmed) pending = undefined;
    }
  }
  return out;
}

function describe(s: TSchema): string {
  const parts: string[] = [];
  if (s.anyOf) parts.push("one of " + s.anyOf.map((x: TSchema) => (x.const !== undefined ? JSON.stringify(x.const) : x.type)).join(" | "));
  else if (s.type === "array") parts.push(`list of ${s.items?.anyOf ? "one of " + s.items.anyOf.map((x: TSchema) => JSON.stringify(x.const)).join(" | ") : s.items?.type ?? "values"}`);
  else if (s.type === "object") parts.push("map");
  else parts.push(String(s.type));
  if (s.minimum !== undefined && s.maximum !== undefined) parts.push(`${s.minimum}..${s.maximum}`);
  else if (s.minimum !== undefined) parts.push(`>= ${s.minimum}`);
  else if (s.maximum !== undefined) parts.push(`<= ${s.maximum}`);
  if (s.minLength === 1) parts.push("non-empty");
  else if (s.minLength) parts.push(`at least ${s.minLength} characters`);
  if (s.format === "uri") parts.push("http(s) URL");
  return parts.join(", ");
}

const yamlValue = (v: unknown): string => (typeof v === "string" ? JSON.stringify(v) : Array.isArray(v) ? `[${v.map(yamlValue).join(", ")}]` : v !== null && typeof v === "object" ? (Object.keys(v).length ? JSON.stringify(v) : "{}") : String(v));

export function generate(): string {
  const comments = sourceComments();
  const lines: string[] = [
    "# svc configuration: every setting, its environment variable, type and default.",
    "# Generated from the configuration schema by `bun scripts/config-example.ts` (the test suite checks",
    "# that it is current and that it loads). Use it with SVC_CONFIG=/etc/svc/config.yaml; environment",
    "# variables (SVC_<SECTION>__<KEY>, upper case) win over this file. Values shown are the defaults;",
    "# settings without a default are commented out.",
  ];
  const walk = (schema: TSchema, path: string[], depth: number) => {
    const pad = "  ".repeat(depth);
    for (const [key, child] of Object.entries(schema.properties as Record<string, TSchema>)) {
      const p = [...path, key];
      const section = path.length ? path[path.length - 1]! : "*";
      const comment = FALLBACK[p.join(".")] ?? comments.get(`${section}.${key}`) ?? (path[0] === "providers" && path.length === 2 ? comments.get(`*.${key}`) : undefined);
      const isSection = child.type === "object" && child.properties && Object.keys(child.properties).length > 0;
      if (isSection) {
        lines.push("");
        if (comment) lines.push(`${pad}# ${comment}`);
        lines.push(`${pad}${key}:`);
        walk(child, p, depth + 1);
        continue;
      }
      const env = "SVC_" + p.map((s) => s.toUpperCase()).join("__");
      if (comment) for (const c of wrap(comment, 100 - pad.length)) lines.push(`${pad}# ${c}`);
      lines.push(`${pad}# ${env} · ${describe(child)}${child.default !== undefined ? ` · default ${yamlValue(child.default)}` : " · no default"}`);
      const example = EXAMPLES[p.join(".")];
      if (example) {
        lines.push(`${pad}# example:`);
        lines.push(`${pad}#   ${key}:`);
        for (const e of example) lines.push(`${pad}#     ${e}`);
      }
      if (child.default !== undefined) lines.push(`${pad}${key}: ${yamlValue(child.default)}`);
      else lines.push(`${pad}# ${key}: ${child.type === "boolean" ? "false" : child.type === "integer" || child.type === "number" ? "0" : '""'}`);
    }
  };
  walk(ConfigSchema, [], 0);
  return lines.join("\n") + "\n";
}

function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line && line.length + word.length + 1 > width) {
      out.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(line);
  return out;
}

if (import.meta.main) {
  const text = generate();
  if (process.argv.includes("--check")) {
    const current = existsSync(EXAMPLE_PATH) ? readFileSync(EXAMPLE_PATH, "utf8") : "";
    if (current !== text) {
      process.stderr.write("docs/config.example.yaml is out of date: run `bun scripts/config-example.ts`\n");
      process.exit(1);
    }
  } else {
    writeFileSync(EXAMPLE_PATH, text);
    process.stdout.write(`wrote ${EXAMPLE_PATH}\n`);
  }
}
