/**
 * The storage contract tests run every test against both backends: `eachBackend(label, body)`
 * declares `describe("sqlite")` and `describe("postgres")`, each with a case whose `open()` gives a
 * new AsyncStorage on that case's own database (a temp SQLite file; a fresh schema in the run's
 * throwaway PostgreSQL). Each `open()` is its own connection / pool on the same database (several
 * "replicas"); everything opened is closed, and the database removed, after the describe block.
 */
import { afterAll, describe } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStorage } from "../../src/storage/open";
import type { AsyncStorage } from "../../src/storage/async";
import type { PostgresOptions } from "../../src/storage/postgres";
import { dropSchema, freshSchema } from "../helpers/postgres";

export type BackendName = "sqlite" | "postgres";

export interface BackendCase {
  name: BackendName;
  /** a new storage on this case's database */
  open(opts?: Partial<Omit<PostgresOptions, "url">>): Promise<AsyncStorage>;
}

/** Allow PostgreSQL's start (first file of a run) and a fresh database on a busy machine. */
export const SETUP_TIMEOUT = 120_000;

export function eachBackend(label: string, body: (b: BackendCase) => void) {
  for (const name of ["sqlite", "postgres"] as const) {
    describe(name, () => {
      const opened: AsyncStorage[] = [];
      let pg: Promise<{ url: string; schema: string }> | undefined;
      let dir: string | undefined;
      const c: BackendCase = {
        name,
        async open(opts = {}) {
          let s: AsyncStorage;
          if (name === "postgres") {
            pg ??= freshSchema(label);
            const { url, schema } = await pg;
            s = openStorage({ ...opts, url, schema, path: "" });
          } else {
            dir ??= mkdtempSync(join(tmpdir(), `svc-storage-${label}-`));
            s = openStorage({ path: join(dir, "test.db") });
          }
          opened.push(s);
          return s;
        },
      };
      afterAll(async () => {
        await Promise.all(opened.map((s) => s.close().catch(() => {})));
        if (pg) {
          const { url, schema } = await pg;
          await dropSchema(url, schema);
        }
        if (dir) rmSync(dir, { recursive: true, force: true });
      }, SETUP_TIMEOUT);
      body(c);
    });
  }
}
