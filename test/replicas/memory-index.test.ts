/**
 * Two replicas' in-process Memory vector indexes over one shared database (MemoryVectors, the
 * database the source of truth): an index built before another replica stored or removed items
 * catches up at its next search — new rows above its highest key are added, a removed row or a
 * key committed below its highest one makes it rebuild from the rows. Runs on the SQLite backend:
 * what is tested is the index's reconciliation with the rows, the same on both backends.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStorage } from "../../src/storage/open";
import { MEMORY_MIGRATIONS } from "../../src/memory/migrations";
import { MemoryStore } from "../../src/memory/store";
import { Lexical } from "../../src/memory/lexical";
import { MemoryVectors } from "../../src/memory/vectors";

const dir = mkdtempSync(join(tmpdir(), "svc-replicas-memory-index-"));
const storage = openStorage({ path: join(dir, "svc.db") });
afterAll(async () => {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

const unit = (i: number) => Float32Array.from({ length: 4 }, (_, j) => (j === i % 4 ? 1 : 0));
let n = 0;

test("an index built before another replica's writes finds what it stored and forgets what it removed", async () => {
  await storage.migrate([{ domain: "memory", migrations: MEMORY_MIGRATIONS }]);
  const store = new MemoryStore(storage.tenant("t"), new Lexical(storage.dialect, undefined), storage.dialect);
  await store.insertProject({ projectId: "p", name: "p", roadmap: "", at: new Date().toISOString() });
  const insert = (vec: Float32Array) => {
    n++;
    return store.insertMilestone(
      { milestoneId: `m${n}`, projectId: "p", branchName: "main", branchPurpose: "x", cumulativeProgress: "y", thisContribution: `z${n}`, contentHash: BigInt(n), contentHashHex: "", sequenceNumber: n, agentId: "a", agentType: "c", mergedFrom: null, createdAt: new Date().toISOString() },
      "e",
      vec,
    );
  };
  const keys = (ns: Array<{ key: number }>) => ns.map((x) => x.key).sort((a, b) => a - b);
  const first = await insert(unit(0));
  const a = new MemoryVectors(); // replica A: builds now
  const b = new MemoryVectors(); // replica B: stores below
  expect(keys(await a.search(store, "p", "milestone", "e", unit(0), 10))).toEqual([first]);

  // B stores two milestones (its own index learns them; A's does not hear of it)
  const second = await insert(unit(1));
  const third = await insert(unit(2));
  b.add("t", "p", "milestone", second, unit(1));
  b.add("t", "p", "milestone", third, unit(2));
  expect(keys(await a.search(store, "p", "milestone", "e", unit(1), 10))).toEqual([first, second, third]);
  expect(a.builtFromRows).toBe(1); // caught up by adding the new rows, not rebuilt

  // B removes one: A's next search no longer returns it
  await storage.tenant("t").run("DELETE FROM memory_milestones WHERE tenant_id = $tenant AND key = $key", { key: second });
  expect(keys(await a.search(store, "p", "milestone", "e", unit(1), 10))).toEqual([first, third]);

  // A stores one itself: no catch-up needed, and its own add stays counted
  const fourth = await insert(unit(3));
  a.add("t", "p", "milestone", fourth, unit(3));
  expect(keys(await a.search(store, "p", "milestone", "e", unit(3), 10))).toEqual([first, third, fourth]);
});
