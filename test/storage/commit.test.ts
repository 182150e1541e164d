/** Lock contention on SQLite (src/storage/sqlite-async.ts), and a failing COMMIT on both backends. */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Db } from "../../src/storage/db";
import { StorageConstraintError, StorageUnavailableError } from "../../src/storage/errors";
import { openStorage } from "../../src/storage/open";
import { eachBackend, SETUP_TIMEOUT } from "./backends";

const dir = mkdtempSync(join(tmpdir(), "svc-sqlite-async-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("another process holding the write lock past busy_timeout is StorageUnavailableError, and the backend stays usable", async () => {
  const path = join(dir, "busy.db");
  const holder = new Db(path);
  const db = new Db(path);
  db.sqlite.run("PRAGMA busy_timeout = 50"); // the test's patience, not production's 5 s
  holder.sqlite.run("CREATE TABLE t (id TEXT PRIMARY KEY)");
  const s = openStorage({ path: "", db });
  holder.sqlite.run("BEGIN IMMEDIATE");
  const e = await s.tx(async () => {}).catch((x) => x);
  expect(e).toBeInstanceOf(StorageUnavailableError);
  holder.sqlite.run("ROLLBACK");
  await s.tx(async () => {
    await s.global("test").run("INSERT INTO t (id) VALUES ('after')");
  });
  expect(await s.global("test").all("SELECT id FROM t")).toEqual([{ id: "after" }]);
  holder.close();
  await s.close();
  // the Db was opened by the caller (as app.ts will during the conversion): closing the storage leaves it open
  expect(db.get("SELECT 1 AS one")).toEqual({ one: 1 });
  db.close();
});

eachBackend("commit_fk", (b) => {
  test("a COMMIT that fails (deferred foreign key) rolls back, reports the constraint, and leaves no transaction open", async () => {
    const s = await b.open();
    await s.migrate([
      {
        domain: "fk",
        migrations: [
          {
            id: "0001",
            up: `CREATE TABLE parent (id TEXT PRIMARY KEY);
                 CREATE TABLE child (id TEXT PRIMARY KEY, parent_id TEXT NOT NULL REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`,
          },
        ],
      },
    ]);
    const g = s.global("test");
    const e = await s
      .tx(async () => {
        await g.run("INSERT INTO child (id, parent_id) VALUES ('c', 'missing')");
      })
      .catch((x) => x);
    expect(e).toBeInstanceOf(StorageConstraintError);
    expect((e as StorageConstraintError).kind).toBe("foreign_key");
    expect(await g.all("SELECT id FROM child")).toEqual([]);
    await s.tx(async () => {
      await g.run("INSERT INTO parent (id) VALUES ('p')");
      await g.run("INSERT INTO child (id, parent_id) VALUES ('c', 'p')");
    });
    expect(await g.all("SELECT id FROM child")).toEqual([{ id: "c" }]);
  }, SETUP_TIMEOUT);
});
