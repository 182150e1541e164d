/**
 * A real Chromium for the dashboard's tests, driven by playwright-core (browser downloads are not
 * reachable: Debian's `chromium` package is used through executablePath).
 *   - found at $CHROMIUM_PATH, /usr/bin/chromium or /usr/bin/chromium-browser;
 *   - missing and running as root: installed with apt-get (the test setup's own step);
 *   - missing otherwise: the test fails, naming the command to run. Never a silent skip.
 * One browser per test file (a fresh user-data-dir), a new tab per test (a fresh sessionStorage).
 * Helpers: axe-core on the current page (0 serious/critical violations), a screenshot under the
 * test output folder (tmp/test-output/ui, gitignored), and the console errors a page logged.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const INSTALL = "apt-get update && apt-get install -y chromium";
const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

export const OUTPUT = resolve(process.env.SVC_TEST_OUTPUT ?? join(import.meta.dir, "../../tmp/test-output"), "ui");

interface Where {
  /** where to look (default /usr/bin/chromium, /usr/bin/chromium-browser) */
  candidates?: string[];
  /** the user id deciding whether apt-get may run (default: this process's) */
  uid?: number;
  /** CHROMIUM_PATH (default: the environment's) */
  chromiumPath?: string;
}

function findChromium(w: Where): string | undefined {
  const env = "chromiumPath" in w ? w.chromiumPath : process.env.CHROMIUM_PATH;
  if (env) {
    if (!existsSync(env)) throw new Error(`CHROMIUM_PATH=${env} does not exist`);
    return env;
  }
  return (w.candidates ?? CANDIDATES).find((p) => existsSync(p));
}

/** The Chromium executable, installed with apt-get when missing and allowed (root). */
export function ensureChromium(w: Where = {}): string {
  const found = findChromium(w);
  if (found) return found;
  if ((w.uid ?? process.getuid?.()) !== 0)
    throw new Error(`the dashboard's browser tests need Chromium and this user cannot install it: run \`${INSTALL}\` as root (or set CHROMIUM_PATH)`);
  for (const cmd of [["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]]) {
    const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
    if (r.exitCode !== 0) throw new Error(`installing Chromium failed (\`${cmd.join(" ")}\` exited ${r.exitCode}): ${r.stderr.toString().slice(-2000)}\nrun \`${INSTALL}\` by hand`);
  }
  const installed = findChromium(w);
  if (!installed) throw new Error(`\`${INSTALL}\` ran but no chromium executable is at ${CANDIDATES.join(" or ")}`);
  return installed;
}

export const LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

export interface Browser {
  context: BrowserContext;
  /** a new tab that records console errors and uncaught exceptions */
  page(): Promise<Page & { errors: string[] }>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const executablePath = ensureChromium();
  const profile = mkdtempSync(join(tmpdir(), "svc-ui-chromium-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath, headless: true, args: LAUNCH_ARGS, viewport: { width: 1280, height: 900 } });
  return {
    context,
    async page() {
      const page = (await context.newPage()) as Page & { errors: string[] };
      page.errors = [];
      page.on("console", (m) => {
        if (m.type() === "error") page.errors.push(m.text());
      });
      page.on("pageerror", (e) => page.errors.push(`uncaught: ${e.message}`));
      // confirmations (revoke, purge) are accepted, as a user would
      page.on("dialog", (d) => void d.accept());
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

/**
 * axe-core on the page as it is now: the serious and critical violations (empty = pass). The
 * script is evaluated through the DevTools protocol, which the page's CSP does not govern, so the
 * page under test keeps its real CSP.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in globalThis))) await page.evaluate(AXE);
  const result = (await page.evaluate(() => (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ["violations"] }))) as {
    violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: unknown }> }>;
  };
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(", ")}`);
}

/** A full-page screenshot at tmp/test-output/ui/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(OUTPUT, { recursive: true });
  const path = join(OUTPUT, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
