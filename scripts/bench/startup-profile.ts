#!/usr/bin/env bun
/**
 * Where the cold start of the single binary goes (one-off profiler, not part of the product):
 * builds scripts/bench/startup-profile-entry.ts into its own executable with the same bundler
 * settings as dist/svc (bytecode, embedded files), runs it N times and prints the median of each
 * step (ms since process start).
 *
 *   bun scripts/bench/startup-profile.ts [--runs 15] [--no-build] [--existing]
 *
 * Defaults only (no SVC_AUTH__JWT_SECRET: the secrets are generated like a user's first start);
 * --existing: every run starts on one data directory created by an unrecorded first run.
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildBinary } from "../build";

async function parent() {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: "string", default: "15" }, "no-build": { type: "boolean" }, existing: { type: "boolean" } } });
  const ROOT = resolve(import.meta.dir, "../..");
  const bin = join(ROOT, "dist/svc-profile");
  if (!values["no-build"]) await buildBinary({ entry: "scripts/bench/startup-profile-entry.ts", outfile: bin });
  const runs: Array<Array<{ what: string; at: number; step: number; cpu: number }>> = [];
  const existing = values.existing ? mkdtempSync(join(tmpdir(), "svc-prof-")) : undefined;
  for (let i = existing ? -1 : 0; i < Number(values.runs); i++) {
    const dir = existing ?? mkdtempSync(join(tmpdir(), "svc-prof-"));
    const p = Bun.spawn([bin], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_SERVER__REQUEST_LOG: "false" },
      stdout: "pipe",
      stderr: "inherit",
    });
    const text = await new Response(p.stdout).text();
    await p.exited;
    if (!existing) rmSync(dir, { recursive: true, force: true });
    if (i >= 0) runs.push(JSON.parse(text.trim().split("\n").pop()!));
  }
  if (existing) rmSync(existing, { recursive: true, force: true });
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  console.log(`start-up profile of the compiled binary, ${runs.length} runs on ${existing ? "one existing" : "a new"} data directory, medians in ms: wall time of the step, process CPU time of the step, wall time since process start`);
  console.log(`${"wall".padStart(8)}${"cpu".padStart(8)}${"at".padStart(8)}  step`);
  for (let i = 0; i < runs[0]!.length; i++) {
    const col = (k: "step" | "cpu" | "at") => med(runs.map((r) => r[i]![k])).toFixed(2).padStart(8);
    console.log(`${col("step")}${col("cpu")}${col("at")}  ${runs[0]![i]!.what}`);
  }
}

await parent();
