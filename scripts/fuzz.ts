/**
 * The fuzz suite (test/fuzz/) for longer: more runs per operation and a fresh seed each time
 * (printed, so a failure can be replayed with FUZZ_SEED).
 *
 *   bun scripts/fuzz.ts [--runs 300] [--seed N]
 */
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1] ?? "");
const runs = args.get("runs") ?? "300";
const seed = args.get("seed") ?? String(Math.floor(Math.random() * 2 ** 31));
console.log(`fuzz: ${runs} runs per operation, seed ${seed} (replay: bun scripts/fuzz.ts --runs ${runs} --seed ${seed})`);
const proc = Bun.spawnSync([process.execPath, "--max-http-header-size=262144", "test", "test/fuzz", "--timeout", "3600000"], {
  cwd: `${import.meta.dir}/..`,
  env: { ...process.env, FUZZ_RUNS: runs, FUZZ_SEED: seed },
  stdout: "inherit",
  stderr: "inherit",
});
process.exit(proc.exitCode ?? 1);
