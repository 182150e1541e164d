import { expect, test } from "bun:test";
import { createApp, closeApp } from "../src/app";
import { loadConfig } from "../src/config";
import { migrationSets } from "../src/schema";

test("migrationSets() lists exactly the migrations of the domains createApp builds, in the same order", async () => {
  const app = createApp(loadConfig({ SVC_STORAGE__PATH: ":memory:" }));
  try {
    const fromApp = app.domains.map((d) => ({ domain: d.name, ids: d.migrations.map((m) => m.id) }));
    const fromSchema = migrationSets().map((s) => ({ domain: s.domain, ids: s.migrations.map((m) => m.id) }));
    expect(fromSchema).toEqual([{ domain: "core", ids: ["0001_secrets"] }, ...fromApp]);
  } finally {
    await closeApp(app);
  }
});
