/**
 * AsyncStorage.writeBatch (src/storage/async.ts): the write-behinds' batches. On both backends: one
 * transaction, every statement or none, reads refused inside it, tenant scoping as everywhere. On a
 * SQLite file: committed by the writer thread on its own connection (src/storage/sqlite-writer.ts),
 * not on the request thread's — shown by `PRAGMA data_version`, which a connection sees change only
 * when another connection commits.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { asyncStorageOver, parameterOrder, type AsyncStorage } from "../../src/storage/async";
import { Db } from "../../src/storage/db";
import { StorageConstraintError, StorageUnavailableError, UnscopedQueryError } from "../../src/storage/errors";
import { SqliteBackend } from "../../src/storage/sqlite-async";
import { eachBackend, SETUP_TIMEOUT } from "./backends";

const TABLE = [{ domain: "wbatch", migrations: [{ id: "0001", up: "CREATE TABLE batch_rows (tenant_id TEXT NOT NULL, id TEXT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (tenant_id, id))" }] }];
/** SQLite's own: a byte column too */
const SQLITE_TABLE = [{ domain: "wbatch", migrations: [{ id: "0001", up: "CREATE TABLE batch_rows (tenant_id TEXT NOT NULL, id TEXT NOT NULL, n BIGINT NOT NULL, b BLOB, PRIMARY KEY (tenant_id, id))" }] }];
const INSERT = "INSERT INTO batch_rows (tenant_id, id, n) VALUES ($tenant, $id, $n)";

eachBackend("write_batch", (b) => {
  let s: AsyncStorage;
  const rows = (tenant: string) => s.tenant(tenant).all<{ id: string; n: number }>("SELECT id, n FROM batch_rows WHERE tenant_id = $tenant ORDER BY id").then((r) => r.map((x) => `${x.id}=${Number(x.n)}`));
  beforeAll(async () => {
    s = await b.open();
    await s.migrate(TABLE);
  }, SETUP_TIMEOUT);

  test("a batch commits every statement, of several tenants, once it resolves; a params object reused afterwards does not change what was written", async () => {
    await s.writeBatch(async (w) => {
      const p = { id: "a1", n: 1 };
      await w.tenant("wa").run(INSERT, p);
      p.id = "a2";
      p.n = 2;
      await w.tenant("wa").run(INSERT, p);
      await w.tenant("wb").run(INSERT, { id: "b1", n: 3 });
    });
    expect(await rows("wa")).toEqual(["a1=1", "a2=2"]);
    expect(await rows("wb")).toEqual(["b1=3"]);
  });

  test("a failing statement rolls the whole batch back (StorageConstraintError)", async () => {
    const batch = s.writeBatch(async (w) => {
      await w.tenant("wc").run(INSERT, { id: "c1", n: 1 });
      await w.tenant("wc").run(INSERT, { id: "c1", n: 2 });
    });
    await expect(batch).rejects.toBeInstanceOf(StorageConstraintError);
    expect(await rows("wc")).toEqual([]);
  });

  test("reads and transactions are refused inside a batch, unscoped statements as everywhere; nothing of it is written", async () => {
    for (const read of [(w: any) => w.tenant("wd").get("SELECT n FROM batch_rows WHERE tenant_id = $tenant"), (w: any) => w.tenant("wd").all("SELECT n FROM batch_rows WHERE tenant_id = $tenant"), (w: any) => w.tenant("wd").tx(async () => {}), (w: any) => w.global("test").get("SELECT 1")]) {
      const batch = s.writeBatch(async (w) => {
        await w.tenant("wd").run(INSERT, { id: "d1", n: 1 });
        await read(w);
      });
      await expect(batch).rejects.toThrow("a write batch only writes");
    }
    await expect(s.writeBatch((w) => w.tenant("wd").run("INSERT INTO batch_rows (tenant_id, id, n) VALUES ('wd', 'x', 1)").then(() => {}))).rejects.toBeInstanceOf(UnscopedQueryError);
    expect(await rows("wd")).toEqual([]);
  });

  test("runValues binds by position (the order the $names first appear; a repeated name is one value), the $tenant slot is the handle's", async () => {
    const sql = "INSERT INTO batch_rows (id, tenant_id, n) VALUES ($id, $tenant, $n + $n)";
    expect(parameterOrder(sql)).toEqual(["id", "tenant", "n"]);
    await s.tenant("wf").runValues(sql, ["f1", "someone-else", 2]);
    await s.writeBatch(async (w) => {
      await w.tenant("wf").runValues(sql, ["f2", null, 3]);
    });
    expect(await rows("wf")).toEqual(["f1=4", "f2=6"]);
    expect(await rows("someone-else")).toEqual([]);
    await expect(s.tenant("wf").runValues(sql, ["f3", null])).rejects.toThrow("3 parameters in the statement, 2 values given");
    await expect(s.tenant("wf").runValues("INSERT INTO batch_rows (tenant_id, id, n) VALUES ('wf', $id, $n)", ["f4", 1])).rejects.toBeInstanceOf(UnscopedQueryError);
    expect(await rows("wf")).toEqual(["f1=4", "f2=6"]);
  });

  test("inside an open transaction the batch joins it: rolled back with it", async () => {
    await expect(
      s.tx(async () => {
        await s.writeBatch((w) => w.tenant("we").run(INSERT, { id: "e1", n: 1 }).then(() => {}));
        expect(await rows("we")).toEqual(["e1=1"]);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await rows("we")).toEqual([]);
  });
});

describe("sqlite file: the writer thread", () => {
  let dir: string;
  let db: Db;
  let backend: SqliteBackend;
  let s: AsyncStorage;
  const dataVersion = () => db.get<{ data_version: number }>("PRAGMA data_version")!.data_version;
  const count = (tenant: string) => db.get<{ n: number }>("SELECT COUNT(*) AS n FROM batch_rows WHERE tenant_id = $t", { t: tenant })!.n;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "svc-writer-"));
    db = new Db(join(dir, "svc.db"), SQLITE_TABLE);
    backend = new SqliteBackend(db, false, { busyTimeoutMs: 50 });
    s = asyncStorageOver(backend);
  });
  afterAll(async () => {
    await s.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a batch is committed by another connection (the request thread's sees data_version change), a statement on this one is not", async () => {
    const v0 = dataVersion();
    await s.tenant("t1").run(INSERT, { id: "here", n: 1 });
    expect(dataVersion()).toBe(v0); // its own commits do not change it
    await s.writeBatch(async (w) => {
      await w.tenant("t1").run(INSERT, { id: "there", n: 2 });
      await w.tenant("t1").runValues(INSERT, [null, "by-position", 3]);
    });
    expect(dataVersion()).toBeGreaterThan(v0);
    expect(count("t1")).toBe(3);
  });

  test("parameters JSON cannot carry (bytes, bigint) run the batch on this thread, values intact — named or by position", async () => {
    const v0 = dataVersion();
    await s.writeBatch(async (w) => {
      await w.tenant("t2").run(INSERT, { id: "plain", n: 1 });
      await w.tenant("t2").runValues("INSERT INTO batch_rows (tenant_id, id, n, b) VALUES ($tenant, $id, $n, $b)", [null, "positional", -0.5, new Uint8Array([9])]);
      await w.tenant("t2").run("INSERT INTO batch_rows (tenant_id, id, n, b) VALUES ($tenant, $id, $n, $b)", { id: "bytes", n: 9007199254740993n, b: new Uint8Array([0, 255, 7]) });
    });
    expect(dataVersion()).toBe(v0);
    const got = db.sqlite.query("SELECT id, n, b FROM batch_rows WHERE tenant_id = 't2' ORDER BY id").safeIntegers(true).all() as { id: string; n: bigint; b: Uint8Array | null }[];
    expect(got.map((r) => [r.id, r.n])).toEqual([["bytes", 9007199254740993n], ["plain", 1n], ["positional", -0.5 as unknown as bigint]]);
    expect([...got[0]!.b!]).toEqual([0, 255, 7]);
    expect([...got[2]!.b!]).toEqual([9]);
  });

  test("a database whose write lock stays taken fails the batch as unavailable (the write-behind queues it again); it commits once the lock is free", async () => {
    const other = new Database(db.path);
    other.run("BEGIN IMMEDIATE");
    try {
      const batch = s.writeBatch((w) => w.tenant("t3").run(INSERT, { id: "x", n: 1 }).then(() => {}));
      await expect(batch).rejects.toBeInstanceOf(StorageUnavailableError);
    } finally {
      other.run("ROLLBACK");
      other.close();
    }
    expect(count("t3")).toBe(0);
    await s.writeBatch((w) => w.tenant("t3").run(INSERT, { id: "x", n: 1 }).then(() => {}));
    expect(count("t3")).toBe(1);
  });

  test("a lost writer thread fails its batches as unavailable; the next batch starts a new thread", async () => {
    const writer = (backend as any).writer;
    await s.writeBatch((w) => w.tenant("t4").run(INSERT, { id: "a", n: 1 }).then(() => {}));
    const first = writer.worker as Worker;
    // the thread ends while a batch is on its way (as a crash would end it)
    const lost = s.writeBatch((w) => w.tenant("t4").run(INSERT, { id: "b", n: 2 }).then(() => {}));
    first.terminate();
    await expect(lost).rejects.toBeInstanceOf(StorageUnavailableError);
    await s.writeBatch((w) => w.tenant("t4").run(INSERT, { id: "c", n: 3 }).then(() => {}));
    expect(writer.worker).not.toBe(first);
    expect(db.all<{ id: string }>("SELECT id FROM batch_rows WHERE tenant_id = 't4' ORDER BY id").map((r) => r.id)).toContain("c");
  });

  test("a writer thread that cannot start: its batch fails as unavailable (queued again), later batches run on this connection", async () => {
    const own = new SqliteBackend(db, false, { entry: new URL("../fixtures/broken-writer.ts", import.meta.url).href });
    const storage = asyncStorageOver(own);
    try {
      await expect(storage.writeBatch((w) => w.tenant("t6").run(INSERT, { id: "first", n: 1 }).then(() => {}))).rejects.toBeInstanceOf(StorageUnavailableError);
      const v0 = dataVersion();
      await storage.writeBatch((w) => w.tenant("t6").run(INSERT, { id: "second", n: 2 }).then(() => {}));
      expect(dataVersion()).toBe(v0); // committed on this connection
      expect(count("t6")).toBe(1);
    } finally {
      await storage.close();
    }
  });

  test("close waits for the batches in flight, then stops the thread; later batches are refused as unavailable", async () => {
    const own = new SqliteBackend(db, false);
    const storage = asyncStorageOver(own);
    const pending = Array.from({ length: 20 }, (_, i) => storage.writeBatch((w) => w.tenant("t5").run(INSERT, { id: `r${i}`, n: i }).then(() => {})));
    await storage.close();
    await Promise.all(pending);
    expect(count("t5")).toBe(20);
    expect((own as any).writer.worker).toBeNull();
    await expect(storage.writeBatch((w) => w.tenant("t5").run(INSERT, { id: "late", n: 0 }).then(() => {}))).rejects.toBeInstanceOf(StorageUnavailableError);
  });
});
