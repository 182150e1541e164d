/**
 * copyDatabase (src/storage/copy.ts): a SQLite database with data in every kind of table — generated
 * keys, composite keys, BLOB vectors, foreign keys, an FTS5 index — copied into a PostgreSQL database
 * migrated by the same migrations: equal rows, equal counts, safe to run twice, generated keys
 * continue after the copied ones, search works on the copied index.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AsyncStorage } from "../../src/storage/async";
import { copyDatabase, CopyMismatchError } from "../../src/storage/copy";
import { vectorBytes, vectorOf, type Dialect } from "../../src/storage/dialect";
import { portable, type MigrationSet } from "../../src/storage/migrations";
import { openStorage } from "../../src/storage/open";
import { SqliteBackend } from "../../src/storage/sqlite-async";
import { Db } from "../../src/storage/db";
import { dropDatabase, freshDatabase } from "../helpers/postgres";
import { SETUP_TIMEOUT } from "./backends";

const schema = (d: Dialect) => `
  CREATE TABLE spaces (tenant_id TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (tenant_id, id));
  CREATE TABLE notes (key ${d.autoId}, tenant_id TEXT NOT NULL, folder_id TEXT NOT NULL, body TEXT NOT NULL, vec ${d.blob}, at_ms BIGINT NOT NULL,
                      FOREIGN KEY (tenant_id, folder_id) REFERENCES spaces (tenant_id, id));
  ${d.ftsTable({ table: "notes_fts", ranked: ["body"], unranked: ["scope"] })}`;
const SETS: MigrationSet[] = [{ domain: "copy", migrations: [{ id: "0001", up: portable(schema) }] }];

const dir = mkdtempSync(join(tmpdir(), "svc-copy-"));
const opened: AsyncStorage[] = [];
let url: string | undefined;
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  if (url) await dropDatabase(url);
  rmSync(dir, { recursive: true, force: true });
}, SETUP_TIMEOUT);

test(
  "every table's rows reach PostgreSQL; a second run adds nothing; keys continue; the search index answers",
  async () => {
    // the source: a SQLite file written through the same migrations
    const db = new Db(join(dir, "src.db"));
    const src = openStorage({ path: "", db });
    opened.push(src);
    await src.migrate(SETS);
    const sg = src.global("test: fill every table");
    for (const t of ["t1", "t2"]) {
      // the parent table ("spaces") sorts after its child ("notes"): copying in name order would break the foreign key
      await sg.run("INSERT INTO spaces (tenant_id, id, name) VALUES ($t, 'f1', 'Inbox'), ($t, 'f2', 'Ünïcödé ''quoted''')", { t });
    }
    const vectors: Float32Array[] = [];
    for (let i = 0; i < 1234; i++) {
      const v = new Float32Array([i, -i / 3, Math.PI * i]);
      vectors.push(v);
      const body = i % 100 === 0 ? `deploy report ${i}` : `note number ${i}`;
      const r = await sg.get<{ key: number }>("INSERT INTO notes (tenant_id, folder_id, body, vec, at_ms) VALUES ($t, $f, $body, $vec, $at) RETURNING key", {
        t: i % 2 ? "t1" : "t2",
        f: i % 3 ? "f1" : "f2",
        body,
        vec: vectorBytes(v),
        at: 1_700_000_000_000 + i,
      });
      await sg.run("INSERT INTO notes_fts (rowid, body, scope) VALUES ($k, $body, 'n')", { k: r!.key, body });
    }
    await sg.run("DELETE FROM notes WHERE key IN (5, 6)"); // gaps in the keys
    await sg.run("DELETE FROM notes_fts WHERE rowid IN (5, 6)");

    url = await freshDatabase("copy");
    const dst = openStorage({ url, path: "" });
    opened.push(dst);
    await dst.migrate(SETS);

    const seen: string[] = [];
    const counts = await copyDatabase(db, dst, (c) => seen.push(c.table));
    expect(counts).toEqual([
      { table: "notes_fts", source: 1232, target: 1232 },
      { table: "spaces", source: 4, target: 4 },
      { table: "notes", source: 1232, target: 1232 },
    ]);
    expect(seen).toEqual(["notes_fts", "spaces", "notes"]);

    const dg = dst.global("test: read the copy");
    const a = await sg.all<{ key: number; tenant_id: string; folder_id: string; body: string; vec: Uint8Array; at_ms: number }>("SELECT * FROM notes ORDER BY key");
    const b = await dg.all<typeof a[number]>("SELECT * FROM notes ORDER BY key");
    expect(b.map((r) => ({ ...r, vec: Array.from(vectorOf(r.vec)) }))).toEqual(a.map((r) => ({ ...r, vec: Array.from(vectorOf(r.vec)) })));
    expect(await dg.all("SELECT * FROM spaces ORDER BY tenant_id, id")).toEqual(await sg.all("SELECT * FROM spaces ORDER BY tenant_id, id"));

    // again: nothing doubles
    expect(await copyDatabase(db, dst)).toEqual(counts);
    // generated keys continue after the copied maximum
    const next = await dg.get<{ key: number }>("INSERT INTO notes (tenant_id, folder_id, body, at_ms) VALUES ('t1', 'f1', 'new', 0) RETURNING key");
    expect(next!.key).toBe(1235);
    // the copied index answers searches
    const d = dst.dialect;
    const hits = await dg.all<{ body: string }>(
      `SELECT i.body FROM notes_fts f JOIN notes i ON i.key = f.rowid WHERE ${d.ftsMatch("f", "notes_fts", "$q")} ORDER BY i.key`,
      { q: d.ftsQuery(["deploy"], "any") },
    );
    expect(hits).toHaveLength(13);
    expect(hits[0]!.body).toBe("deploy report 0");
    db.close();
  },
  SETUP_TIMEOUT,
);

test(
  "a source table or column the target lacks stops the copy before rows are lost",
  async () => {
    const db = new Db(join(dir, "extra.db"));
    const src = new SqliteBackend(db);
    await src.migrate(SETS);
    db.run("ALTER TABLE spaces ADD COLUMN color TEXT");
    const target = await freshDatabase("copy_extra");
    const dst = openStorage({ url: target, path: "" });
    opened.push(dst);
    await dst.migrate(SETS);
    await expect(copyDatabase(db, dst)).rejects.toThrow(/spaces: the target has no column color/);
    db.run("CREATE TABLE only_here (id TEXT PRIMARY KEY)");
    db.run("ALTER TABLE spaces DROP COLUMN color");
    await expect(copyDatabase(db, dst)).rejects.toThrow(/table only_here is not in the target database/);
    db.close();
    await dst.close();
    await dropDatabase(target);
  },
  SETUP_TIMEOUT,
);

test("CopyMismatchError names each table whose counts differ", () => {
  const e = new CopyMismatchError([
    { table: "a", source: 1, target: 1 },
    { table: "b", source: 3, target: 2 },
  ]);
  expect(e.message).toBe("row counts differ after the copy: b 3 → 2");
});
