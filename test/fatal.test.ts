/**
 * Fatal errors in the production server (`bun src/main.ts serve`, src/core/fatal.ts): an error that
 * escapes every handler is logged as one structured JSON line on stdout; an unhandled rejection
 * leaves the gateway serving, an uncaught exception stops it with exit code 1 (docs/decisions.md).
 * The error is injected by a preload (test/fixtures/fatal-trigger.ts) on SIGUSR2.
 */
import { describe, expect, test, afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { TEST_JWT_SECRET } from "./helpers/gateway";

const ROOT = resolve(import.meta.dir, "..");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function startGatewayProcess(mode: "rejection" | "exception") {
  const dir = mkdtempSync(join(tmpdir(), "svc-fatal-"));
  dirs.push(dir);
  const proc = Bun.spawn([process.execPath, "--preload", "./test/fixtures/fatal-trigger.ts", "src/main.ts", "serve"], {
    cwd: ROOT,
    env: {
      ...process.env,
      SVC_TEST_FATAL: mode,
      SVC_SERVER__HOST: "127.0.0.1",
      SVC_SERVER__PORT: "0",
      SVC_SERVER__REQUEST_LOG: "false",
      SVC_SERVER__SHUTDOWN_TIMEOUT_MS: "2000",
      SVC_STORAGE__PATH: join(dir, "svc.db"),
      SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  // drain stdout continuously into parsed JSON lines
  const lines: Array<Record<string, unknown>> = [];
  void (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of proc.stdout) {
      buf += dec.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          lines.push(JSON.parse(line));
        } catch {
          lines.push({ raw: line });
        }
      }
    }
  })();
  void new Response(proc.stderr).text(); // drained, not needed
  const waitFor = async (pred: (l: Record<string, unknown>) => boolean, ms = 20_000) => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      const hit = lines.find(pred);
      if (hit) return hit;
      await Bun.sleep(20);
    }
    throw new Error(`no matching log line; got ${JSON.stringify(lines)}`);
  };
  const listening = await waitFor((l) => l.msg === "svc listening");
  return { proc, lines, waitFor, url: String(listening.url) };
}

describe("fatal errors in `svc serve`", () => {
  test("unhandled rejection: logged as JSON, the gateway keeps serving", async () => {
    const gw = await startGatewayProcess("rejection");
    try {
      gw.proc.kill("SIGUSR2");
      const line = await gw.waitFor((l) => l.level === "fatal");
      expect(line).toMatchObject({ level: "fatal", kind: "unhandledRejection", error: "Error: probe rejection" });
      expect(String(line.stack)).toContain("fatal-trigger.ts");
      expect(typeof line.time).toBe("string");
      const r = await fetch(`${gw.url}/health`);
      expect(r.status).toBe(200);
      expect(gw.proc.exitCode).toBeNull();
    } finally {
      gw.proc.kill("SIGTERM");
      expect(await gw.proc.exited).toBe(0);
    }
  }, 60_000);

  test("uncaught exception: logged as JSON, graceful stop, exit code 1", async () => {
    const gw = await startGatewayProcess("exception");
    gw.proc.kill("SIGUSR2");
    const code = await Promise.race([gw.proc.exited, Bun.sleep(15_000).then(() => "timeout" as const)]);
    if (code === "timeout") gw.proc.kill("SIGKILL");
    expect(code).toBe(1);
    const fatal = gw.lines.filter((l) => l.level === "fatal");
    expect(fatal[0]).toMatchObject({ level: "fatal", kind: "uncaughtException", error: "Error: probe exception" });
    expect(String(fatal[0]!.stack)).toContain("fatal-trigger.ts");
  }, 60_000);
});
