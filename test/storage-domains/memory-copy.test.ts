/**
 * Moving a single-node deployment's memory to PostgreSQL: a SQLite database written by the Memory
 * services is copied (copyDatabase, the engine of `svc storage copy`), the copied FTS rows are
 * rewritten into PostgreSQL's words (normalizeCopiedText), and search then answers on PostgreSQL
 * as it did on SQLite — the same hits, in the same order, with the same BM25. A second
 * normalisation changes nothing.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { copyDatabase } from "../../src/storage/copy";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import type { AsyncStorage } from "../../src/storage/async";
import { normalizeCopiedText } from "../../src/memory";
import { dropSchema, freshSchema } from "../helpers/postgres";
import { SETUP_TIMEOUT } from "../storage/backends";
import { createHash } from "node:crypto";
import type { Embedder } from "../../src/memory/ports";
import { memoryOver } from "../memory/backends";

/** lexical ranking is what is compared: a small deterministic embedder (no model to load) */
const embedder: Embedder = {
  id: "test:hash8",
  dimensions: 8,
  async embed(texts) {
    return texts.map((t) => {
      const v = Float32Array.from(createHash("sha256").update(t).digest().subarray(0, 8), (b) => b - 127.5);
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    });
  },
};

const dir = mkdtempSync(join(tmpdir(), "svc-memory-copy-"));
const opened: AsyncStorage[] = [];
let pg: { url: string; schema: string } | undefined;
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  if (pg) await dropSchema(pg.url, pg.schema);
  rmSync(dir, { recursive: true, force: true });
}, SETUP_TIMEOUT);

const TEXTS = [
  "Timeouts on the upstream pool now raise ERR_UPSTREAM_POOL_EXHAUSTED instead of hanging",
  "Moved the SSRF checks into src/core/outbound.ts and covered redirects",
  "Renamed retry_budget in the limiter config",
  "The retry budget of the limiter is now per key",
  "Added the café menu to the kiosk; Blue-Green deploys documented",
  "Fixed the websocket reconnect loop leaking file descriptors",
];
const QUERIES = ["ERR_UPSTREAM_POOL_EXHAUSTED", "outbound.ts redirects", "retry_budget", "retry budget", "cafe green", "websocket file"];

test(
  "a copied memory database searches on PostgreSQL exactly as on SQLite",
  async () => {
    const db = new Db(join(dir, "svc.db"));
    const src = openStorage({ path: "", db });
    opened.push(src);
    const a = await memoryOver(src, { embedder });
    await a.memory.createProject("t", { projectId: "p", name: "p", roadmap: "" });
    for (const text of TEXTS) await a.memory.storeMilestone("t", "p", { branchPurpose: "ops", cumulativeProgress: text, thisContribution: text, agentId: "a" });
    await a.memory.promote("t", "p", { cacheKey: "k", reuseScore: 0.5, summary: "rotate_keys monthly", l2Collection: "l2" });

    pg = await freshSchema("memory-copy");
    const target = openStorage({ url: pg.url, schema: pg.schema, path: "" });
    opened.push(target);
    const b = await memoryOver(target, { embedder });
    await copyDatabase(db, target);
    expect(await normalizeCopiedText(target)).toBe(TEXTS.length + 1);
    expect(await normalizeCopiedText(target)).toBe(0);

    const ranked = async (m: typeof a, q: string) => (await m.memory.store("t").lexical("milestone", q.toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter(Boolean), ["p"], 10)).map((h) => [h.key, h.bm25.toFixed(6)]);
    for (const q of QUERIES) {
      const want = await ranked(a, q);
      expect(want.length).toBeGreaterThan(0);
      expect(await ranked(b, q)).toEqual(want);
    }
    expect((await b.memory.store("t").lexical("knowledge", ["rotate_keys"], ["p"], 5)).length).toBe(1);
    // new items on PostgreSQL get keys after the copied ones and are found with them
    const added = await b.memory.storeMilestone("t", "p", { branchPurpose: "ops", cumulativeProgress: "retry_budget doubled", thisContribution: "retry_budget doubled", agentId: "a" });
    expect(added.milestone.sequenceNumber).toBe(TEXTS.length + 1);
    expect((await b.memory.store("t").lexical("milestone", ["retry_budget"], ["p"], 5)).length).toBe(2);
  },
  SETUP_TIMEOUT,
);
