/**
 * Configuration loading: defaults < YAML file named by SVC_CONFIG < SVC_* environment variables.
 * Env names map to config paths by lower-casing and splitting on "__":
 *   SVC_PROVIDERS__OPENAI__BASE_URL -> providers.openai.base_url
 * The merged object is validated (and coerced) against one TypeBox schema; an invalid value stops
 * start-up with a message naming the variable it came from. Core defines the loader and its own
 * sections (server, storage, auth); each domain exports the sections it reads, and the
 * composition root (src/config.ts) assembles the whole schema.
 */
import { Type as T, FormatRegistry, type Static, type TSchema, type TProperties, type TObject } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type * as Yaml from "yaml";
import { readFileSync } from "node:fs";
import { deepMerge } from "./objects";
import { valueErrorMessage } from "./validation";

/** The YAML parser (~1 ms to load) is loaded only when a YAML file or object-valued variable is read. */
const parseYaml = (src: string): unknown => (require("yaml") as typeof Yaml).parse(src);

FormatRegistry.Set("uri", (v) => {
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
});

/** A nested section: absent in env/YAML means "all defaults". */
export const Section = <P extends TProperties>(props: P) => T.Object(props, { default: {} });

/** Core's own sections. */
export const CORE_SECTIONS = {
  server: Section({
    host: T.String({ default: "0.0.0.0" }),
    port: T.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
    /** largest accepted request body; larger bodies get 413 in the path's envelope */
    max_body_bytes: T.Integer({ default: 20 * 1024 * 1024, minimum: 1024 }),
    /** largest accepted total size of request headers; larger get 431 in the path's envelope */
    max_header_bytes: T.Integer({ default: 16 * 1024, minimum: 1024, maximum: 256 * 1024 }),
    /** how long graceful shutdown waits for in-flight requests (streams included) */
    shutdown_timeout_ms: T.Integer({ default: 10_000, minimum: 0 }),
    /** emit one JSON log line per request on stdout */
    request_log: T.Boolean({ default: true }),
  }),
  storage: Section({
    path: T.String({ default: "./data/svc.db", minLength: 1 }),
    /** postgres://user:pass@host:5432/db keeps durable state in PostgreSQL (several replicas); unset: bun:sqlite at path */
    url: T.Optional(T.String({ pattern: "^postgres(ql)?://", minLength: 12 })),
    /** connections in the PostgreSQL pool of each replica */
    pool_size: T.Integer({ default: 10, minimum: 1, maximum: 1000 }),
    /** a PostgreSQL statement (or BEGIN/COMMIT) without an answer within this is cancelled and the request answers 503: a frozen database never hangs requests */
    query_timeout_ms: T.Integer({ default: 5_000, minimum: 100, maximum: 600_000 }),
    /** the PostgreSQL schema svc's tables live in (several deployments in one database); unset: the server's search_path (public) */
    schema: T.Optional(T.String({ pattern: "^[a-z_][a-z0-9_]{0,62}$" })),
  }),
  outbound: Section({
    /** admit loopback/private/link-local targets for URLs tenants supply (MCP servers, connectors, SSO): development and tests only */
    allow_private: T.Boolean({ default: false }),
    /** networks admitted although not public, e.g. ["10.20.0.0/16"] (YAML list or JSON) */
    allow_cidrs: T.Array(T.String(), { default: [] }),
  }),
  auth: Section({
    jwt_secret: T.Optional(T.String({ minLength: 16 })),
    jwks_url: T.Optional(T.String({ format: "uri" })),
    /** lifetime of tokens minted by POST /api/v1/auth/token and `svc token` */
    token_ttl_secs: T.Integer({ default: 86_400, minimum: 60 }),
    /** longest accepted lifetime of an HS256 access token (exp - iat) */
    max_token_ttl_secs: T.Integer({ default: 30 * 86_400, minimum: 60 }),
  }),
};

export type CoreConfig = Static<TObject<typeof CORE_SECTIONS>>;

export class ConfigError extends Error {}

type Json = Record<string, unknown>;

/** Start-up messages read as one sentence: "SVC_X: expected one of ..." */
const configMessage = (m: string) => (m.startsWith("Expected one of") ? "e" + m.slice(1) : m);

/** Apply defaults at every nesting level so a partial object becomes a full Config. */
function withDefaults(schema: TSchema, value: unknown): unknown {
  const v = value === undefined ? {} : value;
  return Value.Default(schema, Value.Clone(v));
}

function setPath(target: Json, path: string[], value: unknown) {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null) node[key] = {};
    node = node[key] as Json;
  }
  node[path[path.length - 1]!] = value;
}

/** The schema node at a config path, to know how to coerce an env string. */
function schemaAt(root: TSchema, path: string[]): TSchema | undefined {
  let node: TSchema | undefined = root;
  for (const key of path) {
    if (!node) return undefined;
    if (node.type === "object" && node.properties) node = node.properties[key];
    else if (node.type === "object" && node.patternProperties) node = Object.values(node.patternProperties)[0] as TSchema;
    else return undefined;
  }
  return node;
}

function coerceEnv(name: string, raw: string, schema: TSchema | undefined): unknown {
  if (!schema) return raw;
  const kind = schema.type ?? (schema.anyOf ? "string" : undefined);
  if (kind === "integer" || kind === "number") {
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(n)) throw new ConfigError(`${name}: expected a number, got "${raw}"`);
    return n;
  }
  if (kind === "boolean") {
    const s = raw.trim().toLowerCase();
    if (["true", "1", "yes", "on"].includes(s)) return true;
    if (["false", "0", "no", "off"].includes(s)) return false;
    throw new ConfigError(`${name}: expected true or false, got "${raw}"`);
  }
  if (kind === "array") {
    // a YAML/JSON list, or a comma-separated one: SVC_X='["a","b"]', SVC_X='a,b'
    const t = raw.trim();
    if (t.startsWith("[") || t.startsWith("-")) {
      try {
        return parseYaml(raw);
      } catch (e) {
        throw new ConfigError(`${name}: expected a list (YAML/JSON or comma-separated), ${(e as Error).message}`);
      }
    }
    return t === "" ? [] : t.split(",").map((v) => v.trim());
  }
  if (kind === "object") {
    try {
      return parseYaml(raw); // YAML is a superset of JSON
    } catch (e) {
      throw new ConfigError(`${name}: expected YAML or JSON, ${(e as Error).message}`);
    }
  }
  return raw;
}

/**
 * Where the first invalid value came from, for the error message: the environment variable
 * that set it (a key inside a map such as models.routes is named after the variable), or the
 * YAML file and the key path inside it.
 */
function sourceOf(root: TSchema, path: string, fromEnv: Set<string>, file: string | undefined): string {
  const parts = path.split("/").filter(Boolean);
  // the longest prefix that is a config variable (not a key of a map like models.routes)
  let n = 0;
  let node: TSchema | undefined = root;
  while (n < parts.length && node?.type === "object" && node.properties?.[parts[n]!]) node = node.properties[parts[n++]!];
  const variable = "SVC_" + parts.slice(0, Math.max(n, 1)).map((s) => s.toUpperCase()).join("__");
  const rest = parts.slice(n).join(".");
  const setByEnv = [...fromEnv].some((p) => path === p || path.startsWith(p + "/"));
  if (file && !setByEnv) return `SVC_CONFIG ${file}: ${parts.join(".")}`;
  return rest ? `${variable} (key "${rest}")` : variable;
}

/** What the caller gets from configLoader: the schema, load() and unknownSettings(). */
export interface ConfigLoader<C> {
  schema: TObject;
  load(env?: Record<string, string | undefined>, overrides?: Json): C;
  /**
   * SVC_* variables that name no setting (a typo such as SVC_SERVER__POTR). load() ignores them —
   * an older binary must start with a newer deployment's environment — so `svc serve` logs them.
   */
  unknownSettings(env?: Record<string, string | undefined>): string[];
}

/**
 * A loader for one schema. `checks` run on the loaded config and throw ConfigError for rules that
 * span fields (e.g. two weights that must add up to 1).
 */
export function configLoader<S extends TObject>(schema: S, checks: Array<(cfg: Static<S>) => void> = []): ConfigLoader<Static<S>> {
  return {
    schema,
    unknownSettings(env = process.env) {
      return Object.keys(env)
        .filter((name) => name.startsWith("SVC_") && name !== "SVC_CONFIG" && !schemaAt(schema, name.slice(4).toLowerCase().split("__")))
        .sort();
    },
    load(env = process.env, overrides) {
      let fromFile: Json = {};
      const file = env.SVC_CONFIG;
      if (file) {
        try {
          fromFile = (parseYaml(readFileSync(file, "utf8")) ?? {}) as Json;
        } catch (e) {
          throw new ConfigError(`SVC_CONFIG: cannot read ${file}: ${(e as Error).message}`);
        }
        if (typeof fromFile !== "object" || Array.isArray(fromFile)) throw new ConfigError(`SVC_CONFIG: ${file} must hold a mapping`);
      }
      const merged: Json = structuredClone(fromFile);
      const fromEnv = new Set<string>();
      for (const [name, raw] of Object.entries(env)) {
        if (!name.startsWith("SVC_") || name === "SVC_CONFIG" || raw === undefined) continue;
        const path = name.slice(4).toLowerCase().split("__");
        const at = schemaAt(schema, path);
        if (!at) continue; // unknown variables are ignored (they may belong to a newer version)
        setPath(merged, path, coerceEnv(name, raw, at));
        fromEnv.add("/" + path.join("/"));
      }
      if (overrides) deepMerge(merged, overrides);
      const full = withDefaults(schema, merged);
      const first = Value.Check(schema, full) ? undefined : Value.Errors(schema, full).First();
      if (first) throw new ConfigError(`${sourceOf(schema, first.path, fromEnv, file)}: ${configMessage(valueErrorMessage(first))} (got ${JSON.stringify(first.value)})`);
      const cfg = full as Static<S>;
      for (const check of checks) check(cfg);
      return cfg;
    },
  };
}

/** Hot state shared by replicas (core/hotstate.ts, core/redis.ts): absent url = single node. */
export const REDIS_SECTIONS = {
  redis: Section({
    /** redis://host:port[/db]; empty = single node (hot state in process memory) */
    url: T.String({ default: "" }),
    /** without Redis: `closed` answers 503 for limits and budgets, `open` decides on this replica's local state */
    fail_mode: T.Union([T.Literal("closed"), T.Literal("open")], { default: "closed" }),
    /** key prefix (several deployments on one Redis) */
    prefix: T.String({ default: "svc:" }),
    /** a script not answered within this is a failure (the fail mode applies): a hung Redis, not only a dead one */
    command_timeout_ms: T.Integer({ default: 500, minimum: 10, maximum: 60_000 }),
  }),
};

export type RedisConfig = Static<(typeof REDIS_SECTIONS)["redis"]>;
