/**
 * One data directory, whatever the working directory: the real process started in directory A logs
 * its resolved absolute data path and each provider's effective base URL; the CLI run from
 * directory B refuses (naming SVC_STORAGE__PATH, creating nothing) instead of minting tokens with a
 * fresh secret or writing keys into a fresh database, and with SVC_STORAGE__PATH pointing at A's
 * database its tokens and keys are accepted by the running server. Plus `--version` and per-command
 * `--help`.
 */
import { describe, expect, test, afterAll, beforeAll } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { waitHealthy, ROOT } from "../../scripts/bench/harness";
import { listening } from "../helpers/listening";
import pkg from "../../package.json";

const BUN = process.execPath;
const MAIN = join(ROOT, "src/main.ts");
// an environment without any SVC_* setting of the test runner
const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_")));

const cli = (cwd: string, args: string[], env: Record<string, string> = {}) => {
  const p = Bun.spawnSync([BUN, MAIN, ...args], { cwd, env: { ...cleanEnv(), ...env } });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
};

describe("data directory and CLI from another directory", () => {
  const a = mkdtempSync(join(tmpdir(), "svc-dir-a-"));
  const b = mkdtempSync(join(tmpdir(), "svc-dir-b-"));
  let proc: Subprocess<"ignore", "pipe", "pipe">;
  let url = "";
  const lines: any[] = [];

  beforeAll(async () => {
    proc = Bun.spawn([BUN, MAIN], {
      cwd: a,
      // port 0: the server binds a port of its own and names it in its "svc listening" line
      env: { ...cleanEnv(), SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: "0", SVC_SERVER__REQUEST_LOG: "false", SVC_PROVIDERS__OPENAI__BASE_URL: "http://127.0.0.1:9911/v1" },
      stdout: "pipe",
      stderr: "pipe",
    });
    // the start-up log lines (JSON, stdout) up to the end of the upstreams line
    const started = await listening(proc, 45_000, (log) => /"msg":"upstreams".*\n/.test(log));
    if (!started.url) throw new Error(`svc exited (${await proc.exited}) before it listened: ${await new Response(proc.stderr).text()}`);
    url = started.url;
    await waitHealthy(url, proc);
    const log = started.log();
    lines.push(...log.split("\n").slice(0, -1).map((l) => JSON.parse(l))); // whole lines only
  }, 60_000);
  afterAll(async () => {
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  });

  test("start-up logs the resolved absolute data directory and each provider's effective base URL", () => {
    const data = lines.find((l) => l.msg === "data directory");
    expect(data).toMatchObject({ directory: join(a, "data"), database: join(a, "data", "svc.db"), jwt_secret: join(a, "data", "jwt-secret"), cache_index: join(a, "data", "cache-index") });
    const up = lines.find((l) => l.msg === "upstreams");
    expect(up.providers).toEqual({ openai: "http://127.0.0.1:9911", anthropic: "https://api.anthropic.com", gemini: "https://generativelanguage.googleapis.com", cohere: "https://api.cohere.com" });
    expect(up.keys.openai).toBe("none (callers' own keys only)");
    expect(up.embedding).toBe("local model");
    expect(existsSync(join(a, "data", "jwt-secret"))).toBe(true);
  }, 60_000);

  test("from another directory, commands that need the gateway's state refuse, name SVC_STORAGE__PATH and create nothing", () => {
    for (const args of [["token", "--tenant", "t1"], ["keys", "list", "--tenant", "t1"], ["keys", "revoke", "--tenant", "t1", "--id", "x"], ["keys", "create", "--tenant", "t1", "--name", "n"]]) {
      const r = cli(b, args);
      expect(`${args.join(" ")}: ${r.code}`).toBe(`${args.join(" ")}: 66`);
      expect(r.stderr).toContain("SVC_STORAGE__PATH");
      expect(r.stderr).toContain(join(b, "data"));
      expect(r.stdout).toBe("");
    }
    expect(readdirSync(b)).toEqual([]);
  }, 60_000);

  test("with SVC_STORAGE__PATH naming the gateway's database, the token and the key minted from elsewhere are accepted by the running server", async () => {
    const env = { SVC_STORAGE__PATH: join(a, "data", "svc.db") };
    const token = cli(b, ["token", "--tenant", "t1", "--permissions", "ViewMetrics"], env);
    expect(token.code).toBe(0);
    const byToken = await fetch(`${url}/api/v1/usage`, { headers: { authorization: `Bearer ${token.stdout.trim()}` } });
    expect(byToken.status).toBe(200);

    const key = cli(b, ["keys", "create", "--tenant", "t1", "--name", "from-b", "--permissions", "ViewMetrics"], env);
    expect(key.code).toBe(0);
    const byKey = await fetch(`${url}/api/v1/usage`, { headers: { authorization: `Bearer ${key.stdout.trim()}` } });
    expect(byKey.status).toBe(200);
    const listed = JSON.parse(cli(b, ["keys", "list", "--tenant", "t1"], env).stdout);
    expect(listed.map((k: any) => k.name)).toEqual(["from-b"]);
    expect(readdirSync(b)).toEqual([]);
    // a token signed with another secret is refused: what the refusal above prevents
    const other = cli(b, ["token", "--tenant", "t1", "--permissions", "ViewMetrics"], { SVC_AUTH__JWT_SECRET: "another-secret-another-secret" });
    expect((await fetch(`${url}/api/v1/usage`, { headers: { authorization: `Bearer ${other.stdout.trim()}` } })).status).toBe(401);
  }, 60_000);
});

describe("--version and per-command --help", () => {
  test("--version prints the package version", () => {
    for (const flag of ["--version", "-v"]) {
      const r = cli(tmpdir(), [flag]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`svc ${pkg.version}\n`);
    }
  }, 60_000);
  test("each command has its own help; no command runs and nothing is created", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-help-"));
    try {
      const token = cli(dir, ["token", "--help"]);
      expect(token.code).toBe(0);
      expect(token.stdout).toStartWith("svc token — print a signed access token");
      expect(token.stdout).toContain("--ttl");
      const keys = cli(dir, ["keys", "--help"]);
      expect(keys.stdout).toStartWith("svc keys — manage API keys");
      expect(keys.stdout).toContain("svc keys revoke --tenant T --id ID");
      expect(cli(dir, ["help", "keys"]).stdout).toBe(keys.stdout);
      expect(cli(dir, ["serve", "-h"]).stdout).toStartWith("svc serve — start the gateway");
      const general = cli(dir, ["--help"]);
      expect(general.stdout).toContain("svc --version");
      expect(general.stdout).toContain("svc <command> --help");
      const unknown = cli(dir, ["keys", "rotate", "--tenant", "t"]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('unknown keys subcommand "rotate"');
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
