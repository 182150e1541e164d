/**
 * The async storage interface's contract, the same tests on bun:sqlite and PostgreSQL: tenant
 * scoping, get/all/run, `$name` parameters, row shapes, typed constraint errors, transactions
 * (commit, rollback, savepoints, concurrent read-then-write transactions, isolation from other flows).
 */
import { beforeAll, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { StorageConstraintError, UnscopedQueryError } from "../../src/storage/errors";
import type { MigrationSet } from "../../src/storage/migrations";
import { eachBackend, SETUP_TIMEOUT } from "./backends";

const SCHEMA: MigrationSet = {
  domain: "contract",
  migrations: [
    {
      id: "0001_items",
      up: `CREATE TABLE items (tenant_id TEXT NOT NULL, id TEXT NOT NULL, n BIGINT NOT NULL DEFAULT 0, note TEXT, flag INTEGER NOT NULL DEFAULT 0, price DOUBLE PRECISION, PRIMARY KEY (tenant_id, id));
           CREATE TABLE counters (tenant_id TEXT NOT NULL, name TEXT NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (tenant_id, name))`,
    },
  ],
};

eachBackend("contract", (b) => {
  let s: AsyncStorage;
  beforeAll(async () => {
    s = await b.open();
    await s.migrate([SCHEMA]);
  }, SETUP_TIMEOUT);

  test("a tenant handle refuses SQL without $tenant, and binds it itself", async () => {
    const a = s.tenant("ta");
    await expect(a.get("SELECT * FROM items")).rejects.toBeInstanceOf(UnscopedQueryError);
    await expect(a.run("DELETE FROM items WHERE id = $id", { id: "x" })).rejects.toBeInstanceOf(UnscopedQueryError);
    // $tenant only in a literal or a comment, or a longer name, is not scoping
    await expect(a.all("SELECT * FROM items WHERE note = '$tenant'")).rejects.toBeInstanceOf(UnscopedQueryError);
    await expect(a.all("SELECT * FROM items -- WHERE tenant_id = $tenant")).rejects.toBeInstanceOf(UnscopedQueryError);
    await expect(a.all("SELECT * FROM items WHERE tenant_id = $tenant_id", { tenant_id: "tb" })).rejects.toBeInstanceOf(UnscopedQueryError);
    await a.run("INSERT INTO items (tenant_id, id, n) VALUES ($tenant, $id, $n)", { id: "one", n: 1 });
    await s.tenant("tb").run("INSERT INTO items (tenant_id, id, n) VALUES ($tenant, $id, $n)", { id: "one", n: 2 });
    expect(await a.all<{ id: string; n: number }>("SELECT id, n FROM items WHERE tenant_id = $tenant")).toEqual([{ id: "one", n: 1 }]);
    expect((await s.tenant("tb").get<{ n: number }>("SELECT n FROM items WHERE tenant_id = $tenant AND id = $id", { id: "one" }))?.n).toBe(2);
    // a caller's own `tenant` key cannot widen the scope
    expect(await a.all("SELECT id FROM items WHERE tenant_id = $tenant", { tenant: "tb" })).toEqual([{ id: "one" }]);
    expect(await a.all<{ n: number }>("SELECT n FROM items WHERE tenant_id = $tenant", { tenant: "tb" })).toEqual([{ n: 1 }]);
  });

  test("global(reason) crosses tenants; get of nothing is undefined; run counts changes", async () => {
    const g = s.global("test: count every tenant's rows");
    const r = await g.run("INSERT INTO items (tenant_id, id, n) VALUES ('tc', 'g1', 5), ('tc', 'g2', 6)");
    expect(r.changes).toBe(2);
    expect(await g.get("SELECT id FROM items WHERE id = $id", { id: "nope" })).toBeUndefined();
    expect((await g.run("UPDATE items SET n = n + 1 WHERE tenant_id = $t", { t: "tc" })).changes).toBe(2);
    expect((await g.run("DELETE FROM items WHERE tenant_id = $t AND id = $id", { t: "tc", id: "nope" })).changes).toBe(0);
    expect(await g.all("SELECT id, n FROM items WHERE tenant_id = 'tc' ORDER BY id")).toEqual([
      { id: "g1", n: 6 },
      { id: "g2", n: 7 },
    ]);
  });

  test("named parameters: repeated names, casts, $ inside literals, missing names reject", async () => {
    const t = s.tenant("tp");
    await t.run("INSERT INTO items (tenant_id, id, n, note) VALUES ($tenant, $id, $n, $id || '-$note-' || $id)", { id: "p1", n: 3 });
    const row = await t.get<{ note: string; twice: number }>("SELECT note, CAST($n AS BIGINT) + n AS twice FROM items WHERE tenant_id = $tenant AND id = $id -- $ignored", { id: "p1", n: 3 });
    expect(row).toEqual({ note: "p1-$note-p1", twice: 6 });
    await expect(t.get("SELECT * FROM items WHERE tenant_id = $tenant AND id = $id", {})).rejects.toThrow(/Missing parameter "id"/);
  });

  test("rows read the same on both: counts and sums are numbers, flags 1/0, NULL is null, doubles keep precision", async () => {
    const t = s.tenant("tr");
    await t.run("INSERT INTO items (tenant_id, id, n, flag, price) VALUES ($tenant, 'a', $big, $f, $p), ($tenant, 'b', 2, $g, NULL)", { big: 2 ** 40, f: true, g: false, p: 0.1 + 0.2 });
    const agg = await t.get("SELECT COUNT(*) AS c, SUM(n) AS total, MAX(flag) AS f, MIN(flag) AS g FROM items WHERE tenant_id = $tenant");
    expect(agg).toEqual({ c: 2, total: 2 ** 40 + 2, f: 1, g: 0 });
    expect(await t.all("SELECT id, price, note FROM items WHERE tenant_id = $tenant ORDER BY id")).toEqual([
      { id: "a", price: 0.1 + 0.2, note: null },
      { id: "b", price: null, note: null },
    ]);
  });

  test("a constraint violation is a typed StorageConstraintError", async () => {
    const t = s.tenant("tu");
    await t.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'dup')");
    const e = await t.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'dup')").catch((x) => x);
    expect(e).toBeInstanceOf(StorageConstraintError);
    expect((e as StorageConstraintError).kind).toBe("unique");
    const nn = await t.run("INSERT INTO items (tenant_id, id, n) VALUES ($tenant, 'nn', NULL)").catch((x) => x);
    expect((nn as StorageConstraintError).kind).toBe("not_null");
  });

  test("a transaction commits every handle's writes; a throw rolls all of them back", async () => {
    const a = s.tenant("tx1");
    const b2 = s.tenant("tx2");
    const v = await s.tx(async () => {
      await a.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'c1')");
      await b2.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'c2')");
      return 42;
    });
    expect(v).toBe(42);
    const boom = new Error("boom");
    await expect(
      a.tx(async () => {
        await a.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'r1')");
        await b2.run("UPDATE items SET n = 99 WHERE tenant_id = $tenant AND id = 'c2'");
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await a.all("SELECT id FROM items WHERE tenant_id = $tenant ORDER BY id")).toEqual([{ id: "c1" }]);
    expect(await b2.get("SELECT n FROM items WHERE tenant_id = $tenant AND id = 'c2'")).toEqual({ n: 0 });
  });

  test("a constraint error inside a transaction rolls it back and reaches the caller typed", async () => {
    const a = s.tenant("tx3");
    await a.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'k')");
    const e = await s
      .tx(async () => {
        await a.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'k2')");
        await a.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'k')");
      })
      .catch((x) => x);
    expect(e).toBeInstanceOf(StorageConstraintError);
    expect(await a.all("SELECT id FROM items WHERE tenant_id = $tenant")).toEqual([{ id: "k" }]);
  });

  test("a transaction inside a transaction is a savepoint: its failure alone rolls back", async () => {
    const a = s.tenant("tx4");
    await s.tx(async () => {
      await a.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'outer')");
      await a
        .tx(async () => {
          await a.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'inner')");
          throw new Error("inner fails");
        })
        .catch(() => {});
      await a.tx(async () => {
        await a.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'inner2')");
      });
    });
    expect(await a.all("SELECT id FROM items WHERE tenant_id = $tenant ORDER BY id")).toEqual([{ id: "inner2" }, { id: "outer" }]);
  });

  test("concurrent read-then-write transactions lose no update", async () => {
    const t = s.tenant("tc");
    await t.run("INSERT INTO counters (tenant_id, name, v) VALUES ($tenant, 'hits', 0)");
    const N = 8; // <= the PostgreSQL backend's default txAttempts (10): each retry means another committed
    await Promise.all(
      Array.from({ length: N }, () =>
        t.tx(async () => {
          const cur = await t.get<{ v: number }>("SELECT v FROM counters WHERE tenant_id = $tenant AND name = 'hits'");
          await Bun.sleep(1); // let the other transactions interleave here
          await t.run("UPDATE counters SET v = $v WHERE tenant_id = $tenant AND name = 'hits'", { v: cur!.v + 1 });
        }),
      ),
    );
    expect(await t.get("SELECT v FROM counters WHERE tenant_id = $tenant AND name = 'hits'")).toEqual({ v: N });
  });

  test("read-then-write transactions from two storages (two replicas' pools) lose no update", async () => {
    const other = await b.open();
    const mine = s.tenant("tc2");
    const theirs = other.tenant("tc2");
    await mine.run("INSERT INTO counters (tenant_id, name, v) VALUES ($tenant, 'hits', 0)");
    const bump = (t: typeof mine) =>
      t.tx(async () => {
        const cur = await t.get<{ v: number }>("SELECT v FROM counters WHERE tenant_id = $tenant AND name = 'hits'");
        await Bun.sleep(1);
        await t.run("UPDATE counters SET v = $v WHERE tenant_id = $tenant AND name = 'hits'", { v: cur!.v + 1 });
      });
    await Promise.all([bump(mine), bump(theirs), bump(mine), bump(theirs), bump(mine), bump(theirs)]);
    expect(await theirs.get("SELECT v FROM counters WHERE tenant_id = $tenant AND name = 'hits'")).toEqual({ v: 6 });
  });

  test("another flow does not see, nor write into, an open transaction", async () => {
    const t = s.tenant("tiso");
    let inside!: () => void;
    const reached = new Promise<void>((r) => (inside = r));
    let finish!: () => void;
    const hold = new Promise<void>((r) => (finish = r));
    const txDone = t.tx(async () => {
      await t.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'in-tx')");
      inside();
      await hold;
      throw new Error("roll back");
    });
    await reached;
    // outside the transaction: its uncommitted row is not visible, and this write is not part of it
    const seen = t.all<{ id: string }>("SELECT id FROM items WHERE tenant_id = $tenant");
    const write = t.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'outside')");
    setTimeout(finish, 20);
    await expect(txDone).rejects.toThrow("roll back");
    // (the outside read and write are independent: on PostgreSQL the read may already see the write)
    expect((await seen).map((r) => r.id)).not.toContain("in-tx");
    await write;
    expect(await t.all("SELECT id FROM items WHERE tenant_id = $tenant")).toEqual([{ id: "outside" }]);
  });

  test("work a transaction schedules for later runs outside it once it has ended", async () => {
    const t = s.tenant("later");
    let later!: Promise<unknown>;
    await t.tx(async () => {
      await t.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'in')");
      later = new Promise((resolve, reject) =>
        setTimeout(() => {
          t.tx(async () => {
            await t.run("INSERT INTO items (tenant_id, id) VALUES ($tenant, 'later')");
          }).then(resolve, reject);
        }, 10),
      );
    });
    await later;
    expect(await t.all("SELECT id FROM items WHERE tenant_id = $tenant ORDER BY id")).toEqual([{ id: "in" }, { id: "later" }]);
  });

  test("a second storage on the same database (another replica) reads what this one committed", async () => {
    const other = await b.open();
    await s.tenant("rep").run("INSERT INTO items (tenant_id, id, n) VALUES ($tenant, 'shared', 7)");
    expect(await other.tenant("rep").get("SELECT n FROM items WHERE tenant_id = $tenant AND id = 'shared'")).toEqual({ n: 7 });
    expect(await other.pendingMigrations()).toEqual([]);
  });
});
