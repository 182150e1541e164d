/**
 * The backend of a test file's gateways (test/helpers/gateway.ts reads it at every start): SQLite,
 * unless the file is a wrapper in test/pg/ that runs an HTTP test file again on PostgreSQL:
 *   // test/pg/prompts.test.ts
 *   import { onPostgres } from "../helpers/backend";
 *   onPostgres("prompts/prompts.test.ts", "prompts/chains.test.ts");
 *
 * The switch is a flag on `globalThis`, not an environment variable: under `bun test --parallel`
 * each file runs in a fresh global, while process.env is shared by the files one worker runs.
 * The wrapped file is imported under a query string (`?backend=postgres`), a module of its own:
 * without --parallel/--isolate a plain import of a file the same run has already loaded would
 * register nothing, and the wrapper would pass without running a test. A wrapped file whose tests
 * started no gateway on PostgreSQL fails (a wrapper that runs nothing is a defect).
 */
import { afterAll, beforeAll, describe } from "bun:test";
import { join } from "node:path";
import { sharedPostgres } from "./postgres";

/** the first file of a run starts the test cluster (initdb + start on a busy machine) */
const CLUSTER_TIMEOUT = 120_000;

export type TestBackend = "sqlite" | "postgres";

interface BackendFlags {
  __svcTestBackend?: TestBackend;
  /** gateways started on PostgreSQL since the wrapper set the flag */
  __svcTestPgGateways?: number;
}
const flags = globalThis as BackendFlags;

/** the backend startGateway uses for this test file */
export function testBackend(): TestBackend {
  return flags.__svcTestBackend ?? "sqlite";
}

/** startGateway reports each gateway it started (the wrapper's check that it ran something) */
export function gatewayStarted(backend: TestBackend): void {
  if (backend === "postgres" && flags.__svcTestPgGateways !== undefined) flags.__svcTestPgGateways++;
}

/**
 * Run the tests of each file (relative to test/) again in this file, one describe block per file
 * (its hooks and gateways are its own), every gateway on a fresh PostgreSQL schema. Call it at the
 * top level of a wrapper: the imports register the tests.
 */
export function onPostgres(...files: string[]): void {
  flags.__svcTestBackend = "postgres";
  flags.__svcTestPgGateways = 0;
  // before the wrapped files' hooks: their timeouts are sized for a gateway, not for the cluster's start
  beforeAll(() => sharedPostgres().then(() => {}), CLUSTER_TIMEOUT);
  for (const file of files) {
    describe(`${file} on PostgreSQL`, async () => {
      let before = 0;
      beforeAll(() => {
        before = flags.__svcTestPgGateways ?? 0;
      });
      afterAll(() => {
        if ((flags.__svcTestPgGateways ?? 0) === before) throw new Error(`${file} started no gateway on PostgreSQL: its tests did not run on PostgreSQL`);
      });
      await import(`${join(import.meta.dir, "..", file)}?backend=postgres`);
    });
  }
  // without --isolate the next file shares this global: it must find SQLite again
  afterAll(() => {
    delete flags.__svcTestBackend;
    delete flags.__svcTestPgGateways;
  });
}
