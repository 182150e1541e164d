#!/usr/bin/env bun
/**
 * Saved memory indexes (BENCHMARKS.md "Memory API"): 10 projects × 10,000 milestones (by default) with
 * random 512-d vectors in a SQLite file; time building the projects' USearch indexes from SQLite,
 * saving them, and loading them in a fresh MemoryVectors (what a restart does).
 *
 *   nice bun scripts/bench/memory-index-load.ts [--projects 10] [--per-project 10000]
 */
import { parseArgs } from "node:util";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { Lexical } from "../../src/memory/lexical";
import { MEMORY_MIGRATIONS } from "../../src/memory/migrations";
import { MemoryStore } from "../../src/memory/store";
import { MemoryVectors } from "../../src/memory/vectors";
import { mkdtempSync, rmSync } from "node:fs"; import { tmpdir } from "node:os"; import { join } from "node:path";
const dir = mkdtempSync(join(tmpdir(), "svc-memory-load-"));
const db = new Db(join(dir, "svc.db")); db.migrate([{ domain: "memory", migrations: MEMORY_MIGRATIONS }]);
const data = openStorage({ path: join(dir, "svc.db"), db });
let s = 7; const r = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
const D = 512; const vec = () => { const v = new Float32Array(D); let n = 0; for (let i = 0; i < D; i++) { v[i] = r() - 0.5; n += v[i]! ** 2; } n = Math.sqrt(n); for (let i = 0; i < D; i++) v[i]! /= n; return v; };
const st = new MemoryStore(data.tenant("t"), new Lexical(data.dialect, undefined), data.dialect);
const { values } = parseArgs({ args: process.argv.slice(2), options: { projects: { type: "string", default: "10" }, "per-project": { type: "string", default: "10000" } } });
const P = Number(values.projects), N = P * Number(values["per-project"]);
const size = `${P} x ${values["per-project"]}`;
for (let p = 0; p < P; p++) await st.insertProject({ projectId: `p${p}`, name: "x", roadmap: "", at: new Date().toISOString() });
await st.tx(async () => { for (let i = 0; i < N; i++) { const p = `p${i % P}`; const at = new Date().toISOString(); await st.insertMilestone({ milestoneId: crypto.randomUUID(), projectId: p, branchName: "main", branchPurpose: "x", cumulativeProgress: "y", thisContribution: `z ${i}`, contentHash: BigInt(i), contentHashHex: "", sequenceNumber: await st.nextSequence(p, at), agentId: "a", agentType: "c", mergedFrom: null, createdAt: at }, "fake", vec()); } });
const q = vec();
const v1 = new MemoryVectors(1000, join(dir, "idx"));
let t = performance.now(); for (let p = 0; p < P; p++) await v1.search(st, `p${p}`, "milestone", "fake", q, 10);
console.log(`build ${size} ms`, (performance.now() - t).toFixed(0));
t = performance.now(); await v1.saveAll(); console.log("save ms", (performance.now() - t).toFixed(0));
const v2 = new MemoryVectors(1000, join(dir, "idx"));
t = performance.now(); for (let p = 0; p < P; p++) await v2.search(st, `p${p}`, "milestone", "fake", q, 10);
console.log(`load ${size} ms`, (performance.now() - t).toFixed(0), "fromDisk", v2.loadedFromDisk, "built", v2.builtFromRows);
db.close(); rmSync(dir, { recursive: true, force: true });
