#!/usr/bin/env bun
/**
 * Where the cold start of the single binary goes (one-off profiler, not part of the product):
 * builds scripts/bench/startup-profile-entry.ts into its own executable with the same bundler
 * settings as dist/svc (bytecode, embedded files), runs it N times and prints the median of each
 * step (ms since process start).
 *
 *   bun scripts/bench/startup-profile.ts [--runs 15] [--no-build]
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildBinary } from "../build";

async function parent() {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: "string", default: "15" }, "no-build": { type: "boolean" } } });
  const ROOT = resolve(import.meta.dir, "../..");
  const bin = join(ROOT, "dist/svc-profile");
  if (!values["no-build"]) await buildBinary({ entry: "scripts/bench/startup-profile-entry.ts", outfile: bin });
  const runs: Array<Array<{ what: string; at: number; step: number; cpu: number }>> = [];
  for (let i = 0; i < Number(values.runs); i++) {
    const dir = mkdtempSync(join(tmpdir(), "svc-prof-"));
    const p = Bun.spawn([bin], {
      cwd: dir,
      env: { ...process.env, SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "profile-secret-profile-secret-profile", SVC_SERVER__REQUEST_LOG: "false" },
      stdout: "pipe",
      stderr: "inherit",
    });
    const text = await new Response(p.stdout).text();
    await p.exited;
    rmSync(dir, { recursive: true, force: true });
    runs.push(JSON.parse(text.trim().split("\n").pop()!));
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  console.log(`start-up profile of the compiled binary, ${runs.length} runs, medians in ms: wall time of the step, process CPU time of the step, wall time since process start`);
  console.log(`${"wall".padStart(8)}${"cpu".padStart(8)}${"at".padStart(8)}  step`);
  for (let i = 0; i < runs[0]!.length; i++) {
    const col = (k: "step" | "cpu" | "at") => med(runs.map((r) => r[i]![k])).toFixed(2).padStart(8);
    console.log(`${col("step")}${col("cpu")}${col("at")}  ${runs[0]![i]!.what}`);
  }
}

await parent();
