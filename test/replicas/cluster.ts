/**
 * Real svc processes (`bun src/main.ts`) on one PostgreSQL database: the multi-replica deployment
 * of issue 23 on one machine. Each replica has its own port and its own SVC_STORAGE__PATH
 * directory (local index snapshots live there); they share the database, the JWT secret and the
 * SSO secret key. The embedder is the remote ("openai") one, pointed at the given upstream, so no
 * process loads a local model.
 */
import type { Subprocess } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitHealthy, ROOT } from "../../scripts/bench/harness";
import { TokenService } from "../../src/core/auth";
import { TEST_SSO_SECRET_KEY } from "../helpers/pg-gateway";
import { listeningUrlIn } from "../helpers/listening";

const BUN = process.execPath;
const MAIN = join(ROOT, "src/main.ts");
export const SECRET = "replicas-test-secret-replicas-test-secret";
const tokens = new TokenService(SECRET);

/** a bearer token every replica accepts */
export const token = (tenantId: string, permissions: string[], sub?: string): Promise<string> => tokens.sign({ tenantId, sub, permissions });

export interface Replica {
  name: string;
  /** its base URL, known once it listens (`listening`); "" before, and for one that exited first */
  url: string;
  /** resolves once the replica logged "svc listening" (url set) or exited without listening */
  listening: Promise<void>;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** what the process wrote so far: its log (stdout) and stderr, as they arrived */
  output(): string;
  /** what the process wrote to stderr alone (the start-up refusals) */
  stderr(): string;
  /** resolves with the exit code */
  exited: Promise<number>;
  /** SIGTERM (clean stop) and wait, then remove its data directory */
  stop(): Promise<void>;
}

const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_")));

/** SVC_* settings of a replica on `db`, with `upstreamUrl` as provider and embedder */
export function replicaEnv(db: { url: string; schema?: string }, upstreamUrl?: string): Record<string, string> {
  return {
    SVC_STORAGE__URL: db.url,
    ...(db.schema ? { SVC_STORAGE__SCHEMA: db.schema } : {}),
    SVC_AUTH__JWT_SECRET: SECRET,
    SVC_IDENTITY__SSO__SECRET_KEY: TEST_SSO_SECRET_KEY,
    SVC_SERVER__REQUEST_LOG: "false",
    SVC_CACHE__ENABLED: "false",
    SVC_METRICS__RENDER_INTERVAL_MS: "0",
    // the fakes listen on loopback
    SVC_OUTBOUND__ALLOW_PRIVATE: "true",
    ...(upstreamUrl
      ? {
          SVC_PROVIDERS__OPENAI__BASE_URL: upstreamUrl,
          SVC_PROVIDERS__OPENAI__API_KEY: "sk-up-openai",
          SVC_EMBEDDING__PROVIDER: "openai",
          SVC_EMBEDDING__BASE_URL: `${upstreamUrl}/v1`,
          SVC_EMBEDDING__MODEL: "text-embedding-3-small",
          SVC_EMBEDDING__API_KEY: "sk-embed",
        }
      : {}),
  };
}

/**
 * Spawn one replica (it is not awaited: see waitStarted / waitReady). `env` is its whole SVC_*
 * configuration (replicaEnv + extras); host, storage path and port 0 are added here (the replica
 * chooses its port: test/helpers/listening.ts).
 */
export async function spawnReplica(name: string, env: Record<string, string>): Promise<Replica> {
  const dir = mkdtempSync(join(tmpdir(), `svc-replica-${name}-`));
  const proc = Bun.spawn([BUN, "--max-http-header-size=262144", MAIN], {
    cwd: ROOT,
    env: { ...cleanEnv(), ...env, SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  let err = "";
  let listened: () => void = () => {};
  const listening = new Promise<void>((resolve) => (listened = resolve));
  // drain both pipes continuously: a full pipe would block the process
  const drain = async (stream: ReadableStream<Uint8Array>, isErr: boolean) => {
    const dec = new TextDecoder();
    for await (const chunk of stream) {
      const text = dec.decode(chunk, { stream: true });
      out += text;
      if (isErr) err += text;
      else if (!replica.url) {
        const url = listeningUrlIn(out);
        if (url) {
          replica.url = url;
          listened();
        }
      }
    }
  };
  const drained = Promise.all([drain(proc.stdout, false), drain(proc.stderr, true)]).catch(() => {});
  const exited = proc.exited.then(async (code) => {
    await drained;
    listened();
    return code;
  });
  const replica: Replica = {
    name,
    url: "",
    listening,
    proc,
    output: () => out,
    stderr: () => err,
    exited,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return replica;
}

/** GET /health answers 200 (the process listens); throws with its output if it exited first */
export async function waitStarted(r: Replica, timeoutMs = 60_000): Promise<void> {
  try {
    await listenedWithin(r, timeoutMs);
    await waitHealthy(r.url, r.proc, timeoutMs);
  } catch (e) {
    throw new Error(`replica ${r.name} did not start: ${e}\n${r.output().slice(-3000)}`);
  }
}

/** GET /ready answers 200 within the deadline (polled; the process must stay alive meanwhile) */
export async function waitReady(r: Replica, timeoutMs = 60_000): Promise<void> {
  let last = "";
  try {
    await listenedWithin(r, timeoutMs);
    await until(
      `replica ${r.name} ready`,
      async () => {
        if (r.proc.exitCode !== null) throw new Error(`replica ${r.name} exited with ${r.proc.exitCode}`);
        const res = await fetch(`${r.url}/ready`, { signal: AbortSignal.timeout(5_000) }).catch((e) => e as Error);
        if (res instanceof Error) return (last = String(res)), false;
        last = `${res.status} ${await res.text()}`;
        return res.status === 200;
      },
      timeoutMs,
    );
  } catch (e) {
    throw new Error(`${e} (last /ready: ${last})\n${r.output().slice(-3000)}`);
  }
}

/** `r.listening` within the deadline; throws if the replica exited without listening */
async function listenedWithin(r: Replica, timeoutMs: number): Promise<void> {
  let timer: Timer | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`replica ${r.name} did not listen within ${timeoutMs} ms`)), timeoutMs)));
  try {
    await Promise.race([r.listening, late]);
  } finally {
    clearTimeout(timer);
  }
  if (!r.url) throw new Error(`replica ${r.name} exited with ${r.proc.exitCode} before listening`);
}

/** Start `n` replicas at once on one database; resolves when all are ready. */
export async function startReplicas(n: number, env: Record<string, string>): Promise<Replica[]> {
  const replicas = await Promise.all(Array.from({ length: n }, (_, i) => spawnReplica("ABCDEFGH"[i]!, env)));
  try {
    await Promise.all(replicas.map((r) => waitReady(r, 90_000)));
  } catch (e) {
    await Promise.all(replicas.map((r) => r.stop()));
    throw e;
  }
  return replicas;
}

/** Poll `probe` until it returns true or the deadline passes (then throws naming `what`). */
export async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await Bun.sleep(25);
  }
}

/** A JSON API call with a bearer token, bounded in time (a hang is a failure, not a stuck test). */
export async function call(base: string, method: string, path: string, bearer: string, json?: unknown, timeoutMs = 15_000): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
    body: json === undefined ? undefined : JSON.stringify(json),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await r.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {}
  return { status: r.status, body, headers: r.headers };
}
