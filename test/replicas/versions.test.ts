/**
 * Builds against schemas of other builds, with real svc processes on PostgreSQL (issue 23):
 * - a new build on a schema an older build migrated (one migration fewer) applies what is missing
 *   and serves;
 * - an older build on a newer schema (a migration id it does not know is recorded) refuses to start:
 *   non-zero exit, stderr names the unknown id;
 * - a database that cannot be reached at start: the process exits non-zero naming the database
 *   (a supervisor restarts it) rather than serving without one;
 * - a replica killed (-9) while it migrates an empty database: each migration is a transaction of its
 *   own and the lock dies with the connection, so the next replica migrates the rest and serves.
 * Each test has a schema (or no database) of its own: they run concurrently.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { freePort } from "../../scripts/bench/harness";
import { dropSchema, freshSchema } from "../helpers/postgres";
import { migrationSets } from "../../src/schema";
import { openStorage } from "../../src/storage/open";
import { orderedPostgresMigrations } from "../../src/storage/migrations";
import { replicaEnv, spawnReplica, token, until, waitReady, call, type Replica } from "./cluster";

const LAST = { domain: "gateway", id: "0008_request_outcomes" };
const started: Replica[] = [];
const schemas: Array<{ url: string; schema: string }> = [];
afterAll(async () => {
  await Promise.all(started.map((r) => r.stop()));
  for (const s of schemas) await dropSchema(s.url, s.schema);
});

/** the schema as a build without LAST left it, migrated through the storage layer */
async function olderSchema(label: string) {
  const db = await freshSchema(label);
  schemas.push(db);
  const older = migrationSets().map((s) => (s.domain === LAST.domain ? { ...s, migrations: s.migrations.filter((m) => m.id !== LAST.id) } : s));
  expect(older.flatMap((s) => s.migrations).length).toBe(migrationSets().flatMap((s) => s.migrations).length - 1);
  const storage = openStorage({ url: db.url, schema: db.schema, path: "" });
  try {
    await storage.migrate(older);
  } finally {
    await storage.close();
  }
  return db;
}

async function inSchema<T>(db: { url: string; schema: string }, fn: (sql: SQL) => Promise<T>): Promise<T> {
  const sql = new SQL(db.url, { max: 1, connection: { search_path: db.schema } });
  try {
    return await fn(sql);
  } finally {
    await sql.close();
  }
}

/** a process that must exit by itself: its exit code and stderr, bounded in time */
async function exitOf(r: Replica, timeoutMs = 60_000): Promise<{ code: number; stderr: string }> {
  const code = await Promise.race([r.exited, Bun.sleep(timeoutMs).then(() => "still running" as const)]);
  if (code === "still running") throw new Error(`replica ${r.name} did not exit within ${timeoutMs} ms: ${r.output().slice(-2000)}`);
  return { code, stderr: r.stderr() };
}

describe.concurrent("build and schema versions", () => {
  test("a new build on an older schema migrates what is missing and serves", async () => {
    const db = await olderSchema("older");
    const id = `${LAST.domain}/${LAST.id}`;
    expect(await inSchema(db, async (sql) => (await sql`SELECT count(*)::int AS n FROM schema_migrations WHERE id = ${id}`)[0].n)).toBe(0);
    expect(await inSchema(db, async (sql) => (await sql`SELECT to_regclass('request_outcome_minute')::text AS t`)[0].t)).toBeNull();

    const r = await spawnReplica("new", replicaEnv(db));
    started.push(r);
    await waitReady(r);
    expect(await inSchema(db, async (sql) => (await sql`SELECT count(*)::int AS n FROM schema_migrations WHERE id = ${id}`)[0].n)).toBe(1);
    expect(await inSchema(db, async (sql) => (await sql`SELECT to_regclass('request_outcome_minute')::text AS t`)[0].t)).toBe("request_outcome_minute");
    // the migrated table is in use: the overview reads it
    const overview = await call(r.url, "GET", "/api/v1/usage/overview", await token("tenant-v", ["ViewMetrics"]));
    expect(overview.status).toBe(200);
  }, 90_000);

  test("an older build on a newer schema refuses to start, naming the migration it does not know", async () => {
    const db = await olderSchema("newer");
    // a full migration, then one a newer build recorded
    const storage = openStorage({ url: db.url, schema: db.schema, path: "" });
    try {
      await storage.migrate(migrationSets());
    } finally {
      await storage.close();
    }
    const future = "gateway/9999_from_a_newer_build";
    await inSchema(db, (sql) => sql`INSERT INTO schema_migrations (id, applied_at) VALUES (${future}, ${new Date().toISOString()})`);

    const r = await spawnReplica("old", replicaEnv(db));
    started.push(r);
    const { code, stderr } = await exitOf(r);
    expect(code).not.toBe(0);
    expect(stderr).toContain(future);
    expect(stderr).toMatch(/newer build/);
    // it refused before touching anything: the newer build's record is still the only extra one
    expect(await inSchema(db, async (sql) => (await sql`SELECT count(*)::int AS n FROM schema_migrations WHERE id LIKE '%9999%'`)[0].n)).toBe(1);
  }, 90_000);

  test("a database that cannot be reached at start: the process exits non-zero and names it", async () => {
    const port = await freePort();
    const r = await spawnReplica("nodb", replicaEnv({ url: `postgres://svc:pw@127.0.0.1:${port}/svc` }));
    started.push(r);
    const { code, stderr } = await exitOf(r);
    expect(code).not.toBe(0);
    expect(stderr).toContain(`127.0.0.1:${port}/svc`);
  }, 90_000);

  test("a replica killed while it migrates an empty database: the next one applies the rest and serves", async () => {
    const db = await freshSchema("killed_migrating");
    schemas.push(db);
    const all = orderedPostgresMigrations(migrationSets()).map((m) => m.id).sort();
    const recorded = () =>
      inSchema(db, async (sql) => {
        if (!(await sql`SELECT to_regclass('schema_migrations')::text AS t`)[0].t) return [] as string[];
        return ((await sql`SELECT id FROM schema_migrations ORDER BY id`) as Array<{ id: string }>).map((r) => r.id);
      });
    const first = await spawnReplica("migrating", replicaEnv(db));
    started.push(first);
    await until("the first replica has applied a few migrations", async () => (await recorded()).length >= 3, 60_000);
    first.proc.kill("SIGKILL");
    await first.exited;
    const before = await recorded();
    const second = await spawnReplica("next", replicaEnv(db));
    started.push(second);
    await waitReady(second);
    expect(await recorded()).toEqual(all);
    console.log(`killed while migrating: ${before.length} of ${all.length} migrations recorded at the kill; the next replica applied the rest`);
  }, 90_000);
});
