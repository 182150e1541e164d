/**
 * Build-time bundling of the dashboard's front end (imported `with { type: "macro" }` by
 * assets.ts): runs `bun build` on web/main.ts (Preact + htm + uPlot, minified, for browsers) and
 * concatenates the stylesheets, so the result is inlined into the module as string literals —
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

export function uiBundle(): { js: string; css: string; version: string } {
  const r = Bun.spawnSync([process.execPath, "build", join(WEB, "main.ts"), "--minify", "--target=browser", "--format=esm"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`ui: bun build of web/main.ts failed: ${r.stderr.toString()}`);
  const js = r.stdout.toString();
  const css = STYLES.map((f) => readFileSync(f, "utf8")).join("\n");
  const version = createHash("sha256").update(js).update(css).digest("hex").slice(0, 16);
  return { js, css, version };
}
