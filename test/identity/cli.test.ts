/** `svc keys create --team`: a virtual key of a team from the command line. */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig } from "../../src/config";
import { createApp, closeApp } from "../../src/app";
import { Logger } from "../../src/core/log";
import { TEST_JWT_SECRET } from "../helpers/gateway";

const ROOT = resolve(import.meta.dir, "../..");

describe("svc keys create --team", () => {
  test("creates the key in the team; an unknown team fails without creating a key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-cli-"));
    const env = { SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET };
    try {
      const open = () => createApp(loadConfig(env), { logger: new Logger("error", () => {}) });
      let app = open();
      const team = await app.identity.teams.create("tenant-cli", { name: "cli team", maxBudgetCents: 100 });
      await closeApp(app);
      const run = (args: string[]) => Bun.spawnSync([process.execPath, join(ROOT, "src/main.ts"), ...args], { env: { ...process.env, ...env }, cwd: ROOT });
      const ok = run(["keys", "create", "--tenant", "tenant-cli", "--name", "ci", "--team", team.id]);
      expect(ok.exitCode).toBe(0);
      const key = ok.stdout.toString().trim();
      expect(key).toMatch(/^svc_/);
      expect(ok.stderr.toString()).toContain(`in team ${team.id}`);
      const bad = run(["keys", "create", "--tenant", "tenant-cli", "--name", "ci2", "--team", crypto.randomUUID()]);
      expect(bad.exitCode).toBe(1);
      expect(bad.stderr.toString()).toContain("team not found");
      app = open();
      const keys = await app.identity.teams.keys("tenant-cli", team.id);
      expect(keys.map((k) => k.name)).toEqual(["ci"]);
      expect(app.apiKeys.list("tenant-cli").map((k) => k.name)).toEqual(["ci"]);
      expect(app.apiKeys.verify(key).keyId).toBe(keys[0]!.id);
      await closeApp(app);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // two CLI processes and two app openings: seconds each on a busy 2-core machine
  }, 60_000);
});
