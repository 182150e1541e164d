#!/usr/bin/env bun
/**
 * First meaningful paint of the dashboard's overview on loopback (target ≤ 500 ms): a signed-in tab
 * loads /ui, and the time from navigation start until the overview shows its `Requests` number
 * (the page's script, stylesheet and the overview call done and rendered) is read from the page's
 * own clock; first contentful paint from the Paint Timing API. Each run is a new tab (cold JS
 * parse, warm HTTP cache off: `cache-control: no-cache` revalidates with the ETag).
 * Real Chromium (Debian's `chromium`) through playwright-core, svc started from source or a binary.
 *   bun scripts/bench/ui-first-paint.ts [--binary dist/svc] [--runs 20]
 */
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { benchToken, median, startTarget } from "./harness";
import { ensureChromium, LAUNCH_ARGS } from "../../test/ui/browser";

const { values } = parseArgs({ options: { binary: { type: "string" }, runs: { type: "string", default: "20" } } });
const runs = Number(values.runs);

const target = await startTarget({ binary: values.binary });
const token = await benchToken({ tenantId: "bench", permissions: ["WorkspaceAdmin"] });
const exp = JSON.parse(atob(token.split(".")[1]!)).exp as number;
const browser = await chromium.launch({ executablePath: ensureChromium(), headless: true, args: LAUNCH_ARGS });
const context = await browser.newContext();
// the session a sign-in would have stored (sessionStorage of the tab), set before the page's scripts run
await context.addInitScript(
  ([token, exp]) => sessionStorage.setItem("svc.session", JSON.stringify({ token, exp, tenant: "bench", permissions: ["WorkspaceAdmin"] })),
  [token, exp] as const,
);
const meaningful: number[] = [];
const fcp: number[] = [];
try {
  for (let i = 0; i < runs + 1; i++) {
    const page = await context.newPage();
    await page.goto(`${target.url}/ui/`);
    // read in the page, on the first animation frame where the number is in the document
    const shown = (await (
      await page.waitForFunction(() => ((globalThis as any).document.querySelector("[data-testid=requests]") ? performance.now() : false), undefined, { polling: "raf" })
    ).jsonValue()) as number;
    const t = { shown, fcp: await page.evaluate(() => (performance.getEntriesByType("paint" as never) as PerformanceEntry[]).find((e) => e.name === "first-contentful-paint")?.startTime ?? NaN) };
    if (process.env.UI_BENCH_TRACE)
      console.error(JSON.stringify(await page.evaluate(() => (performance.getEntriesByType("resource" as never) as any[]).map((e: any) => [e.name.replace(/^.*\/\/[^/]+/, ""), Math.round(e.startTime), Math.round(e.responseEnd)]))), Math.round(shown));
    await page.close();
    if (i === 0) continue; // warm-up: the browser's first tab
    meaningful.push(t.shown);
    fcp.push(t.fcp);
  }
} finally {
  await browser.close();
  await target.stop();
}
const r = (xs: number[]) => ({ medianMs: +median(xs).toFixed(1), maxMs: +Math.max(...xs).toFixed(1) });
console.log(JSON.stringify({ target: values.binary ?? "bun src/main.ts", runs, overviewNumberShown: r(meaningful), firstContentfulPaint: r(fcp) }, null, 2));
