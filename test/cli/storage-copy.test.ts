/**
 * `svc storage copy --to postgres://…` as an operator runs it (the CLI as a child process) against
 * a real PostgreSQL: a SQLite database written by the real gateway with data in every domain is
 * copied, every table's counts are equal and printed, a second run prints the same and duplicates
 * nothing, a target holding rows the source lacks fails naming the table, and a wrong or
 * unreachable target fails clearly — never printing the URL's password.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SQL } from "bun";
import { Database } from "bun:sqlite";
import { dropSchema, freshSchema } from "../helpers/postgres";
import { closedPort } from "../fake-upstream/server";
import { fillEveryDomain, FILLED_TABLES, TENANT, type Filled } from "./every-domain";

const ROOT = resolve(import.meta.dir, "../..");
const MAIN = join(ROOT, "src/main.ts");
/** spawned CLIs and a gateway built on a busy 2-core machine */
const SLOW = 120_000;
const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_"))) as Record<string, string>;

async function cli(args: string[], env: Record<string, string>) {
  const p = Bun.spawn([process.execPath, MAIN, ...args], { cwd: ROOT, env: { ...cleanEnv(), ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/** `table source target` lines of the output, by table */
function parse(stdout: string): Map<string, { source: number; target: number }> {
  const out = new Map<string, { source: number; target: number }>();
  for (const line of stdout.trim().split("\n").slice(1)) {
    const [table, source, target] = line.trim().split(/\s+/);
    out.set(table!, { source: Number(source), target: Number(target) });
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), "svc-cli-copy-"));
let filled: Filled;
let pg: { url: string; schema: string };
let admin: SQL;
const PASSWORD = () => new URL(pg.url).password;

beforeAll(async () => {
  [filled, pg] = await Promise.all([fillEveryDomain(dir), freshSchema("cli_copy")]);
  admin = new SQL(pg.url, { max: 1 });
}, SLOW);
afterAll(async () => {
  await admin?.close();
  if (pg) await dropSchema(pg.url, pg.schema);
  rmSync(dir, { recursive: true, force: true });
}, SLOW);

const pgCount = async (table: string) => Number((await admin.unsafe(`SELECT COUNT(*) AS n FROM "${pg.schema}"."${table}"`))[0].n);

describe("svc storage copy", () => {
  let first = "";

  test(
    "every table of a gateway's SQLite database reaches PostgreSQL: counts per table and a total, equal; the password is never printed",
    async () => {
      const r = await cli(["storage", "copy", "--to", pg.url, "--to-schema", pg.schema], { SVC_STORAGE__PATH: filled.path });
      expect(r.stderr).not.toContain(PASSWORD());
      expect(r.stdout).not.toContain(PASSWORD());
      expect(r.code).toBe(0);
      first = r.stdout;
      expect(r.stdout.split("\n")[0]!.trim().split(/\s+/)).toEqual(["table", "source", "target"]);
      const counts = parse(r.stdout);
      const sqlite = new Database(filled.path, { readonly: true });
      try {
        const empty = FILLED_TABLES.filter((table) => (sqlite.query(`SELECT COUNT(*) AS n FROM "${table}"`).get() as { n: number }).n === 0);
        expect(empty).toEqual([]);
        for (const table of FILLED_TABLES) {
          const n = (sqlite.query(`SELECT COUNT(*) AS n FROM "${table}"`).get() as { n: number }).n;
          expect({ table, ...counts.get(table) }).toEqual({ table, source: n, target: n });
          expect({ table, n: await pgCount(table) }).toEqual({ table, n });
        }
      } finally {
        sqlite.close();
      }
      const rows = [...counts].filter(([t]) => t !== "total");
      for (const [table, c] of rows) expect({ table, ...c }).toEqual({ table, source: c.source, target: c.source });
      const sum = rows.reduce((n, [, c]) => n + c.source, 0);
      expect(counts.get("total")).toEqual({ source: sum, target: sum });
      // the rows themselves: the API key's hash and the prompt as written on SQLite
      expect(Number((await admin.unsafe(`SELECT COUNT(*) AS n FROM "${pg.schema}".api_keys WHERE id = $1 AND tenant_id = $2`, [filled.keyId, TENANT]))[0].n)).toBe(1);
      expect((await admin.unsafe(`SELECT name FROM "${pg.schema}".prompts WHERE id = $1`, [filled.promptId]))[0].name).toBe("Greeting");
    },
    SLOW,
  );

  test(
    "a second run (target from SVC_STORAGE__URL) prints the same counts and duplicates nothing",
    async () => {
      expect(first).not.toBe("");
      const before = await pgCount("usage_records");
      const r = await cli(["storage", "copy", "--to-schema", pg.schema], { SVC_STORAGE__PATH: filled.path, SVC_STORAGE__URL: pg.url });
      expect(r.stderr).not.toContain(PASSWORD());
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(first);
      expect(await pgCount("usage_records")).toBe(before);
    },
    SLOW,
  );

  test(
    "a target holding rows the source lacks: non-zero, the differing table named",
    async () => {
      await admin.unsafe(
        `INSERT INTO "${pg.schema}".prompt_folders (id, tenant_id, name, parent_id, created_by, created_at, updated_at)
         SELECT 'extra-' || id, tenant_id, name || ' (extra)', parent_id, created_by, created_at, updated_at FROM "${pg.schema}".prompt_folders LIMIT 1`,
      );
      const r = await cli(["storage", "copy", "--to", pg.url, "--to-schema", pg.schema], { SVC_STORAGE__PATH: filled.path });
      expect(r.code).toBe(1);
      const counts = parse(r.stdout);
      expect(counts.get("prompt_folders")).toEqual({ source: 1, target: 2 });
      expect(r.stderr).toContain("prompt_folders (source 1, target 2)");
      expect(r.stderr).not.toContain("api_keys (");
      await admin.unsafe(`DELETE FROM "${pg.schema}".prompt_folders WHERE id LIKE 'extra-%'`);
    },
    SLOW,
  );

  test(
    "an unreachable server, a refused login, a wrong URL, a missing SQLite file: clear errors, non-zero, no password",
    async () => {
      const env = { SVC_STORAGE__PATH: filled.path };
      const down = await cli(["storage", "copy", "--to", `postgres://svc:hunter2-secret@127.0.0.1:${await closedPort()}/svc`], env);
      expect(down.code).toBe(69);
      expect(down.stderr).toContain("cannot use the target database");
      expect(down.stderr).toContain("127.0.0.1");
      const wrong = new URL(pg.url);
      wrong.password = "hunter2-secret";
      const refused = await cli(["storage", "copy", "--to", wrong.toString(), "--to-schema", pg.schema], env);
      expect(refused.code).toBe(69);
      expect(refused.stdout).toBe("");
      for (const r of [down, refused]) {
        expect(r.stdout + r.stderr).not.toContain("hunter2-secret");
        expect(r.stdout + r.stderr).not.toContain(PASSWORD());
      }
      const notPg = await cli(["storage", "copy", "--to", "mysql://svc:hunter2-secret@127.0.0.1/svc"], env);
      expect(notPg.code).toBe(78);
      expect(notPg.stderr).toContain("postgres://");
      expect(notPg.stderr).not.toContain("hunter2-secret");
      const noTo = await cli(["storage", "copy"], env);
      expect(noTo.code).toBe(78);
      expect(noTo.stderr).toContain("--to");
      const missing = await cli(["storage", "copy", "--to", pg.url], { SVC_STORAGE__PATH: join(dir, "nothing-here.db") });
      expect(missing.code).toBe(66);
      expect(missing.stderr).toContain("no svc database at");
      expect(missing.stderr).not.toContain(PASSWORD());
    },
    SLOW,
  );

  test("--help names the command, its options and exit statuses without loading the gateway", async () => {
    const r = await cli(["storage", "--help"], {});
    expect(r.code).toBe(0);
    for (const s of ["svc storage copy --to postgres://", "--to-schema", "SVC_STORAGE__PATH", "69"]) expect(r.stdout).toContain(s);
    expect((await cli(["--help"], {})).stdout).toContain("svc storage copy");
  });
});
