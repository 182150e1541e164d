#!/usr/bin/env bun
/**
 * Which bundled modules cost the start-up: bundles the start-up profiler's entry
 * (scripts/bench/startup-profile-entry.ts: listen, the app's modules, createApp) with the
 * executable's bundler settings but unminified, wraps every lazily evaluated module of the bundle
 * (the bundler's __esm / __commonJS initialisers) with a CPU timer, runs it once per --runs on a
 * new data directory and prints the modules and packages with the most CPU of their own
 * (evaluation minus the modules they import), medians in ms.
 *
 *   bun scripts/bench/startup-modules.ts [--runs 5] [--top 30]
 *
 * Not the executable itself (no bytecode, so each module's parse is counted too): use it to find
 * what to load lazily, and startup-profile.ts / startup.ts for the figures.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { embedRuntimeFiles } from "../build";
import { median } from "./harness";

const ROOT = resolve(import.meta.dir, "../..");
const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: "string", default: "5" }, top: { type: "string", default: "30" } } });

const out = mkdtempSync(join(tmpdir(), "svc-modules-"));
try {
  const built = await Bun.build({
    entrypoints: [join(ROOT, "scripts/bench/startup-profile-entry.ts")],
    outdir: out,
    target: "bun",
    format: "esm",
    root: ROOT,
    plugins: [embedRuntimeFiles],
    loader: { ".wasm": "file" },
  });
  if (!built.success) throw new Error(built.logs.join("\n"));
  const file = built.outputs.find((o) => o.path.endsWith("startup-profile-entry.js"))!.path;
  // each module of the bundle follows a "// <path>" comment; its initialiser is `var init_x = __esm(` or `var require_x = __commonJS(`
  let name = "?";
  const lines = (await Bun.file(file).text()).split("\n").map((line) => {
    const comment = /^\/\/ (\S+)$/.exec(line);
    if (comment) name = comment[1]!;
    return line.replace(/^((?:var|let|const) (?:init|require)_\w+ = )__(esm|commonJS)\(/, (_m, head: string, kind: string) => `${head}__timed(${JSON.stringify(name)}, __${kind})(`);
  });
  const prelude = `
var __cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
var __stack = [], __times = new Map();
var __timed = (name, helper) => (...args) => { const init = helper(...args); return (...a) => {
  const t0 = __cpu(); __stack.push(0);
  try { return init(...a); } finally {
    const dt = __cpu() - t0, inner = __stack.pop();
    if (__stack.length) __stack[__stack.length - 1] += dt;
    const r = __times.get(name) ?? { self: 0, total: 0 }; r.self += dt - inner; r.total += dt; __times.set(name, r);
  } } };
process.on("exit", () => process.stderr.write("\\n@@modules " + JSON.stringify([...__times]) + "\\n"));
`;
  lines.splice(1, 0, prelude);
  await Bun.write(file, lines.join("\n"));

  const runs: Array<Map<string, { self: number; total: number }>> = [];
  for (let i = 0; i < Number(values.runs); i++) {
    const dir = mkdtempSync(join(tmpdir(), "svc-modules-run-"));
    const p = Bun.spawn([process.execPath, file], { cwd: dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, SVC_STORAGE__PATH: join(dir, "svc.db") }, stdout: "ignore", stderr: "pipe" });
    const err = await new Response(p.stderr).text();
    await p.exited;
    rmSync(dir, { recursive: true, force: true });
    const line = err.split("\n").find((l) => l.startsWith("@@modules "));
    if (!line) throw new Error(`run ${i + 1} printed no timings:\n${err.slice(-2000)}`);
    runs.push(new Map(JSON.parse(line.slice("@@modules ".length))));
  }
  const names = new Set(runs.flatMap((r) => [...r.keys()]));
  const med = (n: string, k: "self" | "total") => median(runs.map((r) => r.get(n)?.[k] ?? 0));
  const packageOf = (n: string) => {
    const parts = n.split("/");
    if (parts[0] === "node_modules") return parts[1]!.startsWith("@") ? `${parts[1]}/${parts[2]}` : parts[1]!;
    return parts.slice(0, 2).join("/");
  };
  const byPackage = new Map<string, number>();
  for (const n of names) byPackage.set(packageOf(n), (byPackage.get(packageOf(n)) ?? 0) + med(n, "self"));
  const top = Number(values.top);
  const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
  console.log(`module evaluation CPU (unminified bundle, no bytecode), ${runs.length} runs, medians in ms; all modules: ${total.toFixed(1)}`);
  console.log(`\nby package (own CPU of its modules):`);
  for (const [p, ms] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms.toFixed(2).padStart(8)}  ${p}`);
  console.log(`\nby module: own CPU, with what it imports`);
  for (const n of [...names].sort((a, b) => med(b, "self") - med(a, "self")).slice(0, top)) console.log(`${med(n, "self").toFixed(2).padStart(8)}${med(n, "total").toFixed(2).padStart(8)}  ${n}`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
