/**
 * A throwaway Redis for tests and benches: Debian's `redis-server` (7.x) on a free loopback port,
 * no persistence, its own temporary directory, ready once it answers PING, removed at stop.
 * When `redis-server` is missing: installed with apt-get if running as root, otherwise an error
 * naming the command to run (a test that needs Redis fails; it is never skipped).
 */
import { RedisClient, type Subprocess } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const INSTALL_REDIS = "apt-get update && apt-get install -y redis-server";

async function freePort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const p = s.port!;
  s.stop(true);
  return p;
}

/** The redis-server binary, installed when missing and possible (`o`: the PATH searched and whether we are root, for tests). */
export function redisServerBinary(o: { path?: string; root?: boolean } = {}): string {
  let bin = Bun.which("redis-server", o.path === undefined ? undefined : { PATH: o.path });
  if (bin) return bin;
  if (o.root ?? process.getuid?.() === 0) {
    const r = Bun.spawnSync(["sh", "-c", `${INSTALL_REDIS} >/dev/null 2>&1`]);
    bin = Bun.which("redis-server") ?? Bun.which("redis-server", { PATH: "/usr/bin:/usr/sbin:/bin" });
    if (r.exitCode === 0 && bin) return bin;
  }
  throw new Error(`redis-server is not installed; these tests need a real Redis: run \`${INSTALL_REDIS}\` (as root)`);
}

/** servers still running when the test process exits (a crash, a failed beforeAll) are killed with it */
const running = new Map<Subprocess, string>();
process.on("exit", () => {
  for (const [p, dir] of running) {
    p.kill(9);
    rmSync(dir, { recursive: true, force: true });
  }
});

export class TestRedis {
  private proc?: Subprocess;
  readonly dir = mkdtempSync(join(tmpdir(), "svc-redis-"));
  port = 0;

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<TestRedis> {
    const r = new TestRedis();
    r.port = await freePort();
    await r.spawn();
    return r;
  }

  /** (Re)start the server on the same port; resolves once it answers PING. */
  async spawn(timeoutMs = 15_000) {
    const bin = redisServerBinary();
    this.proc = Bun.spawn([bin, "--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", this.dir], {
      stdout: "ignore",
      stderr: "pipe",
    });
    running.set(this.proc, this.dir);
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.proc.exitCode !== null) throw new Error(`redis-server exited with ${this.proc.exitCode}: ${await new Response(this.proc.stderr as ReadableStream).text()}`);
      if (await this.ping()) return;
      if (performance.now() > deadline) throw new Error(`redis-server did not answer PING within ${timeoutMs} ms`);
      await Bun.sleep(20);
    }
  }

  private async ping(): Promise<boolean> {
    const c = new RedisClient(this.url, { autoReconnect: false, connectionTimeout: 500, enableOfflineQueue: false });
    try {
      await c.connect();
      return (await c.send("PING", [])) === "PONG";
    } catch {
      return false;
    } finally {
      c.close();
    }
  }

  /** One command on a fresh connection (FLUSHALL, inspection). */
  async command(cmd: string, args: string[] = []): Promise<unknown> {
    const c = new RedisClient(this.url, { autoReconnect: false, connectionTimeout: 2_000 });
    try {
      await c.connect();
      return await c.send(cmd, args);
    } finally {
      c.close();
    }
  }

  /** Freeze / thaw the server (SIGSTOP / SIGCONT): connections stay open, nothing answers. */
  pause() {
    this.proc?.kill("SIGSTOP");
  }
  resume() {
    this.proc?.kill("SIGCONT");
  }

  /** Kill the server (SIGKILL: an outage, not a shutdown). */
  async kill() {
    if (!this.proc) return;
    this.proc.kill(9);
    await this.proc.exited;
    running.delete(this.proc);
    this.proc = undefined;
  }

  async stop() {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
