/**
 * Configuration: defaults < YAML file named by SVC_CONFIG < SVC_* environment variables.
 * Env names map to config paths by lower-casing and splitting on "__":
 *   SVC_PROVIDERS__OPENAI__BASE_URL -> providers.openai.base_url
 * The merged object is validated (and coerced) against one TypeBox schema; an invalid
 * value stops start-up with a message naming the variable it came from.
 */
import { Type as T, FormatRegistry, type Static, type TSchema, type TProperties } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type * as Yaml from "yaml";
import { readFileSync } from "node:fs";

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
const Section = <P extends TProperties>(props: P) => T.Object(props, { default: {} });

const Provider = (baseUrl: string) =>
  Section({
    base_url: T.String({ default: baseUrl, format: "uri", minLength: 1 }),
    api_key: T.Optional(T.String()),
    timeout_ms: T.Integer({ default: 120_000, minimum: 1 }),
  });

export const ConfigSchema = T.Object({
  server: Section({
    host: T.String({ default: "0.0.0.0" }),
    port: T.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
    /** largest accepted request body; larger bodies get 400 invalid_request_error */
    max_body_bytes: T.Integer({ default: 20 * 1024 * 1024, minimum: 1024 }),
    /** how long graceful shutdown waits for in-flight requests (streams included) */
    shutdown_timeout_ms: T.Integer({ default: 10_000, minimum: 0 }),
    /** emit one JSON log line per request on stdout */
    request_log: T.Boolean({ default: true }),
  }),
  storage: Section({
    path: T.String({ default: "./data/svc.db", minLength: 1 }),
  }),
  auth: Section({
    jwt_secret: T.Optional(T.String({ minLength: 16 })),
    jwks_url: T.Optional(T.String({ format: "uri" })),
    /** lifetime of tokens minted by POST /api/v1/auth/token and `svc token` */
    token_ttl_secs: T.Integer({ default: 86_400, minimum: 60 }),
  }),
  providers: Section({
    openai: Provider("https://api.openai.com"),
    anthropic: Provider("https://api.anthropic.com"),
    gemini: Provider("https://generativelanguage.googleapis.com"),
    cohere: Provider("https://api.cohere.com"),
  }),
  upstream: Section({
    /** bound on concurrent upstream requests across all providers */
    max_in_flight: T.Integer({ default: 1024, minimum: 1 }),
    /** how long a request waits for a free slot when max_in_flight are busy, then 503 service_unavailable (0 = fail at once) */
    queue_timeout_ms: T.Integer({ default: 5_000, minimum: 0 }),
  }),
  embedding: Section({
    provider: T.Union([T.Literal("local"), T.Literal("openai")], { default: "local" }),
    base_url: T.Optional(T.String({ format: "uri" })),
    model: T.Optional(T.String()),
    api_key: T.Optional(T.String()),
    timeout_ms: T.Integer({ default: 10_000, minimum: 1 }),
    /** on embedder failure: false (default) = 503 embedding_error, true = serve uncached (X-Cache-Status MISS, nothing written, a warning logged) */
    fail_open: T.Boolean({ default: false }),
    lru_size: T.Integer({ default: 10_000, minimum: 0 }),
    /** local model implementation: "fast" (TS + WASM SIMD) or "tfjs" (the original TF.js graph; same vectors, slower) */
    engine: T.Union([T.Literal("fast"), T.Literal("tfjs")], { default: "fast" }),
    /** matmul kernel of the "fast" engine: auto (fastest the runtime validates), wasm-i16, wasm (f32), js */
    kernel: T.Union([T.Literal("auto"), T.Literal("wasm-i16"), T.Literal("wasm"), T.Literal("js")], { default: "auto" }),
    /** run the local model in a worker thread (keeps the event loop free during inference) */
    worker: T.Boolean({ default: true }),
  }),
  cache: Section({
    enabled: T.Boolean({ default: true }),
    /** single-turn semantic tier: minimum cosine before verification */
    similarity_threshold: T.Number({ default: 0.85, minimum: 0, maximum: 1 }),
    /** default time-to-live of a cache entry, seconds (0 = never expires) */
    ttl_secs: T.Integer({ default: 86_400, minimum: 0 }),
    /** per-tenant entry bound; coldest entries are evicted beyond it */
    max_entries_per_tenant: T.Integer({ default: 100_000, minimum: 1 }),
    /** directory for saved vector index files (defaults next to the database) */
    index_dir: T.Optional(T.String()),
    /** vector index scalar type: f16 halves index memory, i8 quarters it (for ~1M-entry tenants; BENCHMARKS.md); the hit decision uses exact f32 cosines either way */
    index_quantization: T.Union([T.Literal("f32"), T.Literal("f16"), T.Literal("i8")], { default: "f16" }),
    /** HNSW graph degree (M): 32 keeps recall at 100k–1M entries (BENCHMARKS.md "Index at scale"); changing it rebuilds saved indexes */
    index_m: T.Integer({ default: 16, minimum: 4, maximum: 64 }),
    /** HNSW build breadth (efConstruction) */
    index_ef_construction: T.Integer({ default: 128, minimum: 8, maximum: 4096 }),
    /** HNSW search breadth (efSearch): higher = better recall on large tenants, slower search (BENCHMARKS.md) */
    index_ef_search: T.Integer({ default: 128, minimum: 8, maximum: 4096 }),
    /** how long concurrent identical misses wait for the first one's upstream answer */
    single_flight_wait_ms: T.Integer({ default: 30_000, minimum: 0 }),
  }),
  context_cache: Section({
    enabled: T.Boolean({ default: true }),
    stage1_threshold: T.Number({ default: 0.85, minimum: 0, maximum: 1 }),
    context_hit_threshold: T.Number({ default: 0.92, minimum: 0, maximum: 1 }),
    query_weight: T.Number({ default: 0.3, minimum: 0, maximum: 1 }),
    context_weight: T.Number({ default: 0.7, minimum: 0, maximum: 1 }),
    max_turns: T.Integer({ default: 20, minimum: 1 }),
  }),
  models: Section({
    /** model name or glob -> provider (openai | anthropic | gemini | cohere) */
    routes: T.Record(T.String(), T.Union([T.Literal("openai"), T.Literal("anthropic"), T.Literal("gemini"), T.Literal("cohere")]), {
      default: {},
    }),
  }),
  rate_limits: Section({
    enabled: T.Boolean({ default: true }),
  }),
});

export type Config = Static<typeof ConfigSchema>;
export type ProviderName = keyof Config["providers"];

export class ConfigError extends Error {}

type Json = Record<string, unknown>;

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
function schemaAt(path: string[]): TSchema | undefined {
  let node: TSchema | undefined = ConfigSchema;
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
function sourceOf(path: string, fromEnv: Set<string>, file: string | undefined): string {
  const parts = path.split("/").filter(Boolean);
  // the longest prefix that is a config variable (not a key of a map like models.routes)
  let n = 0;
  let node: TSchema | undefined = ConfigSchema;
  while (n < parts.length && node?.type === "object" && node.properties?.[parts[n]!]) node = node.properties[parts[n++]!];
  const variable = "SVC_" + parts.slice(0, Math.max(n, 1)).map((s) => s.toUpperCase()).join("__");
  const rest = parts.slice(n).join(".");
  const setByEnv = [...fromEnv].some((p) => path === p || path.startsWith(p + "/"));
  if (file && !setByEnv) return `SVC_CONFIG ${file}: ${parts.join(".")}`;
  return rest ? `${variable} (key "${rest}")` : variable;
}

/** TypeBox says "Expected union value"; for a union of literals name the allowed values. */
function describeError(e: { message: string; schema: TSchema }): string {
  const anyOf = (e.schema as { anyOf?: TSchema[] }).anyOf;
  if (e.message === "Expected union value" && anyOf?.every((b) => "const" in b))
    return `expected one of ${anyOf.map((b) => JSON.stringify(b.const)).join(", ")}`;
  return e.message;
}

/**
 * SVC_* variables that name no setting (a typo such as SVC_SERVER__POTR). They are ignored by
 * loadConfig — an older binary must start with a newer deployment's environment — so `svc serve`
 * logs them as a warning instead.
 */
export function unknownSettings(env: Record<string, string | undefined> = process.env): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith("SVC_") && name !== "SVC_CONFIG" && !schemaAt(name.slice(4).toLowerCase().split("__")))
    .sort();
}

export function loadConfig(env: Record<string, string | undefined> = process.env, overrides?: Json): Config {
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
    const schema = schemaAt(path);
    if (!schema) continue; // unknown variables are ignored (they may belong to a newer version)
    setPath(merged, path, coerceEnv(name, raw, schema));
    fromEnv.add("/" + path.join("/"));
  }
  if (overrides) deepMerge(merged, overrides);
  const full = withDefaults(ConfigSchema, merged);
  const first = Value.Check(ConfigSchema, full) ? undefined : Value.Errors(ConfigSchema, full).First();
  if (first) throw new ConfigError(`${sourceOf(first.path, fromEnv, file)}: ${describeError(first)} (got ${JSON.stringify(first.value)})`);
  const cfg = full as Config;
  if (Math.abs(cfg.context_cache.query_weight + cfg.context_cache.context_weight - 1) > 1e-6)
    throw new ConfigError("SVC_CONTEXT_CACHE__QUERY_WEIGHT + SVC_CONTEXT_CACHE__CONTEXT_WEIGHT must add up to 1");
  if (cfg.embedding.provider === "openai" && !cfg.embedding.base_url)
    throw new ConfigError("SVC_EMBEDDING__BASE_URL: required when SVC_EMBEDDING__PROVIDER=openai");
  if (cfg.embedding.provider === "openai" && !cfg.embedding.model)
    throw new ConfigError("SVC_EMBEDDING__MODEL: required when SVC_EMBEDDING__PROVIDER=openai");
  return cfg;
}

function deepMerge(target: Json, src: Json) {
  for (const [k, v] of Object.entries(src)) {
    if (v && typeof v === "object" && !Array.isArray(v) && typeof target[k] === "object" && target[k] !== null)
      deepMerge(target[k] as Json, v as Json);
    else target[k] = v;
  }
}
