/**
 * Where the shared data sets are: `<repo>/../shared/data/<name>` (or --data DIR). A missing data
 * set stops the script with a message instead of measuring less than it says.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";

/** The value after `--name` on the command line (the data scripts' options, --data among them), or undefined. */
export function cliArg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** Seeded PRNG (mulberry32): the training scripts' initialisation and shuffling, the benches' orders. */
export function mulberry32(a: number): () => number {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `xs` in a random order drawn from `rnd` (one draw per element, in order), as a new array. */
export function seededOrder<X>(xs: readonly X[], rnd: () => number): X[] {
  return xs.map((x) => ({ x, r: rnd() })).sort((a, b) => a.r - b.r).map((e) => e.x);
}

export const SHARED_DATA = resolve(import.meta.dir, "../../../shared/data");

export function dataDir(name: string, override?: string): string {
  const dir = override ?? resolve(SHARED_DATA, name);
  if (!existsSync(dir)) {
    process.stderr.write(`data set not found: ${dir} (expected ../shared/data/${name} beside the repository, or pass --data DIR)\n`);
    process.exit(2);
  }
  return dir;
}
