/**
 * Migrations through the async interface, on both backends: three runners starting at once against
 * an empty database apply each migration once; a newer build migrates what an older one left; an
 * older build refuses a newer schema with a clear message; `{ sqlite, postgres }` and portable().
 */
import { expect, test } from "bun:test";
import { SchemaTooNewError } from "../../src/storage/errors";
import { portable, type MigrationSet } from "../../src/storage/migrations";
import { eachBackend, SETUP_TIMEOUT } from "./backends";

const V1: MigrationSet = {
  domain: "notes",
  migrations: [
    { id: "0001_notes", up: portable((d) => `CREATE TABLE notes (key ${d.autoId}, tenant_id TEXT NOT NULL, body TEXT NOT NULL, vec ${d.blob})`) },
    // a data migration: a second application would insert a second row
    { id: "0002_seed", up: "INSERT INTO notes (tenant_id, body) VALUES ('seed', 'inserted by 0002')" },
  ],
};
const V2: MigrationSet = {
  domain: "notes",
  migrations: [
    ...V1.migrations,
    {
      id: "0003_stamp",
      up: {
        sqlite: (db) => {
          db.run("ALTER TABLE notes ADD COLUMN stamped TEXT");
          db.run("UPDATE notes SET stamped = 'sqlite-fn'");
        },
        postgres: async (sql) => {
          await sql.run("ALTER TABLE notes ADD COLUMN stamped TEXT");
          await sql.run("UPDATE notes SET stamped = $s", { s: "pg-fn" });
        },
      },
    },
  ],
};
const OTHER: MigrationSet = { domain: "other", migrations: [{ id: "0001_t", up: "CREATE TABLE other_t (id TEXT PRIMARY KEY)" }] };

eachBackend("migrations", (b) => {
  test(
    "three runners starting at once against an empty database apply each migration once",
    async () => {
      const replicas = await Promise.all([b.open(), b.open(), b.open()]);
      await Promise.all(replicas.map((r) => r.migrate([V1, OTHER])));
      const g = replicas[0]!.global("test: inspect the schema");
      expect(await g.all("SELECT id FROM schema_migrations ORDER BY id")).toEqual([{ id: "notes/0001_notes" }, { id: "notes/0002_seed" }, { id: "other/0001_t" }]);
      expect(await g.all("SELECT body FROM notes")).toEqual([{ body: "inserted by 0002" }]);
      for (const r of replicas) expect(await r.pendingMigrations()).toEqual([]);
    },
    SETUP_TIMEOUT,
  );

  test("a newer build migrates what an older one left (a function migration per backend)", async () => {
    const newer = await b.open();
    expect(await newer.pendingMigrations()).toEqual([]); // knows nothing before migrate
    await newer.migrate([V2, OTHER]);
    expect(await newer.pendingMigrations()).toEqual([]);
    const g = newer.global("test: inspect the schema");
    expect(await g.all("SELECT stamped FROM notes")).toEqual([{ stamped: b.name === "sqlite" ? "sqlite-fn" : "pg-fn" }]);
    // autoId assigns keys; RETURNING reads them on both backends
    const k = await g.get<{ key: number }>("INSERT INTO notes (tenant_id, body) VALUES ('t', 'x') RETURNING key");
    expect(k!.key).toBe(2);
  });

  test("an older build refuses a newer schema, naming the migrations it does not know", async () => {
    const older = await b.open();
    const e = await older.migrate([V1, OTHER]).catch((x) => x);
    expect(e).toBeInstanceOf(SchemaTooNewError);
    expect((e as SchemaTooNewError).unknown).toEqual(["notes/0003_stamp"]);
    expect((e as Error).message).toMatch(/notes\/0003_stamp.*newer build/);
    // and changed nothing
    expect(await older.global("test").all("SELECT id FROM schema_migrations WHERE id = 'notes/0003_stamp'")).toEqual([{ id: "notes/0003_stamp" }]);
  });

  test("a failing migration leaves nothing of itself behind and is retried by the next start", async () => {
    const s = await b.open();
    const broken: MigrationSet = { domain: "broken", migrations: [{ id: "0001_half", up: "CREATE TABLE half_t (id TEXT); INSERT INTO no_such_table VALUES (1)" }] };
    await expect(s.migrate([V2, OTHER, broken])).rejects.toThrow(/no_such_table/);
    const g = s.global("test");
    expect(await g.all("SELECT id FROM schema_migrations WHERE id LIKE 'broken/%'")).toEqual([]);
    const fixed: MigrationSet = { domain: "broken", migrations: [{ id: "0001_half", up: "CREATE TABLE half_t (id TEXT)" }] };
    await s.migrate([V2, OTHER, fixed]);
    expect(await g.all("SELECT id FROM schema_migrations WHERE id LIKE 'broken/%'")).toEqual([{ id: "broken/0001_half" }]);
  });
});

eachBackend("legacy_ids", (b) => {
  test("a migration recorded under its legacy global id counts as applied: not re-run, not unknown", async () => {
    const s = await b.open();
    const g = s.global("test: an older build's bookkeeping");
    await g.run("CREATE TABLE schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)");
    await g.run("CREATE TABLE legacy_t (id TEXT PRIMARY KEY)");
    await g.run("INSERT INTO schema_migrations (id, applied_at) VALUES ('0100_legacy_t', '2025-01-01T00:00:00Z')");
    await s.migrate([{ domain: "legacy", migrations: [{ id: "0001_legacy_t", legacyId: "0100_legacy_t", up: "CREATE TABLE legacy_t (id TEXT PRIMARY KEY)" }] }]);
    expect(await g.all("SELECT id FROM schema_migrations ORDER BY id")).toEqual([{ id: "0100_legacy_t" }, { id: "legacy/0001_legacy_t" }]);
    expect(await s.pendingMigrations()).toEqual([]);
  });
});

test("a SQLite-only function migration cannot run on PostgreSQL: it must say { sqlite, postgres }", async () => {
  const { orderedPostgresMigrations } = await import("../../src/storage/migrations");
  expect(() => orderedPostgresMigrations([{ domain: "x", migrations: [{ id: "0001", up: () => {} }] }])).toThrow(/x\/0001 is a SQLite function/);
});

test(
  "PostgreSQL schemas: two storages on one database with different schemas each migrate and see only their own tables",
  async () => {
    const { freshSchema, dropSchema } = await import("../helpers/postgres");
    const { openStorage } = await import("../../src/storage/open");
    const a = await freshSchema("iso_a");
    const b = await freshSchema("iso_b");
    expect(a.url).toBe(b.url);
    const sa = openStorage({ url: a.url, schema: a.schema, path: "" });
    const sb = openStorage({ url: b.url, schema: b.schema, path: "" });
    try {
      expect(sa.description).toContain(`schema ${a.schema}`);
      await sa.migrate([V1, OTHER]);
      await expect(sb.global("test").all("SELECT * FROM notes")).rejects.toThrow(/notes/);
      await sb.migrate([V1, OTHER]);
      await sb.global("test").run("INSERT INTO notes (tenant_id, body) VALUES ('b', 'only in b')");
      expect(await sa.global("test").all("SELECT body FROM notes ORDER BY key")).toEqual([{ body: "inserted by 0002" }]);
      expect(await sb.global("test").all("SELECT body FROM notes ORDER BY key")).toEqual([{ body: "inserted by 0002" }, { body: "only in b" }]);
      expect(() => openStorage({ url: a.url, schema: "Bad-Name", path: "" })).toThrow(/lower-case identifier/);
    } finally {
      await sa.close();
      await sb.close();
      await dropSchema(a.url, a.schema);
      await dropSchema(b.url, b.schema);
    }
  },
  SETUP_TIMEOUT,
);

test("today's synchronous Db.migrate runs the sqlite side of a { sqlite, postgres } migration (domains can adopt the shape before the switch)", async () => {
  const { Db } = await import("../../src/storage/db");
  const db = new Db(":memory:");
  try {
    db.migrate([V2, OTHER]);
    expect(db.all("SELECT id FROM schema_migrations ORDER BY id").map((r: any) => r.id)).toEqual(["notes/0001_notes", "notes/0002_seed", "notes/0003_stamp", "other/0001_t"]);
    expect(db.all("SELECT stamped FROM notes")).toEqual([{ stamped: "sqlite-fn" }]);
    expect(db.pendingMigrations()).toEqual([]);
  } finally {
    db.close();
  }
});
