/**
 * Memory's transactions on the SQLite connection it shares with the domains still on the
 * synchronous storage (docs/notes/postgres-plan.md, "Transition hazard"): a refusal (404/409/429)
 * thrown inside a memory transaction commits the (empty) transaction instead of rolling it back,
 * so a write of another domain that ran between the body's awaits is kept; any other error still
 * rolls the memory transaction back.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { closeApp, createApp, type App } from "../../src/app";
import { Logger } from "../../src/core/log";
import { conflict } from "../../src/core/errors";

let app: App;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-memory-tx-"));
  app = createApp(loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "memory-tx-secret-0123456789abcdef" }), { logger: new Logger("error") });
  app.db.sqlite.run("CREATE TABLE other_domain (x TEXT)");
});
afterAll(async () => {
  await closeApp(app);
  rmSync(dir, { recursive: true, force: true });
});

const others = () => app.db.sqlite.query<{ x: string }, []>("SELECT x FROM other_domain ORDER BY x").all().map((r) => r.x);

test("a refusal inside a memory transaction keeps another domain's write made between its awaits", async () => {
  const s = app.memory.memory.store("t");
  const refused = s.tx(async () => {
    await s.projectExists("p");
    app.db.sqlite.run("INSERT INTO other_domain (x) VALUES ('kept')"); // a synchronous domain's statement, interleaved
    await s.projectExists("p");
    throw conflict("refused after checking");
  });
  await expect(refused).rejects.toMatchObject({ status: 409 });
  expect(others()).toEqual(["kept"]);
});

test("any other error rolls the memory transaction back (with what ran inside it)", async () => {
  const s = app.memory.memory.store("t");
  const failed = s.tx(async () => {
    await s.insertProject({ projectId: "gone", name: "g", roadmap: "", at: new Date().toISOString() });
    throw new Error("boom");
  });
  await expect(failed).rejects.toThrow("boom");
  expect(await s.projectExists("gone")).toBe(false);
});
