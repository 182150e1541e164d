/**
 * The single binary (CONTRACT.md: `npm run build` -> dist/svc that runs when copied alone).
 * Builds with scripts/build.ts into a temp dir, copies the executable alone to another temp dir
 * and runs it there. Where the test may create a mount namespace (root + unshare), the project's
 * node_modules and src are hidden from the binary so that any lookup of a build-time path fails.
 * Slow (~30 s on 2 cores): builds two executables and loads the embedding model once. Runs in CI.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { mkdtempSync, rmSync, copyFileSync, chmodSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBinary } from "../scripts/build";
import { ROOT } from "../scripts/bench/harness";
import { listening } from "./helpers/listening";
import { TokenService } from "../src/core/auth";
import { vocabularySize, wordWeight } from "../src/cache/verify/index";
import { PROBE_WORDS } from "./fixtures/build-probe";

const SECRET = "build-test-secret-build-test-secret";
const work = mkdtempSync(join(tmpdir(), "svc-build-"));
const runDir = join(work, "elsewhere");
const empty = join(work, "empty");
let isolate = false;

/** argv that runs `bin` with the project's node_modules and src hidden (when possible). */
function isolated(bin: string, args: string[] = []): string[] {
  if (!isolate) return [bin, ...args];
  const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
  return ["unshare", "-m", "sh", "-c", `mount --bind ${q(empty)} ${q(join(ROOT, "node_modules"))} && mount --bind ${q(empty)} ${q(join(ROOT, "src"))} && exec ${[bin, ...args].map(q).join(" ")}`];
}

async function run(argv: string[], env: Record<string, string>) {
  const p = Bun.spawn(argv, { cwd: runDir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: runDir, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

beforeAll(async () => {
  mkdirSync(runDir, { recursive: true });
  mkdirSync(empty, { recursive: true });
  const probe = Bun.spawnSync(["unshare", "-m", "sh", "-c", `mount --bind ${empty} ${join(ROOT, "node_modules")} && test ! -e ${join(ROOT, "node_modules", "elysia")}`]);
  isolate = probe.exitCode === 0;
  if (!isolate) console.warn("build.test: cannot create a mount namespace here; running the copied binary without hiding node_modules");
  const svc = await buildBinary({ outfile: join(work, "out", "svc") });
  copyFileSync(svc, join(runDir, "svc"));
  chmodSync(join(runDir, "svc"), 0o755);
  const probeBin = await buildBinary({ entry: "test/fixtures/build-probe.ts", outfile: join(work, "out", "probe") });
  copyFileSync(probeBin, join(runDir, "probe"));
  chmodSync(join(runDir, "probe"), 0o755);
  rmSync(join(work, "out"), { recursive: true, force: true }); // nothing but the copies remain
}, 180_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("dist/svc copied alone", () => {
  test("serves /health, exchanges a key made by `svc keys create`, accepts a `svc token` token, exits 0 on SIGTERM", async () => {
    const env = { SVC_STORAGE__PATH: join(runDir, "data", "svc.db"), SVC_AUTH__JWT_SECRET: SECRET, SVC_SERVER__REQUEST_LOG: "false" };

    const help = await run(isolated("./svc", ["--help"]), env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("svc keys create");

    const keys = await run(isolated("./svc", ["keys", "create", "--tenant", "bin-t", "--name", "ci", "--permissions", "ViewMetrics"]), env);
    expect(keys.code).toBe(0);
    const apiKey = keys.stdout.trim();
    expect(apiKey).toMatch(/^svc_[A-Za-z0-9_-]{40,}$/);
    expect(keys.stderr).toContain("shown only once");

    const tok = await run(isolated("./svc", ["token", "--tenant", "bin-t", "--permissions", "ViewMetrics,ManageConfig", "--ttl", "1h"]), env);
    expect(tok.code).toBe(0);
    const token = tok.stdout.trim();
    const p = await new TokenService(SECRET).verify(token);
    expect(p.tenantId).toBe("bin-t");
    expect([...p.permissions].sort()).toEqual(["ManageConfig", "ViewMetrics"]);

    const bad = await run(isolated("./svc", ["token"]), env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("--tenant is required");
    const badCfg = await run(isolated("./svc", ["token", "--tenant", "x"]), { ...env, SVC_SERVER__PORT: "nope" });
    expect(badCfg.code).toBe(78);
    expect(badCfg.stderr).toContain("SVC_SERVER__PORT");

    // port 0: the binary binds a port of its own and names it in its "svc listening" line (stdout)
    const proc = Bun.spawn(isolated("./svc"), {
      cwd: runDir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env, SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: "0" },
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const url = (await listening(proc, 30_000)).url;
      if (!url) throw new Error(`dist/svc exited (${await proc.exited}) before it listened: ${await new Response(proc.stderr).text()}`);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/); // the port it bound, not 0
      const h = await fetch(`${url}/health`);
      expect(h.status).toBe(200);
      expect(await h.json()).toEqual({ status: "ok" });
      const ex = await fetch(`${url}/api/v1/auth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ apiKey }) });
      expect(ex.status).toBe(200);
      const tiers = await fetch(`${url}/api/v1/rate-limits/tiers`, { headers: { authorization: `Bearer ${token}` } });
      expect(tiers.status).toBe(200);
      expect(((await tiers.json()) as any).tiers.length).toBe(3);
      const docs = await fetch(`${url}/docs/assets/swagger-ui-bundle.js`);
      expect(docs.status).toBe(200);
      await docs.arrayBuffer();
      // the dashboard's page and bundle are embedded in the binary (no file read at run time)
      const ui = await fetch(`${url}/ui/`);
      expect(ui.status).toBe(200);
      expect(await ui.text()).toContain("app.js");
      const uiJs = await fetch(`${url}/ui/app.js`);
      expect(uiJs.status).toBe(200);
      expect((await uiJs.text()).length).toBeGreaterThan(10_000);
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
    } finally {
      if (proc.exitCode === null) proc.kill("SIGKILL");
    }
  }, 60_000);

  test("usearch's native addon, the embedding model (weights, TF.js wasm, native kernel) and its worker are embedded", async () => {
    for (const worker of ["1", "0"]) {
      const r = await run(isolated("./probe"), { PROBE_WORKER: worker });
      // on failure, the probe's own error (its stderr's end) is what the diff shows
      expect(r.stderr.slice(-1500)).toBe(r.code === 0 ? r.stderr.slice(-1500) : "<probe failed>");
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
      expect(out).toMatchObject({ usearch: 1, dims: 512, nearest: 1, worker: worker === "1" });
      expect(out.similarity).toBeGreaterThan(0.7); // a paraphrase, embedded by the real model
      // with the native kernel embedded in the binary and loaded from there (node_modules and the
      // checkout's build/ are not where the copy runs; the library's path is the binary's own)
      expect(out.backend).toMatch(/^ts\+native-i16\((avx512-vnni|avx2)\)$/);
      // the learned hit decision's weights are in the binary too (a JSON import) and score the pair
      expect(out.learnedModel).toBe("local:use-lite-512");
      expect(out.learned).toBeGreaterThan(0);
      expect(out.learned).toBeLessThan(1);
      // the surface match's English word list is in the binary: a misspelt word is a typo, a real word for another is not
      expect(out.typo).toBe("surface-typo");
      expect(out.realWordSwap).toBeNull();
      expect(out.knownWord).toBe(true);
      // the SQLite writer thread's entry is in the binary: a write batch is committed by its own connection
      expect(out.writerThread).toBe(true);
      // and the embedding adapter's (a JSON import): it changes the pair's cosine
      expect(out.adapter).toMatch(/^local:use-lite-512\+adapter-[0-9a-f]{12}$/);
      expect(out.adaptedSimilarity).toBeGreaterThan(0.5);
      expect(Math.abs(out.adaptedSimilarity - out.similarity)).toBeGreaterThan(1e-4);
      // the cache's word weights read the model's vocabulary in the binary (a path, not parsed JSON):
      // the same table as under bun (before, the compiled table was empty and every word weighed 1)
      expect(out.vocabularyWords).toBe(vocabularySize());
      expect(out.weights).toEqual(PROBE_WORDS.map(([w, s]) => wordWeight(w, s)));
    }
  }, 60_000);
});
