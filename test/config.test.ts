import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, ConfigError } from "../src/config";

describe("config", () => {
  test("defaults with an empty environment", () => {
    const c = loadConfig({});
    expect(c.server.port).toBe(8080);
    expect(c.server.host).toBe("0.0.0.0");
    expect(c.storage.path).toBe("./data/svc.db");
    expect(c.providers.openai.base_url).toBe("https://api.openai.com");
    expect(c.providers.anthropic.timeout_ms).toBe(120_000);
    expect(c.rate_limits.enabled).toBe(true);
    expect(c.server.request_log).toBe(true);
  });

  test("env coercion: numbers, booleans, nested names, YAML/JSON objects", () => {
    const c = loadConfig({
      SVC_SERVER__PORT: "9090",
      SVC_RATE_LIMITS__ENABLED: "off",
      SVC_SERVER__REQUEST_LOG: "0",
      SVC_CACHE__SIMILARITY_THRESHOLD: "0.9",
      SVC_PROVIDERS__OPENAI__BASE_URL: "http://127.0.0.1:1234",
      SVC_MODELS__ROUTES: '{"llama-*": "openai", "claude-*": "anthropic"}',
      SVC_UNKNOWN__THING: "ignored",
    });
    expect(c.server.port).toBe(9090);
    expect(c.rate_limits.enabled).toBe(false);
    expect(c.server.request_log).toBe(false);
    expect(c.cache.similarity_threshold).toBe(0.9);
    expect(c.providers.openai.base_url).toBe("http://127.0.0.1:1234");
    expect(c.models.routes).toEqual({ "llama-*": "openai", "claude-*": "anthropic" });
  });

  test("YAML file named by SVC_CONFIG; the environment wins", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-cfg-"));
    try {
      const file = join(dir, "svc.yaml");
      writeFileSync(file, "server:\n  port: 7000\n  host: 127.0.0.1\nstorage:\n  path: /tmp/from-yaml.db\nrate_limits:\n  enabled: false\n");
      const c = loadConfig({ SVC_CONFIG: file, SVC_SERVER__PORT: "7001" });
      expect(c.server.port).toBe(7001); // env wins
      expect(c.server.host).toBe("127.0.0.1"); // from the file
      expect(c.storage.path).toBe("/tmp/from-yaml.db");
      expect(c.rate_limits.enabled).toBe(false);
      expect(c.server.max_body_bytes).toBe(20 * 1024 * 1024); // default kept
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an invalid value stops start-up with a message naming the variable", () => {
    expect(() => loadConfig({ SVC_SERVER__PORT: "eighty" })).toThrow(ConfigError);
    expect(() => loadConfig({ SVC_SERVER__PORT: "eighty" })).toThrow(/SVC_SERVER__PORT/);
    expect(() => loadConfig({ SVC_SERVER__PORT: "70000" })).toThrow(/SVC_SERVER__PORT/);
    expect(() => loadConfig({ SVC_RATE_LIMITS__ENABLED: "maybe" })).toThrow(/SVC_RATE_LIMITS__ENABLED: expected true or false/);
    expect(() => loadConfig({ SVC_PROVIDERS__GEMINI__BASE_URL: "not a url" })).toThrow(/SVC_PROVIDERS__GEMINI__BASE_URL/);
    expect(() => loadConfig({ SVC_CACHE__SIMILARITY_THRESHOLD: "1.5" })).toThrow(/SVC_CACHE__SIMILARITY_THRESHOLD/);
    expect(() => loadConfig({ SVC_EMBEDDING__PROVIDER: "openai" })).toThrow(/SVC_EMBEDDING__BASE_URL/);
  });

  test("an unreadable SVC_CONFIG file is named in the error", () => {
    expect(() => loadConfig({ SVC_CONFIG: "/nonexistent/svc.yaml" })).toThrow(/SVC_CONFIG: cannot read \/nonexistent\/svc.yaml/);
  });

  test("every CONTRACT.md variable: providers' BASE_URL/API_KEY/TIMEOUT_MS, auth, context cache (doc1 §4.7 names and defaults)", () => {
    const d = loadConfig({});
    expect(d.providers.anthropic.base_url).toBe("https://api.anthropic.com");
    expect(d.providers.gemini.base_url).toBe("https://generativelanguage.googleapis.com");
    expect(d.providers.cohere.base_url).toBe("https://api.cohere.com");
    for (const p of ["openai", "anthropic", "gemini", "cohere"] as const) {
      expect(d.providers[p].api_key).toBeUndefined();
      expect(d.providers[p].timeout_ms).toBe(120_000);
    }
    expect(d.auth.jwt_secret).toBeUndefined();
    expect(d.auth.jwks_url).toBeUndefined();
    expect(d.context_cache).toEqual({ enabled: true, stage1_threshold: 0.85, context_hit_threshold: 0.92, query_weight: 0.3, context_weight: 0.7, max_turns: 20 });
    expect(d.models.routes).toEqual({});

    const c = loadConfig({
      SVC_SERVER__HOST: "127.0.0.1",
      SVC_STORAGE__PATH: "/var/lib/svc/svc.db",
      SVC_AUTH__JWT_SECRET: "0123456789abcdef0123",
      SVC_AUTH__JWKS_URL: "https://idp.example.com/.well-known/jwks.json",
      SVC_PROVIDERS__ANTHROPIC__API_KEY: "sk-ant-1",
      SVC_PROVIDERS__GEMINI__TIMEOUT_MS: "30000",
      SVC_PROVIDERS__COHERE__BASE_URL: "http://127.0.0.1:9999",
      SVC_CONTEXT_CACHE__ENABLED: "false",
      SVC_CONTEXT_CACHE__STAGE1_THRESHOLD: "0.8",
      SVC_CONTEXT_CACHE__CONTEXT_HIT_THRESHOLD: "0.95",
      SVC_CONTEXT_CACHE__QUERY_WEIGHT: "0.4",
      SVC_CONTEXT_CACHE__CONTEXT_WEIGHT: "0.6",
      SVC_CONTEXT_CACHE__MAX_TURNS: "8",
      SVC_MODELS__ROUTES: "gpt-*: openai\nmistral-*: openai\nmy-claude: anthropic\n",
    });
    expect(c.server.host).toBe("127.0.0.1");
    expect(c.storage.path).toBe("/var/lib/svc/svc.db");
    expect(c.auth).toMatchObject({ jwt_secret: "0123456789abcdef0123", jwks_url: "https://idp.example.com/.well-known/jwks.json" });
    expect(c.providers.anthropic).toEqual({ base_url: "https://api.anthropic.com", api_key: "sk-ant-1", timeout_ms: 120_000, max_retries: 2, retry_backoff_ms: 250, retry_max_wait_ms: 10_000 });
    expect(c.providers.gemini.timeout_ms).toBe(30_000);
    expect(c.providers.cohere.base_url).toBe("http://127.0.0.1:9999");
    expect(c.context_cache).toEqual({ enabled: false, stage1_threshold: 0.8, context_hit_threshold: 0.95, query_weight: 0.4, context_weight: 0.6, max_turns: 8 });
    expect(c.models.routes).toEqual({ "gpt-*": "openai", "mistral-*": "openai", "my-claude": "anthropic" });
  });

  test("errors name the variable, the map key, or the YAML file and key the bad value came from", () => {
    const msg = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
      throw new Error("expected a ConfigError");
    };
    expect(msg({ SVC_MODELS__ROUTES: '{"llama-*": "ollama"}' })).toBe('SVC_MODELS__ROUTES (key "llama-*"): expected one of "openai", "anthropic", "gemini", "cohere" (got "ollama")');
    expect(msg({ SVC_EMBEDDING__PROVIDER: "cohere" })).toBe('SVC_EMBEDDING__PROVIDER: expected one of "local", "openai" (got "cohere")');
    expect(msg({ SVC_PROVIDERS__OPENAI__TIMEOUT_MS: "0" })).toStartWith("SVC_PROVIDERS__OPENAI__TIMEOUT_MS: ");
    expect(msg({ SVC_AUTH__JWT_SECRET: "short" })).toStartWith("SVC_AUTH__JWT_SECRET: ");
    expect(msg({ SVC_AUTH__JWKS_URL: "ftp://idp" })).toStartWith("SVC_AUTH__JWKS_URL: ");
    expect(msg({ SVC_CONTEXT_CACHE__MAX_TURNS: "0" })).toStartWith("SVC_CONTEXT_CACHE__MAX_TURNS: ");
    expect(msg({ SVC_CONTEXT_CACHE__CONTEXT_HIT_THRESHOLD: "2" })).toStartWith("SVC_CONTEXT_CACHE__CONTEXT_HIT_THRESHOLD: ");
    expect(msg({ SVC_CONTEXT_CACHE__QUERY_WEIGHT: "0.5" })).toBe("SVC_CONTEXT_CACHE__QUERY_WEIGHT + SVC_CONTEXT_CACHE__CONTEXT_WEIGHT must add up to 1");
    const dir = mkdtempSync(join(tmpdir(), "svc-cfg-"));
    try {
      const file = join(dir, "svc.yaml");
      writeFileSync(file, 'server:\n  port: 99999\nmodels:\n  routes:\n    "llama-*": ollama\n');
      expect(msg({ SVC_CONFIG: file })).toBe(`SVC_CONFIG ${file}: server.port: Expected integer to be less or equal to 65535 (got 99999)`);
      expect(msg({ SVC_CONFIG: file, SVC_SERVER__PORT: "8081" })).toBe(`SVC_CONFIG ${file}: models.routes.llama-*: expected one of "openai", "anthropic", "gemini", "cohere" (got "ollama")`);
      expect(msg({ SVC_CONFIG: file, SVC_SERVER__PORT: "70000" })).toBe("SVC_SERVER__PORT: Expected integer to be less or equal to 65535 (got 70000)");
      writeFileSync(file, "- a list\n");
      expect(msg({ SVC_CONFIG: file })).toBe(`SVC_CONFIG: ${file} must hold a mapping`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("without SVC_AUTH__JWT_SECRET a secret is generated once (0600, with a warning) beside the database and reused", () => {
    const { resolveJwtSecret } = require("../src/core/auth") as typeof import("../src/core/auth");
    const { statSync, readFileSync } = require("node:fs") as typeof import("node:fs");
    const dir = mkdtempSync(join(tmpdir(), "svc-cfg-"));
    try {
      const loaded = loadConfig({ SVC_STORAGE__PATH: join(dir, "data", "svc.db") });
      const cfg = { jwtSecret: loaded.auth.jwt_secret, dataPath: loaded.storage.path };
      const warnings: string[] = [];
      const s1 = resolveJwtSecret(cfg, (m) => warnings.push(m));
      expect(s1.length).toBeGreaterThanOrEqual(32);
      expect(warnings).toEqual([`SVC_AUTH__JWT_SECRET is not set; generated one and stored it in ${join(dir, "data", "jwt-secret")}`]);
      expect(statSync(join(dir, "data", "jwt-secret")).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(dir, "data", "jwt-secret"), "utf8").trim()).toBe(s1);
      expect(resolveJwtSecret(cfg, (m) => warnings.push(m))).toBe(s1); // reused, no second warning
      expect(warnings.length).toBe(1);
      expect(resolveJwtSecret({ jwtSecret: "configured-secret-1234", dataPath: join(dir, "data", "svc.db") }, () => {})).toBe("configured-secret-1234");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("embedding and index settings", () => {
  test("engine, kernel, worker and HNSW parameters come from SVC_* like every other setting", async () => {
    const c = loadConfig({
      SVC_EMBEDDING__ENGINE: "tfjs",
      SVC_EMBEDDING__KERNEL: "wasm",
      SVC_EMBEDDING__WORKER: "false",
      SVC_CACHE__INDEX_M: "32",
      SVC_CACHE__INDEX_EF_CONSTRUCTION: "200",
    });
    expect([c.embedding.engine, c.embedding.kernel, c.embedding.worker]).toEqual(["tfjs", "wasm", false]);
    const { engineSettings } = await import("../src/cache");
    const s = engineSettings(c);
    expect([s.connectivity, s.efConstruction]).toEqual([32, 200]);
    const d = loadConfig({});
    expect([d.embedding.engine, d.embedding.kernel, d.embedding.worker, d.cache.index_m]).toEqual(["fast", "auto", true, 16]);
  });
  test("a bad value names its variable", () => {
    expect(() => loadConfig({ SVC_EMBEDDING__KERNEL: "avx" })).toThrow(/SVC_EMBEDDING__KERNEL/);
    expect(() => loadConfig({ SVC_CACHE__INDEX_M: "2" })).toThrow(/SVC_CACHE__INDEX_M/);
  });
});

describe("unknown SVC_* variables", () => {
  test("are listed (for the start-up warning) but never fatal", async () => {
    const { unknownSettings } = await import("../src/config");
    const env = { SVC_SERVER__POTR: "1", SVC_SERVER__PORT: "1", SVC_CONFIG: "x.yaml", SVC_MODELS__ROUTES: "{}", HOME: "/root", SVC_NOPE: "" };
    expect(unknownSettings(env)).toEqual(["SVC_NOPE", "SVC_SERVER__POTR"]);
    expect(() => loadConfig({ SVC_SERVER__POTR: "1" })).not.toThrow();
  });
});
