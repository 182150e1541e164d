/**
 * MemoryVectors builds an index from the database asynchronously (the rows may come from
 * PostgreSQL): an item added or removed while a build is reading the rows reaches the index once
 * it is built, and concurrent searches of a cold project share one build.
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

const dir = mkdtempSync(join(tmpdir(), "svc-memory-vectors-"));
const storage = openStorage({ path: join(dir, "svc.db") });
afterAll(async () => {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

const unit = (i: number) => Float32Array.from({ length: 4 }, (_, j) => (j === i % 4 ? 1 : 0));

test("adds and removes that arrive during a build reach the index; one build for concurrent searches", async () => {
  await storage.migrate([{ domain: "memory", migrations: MEMORY_MIGRATIONS }]);
  const store = new MemoryStore(storage.tenant("t"), new Lexical(storage.dialect, undefined), storage.dialect);
  await store.insertProject({ projectId: "p", name: "p", roadmap: "", at: new Date().toISOString() });
  const at = new Date().toISOString();
  const key = await store.insertMilestone(
    { milestoneId: "m1", projectId: "p", branchName: "main", branchPurpose: "x", cumulativeProgress: "y", thisContribution: "z", contentHash: 1n, contentHashHex: "", sequenceNumber: 1, agentId: "a", agentType: "c", mergedFrom: null, createdAt: at },
    "e",
    unit(0),
  );
  const v = new MemoryVectors();
  const first = v.search(store, "p", "milestone", "e", unit(1), 5); // starts the build
  const second = v.search(store, "p", "milestone", "e", unit(1), 5);
  v.add("t", "p", "milestone", 9_001, unit(1)); // stored while the build reads the rows
  v.remove("t", "p", "milestone", key);
  const [a, b] = await Promise.all([first, second]);
  expect(v.builtFromRows).toBe(1);
  expect(a.map((n) => n.key)).toEqual([9_001]);
  expect(b.map((n) => n.key)).toEqual([9_001]);
});
