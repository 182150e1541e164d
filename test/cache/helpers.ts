/** Shared helpers for the cache engine tests: temp database, engine factory, request builders. */
import { afterAll, beforeAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { loadConfig, type Config } from "../../src/config";
import { createCacheEngine, SemanticCacheEngine, CACHE_MIGRATIONS } from "../../src/cache";
import { createEmbedder } from "../../src/embedding";
import type { Embedder } from "../../src/embedding/types";
import { EmbeddingError, l2normalize } from "../../src/embedding/types";
import type { CacheKeyInput, Turn } from "../../src/cache/types";
import { bagOfWords } from "../fake-upstream/bag-of-words";
import { installPieceTokenizer } from "../../scripts/bench/cache-piece-tokenizer";

// engines built here without the app: the pair model's alignment features need what src/app.ts installs
installPieceTokenizer();

/** The real local embedder for the tests of one file: loaded before them, released after them. */
export function localEmbedderForFile(): Embedder {
  const e = createEmbedder({ provider: "local" });
  beforeAll(() => e.load());
  afterAll(() => e.close());
  return e;
}

/** A database with the cache's tables. */
export const cacheDb = (path: string) => new Db(path, [{ domain: "cache", migrations: CACHE_MIGRATIONS }]);

export function tempDir(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), "svc-cache-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function testConfig(dir: string, overrides: Record<string, unknown> = {}): Config {
  return loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db") }, overrides);
}

export interface Harness {
  db: Db;
  engine: SemanticCacheEngine;
  clock: { t: number };
  close(): Promise<void>;
}

export function openEngine(dir: string, embedder: Embedder, overrides: Record<string, unknown> = {}): Harness {
  const config = testConfig(dir, overrides);
  const db = cacheDb(config.storage.path);
  const clock = { t: 1_700_000_000_000 };
  const engine = createCacheEngine(config, { storage: openStorage({ path: config.storage.path, db }), embedder, now: () => clock.t, timers: false });
  return {
    db,
    engine,
    clock,
    async close() {
      await engine.close();
      db.close();
    },
  };
}

export function ask(tenantId: string, text: string, o: Partial<CacheKeyInput> & { history?: Turn[] } = {}): CacheKeyInput {
  const { history, ...rest } = o;
  return {
    tenantId,
    style: "openai",
    model: "gpt-4o-mini",
    scope: {},
    turns: [...(history ?? []), { role: "user", text }],
    ...rest,
  };
}

export const answer = (text: string) => ({ body: { id: "chatcmpl-x", choices: [{ index: 0, message: { role: "assistant", content: text } }] }, usage: { inputTokens: 5, outputTokens: 7 } });

/** Miss, then store an answer; returns the stored payload. */
export async function fill(engine: SemanticCacheEngine, input: CacheKeyInput, text = "cached answer") {
  const miss = await engine.lookup(input);
  if (miss.hit) throw new Error(`expected a miss for ${JSON.stringify(input.turns)}`);
  const p = answer(text);
  await engine.store(input, p, miss);
  return p;
}

/**
 * Deterministic tiny embedder for index/TTL/eviction mechanics only: a bag of hashed words in
 * 64 dimensions. `fail` makes embed() throw EmbeddingError.
 */
export class HashEmbedder implements Embedder {
  readonly id = "test:hash-64";
  readonly dimensions = 64;
  fail = false;
  calls = 0;
  async load() {}
  isReady() {
    return true;
  }
  async embed(texts: string[]): Promise<Float32Array[]> {
    this.calls++;
    if (this.fail) throw new EmbeddingError("embedder down");
    return texts.map((t) => l2normalize(Float32Array.from(bagOfWords(t, this.dimensions))));
  }
  async close() {}
}
