/**
 * How a batch of remembered hits is written (feedback-store.ts writeHits): every row lands whatever
 * the batch size, through a few statement texts (each prepared once per connection), with the
 * handle's parameters used as they are. Both backends' row semantics are covered in
 * test/storage-domains/cache-feedback.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStorage } from "../../src/storage/open";
import type { AsyncStorage, AsyncTenantDb } from "../../src/storage/async";
import { CACHE_MIGRATIONS } from "../../src/cache";
import { FeedbackStore, writeHits, type StoredHit } from "../../src/cache/feedback-store";

let dir: string;
let s: AsyncStorage;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "svc-feedback-store-"));
  s = openStorage({ path: join(dir, "svc.db") });
  await s.migrate([{ domain: "cache", migrations: CACHE_MIGRATIONS }]);
});
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

const hit = (tenant: string, i: number): StoredHit => ({
  requestId: `${tenant}-r${i}`,
  caller: i % 2 ? "key-1" : null,
  tier: i % 3 ? "exact" : "semantic",
  entryId: `e${i}`,
  query: i % 3 ? null : `question ${i}`,
  queryVec: i % 3 ? null : Float32Array.of(i, 0.5),
  createdAt: 1_000 + i,
});

/** the tenant handle, recording the text and parameters of every statement it runs */
function recording(t: AsyncTenantDb) {
  const runs: Array<{ sql: string; params: Record<string, unknown> | undefined }> = [];
  const handle = Object.create(t) as AsyncTenantDb;
  handle.run = (sql, params) => {
    runs.push({ sql, params: params as Record<string, unknown> | undefined });
    return t.run(sql, params);
  };
  return { handle, runs };
}

test("batches of every size from 1 to 300 rows are written whole through at most 16 INSERT texts (8 sizes × exact rows or rows with a question), each binding the tenant itself", async () => {
  const texts = new Set<string>();
  let written = 0;
  for (let size = 1; size <= 300; size++) {
    const tenant = `t${size}`;
    const { handle, runs } = recording(s.tenant(tenant));
    const rows = Array.from({ length: size }, (_, i) => hit(tenant, i));
    await s.tx(() => writeHits(handle, rows, 0, 100_000, false));
    const inserts = runs.filter((r) => r.sql.startsWith("INSERT"));
    for (const r of inserts) {
      texts.add(r.sql);
      // the handle uses the parameters as they are (a batch's parameters are not copied to add the tenant)
      expect(r.params?.tenant).toBe(tenant);
    }
    const n = (await s.tenant(tenant).get<{ n: number }>("SELECT COUNT(*) AS n FROM cache_feedback_requests WHERE tenant_id = $tenant"))!.n;
    expect(n).toBe(size);
    written += n;
  }
  expect(written).toBe((300 * 301) / 2);
  expect(texts.size).toBeLessThanOrEqual(16);
});

test("each row reads back as written (first, last and a middle row of a batch spanning several INSERTs)", async () => {
  const rows = Array.from({ length: 203 }, (_, i) => hit("t-read", i));
  await s.tx(() => writeHits(s.tenant("t-read"), rows, 0, 100_000, false));
  const st = new FeedbackStore(s.tenant("t-read"));
  for (const i of [0, 1, 127, 128, 150, 202]) {
    const h = rows[i]!;
    const got = await st.hit(h.requestId);
    expect(got).toMatchObject({ requestId: h.requestId, caller: h.caller, tier: h.tier, entryId: h.entryId, query: h.query, createdAt: h.createdAt, verdict: null });
    expect(got!.queryVec ? [...got!.queryVec] : null).toEqual(h.queryVec ? [...h.queryVec] : null);
  }
});

test("exact hits without a question bind 4 parameters a row (tier, question and vector are literals); an exact hit that carries a question keeps it", async () => {
  const tenant = "t-shapes";
  const { handle, runs } = recording(s.tenant(tenant));
  const bare = Array.from({ length: 64 }, (_, i) => ({ ...hit(tenant, i), tier: "exact" as const, query: null, queryVec: null }));
  await s.tx(() => writeHits(handle, bare, 0, 100_000, false));
  const inserts = runs.filter((r) => r.sql.startsWith("INSERT"));
  expect(inserts.length).toBe(1);
  expect(Object.keys(inserts[0]!.params!).length).toBe(1 + 4 * 64);
  const st = new FeedbackStore(s.tenant(tenant));
  expect(await st.hit(bare[63]!.requestId)).toMatchObject({ tier: "exact", entryId: "e63", query: null, queryVec: null, createdAt: 1_063 });

  const withQuestion: StoredHit = { ...hit(tenant, 100), tier: "exact", query: "what is it", queryVec: Float32Array.of(1, 2) };
  await s.tx(() => writeHits(s.tenant(tenant), [bare[0]!, withQuestion, { ...hit(tenant, 101), tier: "exact" }], 0, 100_000, false));
  const got = await st.hit(withQuestion.requestId);
  expect(got).toMatchObject({ tier: "exact", query: "what is it" });
  expect([...got!.queryVec!]).toEqual([1, 2]);
  expect(await st.hit(`${tenant}-r101`)).toMatchObject({ tier: "exact", entryId: "e101" });
});
