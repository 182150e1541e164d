/**
 * docs/config.example.yaml: generated from the configuration schema, current, loads (as SVC_CONFIG)
 * to exactly the defaults, names every setting with its variable and a comment, and its commented
 * examples are valid configuration. docs/svc.service runs what `npm start` runs.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import type { TSchema } from "@sinclair/typebox";
import { generate, EXAMPLE_PATH } from "../../scripts/config-example";
import { ConfigSchema, loadConfig } from "../../src/config";
import { ROOT } from "../../scripts/bench/harness";
import pkg from "../../package.json";

const text = readFileSync(EXAMPLE_PATH, "utf8");

function leaves(schema: TSchema, path: string[] = []): string[][] {
  return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([k, s]) =>
    s.type === "object" && s.properties && Object.keys(s.properties).length ? leaves(s, [...path, k]) : [[...path, k]],
  );
}

describe("docs/config.example.yaml", () => {
  test("is what the generator makes from the schema now (run `bun scripts/config-example.ts` after changing a setting)", () => {
    expect(text).toBe(generate());
  });

  test("loads as SVC_CONFIG to exactly the defaults", () => {
    expect(loadConfig({ SVC_CONFIG: EXAMPLE_PATH })).toEqual(loadConfig({}));
  });

  test("every setting appears with its environment variable, a comment saying what it does, and its value (or commented out without a default)", () => {
    const lines = text.split("\n");
    const all = leaves(ConfigSchema);
    expect(all.length).toBeGreaterThan(90);
    for (const path of all) {
      const env = "SVC_" + path.map((p) => p.toUpperCase()).join("__");
      const i = lines.findIndex((l) => l.trim().startsWith(`# ${env} ·`));
      expect(`${env} found: ${i >= 0}`).toBe(`${env} found: true`);
      const before = lines[i - 1]!.trim();
      expect(`${env} comment: ${before.startsWith("# ") && !before.startsWith("# SVC_")}`).toBe(`${env} comment: true`);
      const key = path[path.length - 1]!;
      const after = lines.slice(i + 1).find((l) => !l.trim().startsWith("# example") && !l.trim().startsWith("#   ") && !l.trim().startsWith("#     "))!.trim();
      expect(after.startsWith(`${key}:`) || after.startsWith(`# ${key}:`)).toBe(true);
    }
  });

  test("the commented examples are valid configuration", () => {
    const example = (key: string) => {
      const lines = text.split("\n");
      const start = lines.findIndex((l) => l.trim() === `#   ${key}:`);
      const body: string[] = [`${key}:`];
      for (const l of lines.slice(start + 1)) {
        if (!l.trim().startsWith("#     ")) break;
        body.push(l.trim().replace(/^#   /, ""));
      }
      return parse(body.join("\n"));
    };
    const c = loadConfig({}, { models: { ...example("routes"), ...example("fallbacks") }, prices: example("overrides") });
    expect(c.models.routes).toEqual({ "mistral-*": "openai", "my-claude": "anthropic" });
    expect(c.models.fallbacks["gpt-4o"]).toHaveLength(2);
    expect(c.models.fallbacks["gpt-4o"]![1]).toEqual({ provider: "anthropic", model: "claude-sonnet-4-5" });
    expect(c.prices.overrides["my-finetune"]).toEqual({ input: 3, output: 12 });
  });
});

test("docs/svc.service runs what `npm start` runs, with one absolute data directory", () => {
  const unit = readFileSync(join(ROOT, "docs/svc.service"), "utf8");
  const start = pkg.scripts.start.replace(/^exec /, "");
  expect(start).toBe("bun --max-http-header-size=262144 run src/main.ts");
  expect(unit).toContain("ExecStart=/opt/svc/node_modules/.bin/bun --max-http-header-size=262144 run /opt/svc/src/main.ts serve");
  expect(unit).toMatch(/^Environment=SVC_STORAGE__PATH=\/var\/lib\/svc\/svc\.db$/m);
  expect(unit).toMatch(/^ReadWritePaths=\/var\/lib\/svc$/m);
  expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
  // the stop timeout leaves the graceful shutdown its time
  const stopSecs = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)![1]);
  expect(stopSecs * 1000).toBeGreaterThan(loadConfig({}).server.shutdown_timeout_ms);
  // bun is a runtime dependency, pinned exactly
  expect((pkg.dependencies as Record<string, string>).bun).toMatch(/^\d+\.\d+\.\d+$/);
  expect((pkg.devDependencies as Record<string, string>).bun).toBeUndefined();
});
