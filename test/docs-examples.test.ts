/**
 * The guides' curl examples are run, as written, against a real gateway: each ```sh block preceded
 * by a marker line
 *     <!-- check: 201 save=PROMPT_ID:id -->
 * is executed by bash with `localhost:8080` pointing at a test gateway (fake upstreams on loopback,
 * the fake MCP server at `localhost:3001`), `$TOKEN` a WorkspaceAdmin token of tenant `acme` and
 * `$VIEWER` a ViewMetrics-only token of the same tenant; the HTTP status of its curl must be the
 * marked one, and `save=NAME:json.path` hands a field of the answer to later blocks of the same
 * guide as `$NAME` (the guides say where an id comes from). A marked block that stops matching the
 * code (a renamed field, a new required property, a changed status) fails here. DOCS_DUMP=1 prints
 * every example's status and the start of its answer (for writing the `# ->` comments).
 *
 * Also the README as a newcomer reads it: at most 200 lines, the two command lines CI runs, a link to
 * every guide, no spec section numbers in user-facing docs; and the README's credential line run for
 * real: `KEY=$(npm start --silent -- keys create ...)` captures the key alone while `npm start` serves,
 * and the start-up log ends with the next steps (the /docs URL and that same command).
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { startGateway, type TestGateway } from "./helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream/server";
import { startFakeMcpServer, type FakeMcpServer } from "./mcp/fake-server";
import { waitHealthy, ROOT } from "../scripts/bench/harness";
import { listening } from "./helpers/listening";

export const GUIDES = ["proxies-and-cache.md", "prompts-and-chains.md", "memory.md", "mcp.md", "identity.md", "operations.md"];

export interface Example {
  file: string;
  line: number;
  status: number;
  saves: { name: string; path: string }[];
  script: string;
}

/** Every marked ```sh block of a markdown text. */
export function examplesOf(file: string, text: string): Example[] {
  const lines = text.split("\n");
  const out: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^<!--\s*check:\s*(\d{3})((?:\s+save=\w+:[\w.\[\]]+)*)\s*-->$/.exec(lines[i]!.trim());
    if (!m) continue;
    if (!/^```(sh|bash)\s*$/.test(lines[i + 1] ?? "")) throw new Error(`${file}:${i + 1}: a check marker must be followed by a \`\`\`sh block`);
    const end = lines.indexOf("```", i + 2);
    if (end < 0) throw new Error(`${file}:${i + 1}: unterminated block`);
    const saves = [...m[2]!.matchAll(/save=(\w+):([\w.\[\]]+)/g)].map((s) => ({ name: s[1]!, path: s[2]! }));
    out.push({ file, line: i + 2, status: Number(m[1]), saves, script: lines.slice(i + 2, end).join("\n") });
    i = end;
  }
  return out;
}

function pick(body: unknown, path: string): unknown {
  let v: any = body;
  for (const part of path.replace(/\[(\d+)\]/g, ".$1").split(".")) v = v?.[part];
  return v;
}

const read = (name: string) => readFileSync(join(ROOT, name), "utf8");

describe("the guides' marked curl examples against a test gateway", () => {
  let upstream: FakeUpstream;
  let mcp: FakeMcpServer;
  let gw: TestGateway;
  let work: string;
  const env: Record<string, string> = {};

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    mcp = startFakeMcpServer();
    const base = { base_url: upstream.url };
    gw = await startGateway({
      providers: { openai: base, anthropic: base, gemini: base, cohere: base },
      outbound: { allow_private: true },
    });
    // the local embedding model loads in the background: the semantic cache answers once /ready says so
    const deadline = Date.now() + 60_000;
    while ((await fetch(gw.url + "/ready")).status !== 200) {
      if (Date.now() > deadline) throw new Error("gateway not ready within 60 s");
      await Bun.sleep(100);
    }
    work = mkdtempSync(join(tmpdir(), "svc-docs-"));
    env.TOKEN = await gw.token("acme", ["WorkspaceAdmin"]);
    env.VIEWER = await gw.token("acme", ["ViewMetrics"]);
    env.KEY = (await gw.ctx.identity.keys.create("acme", { name: "docs", permissions: ["ViewMetrics"] })).key;
  }, 90_000);
  afterAll(async () => {
    await gw?.stop();
    await upstream?.stop();
    mcp?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  async function run(ex: Example, vars: Record<string, string>) {
    const host = new URL(gw.url).host;
    const script = ex.script.replaceAll("localhost:8080", host).replaceAll("localhost:3001", new URL(mcp.url).host);
    const out = join(work, "body");
    const codes = join(work, "codes");
    writeFileSync(codes, "");
    // the marked block runs as written; curl's status line goes to a side file, the body to another
    const prelude = `curl() { command curl -sS -o "${out}" -w '%{http_code}\\n' "$@" >> "${codes}"; }\nset -e\n`;
    const p = Bun.spawn(["bash", "-c", prelude + script], { cwd: work, env: { PATH: process.env.PATH!, HOME: work, ...env, ...vars }, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = [await new Response(p.stdout).text(), await new Response(p.stderr).text(), await p.exited];
    const statuses = readFileSync(codes, "utf8").trim().split("\n").filter(Boolean).map(Number);
    let body: unknown = undefined;
    const text = (() => {
      try {
        return readFileSync(out, "utf8");
      } catch {
        return "";
      }
    })();
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return { code, stdout, stderr, statuses, body, text };
  }

  test("README: the first request with each SDK runs as written (the four SDKs, unchanged, against the gateway)", async () => {
    const code = /## First request with each SDK[\s\S]*?```ts\n([\s\S]*?)```/.exec(read("README.md"))?.[1];
    expect(code).toBeDefined();
    // a module next to the project's node_modules, so the SDK imports resolve as in a user's project
    const dir = mkdtempSync(join(tmpdir(), "svc-readme-sdk-"));
    try {
      symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
      writeFileSync(join(dir, "first-request.ts"), code!.replaceAll("http://localhost:8080", gw.url));
      const p = Bun.spawn([process.execPath, "first-request.ts"], { cwd: dir, env: { PATH: process.env.PATH!, HOME: dir, KEY: env.KEY! }, stdout: "pipe", stderr: "pipe" });
      const [out, err, exit] = [await new Response(p.stdout).text(), await new Response(p.stderr).text(), await p.exited];
      expect({ exit, err: err.slice(0, 500) }).toEqual({ exit: 0, err: "" });
      // each SDK printed the fake upstream's answer to its question
      const lines = out.trim().split("\n");
      expect(lines).toHaveLength(4);
      expect(lines[0]).toMatch(/^answer #\d+: What is the capital of France\?$/);
      for (const l of lines.slice(1)) expect(l).toMatch(/^answer #\d+: Hi$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  for (const guide of GUIDES) {
    test(`docs/${guide}: every marked example answers the status it shows`, async () => {
      const examples = examplesOf(guide, read(join("docs", guide)));
      expect(examples.length).toBeGreaterThanOrEqual(5);
      const vars: Record<string, string> = {};
      for (const ex of examples) {
        const r = await run(ex, vars);
        const where = `${ex.file}:${ex.line}`;
        expect({ where, exit: r.code, stderr: r.stderr.slice(0, 300) }).toEqual({ where, exit: 0, stderr: "" });
        const answer = r.text.slice(0, 400);
        if (process.env.DOCS_DUMP) console.log(where, r.statuses, answer);
        expect({ where, statuses: r.statuses, answer: r.statuses[0] === ex.status ? "" : answer }).toEqual({ where, statuses: [ex.status], answer: "" });
        for (const s of ex.saves) {
          const v = pick(r.body, s.path);
          expect({ where, [s.name]: typeof v, answer: typeof v === "string" ? "" : answer }).toEqual({ where, [s.name]: "string", answer: "" });
          vars[s.name] = String(v);
        }
      }
    }, 120_000);
  }
});

describe("README as a newcomer reads it", () => {
  const readme = read("README.md");

  test("at most 200 lines, the two command lines CI runs, a link to every guide", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(200);
    expect(readme).toContain("npm install && npm start");
    expect(readme).toContain("npm install && npm test");
    for (const g of GUIDES) expect(readme).toContain(`(docs/${g})`);
    for (const g of GUIDES) expect(readdirSync(join(ROOT, "docs"))).toContain(g);
  });

  test("user-facing docs name no section of the specification", () => {
    for (const name of ["README.md", ...GUIDES.map((g) => join("docs", g)), "docs/cache-model.md", "docs/benchmarks.md", "docs/layout.md"]) {
      const text = read(name);
      expect({ name, refs: text.match(/§\s*\d[\d.]*|\bdoc[123]\b/gi) ?? [] }).toEqual({ name, refs: [] });
    }
  });
});

// the README's own lines, run as a newcomer would: npm start, then the credential line in another shell
describe("npm start, then the README's credential line", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-readme-"));
  let proc: Subprocess<"ignore", "pipe", "pipe">;
  let url = "";
  const lines: any[] = [];
  const path = `${join(ROOT, "node_modules/.bin")}:${process.env.PATH}`;
  const env = () => ({ ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_") && !k.startsWith("npm_"))), PATH: path, SVC_STORAGE__PATH: join(dir, "svc.db") });

  beforeAll(async () => {
    proc = Bun.spawn(["npm", "start"], {
      cwd: ROOT,
      // port 0: the server binds a port of its own and names it in its "svc listening" line (npm's stdout)
      env: { ...env(), SVC_SERVER__HOST: "127.0.0.1", SVC_SERVER__PORT: "0", SVC_SERVER__REQUEST_LOG: "false" },
      stdout: "pipe",
      stderr: "pipe",
    });
    // the start-up log up to the end of its "next steps" line (npm's own banner lines are not JSON)
    const started = await listening(proc, 60_000, (log) => /"msg":"next steps".*\n/.test(log));
    if (!started.url) throw new Error(`npm start exited (${await proc.exited}) before it listened: ${await new Response(proc.stderr).text()}`);
    url = started.url;
    await waitHealthy(url, proc, 60_000);
    for (const line of started.log().split("\n").slice(0, -1)) if (line.startsWith("{")) lines.push(JSON.parse(line));
  }, 90_000);
  afterAll(async () => {
    proc?.kill("SIGTERM");
    await proc?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  test("the start-up log ends with the next steps: the /docs URL and the command that mints a first credential", async () => {
    const last = lines.at(-1);
    expect(last.msg).toBe("next steps");
    expect(last.docs).toBe(`${url}/docs`);
    expect((await fetch(last.docs)).status).toBe(200);
    expect(last.credential).toContain("npm start --silent -- keys create");
    // a dashboard is named only when a route serves it
    if (last.dashboard) expect((await fetch(last.dashboard)).status).toBe(200);
  });

  test("KEY=$(npm start --silent -- keys create ...) captures the key alone, and the key works", async () => {
    const block = /```sh\n([^`]*KEY=\$\(npm start --silent -- keys create[^`]*)```/.exec(readme())?.[1];
    expect(block).toBeDefined();
    const line = block!.split("\n").find((l) => l.startsWith("KEY=$("))!;
    const p = Bun.spawn(["bash", "-c", `${line}\nprintf '%s' "$KEY"`], { cwd: ROOT, env: env(), stdout: "pipe", stderr: "pipe" });
    const key = await new Response(p.stdout).text();
    expect(await p.exited).toBe(0);
    expect(key).toMatch(/^svc_[A-Za-z0-9_-]+$/);
    const r = await fetch(`${url}/api/v1/cache/stats`, { headers: { authorization: `Bearer ${key}` } });
    expect(r.status).toBe(200);
  }, 60_000);

  function readme() {
    return read("README.md");
  }
});
