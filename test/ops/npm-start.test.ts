/**
 * `npm start` as a service manager runs it: SIGTERM to the npm process reaches the server (the
 * script execs bun, so no shell is left between npm and the server), which stops gracefully and
 * exits; nothing keeps answering on the port. (The clean-clone production install is
 * scripts/production-install-check.sh: it downloads from the registry.) The server picks its own port
 * (port 0) and says which in its "svc listening" line, which reaches npm's stdout.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitHealthy, ROOT } from "../../scripts/bench/harness";
import { listening } from "../helpers/listening";

test("SIGTERM to `npm start` stops the server", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-npm-start-"));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_") && !k.startsWith("npm_")));
  const npm = Bun.spawn(["npm", "start", "--silent"], {
    cwd: ROOT,
    env: { ...env, PATH: `${join(ROOT, "node_modules/.bin")}:${process.env.PATH}`, SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: "0", SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_SERVER__REQUEST_LOG: "false" },
    stdout: "pipe",
    stderr: "pipe",
  });
  try {
    const started = await listening(npm, 30_000);
    if (!started.url) throw new Error(`npm start exited (${await npm.exited}) before it listened: ${await new Response(npm.stderr).text()}`);
    const url = started.url;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/); // the port it bound, not 0
    await waitHealthy(url, npm, 30_000);
    npm.kill("SIGTERM");
    const code = await npm.exited;
    expect(code).toBe(0);
    const log = await started.ended;
    expect(log).toContain('"msg":"shutting down","signal":"SIGTERM"');
    const after = await fetch(`${url}/health`).then(
      (r) => r.status,
      () => "refused",
    );
    expect(after).toBe("refused");
  } finally {
    if (npm.exitCode === null) npm.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
