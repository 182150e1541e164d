/**
 * `npm start` as a service manager runs it: SIGTERM to the npm process reaches the server (the
 * script execs bun, so no shell is left between npm and the server), which stops gracefully and
 * exits; nothing keeps answering on the port. (The clean-clone production install is
 * scripts/production-install-check.sh: it downloads from the registry.)
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitHealthy, ROOT } from "../../scripts/bench/harness";

test("SIGTERM to `npm start` stops the server", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-npm-start-"));
  const port = await freePort();
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_") && !k.startsWith("npm_")));
  const npm = Bun.spawn(["npm", "start", "--silent"], {
    cwd: ROOT,
    env: { ...env, PATH: `${join(ROOT, "node_modules/.bin")}:${process.env.PATH}`, SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: String(port), SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_SERVER__REQUEST_LOG: "false" },
    stdout: "pipe",
    stderr: "pipe",
  });
  try {
    await waitHealthy(`http://127.0.0.1:${port}`, npm, 30_000);
    npm.kill("SIGTERM");
    const code = await npm.exited;
    expect(code).toBe(0);
    const log = await new Response(npm.stdout).text();
    expect(log).toContain('"msg":"shutting down","signal":"SIGTERM"');
    const after = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.status,
      () => "refused",
    );
    expect(after).toBe("refused");
  } finally {
    if (npm.exitCode === null) npm.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
