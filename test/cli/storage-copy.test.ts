/**
 * `svc storage copy --to postgres://…` as an operator runs it (the CLI as a child process) against
 * a real PostgreSQL: a SQLite database written by the real gateway with data in every domain is
 * copied, every table's counts are equal and printed, a second run prints the same and duplicates
 * nothing, a target holding rows the source lacks fails naming the table, and a wrong or
 * unreachable target fails clearly — never printing the URL's password; an older node's file is
 * migrated first. Then the gateway started on the copy (with the node's secrets, which the copy
 * pinned) serves a copied key and prompt, and `svc keys` and `svc token` work against that
 * PostgreSQL database.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SQL } from "bun";
import { Database } from "bun:sqlite";
import { dropSchema, freshSchema } from "../helpers/postgres";
import { closedPort } from "../fake-upstream/server";
import { fillEveryDomain, FILLED_TABLES, TENANT, type Filled } from "./every-domain";
import { startGateway, TEST_JWT_SECRET, type TestGateway } from "../helpers/gateway";
import { TEST_SSO_SECRET_KEY } from "../helpers/pg-gateway";
import { loadConfig } from "../../src/config";
import { createAppAsync } from "../../src/app";
import { openStorage } from "../../src/storage/open";
import { migrationSets } from "../../src/schema";
import { agreeOnSecrets } from "../../src/core/secrets";

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
let gw: TestGateway | undefined;
afterAll(async () => {
  await gw?.stop();
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
      // run with the node's settings: its database and its configured JWT secret (its SSO secret key is the generated file)
      const r = await cli(["storage", "copy", "--to", pg.url, "--to-schema", pg.schema], { SVC_STORAGE__PATH: filled.path, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET });
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
      // the PostgreSQL deployment's own table: the node's two secret fingerprints and its sealed SAML key pair, shown, not compared
      expect(counts.get("svc_secrets")).toEqual({ source: 0, target: 3 });
      expect(r.stdout).toMatch(/svc_secrets .* \(the target's own\)/);
      expect(r.stderr).toContain("SVC_AUTH__JWT_SECRET and SVC_IDENTITY__SSO__SECRET_KEY");
      const rows = [...counts].filter(([t]) => t !== "total" && t !== "svc_secrets");
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
      const r = await cli(["storage", "copy", "--to-schema", pg.schema], { SVC_STORAGE__PATH: filled.path, SVC_STORAGE__URL: pg.url, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET });
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
      const r = await cli(["storage", "copy", "--to", pg.url, "--to-schema", pg.schema], { SVC_STORAGE__PATH: filled.path, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET });
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
      // a target whose replicas already run with another JWT secret: refused before a row is copied
      const other = await freshSchema("cli_copy_other");
      const otherStorage = openStorage({ url: other.url, schema: other.schema, path: "" });
      try {
        await otherStorage.migrate(migrationSets());
        await agreeOnSecrets(otherStorage, { SVC_AUTH__JWT_SECRET: "the-replicas-own-secret-0123456789" });
        const pinned = await cli(["storage", "copy", "--to", other.url, "--to-schema", other.schema], { ...env, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET });
        expect(pinned.code).toBe(78);
        expect(pinned.stderr).toContain("SVC_AUTH__JWT_SECRET differs");
        expect(pinned.stderr).toContain("nothing was copied");
        expect((await otherStorage.global("test").get<{ n: number }>("SELECT COUNT(*) AS n FROM api_keys"))!.n).toBe(0);
      } finally {
        await otherStorage.close();
        await dropSchema(other.url, other.schema);
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

  test(
    "an older node's database (written by main at 683d91c, before namespaced migrations) is brought to this build's schema, then copied",
    async () => {
      const old = join(dir, "old");
      mkdirSync(old);
      copyFileSync(join(import.meta.dir, "../fixtures/main-683d91c.db"), join(old, "svc.db"));
      const fixture = require("../fixtures/main-683d91c.json") as { tenant: string; promptId: string };
      const target = await freshSchema("cli_copy_old");
      try {
        const r = await cli(["storage", "copy", "--to", target.url, "--to-schema", target.schema], { SVC_STORAGE__PATH: join(old, "svc.db") });
        expect(r.code).toBe(0);
        const counts = parse(r.stdout);
        expect(counts.get("api_keys")).toEqual({ source: 1, target: 1 });
        expect(counts.get("prompt_versions")).toEqual({ source: 2, target: 2 });
        expect(counts.get("cache_entries")).toEqual({ source: 2, target: 2 });
        // it had no generated secret files beside it: said, not guessed
        expect(r.stderr).toContain("no JWT secret to carry");
        expect((await admin.unsafe(`SELECT tenant_id FROM "${target.schema}".prompts WHERE id = $1`, [fixture.promptId]))[0].tenant_id).toBe(fixture.tenant);
      } finally {
        await dropSchema(target.url, target.schema);
      }
    },
    SLOW,
  );

  test("--help names the command, its options and exit statuses without loading the gateway", async () => {
    const r = await cli(["storage", "--help"], {});
    expect(r.code).toBe(0);
    for (const s of ["svc storage copy --to postgres://", "--to-schema", "SVC_STORAGE__PATH", "69"]) expect(r.stdout).toContain(s);
    expect((await cli(["--help"], {})).stdout).toContain("svc storage copy");
  });

  /** what the replicas on the copy run with: the node's JWT secret (TEST_JWT_SECRET) and its generated SSO secret key */
  const pgEnv = () => ({ SVC_STORAGE__URL: pg.url, SVC_STORAGE__SCHEMA: pg.schema, SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET, SVC_IDENTITY__SSO__SECRET_KEY: readFileSync(join(dir, "sso-secret-key"), "utf8").trim() });

  test(
    "a gateway started on the copy serves a copied key and a copied prompt and signs with the node's SAML key pair; one given another SSO secret key refuses to start",
    async () => {
      expect(first).not.toBe("");
      const { SVC_AUTH__JWT_SECRET: _jwt, ...env } = pgEnv();
      gw = await startGateway({}, env);
      expect(gw.ctx.data.description).toContain(pg.schema);
      const keys = await gw.api("/api/v1/virtual-keys", { token: filled.apiKey });
      expect(keys.status).toBe(200);
      expect(JSON.stringify(await keys.json())).toContain("copied admin");
      const prompt = await gw.api(`/api/v1/prompts/${filled.promptId}`, { token: filled.apiKey });
      expect(prompt.status).toBe(200);
      expect(await prompt.json()).toMatchObject({ id: filled.promptId, name: "Greeting", template: "Hello {{name}}" });
      // the node's SAML service-provider certificate, carried sealed: identity providers keep trusting it
      const cert = readFileSync(join(dir, "sso-sp-cert.pem"), "utf8");
      expect((await gw.ctx.identity.signin.spMetadata("http://svc.test", true)).signingCertificate).toBe(cert);
      await expect(createAppAsync(loadConfig({ ...pgEnv(), SVC_IDENTITY__SSO__SECRET_KEY: TEST_SSO_SECRET_KEY }))).rejects.toThrow(/SVC_IDENTITY__SSO__SECRET_KEY differs/);
    },
    SLOW,
  );

  test(
    "svc keys on PostgreSQL: create, list shows it, the running gateway accepts it, revoke stops it; the replicas' secrets are required",
    async () => {
      expect(gw).toBeDefined();
      const created = await cli(["keys", "create", "--tenant", TENANT, "--name", "made on pg", "--permissions", "ViewKeys"], pgEnv());
      expect(created.stderr).not.toContain(PASSWORD());
      expect(created.code).toBe(0);
      const key = created.stdout.trim();
      expect(key).toMatch(/^svc_/);
      const listed = await cli(["keys", "list", "--tenant", TENANT], pgEnv());
      expect(listed.code).toBe(0);
      const records = JSON.parse(listed.stdout) as Array<{ id: string; name: string; revokedAt: string | null }>;
      const record = records.find((k) => k.name === "made on pg")!;
      expect(record).toBeDefined();
      expect(records.map((k) => k.name)).toContain("copied admin");
      expect((await gw!.api("/api/v1/virtual-keys", { token: key })).status).toBe(200);
      const revoked = await cli(["keys", "revoke", "--tenant", TENANT, "--id", record.id], pgEnv());
      expect(revoked.code).toBe(0);
      // another process revoked it: the gateway forgets a verified key within 5 s
      let status = 200;
      for (const deadline = Date.now() + 20_000; status === 200 && Date.now() < deadline; await Bun.sleep(100)) status = (await gw!.api("/api/v1/virtual-keys", { token: key })).status;
      expect(status).toBe(401);

      const { SVC_IDENTITY__SSO__SECRET_KEY: _k, ...noSso } = pgEnv();
      const missing = await cli(["keys", "list", "--tenant", TENANT], noSso);
      expect(missing.code).toBe(78);
      expect(missing.stderr).toContain("SVC_IDENTITY__SSO__SECRET_KEY");
      const other = await cli(["keys", "list", "--tenant", TENANT], { ...pgEnv(), SVC_AUTH__JWT_SECRET: "another-secret-of-enough-length" });
      expect(other.code).toBe(78);
      expect(other.stderr).toContain("SVC_AUTH__JWT_SECRET differs");
      const down = await cli(["keys", "list", "--tenant", TENANT], { ...pgEnv(), SVC_STORAGE__URL: `postgres://svc:hunter2-secret@127.0.0.1:${await closedPort()}/svc` });
      expect(down.code).toBe(69);
      expect(down.stderr).not.toContain("hunter2-secret");
    },
    SLOW,
  );

  test(
    "svc token on PostgreSQL: needs SVC_AUTH__JWT_SECRET, refuses one the replicas do not use, and mints what the gateway accepts",
    async () => {
      expect(gw).toBeDefined();
      const args = ["token", "--tenant", TENANT, "--permissions", "ViewKeys"];
      const { SVC_AUTH__JWT_SECRET: _jwt, ...noJwt } = pgEnv();
      const missing = await cli(args, noJwt);
      expect(missing.code).toBe(78);
      expect(missing.stderr).toContain("SVC_AUTH__JWT_SECRET");
      expect(missing.stdout).toBe("");
      const other = await cli(args, { ...pgEnv(), SVC_AUTH__JWT_SECRET: "another-secret-of-enough-length" });
      expect(other.code).toBe(78);
      expect(other.stderr).toContain("differs");
      expect(other.stdout).toBe("");
      const down = await cli(args, { ...pgEnv(), SVC_STORAGE__URL: `postgres://svc:hunter2-secret@127.0.0.1:${await closedPort()}/svc` });
      expect(down.code).toBe(69);
      expect(down.stderr + down.stdout).not.toContain("hunter2-secret");
      // only the URL and the JWT secret: a token needs no SSO secret key
      const { SVC_IDENTITY__SSO__SECRET_KEY: _k, ...tokenEnv } = pgEnv();
      const ok = await cli(args, tokenEnv);
      expect(ok.code).toBe(0);
      expect((await gw!.api("/api/v1/virtual-keys", { token: ok.stdout.trim() })).status).toBe(200);
    },
    SLOW,
  );
});
