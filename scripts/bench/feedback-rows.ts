#!/usr/bin/env bun
/**
 * CPU per remembered hit (cache_feedback_requests, written for every exact hit so a wrong-hit verdict
 * works on any replica and after a restart): the store code of this checkout, and of another with
 * --base, writing batches of 512 exact-hit rows of one tenant through its own migrations and storage
 * (SQLite file, WAL) at steady state — 20,000 rows kept, the count prune every 1,000 rows, as the
 * gateway does. Runs alternate between the checkouts, each in a fresh process and database.
 *
 *   bun scripts/bench/feedback-rows.ts [--base DIR] [--runs 3] [--batches 300]
 *
 * Prints µs of process CPU a row (insert, age delete, count prune; the batch's row objects included).
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, median } from "./harness";

const { values } = parseArgs({ options: { base: { type: "string" }, runs: { type: "string", default: "3" }, batches: { type: "string", default: "300" }, child: { type: "string" } } });

if (values.child) {
  const root = values.child;
  const { openStorage } = await import(join(root, "src/storage/open.ts"));
  const { CACHE_MIGRATIONS } = await import(join(root, "src/cache/index.ts"));
  const { writeHits } = await import(join(root, "src/cache/feedback-store.ts"));
  const dir = mkdtempSync(join(tmpdir(), "svc-feedback-rows-"));
  const s = openStorage({ path: join(dir, "svc.db") });
  await s.migrate([{ domain: "cache", migrations: CACHE_MIGRATIONS }]);
  const entry = crypto.randomUUID();
  let now = Date.now();
  let since = 0;
  const batch = async (tenant: string) => {
    const rows: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 512; i++) {
      if (i % 8 === 0) now++;
      rows.push({ requestId: Bun.randomUUIDv7(undefined, now), caller: "key_0123456789abcdef", tier: "exact", entryId: entry, query: null, queryVec: null, createdAt: now });
    }
    since += rows.length;
    const prune = since >= 1_000;
    if (prune) since = 0;
    await s.tx(() => writeHits(s.tenant(tenant), rows, now - 86_400_000, 20_000, prune));
  };
  for (let i = 0; i < 60; i++) await batch("tenant-1"); // past the count bound
  for (let t = 0; t < 20; t++) for (let i = 0; i < 5; i++) await batch(`other-${t}`);
  const n = Number(values.batches);
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await batch("tenant-1");
  const c = process.cpuUsage(c0);
  await s.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify({ usPerRow: (c.user + c.system) / (n * 512) }));
  process.exit(0);
}

const roots: Record<string, string> = { this: ROOT, ...(values.base ? { base: resolve(values.base) } : {}) };
const results: Record<string, number[]> = Object.fromEntries(Object.keys(roots).map((k) => [k, []]));
for (let run = 0; run < Number(values.runs); run++) {
  const order = Object.keys(roots);
  if (run % 2) order.reverse();
  for (const k of order) {
    const p = Bun.spawnSync([process.execPath, import.meta.path, "--child", roots[k]!, "--batches", values.batches!], { stderr: "inherit" });
    if (p.exitCode !== 0) throw new Error(`${k} (${roots[k]}) failed`);
    results[k]!.push(JSON.parse(p.stdout.toString().trim().split("\n").pop()!).usPerRow);
  }
}
const out = Object.fromEntries(Object.entries(results).map(([k, xs]) => [k, { root: roots[k], medianUsPerRow: Number(median(xs).toFixed(2)), runs: xs.map((x) => Number(x.toFixed(2))) }]));
console.log(JSON.stringify({ ...out, ...(values.base ? { ratioThisOverBase: Number((median(results.this!) / median(results.base!)).toFixed(3)) } : {}) }, null, 2));
