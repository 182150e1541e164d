/**
 * AsyncWriteBehind (src/storage/write-behind-async.ts) on both backends: rows written off the
 * request path in one transaction per batch, flush/close write everything, a bad batch is dropped
 * whole and reported, a batch that met an unavailable database is kept and written later.
 */
import { beforeAll, expect, test } from "bun:test";
import type { AsyncStorage, AsyncTenantDb } from "../../src/storage/async";
import { StorageUnavailableError } from "../../src/storage/errors";
import { AsyncWriteBehind } from "../../src/storage/write-behind-async";
import { eachBackend, SETUP_TIMEOUT } from "./backends";

type Row = { id: string; n: number };
const insert = async (db: AsyncTenantDb, rows: Row[]) => {
  for (const r of rows) await db.run("INSERT INTO usage_rows (tenant_id, id, n) VALUES ($tenant, $id, $n)", r);
};

async function until(cond: () => Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await Bun.sleep(5);
  }
}

eachBackend("write_behind", (b) => {
  let s: AsyncStorage;
  const ids = (tenant: string) => s.tenant(tenant).all<{ id: string }>("SELECT id FROM usage_rows WHERE tenant_id = $tenant ORDER BY id").then((r) => r.map((x) => x.id));
  beforeAll(async () => {
    s = await b.open();
    await s.migrate([{ domain: "wb", migrations: [{ id: "0001", up: "CREATE TABLE usage_rows (tenant_id TEXT NOT NULL, id TEXT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (tenant_id, id))" }] }]);
  }, SETUP_TIMEOUT);

  test("queued rows wait; flush(tenant) writes that tenant's and waits; max writes at once; the timer writes flushMs after the first row", async () => {
    const wb = new AsyncWriteBehind<Row>(s, { write: insert, flushMs: 60_000, max: 5 });
    wb.push("a", { id: "a1", n: 1 });
    wb.push("b", { id: "b1", n: 1 });
    expect(await ids("a")).toEqual([]);
    await wb.flush("a");
    expect(await ids("a")).toEqual(["a1"]);
    expect(await ids("b")).toEqual([]);
    expect(wb.pending).toBe(1);
    for (let i = 0; i < 4; i++) wb.push("c", { id: `c${i}`, n: i });
    expect(wb.pending).toBe(0); // the 5th queued row reached max: everything taken at once
    await wb.flush();
    expect(await ids("b")).toEqual(["b1"]);
    expect(await ids("c")).toHaveLength(4);
    await wb.close();

    const timed = new AsyncWriteBehind<Row>(s, { write: insert, flushMs: 20, max: 1000 });
    timed.push("d", { id: "d1", n: 1 });
    await until(async () => (await ids("d")).length === 1); // nobody flushed: the timer did
    expect(timed.pending).toBe(0);
    await timed.close();
  });

  test("close writes what is queued and stops queueing", async () => {
    const wb = new AsyncWriteBehind<Row>(s, { write: insert, flushMs: 60_000, max: 1000 });
    for (let i = 0; i < 20; i++) wb.push(`t${i % 3}`, { id: `close-${i}`, n: i });
    await wb.close();
    wb.push("t0", { id: "after-close", n: 0 });
    expect([...(await ids("t0")), ...(await ids("t1")), ...(await ids("t2"))]).toHaveLength(20);
    expect(wb.pending).toBe(0);
  });

  test("a batch with a bad row is dropped whole (one transaction) and reported with its size", async () => {
    const lost: Array<[unknown, number]> = [];
    const wb = new AsyncWriteBehind<Row>(s, { write: insert, flushMs: 60_000, max: 1000, onError: (e, n) => lost.push([e, n]) });
    wb.push("bad", { id: "x1", n: 1 });
    wb.push("bad", { id: "x1", n: 2 }); // duplicate key
    wb.push("bad2", { id: "y1", n: 1 });
    await wb.flush();
    expect(lost).toHaveLength(1);
    expect(lost[0]![1]).toBe(3);
    expect(await ids("bad")).toEqual([]);
    expect(await ids("bad2")).toEqual([]);
  });

  test("a batch that met an unavailable database is kept, in order, and written by a later flush; past maxQueued the oldest are dropped", async () => {
    let down = true;
    const lost: number[] = [];
    const wb = new AsyncWriteBehind<Row>(s, {
      write: async (db, rows) => {
        if (down) throw new StorageUnavailableError("database unavailable (test)");
        await insert(db, rows);
      },
      flushMs: 60_000,
      max: 1000,
      maxQueued: 4,
      onError: (_e, n) => lost.push(n),
    });
    wb.push("u", { id: "u1", n: 1 });
    wb.push("u", { id: "u2", n: 2 });
    await wb.flush();
    expect(wb.pending).toBe(2);
    wb.push("u", { id: "u3", n: 3 });
    wb.push("u", { id: "u4", n: 4 });
    wb.push("u", { id: "u5", n: 5 });
    await wb.flush(); // 5 rows, room for 4: u1 goes
    expect(lost).toEqual([1]);
    down = false;
    await wb.flush();
    expect(await ids("u")).toEqual(["u2", "u3", "u4", "u5"]);
    await wb.close();
  });
});
