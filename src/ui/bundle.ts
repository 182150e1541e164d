/**
 * Build-time bundling of the dashboard's front end (imported `with { type: "macro" }` by
 * assets.ts): runs `bun build` on web/main.ts (Preact + htm + uPlot, minified, for browsers) and
 * concatenates the stylesheets (the measured operating points of the learned hit decision, from
 * BENCHMARKS.md, are compiled in as a constant), so the result is inlined into the module as string literals —
 * under `bun run`/`bun test` when the module is transpiled, and by `bun build --compile` into the
 * single binary. Nothing is read from disk or the network at run time.
 *
 * Bun.build cannot be called from a macro while the bundler is running (it would wait on itself),
 * so the CLI is spawned, as Bun's own error message advises.
 */
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";

const WEB = join(import.meta.dir, "web");
const STYLES = [join(import.meta.dir, "../../node_modules/uplot/dist/uPlot.min.css"), join(WEB, "style.css")];

export interface OperatingPoint {
  threshold: number;
  label: string;
  precision: number;
  recall: number;
  falseHitRate: number;
}

/**
 * The measured precision / recall of each operating point of the hit decision (the cosine floor,
 * `cache.similarity_threshold`), read from BENCHMARKS.md's cross-validated table (the row header
 * `| floor |`), so the Cache page shows the trade-off beside the point in use without a second copy
 * of the numbers. A table that cannot be read fails the build: the page would otherwise silently lose it.
 */
export function operatingPoints(markdown: string): OperatingPoint[] {
  const lines = markdown.split("\n");
  const head = lines.findIndex((l) => l.startsWith("| floor |"));
  if (head < 0) throw new Error("ui: BENCHMARKS.md has no `| floor |` table (the Cache page shows it)");
  const cols = lines[head]!.split("|").map((c) => c.trim());
  const at = (name: string) => {
    const i = cols.indexOf(name);
    if (i < 0) throw new Error(`ui: BENCHMARKS.md's floor table has no \`${name}\` column`);
    return i;
  };
  const [p, r, f] = [at("precision 50/50"), at("recall"), at("Quora false-hit rate")];
  const points: OperatingPoint[] = [];
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith("|")) break;
    const cells = line.split("|").map((c) => c.trim().replace(/\*\*/g, ""));
    const label = cells[1]!.trim();
    const threshold = Number.parseFloat(label);
    const nums = [cells[p], cells[r], cells[f]].map((c) => Number.parseFloat(c ?? ""));
    if (!Number.isFinite(threshold) || nums.some((n) => !Number.isFinite(n))) throw new Error(`ui: unreadable row in BENCHMARKS.md's floor table: ${line}`);
    points.push({ threshold, label, precision: nums[0]!, recall: nums[1]!, falseHitRate: nums[2]! });
  }
  if (points.length === 0) throw new Error("ui: BENCHMARKS.md's floor table has no rows");
  return points;
}

export function uiBundle(): { js: string; css: string; version: string } {
  const points = operatingPoints(readFileSync(join(import.meta.dir, "../../BENCHMARKS.md"), "utf8"));
  const args = ["build", join(WEB, "main.ts"), "--minify", "--target=browser", "--format=esm", "--define", `__SVC_OPERATING_POINTS__=${JSON.stringify(points)}`];
  const r = Bun.spawnSync([process.execPath, ...args], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`ui: bun build of web/main.ts failed: ${r.stderr.toString()}`);
  const js = r.stdout.toString();
  const css = STYLES.map((f) => readFileSync(f, "utf8")).join("\n");
  const version = createHash("sha256").update(js).update(css).digest("hex").slice(0, 16);
  return { js, css, version };
}
