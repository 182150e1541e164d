#!/usr/bin/env bun
/**
 * Cold start of two compiled binaries, paired and interleaved (issue 27 item 1): spawn -> first 200
 * on GET /health, the process's CPU (every thread, /proc/<pid>/task/<tid>/schedstat) and peak RSS
 * (VmHWM) read the moment that 200 arrives, then spawn -> the first answer of the built app (GET
 * /ready answered with any status: liveness comes first, the rest of the app after it).
 * Each round starts A then B (the order alternates every round) on a new data directory ("fresh":
 * the database, the JWT secret and the cache index are created), then again on the data directory
 * each binary created in its first round ("existing": a restart). Builds nothing.
 *
 *   bun scripts/bench/startup.ts --base OTHER_CHECKOUT [--binary dist/svc] [--runs 9] [--json]
 *   bun scripts/bench/startup.ts --a dist/svc --b /path/to/other/dist/svc
 *
 * Defaults only: no SVC_AUTH__JWT_SECRET, so a fresh start generates its secret like a user's.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort, median, ROOT, threadCpuMs } from "./harness";

interface Start {
  /** ms from spawn to the first 200 on /health */
  healthMs: number;
  /** CPU ms of every thread of the process at that moment */
  cpuMs: number;
  /** CPU ms of the main thread at that moment */
  mainCpuMs: number;
  /** peak RSS in MiB at that moment */
  rssMiB: number;
  /** ms from spawn to the first answer (any status) of GET /ready */
  appMs: number;
  /** CPU ms of every thread at that answer */
  appCpuMs: number;
  /** peak RSS in MiB at that answer */
  appRssMiB: number;
}

function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function startOnce(binary: string, dataDir: string): Promise<Start> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const proc = Bun.spawn([binary], {
    cwd: dataDir,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? dataDir,
      SVC_SERVER__HOST: "127.0.0.1",
      SVC_SERVER__PORT: String(port),
      SVC_STORAGE__PATH: join(dataDir, "svc.db"),
      SVC_SERVER__REQUEST_LOG: "false",
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  try {
    const deadline = t0 + 60_000;
    let healthMs = NaN;
    let cpu = { all: NaN, main: NaN };
    let rssMiB = NaN;
    while (performance.now() < deadline) {
      if (proc.exitCode !== null) throw new Error(`${binary} exited with ${proc.exitCode}`);
      const ok = await fetch(`${url}/health`).then(
        async (r) => (await r.arrayBuffer(), r.status === 200),
        () => false,
      );
      if (ok) {
        healthMs = performance.now() - t0;
        cpu = threadCpuMs(proc.pid);
        rssMiB = peakRssMiB(proc.pid);
        break;
      }
      await Bun.sleep(1);
    }
    if (Number.isNaN(healthMs)) throw new Error(`${binary}: no 200 on /health within 60 s`);
    let appMs = NaN;
    let appCpuMs = NaN;
    let appRssMiB = NaN;
    while (performance.now() < deadline) {
      const answered = await fetch(`${url}/ready`).then(
        async (r) => (await r.arrayBuffer(), true),
        () => false,
      );
      if (answered) {
        appMs = performance.now() - t0;
        appCpuMs = threadCpuMs(proc.pid).all;
        appRssMiB = peakRssMiB(proc.pid);
        break;
      }
      await Bun.sleep(1);
    }
    return { healthMs, cpuMs: cpu.all, mainCpuMs: cpu.main, rssMiB, appMs, appCpuMs, appRssMiB };
  } finally {
    proc.kill("SIGTERM");
    const stopped = await Promise.race([proc.exited.then(() => true), Bun.sleep(10_000).then(() => false)]);
    if (!stopped) proc.kill("SIGKILL");
    await proc.exited;
  }
}

async function main() {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      base: { type: "string" },
      binary: { type: "string", default: "dist/svc" },
      a: { type: "string" },
      b: { type: "string" },
      runs: { type: "string", default: "9" },
      json: { type: "boolean" },
    },
  });
  const a = resolve(ROOT, values.a ?? values.binary!);
  const bPath = values.b ?? (values.base ? join(values.base, "dist/svc") : undefined);
  if (!bPath) throw new Error("--base DIR (a checkout with its dist/svc built) or --b BINARY is required");
  const b = resolve(bPath);
  const runs = Number(values.runs);
  const bins = [
    { name: "this", path: a },
    { name: "base", path: b },
  ];
  const results: Record<string, Record<"fresh" | "existing", Start[]>> = { this: { fresh: [], existing: [] }, base: { fresh: [], existing: [] } };
  const existingDir: Record<string, string> = {};
  const scratch: string[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const order = i % 2 ? [...bins].reverse() : bins;
      for (const kind of ["fresh", "existing"] as const) {
        for (const bin of order) {
          let dir: string;
          if (kind === "fresh") {
            dir = mkdtempSync(join(tmpdir(), `svc-startup-${bin.name}-`));
            scratch.push(dir);
            existingDir[bin.name] ??= dir;
          } else dir = existingDir[bin.name]!;
          results[bin.name]![kind].push(await startOnce(bin.path, dir));
        }
      }
      process.stderr.write(`round ${i + 1}/${runs}\n`);
    }
  } finally {
    for (const d of scratch) rmSync(d, { recursive: true, force: true });
  }
  if (values.json) return void console.log(JSON.stringify({ a, b, runs, results }, null, 2));
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(`cold start, ${runs} paired interleaved runs each, medians (load average at the end: ${load})`);
  console.log(`  this: ${a}\n  base: ${b}`);
  const fields: Array<[keyof Start, string, number]> = [
    ["healthMs", "spawn -> first /health 200 (ms)", 1],
    ["cpuMs", "CPU, all threads, at that 200 (ms)", 1],
    ["mainCpuMs", "CPU, main thread, at that 200 (ms)", 1],
    ["rssMiB", "peak RSS at that 200 (MiB)", 1],
    ["appMs", "spawn -> first /ready answer: app built (ms)", 1],
    ["appCpuMs", "CPU, all threads, at that answer (ms)", 1],
    ["appRssMiB", "peak RSS at that answer (MiB)", 1],
  ];
  console.log(`| figure | data dir | this | base | this/base |\n|---|---|---|---|---|`);
  for (const [k, label] of fields)
    for (const kind of ["fresh", "existing"] as const) {
      const x = median(results.this![kind].map((r) => r[k]));
      const y = median(results.base![kind].map((r) => r[k]));
      console.log(`| ${label} | ${kind} | ${x.toFixed(1)} | ${y.toFixed(1)} | ${(x / y).toFixed(2)} |`);
    }
}

await main();
