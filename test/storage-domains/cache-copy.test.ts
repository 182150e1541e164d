/**
 * Moving a single-node deployment's cache to PostgreSQL: a SQLite database written by the cache
 * engine is copied (copyDatabase, the engine of `svc storage copy`); on PostgreSQL the entries keep
 * their vec_keys and vectors bit for bit, an engine there serves them (exact and semantic, its
 * index rebuilt from the copied table), and new entries get keys after the copied ones.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { copyDatabase } from "../../src/storage/copy";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import type { AsyncStorage } from "../../src/storage/async";
import { CACHE_MIGRATIONS, createCacheEngine } from "../../src/cache";
import { CacheStore } from "../../src/cache/store";
import { loadConfig } from "../../src/config";
import { dropSchema, freshSchema } from "../helpers/postgres";
import { SETUP_TIMEOUT } from "../storage/backends";
import { ask, answer, HashEmbedder } from "../cache/helpers";

const SETS = [{ domain: "cache", migrations: CACHE_MIGRATIONS }];
const dir = mkdtempSync(join(tmpdir(), "svc-cache-copy-"));
const opened: AsyncStorage[] = [];
let pg: { url: string; schema: string } | undefined;
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  if (pg) await dropSchema(pg.url, pg.schema);
  rmSync(dir, { recursive: true, force: true });
}, SETUP_TIMEOUT);

test(
  "a copied cache database serves on PostgreSQL what it served on SQLite",
  async () => {
    const config = loadConfig({ SVC_STORAGE__PATH: ":memory:" });
    const engineOn = (storage: AsyncStorage) => createCacheEngine(config, { storage, embedder: new HashEmbedder(), timers: false, verify: () => ({ accept: true, score: 1, reason: "ok" }) });
    const db = new Db(join(dir, "svc.db"), SETS);
    const src = openStorage({ path: "", db });
    opened.push(src);
    const a = engineOn(src);
    await a.store(ask("t", "red green blue"), answer("colours"));
    await a.store(ask("t", "one two three", { history: [{ role: "user", text: "count with me" }, { role: "assistant", text: "sure" }] }), answer("numbers"));
    await a.setTenantSettings("t", { decisionThreshold: 0.55 });
    await a.close();

    pg = await freshSchema("cache-copy");
    const target = openStorage({ url: pg.url, schema: pg.schema, path: "" });
    opened.push(target);
    await target.migrate(SETS);
    const counts = await copyDatabase(db, target);
    expect(counts.find((c) => c.table === "cache_entries")).toMatchObject({ source: 2, target: 2 });

    const before = new CacheStore(src.tenant("t"));
    const after = new CacheStore(target.tenant("t"));
    const srcRows = (await before.list(10, 0)).entries;
    expect((await after.list(10, 0)).entries).toEqual(srcRows);
    const srcKey = (await before.findExact((await src.global("test").get<{ k: string }>("SELECT exact_key AS k FROM cache_entries WHERE query_text = 'red green blue'"))!.k, 0))!;
    const cand = (await after.candidate(srcKey.vecKey))!;
    expect([...cand.queryVec]).toEqual([...(await before.candidate(srcKey.vecKey))!.queryVec]);

    const b = engineOn(target);
    try {
      const exact = await b.lookup(ask("t", "red green blue"));
      expect(exact.hit && exact.tier).toBe("exact");
      const semantic = await b.lookup(ask("t", "Blue, green, red?"));
      expect(semantic.hit && semantic.tier).toBe("semantic");
      expect(await b.tenantSettings("t")).toEqual({ decisionThreshold: 0.55 });
      await b.store(ask("t", "a new question"), answer("new"));
      const keys = (await target.global("test").all<{ k: number }>("SELECT vec_key AS k FROM cache_entries ORDER BY vec_key")).map((r) => Number(r.k));
      expect(keys).toHaveLength(3);
      expect(keys[2]!).toBeGreaterThan(Math.max(keys[0]!, keys[1]!));
    } finally {
      await b.close();
    }
  },
  SETUP_TIMEOUT,
);
