/**
 * Per-request rows (usage records, call logs) of a replica on PostgreSQL under load: the write-behind
 * writes one batch at a time, its tenants in one order. Several batches of one replica written at once
 * each locked many tenants' rollup rows in arrival order: under 64 connections over 200 tenants
 * they deadlocked and failed serialization hundreds of times, and the replica took minutes to write
 * a few seconds of records (scripts/bench/replicas.ts). One order everywhere means replicas writing
 * the same tenants wait for each other instead of deadlocking.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { AsyncStorage, AsyncTenantDb } from "../../src/storage/async";
import { openStorage } from "../../src/storage/open";
import { AsyncWriteBehind } from "../../src/storage/write-behind-async";
import { dropSchema, freshSchema } from "../helpers/postgres";

let s: AsyncStorage;
let pg: { url: string; schema: string };

beforeAll(async () => {
  pg = await freshSchema("usage_writes");
  s = openStorage({ path: ":memory:", url: pg.url, schema: pg.schema });
  await s.migrate([{ domain: "uw", migrations: [{ id: "0001", up: "CREATE TABLE uw_rows (tenant_id TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (tenant_id, id))" }] }]);
}, 90_000);
afterAll(async () => {
  await s?.close();
  if (pg) await dropSchema(pg.url, pg.schema);
});

test("batches are written one at a time, tenants in one order, every row written", async () => {
  let writing = 0;
  let most = 0;
  const order: string[][] = [];
  let batch: string[] = [];
  const wb = new AsyncWriteBehind<{ id: string }>(s, {
    write: async (db: AsyncTenantDb, rows) => {
      batch.push(db.tenantId);
      for (const r of rows) await db.run("INSERT INTO uw_rows (tenant_id, id) VALUES ($tenant, $id)", r);
      await Bun.sleep(2);
    },
    flushMs: 60_000,
    max: 10,
  });
  // one write batch (one transaction) per batch: count how many are open at once, and each one's tenants in order
  const writeBatch = s.writeBatch.bind(s);
  (s as { writeBatch: typeof s.writeBatch }).writeBatch = async (fn) => {
    most = Math.max(most, ++writing);
    try {
      return await writeBatch(fn);
    } finally {
      order.push(batch);
      batch = [];
      writing--;
    }
  };
  const tenants = ["t-c", "t-a", "t-d", "t-b", "t-e"];
  let n = 0;
  // rows arriving faster than one batch is written: `max` triggers flushes while one is in flight
  for (let round = 0; round < 20; round++) for (const t of tenants) wb.push(t, { id: `r${n++}` });
  await wb.close();
  (s as { writeBatch: typeof s.writeBatch }).writeBatch = writeBatch;
  expect(most).toBe(1);
  for (const b of order) expect(b).toEqual([...b].sort());
  const count = await s.global("test: count").get<{ n: number }>("SELECT COUNT(*) AS n FROM uw_rows");
  expect(count!.n).toBe(n);
}, 60_000);
