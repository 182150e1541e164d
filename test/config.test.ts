import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, ConfigError } from "../src/core/config";

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
});
