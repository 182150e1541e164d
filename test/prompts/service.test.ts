/** PromptService and FolderService called directly (no HTTP) over an in-memory database. */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { promptServices, type Completer } from "../../src/prompts";
import { PROMPTS_MIGRATIONS } from "../../src/prompts/migrations";
import { RecordingGateway } from "./helpers";
import { ApiError } from "../../src/core/errors";

const promptsDb = (path: string, migrations = PROMPTS_MIGRATIONS) => new Db(path, [{ domain: "prompts", migrations }]);
/** a model that is not there (the gateway answers 503) */
const unavailable: Completer = { complete: async () => Promise.reject(new ApiError("service_unavailable", "the model gateway is not available")) };
const services = (db: Db, completer: Completer = unavailable) => promptServices(openStorage({ path: ":memory:", db }), completer);

let db: Db;
beforeAll(() => {
  db = promptsDb(":memory:");
});
afterAll(() => db.close());
const alice = { tenantId: "t1", sub: "alice" };
const eve = { tenantId: "t2", sub: "eve" };
const page = { page: 1, pageSize: 20, limit: 20, offset: 0 };

describe("PromptService", () => {
  test("versions: create=1, same template no bump, changed template N+1, explicit version, rollback", async () => {
    const svc = services(db).prompts;
    const p = await svc.create(alice, { name: "S", template: "a" });
    expect((await svc.update(alice, p.id, { template: "a" })).currentVersion).toBe(1);
    expect((await svc.update(alice, p.id, { template: "b", message: "m" })).currentVersion).toBe(2);
    expect((await svc.addVersion(alice, p.id, { template: "b" })).version).toBe(3);
    const rb = await svc.rollback(alice, p.id, 1);
    expect(rb).toMatchObject({ version: 4, template: "a", message: "Rollback to version 1" });
    expect((await svc.listVersions(alice, p.id, page)).items.map((v) => v.version)).toEqual([4, 3, 2, 1]);
    await expect(svc.get(eve, p.id)).rejects.toThrow("not found");
  });

  test("execute goes through the injected completer and records the run; an unavailable model -> 503", async () => {
    const double = new RecordingGateway((r) => `hi from ${r.model}`);
    const { prompts: svc, runs } = services(db, double);
    const p = await svc.create(alice, { name: "E", template: "Ping {{x}}", model: "gpt-4o-mini" });
    const out = await runs.execute(alice, p.id, { variables: { x: "pong" } });
    expect(double.calls).toEqual([{ tenantId: "t1", model: "gpt-4o-mini", messages: [{ role: "user", content: "Ping pong" }], temperature: undefined, maxTokens: undefined, requestId: undefined }]);
    expect(out).toMatchObject({ renderedPrompt: "Ping pong", response: "hi from gpt-4o-mini", dryRun: false, cacheHit: false });
    expect(await runs.getRun(alice, p.id, out.runId)).toMatchObject({ status: "COMPLETED", createdBy: "alice" });
    const none = services(db).runs;
    await expect(none.execute(alice, p.id, { variables: { x: "1" } })).rejects.toMatchObject({ type: "service_unavailable", status: 503 });
    // a dry run needs no gateway
    expect((await none.execute(alice, p.id, { variables: { x: "1" }, dryRun: true })).renderedPrompt).toBe("Ping 1");
  });

  test("a prompt deleted while its model call is in flight: the answer (or the upstream error) still reaches the caller; no orphan run is stored", async () => {
    let svc!: ReturnType<typeof services>["prompts"];
    let runs!: ReturnType<typeof services>["runs"];
    let victim = "";
    const double = new RecordingGateway(async (r) => {
      await svc.delete(alice, victim); // the prompt and its runs go away mid-call
      return r.model === "broken" ? new ApiError("proxy_error", "upstream said 500") : "late answer";
    });
    ({ prompts: svc, runs } = services(db, double));
    victim = (await svc.create(alice, { name: "Gone", template: "x", model: "gpt-4o-mini" })).id;
    expect(await runs.execute(alice, victim, {})).toMatchObject({ response: "late answer", dryRun: false });
    victim = (await svc.create(alice, { name: "Gone too", template: "x", model: "broken" })).id;
    await expect(runs.execute(alice, victim, {})).rejects.toMatchObject({ type: "proxy_error", status: 502 });
    expect(db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_runs r WHERE NOT EXISTS (SELECT 1 FROM prompts p WHERE p.id = r.prompt_id)")!.n).toBe(0);
  });
});

describe("transactions while other domains still write synchronously on the same SQLite connection", () => {
  test("a refusal inside a transaction (404, folder not empty) commits instead of rolling back: another domain's statement that ran meanwhile is kept", async () => {
    db.run("CREATE TABLE IF NOT EXISTS other_domain (v TEXT NOT NULL)");
    const svc = services(db);
    // the service opens its transaction and awaits its first read; a synchronous statement of a
    // not-yet-converted domain that runs now lands inside that transaction
    const missing = svc.prompts.update(alice, "no-such-prompt", { name: "x" });
    db.run("INSERT INTO other_domain (v) VALUES ('during a 404')");
    await expect(missing).rejects.toMatchObject({ status: 404 });
    const full = await svc.folders.create(alice, { name: "full" });
    await svc.prompts.create(alice, { name: "inside", template: "x", folderId: full.id });
    const notEmpty = svc.folders.delete(alice, full.id);
    db.run("INSERT INTO other_domain (v) VALUES ('during a refusal')");
    await expect(notEmpty).rejects.toMatchObject({ type: "invalid_request_error" });
    expect(db.all<{ v: string }>("SELECT v FROM other_domain ORDER BY v").map((r) => r.v)).toEqual(["during a 404", "during a refusal"]);
    expect(db.sqlite.inTransaction).toBe(false);
  });
});

describe("migration prompts/0002_search_text (formerly 0301_prompts_search_text)", () => {
  test("prompts stored before it are found by a case-insensitive, non-ASCII search after it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-prompts-mig-"));
    const path = join(dir, "svc.db");
    try {
      const old = promptsDb(path, PROMPTS_MIGRATIONS.filter((m) => m.id === "0001_tables"));
      // the pre-0301 schema has no search_text: write the row as the old code did
      old.run(
        `INSERT INTO prompts (id, tenant_id, name, slug, description, template, variables, model, temperature, max_tokens, tags, folder_id, status, current_version, created_by, created_at, updated_at)
         VALUES ('p-old', 't1', 'Überblick', 'uberblick', 'ÅRSRAPPORT', 'x', '[]', NULL, NULL, NULL, '[]', NULL, 'DRAFT', 1, 'alice', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z')`,
      );
      old.close();
      const db2 = promptsDb(path);
      const svc = services(db2).prompts;
      expect((await svc.list(alice, { search: "überblick" }, page)).items.map((p) => p.id)).toEqual(["p-old"]);
      expect((await svc.list(alice, { search: "årsrapport" }, page)).total).toBe(1);
      expect((await svc.list(eve, { search: "überblick" }, page)).total).toBe(0);
      db2.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("FolderService", () => {
  test("ancestry blocks cycles at any depth; other tenants' folders are invisible", async () => {
    const svc = services(db).folders;
    let parent = await svc.create(alice, { name: "0" });
    const top = parent;
    for (let i = 1; i < 30; i++) parent = await svc.create(alice, { name: String(i), parentId: parent.id });
    await expect(svc.update(alice, top.id, { parentId: parent.id })).rejects.toThrow("descendants");
    await expect(svc.create(eve, { name: "x", parentId: top.id })).rejects.toThrow("not found");
    expect((await svc.list(eve, null, page)).total).toBe(0);
  });
});
