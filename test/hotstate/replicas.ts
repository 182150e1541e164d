/**
 * Several real svc processes (`bun src/main.ts`) sharing one PostgreSQL database (a fresh schema
 * of the run's throwaway cluster per cluster of replicas), one JWT secret and SSO secret key, one
 * fake upstream and one Redis: the multi-replica deployment on one machine. Each replica has its
 * own SVC_STORAGE__PATH directory (its local vector index snapshots live beside it).
 */
import type { Subprocess } from "bun";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitHealthy, ROOT } from "../../scripts/bench/harness";
import { listeningUrl } from "../helpers/listening";
import { TokenService } from "../../src/core/auth";
import { postgresEnv } from "../helpers/pg-gateway";
import { dropSchema } from "../helpers/postgres";

const BUN = process.execPath;
const MAIN = join(ROOT, "src/main.ts");
export const SECRET = "hotstate-test-secret-hotstate-test-secret";

export interface Replica {
  name: string;
  url: string;
  proc: Subprocess<"ignore", "pipe", "pipe">;
}

export interface Cluster {
  replicas: Replica[];
  dir: string;
  /** the shared database's SVC_* settings (SVC_STORAGE__URL, SVC_STORAGE__SCHEMA, the SSO secret key) */
  db: Record<string, string>;
  token(tenantId: string, permissions: string[], sub?: string): Promise<string>;
  stop(): Promise<void>;
}

const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_")));

/** One replica on a port it chooses (test/helpers/listening.ts), healthy and connected to Redis. */
async function spawn(name: string, env: Record<string, string>): Promise<Replica> {
  const proc = Bun.spawn([BUN, MAIN], {
    cwd: ROOT,
    env: { ...cleanEnv(), ...env, SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  let url = "";
  try {
    url = (await listeningUrl(proc, 60_000)) ?? "";
    if (!url) throw new Error(`exited with ${await proc.exited} before it listened`);
    await waitHealthy(url, proc, 60_000);
    // Redis is connected after start-up, not before it: ready once /ready's redis check holds
    await until(`replica ${name} connected to redis`, async () => ((await (await fetch(`${url}/ready`)).json()) as any).checks?.redis === true, 30_000);
  } catch (e) {
    proc.kill(9);
    throw new Error(`replica ${name}: ${e}: ${await new Response(proc.stderr).text()}`);
  }
  return { name, url, proc };
}

/**
 * Start `n` replicas; `perReplica(i)` adds settings to replica i (e.g. its fail mode). The first
 * starts alone (it migrates the database), the others together.
 */
export async function startCluster(o: { n: number; redisUrl: string; upstreamUrl: string; env?: Record<string, string>; perReplica?: (i: number) => Record<string, string> }): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), "svc-hotstate-"));
  const db = await postgresEnv("hotstate");
  const env = (i: number) => ({
    ...db,
    SVC_STORAGE__PATH: join(replicaDir(dir, i), "svc.db"),
    SVC_AUTH__JWT_SECRET: SECRET,
    SVC_REDIS__URL: o.redisUrl,
    SVC_SERVER__REQUEST_LOG: "false",
    SVC_CACHE__ENABLED: "false",
    SVC_PROVIDERS__OPENAI__BASE_URL: o.upstreamUrl,
    SVC_PROVIDERS__OPENAI__API_KEY: "sk-up-openai",
    ...o.env,
    ...o.perReplica?.(i),
  });
  const names = "ABCDEFGH";
  const replicas: Replica[] = [];
  const stopAll = async () => {
    for (const r of replicas) r.proc.kill("SIGTERM");
    await Promise.all(replicas.map((r) => r.proc.exited));
    rmSync(dir, { recursive: true, force: true });
    await dropSchema(db.SVC_STORAGE__URL!, db.SVC_STORAGE__SCHEMA!);
  };
  try {
    replicas.push(await spawn(names[0]!, env(0)));
    replicas.push(...(await Promise.all(Array.from({ length: o.n - 1 }, (_, i) => spawn(names[i + 1]!, env(i + 1))))));
  } catch (e) {
    await stopAll();
    throw e;
  }
  const tokens = new TokenService(SECRET);
  return {
    replicas,
    dir,
    db,
    token: (tenantId, permissions, sub) => tokens.sign({ tenantId, sub, permissions }),
    stop: stopAll,
  };
}

/** replica i's own data directory (its index snapshots; the database is shared) */
function replicaDir(dir: string, i: number): string {
  const d = join(dir, `replica-${i}`);
  mkdirSync(d, { recursive: true });
  return d;
}

/** Poll `probe` until it returns true or the deadline passes (then throws naming `what`). */
export async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await Bun.sleep(20);
  }
}
