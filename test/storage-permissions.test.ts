/**
 * Issue 22 item 18: the database and its -wal/-shm files are readable by their owner only (0600),
 * like the secrets they hold; files an older build left 0644 are narrowed when svc opens them.
 */
import { describe, expect, test, afterAll } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync, chmodSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { Db } from "../src/storage/db";
import { startGateway } from "./helpers/gateway";

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "svc-perm-"));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const modeOf = (file: string) => (statSync(file).mode & 0o777).toString(8);

describe("data files are 0600", () => {
  test("a new database, its -wal and -shm (with a permissive umask)", () => {
    const old = process.umask(0o022);
    try {
      const path = join(tempDir(), "nested", "svc.db");
      const db = new Db(path);
      db.run("CREATE TABLE t (x TEXT)");
      db.run("INSERT INTO t (x) VALUES ('secret')");
      for (const f of [path, `${path}-wal`, `${path}-shm`]) {
        expect(existsSync(f)).toBe(true);
        expect(`${f.slice(-7)} ${modeOf(f)}`).toBe(`${f.slice(-7)} 600`);
      }
      expect(modeOf(join(path, ".."))).toBe("700");
      db.close();
    } finally {
      process.umask(old);
    }
  });

  test("files an older build created 0644 are narrowed when opened", () => {
    const dir = tempDir();
    const path = join(dir, "svc.db");
    const legacy = new Database(path, { create: true });
    legacy.run("PRAGMA journal_mode = WAL");
    legacy.run("CREATE TABLE t (x TEXT)");
    legacy.run("INSERT INTO t (x) VALUES ('secret')");
    for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) chmodSync(f, 0o644);
    const db = new Db(path);
    for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) expect(`${f.slice(-7)} ${modeOf(f)}`).toBe(`${f.slice(-7)} 600`);
    expect(db.get<{ x: string }>("SELECT x FROM t")?.x).toBe("secret");
    db.close();
    legacy.close();
  });

  test("the running gateway's files (storage.path)", async () => {
    const old = process.umask(0o022);
    try {
      const gw = await startGateway();
      try {
        const path = join(gw.dir, "svc.db");
        await gw.api("/api/v1/prompts", { method: "POST", token: await gw.token("perm-a", ["WorkspaceAdmin"]), json: { name: "p", template: "t" } });
        for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) expect(`${f.slice(-7)} ${modeOf(f)}`).toBe(`${f.slice(-7)} 600`);
        expect(existsSync(`${path}-wal`)).toBe(true);
      } finally {
        await gw.stop();
      }
    } finally {
      process.umask(old);
    }
  });

  test("an existing empty file is a new database (what the 0600 pre-creation relies on)", () => {
    const path = join(tempDir(), "empty.db");
    writeFileSync(path, "");
    const db = new Db(path);
    db.run("CREATE TABLE t (x INTEGER)");
    expect(db.get<{ n: number }>("SELECT count(*) AS n FROM t")?.n).toBe(0);
    db.close();
  });
});
