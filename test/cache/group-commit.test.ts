/**
 * Group commit of cache entries (src/cache/group-commit.ts): the entries stored in one event-loop turn
 * are inserted in one transaction, and what a store promises is unchanged — its entry is served (exact
 * and semantic tiers) as soon as its promise resolves, a failing insert fails only its own store, and a
 * store inside an open transaction of its flow runs in it at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { GroupCommit } from "../../src/cache/group-commit";
import { openStorage } from "../../src/storage/open";
import type { AsyncStorage } from "../../src/storage/async";
import { StorageConstraintError, StorageUnavailableError } from "../../src/storage/errors";
import { ask, answer, HashEmbedder, openEngine, tempDir, type Harness } from "./helpers";

describe("the engine's stores", () => {
  const t = tempDir();
  let h: Harness;
  beforeAll(() => {
    h = openEngine(t.dir, new HashEmbedder());
  });
  afterAll(async () => {
    await h.close();
    t.cleanup();
  });

  test("the stores of one turn share one commit, and each entry is served once its store resolves", async () => {
    const words = ["amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor"];
    const inputs = words.map((w, i) => ask("t-group", `${w} ${words[(i + 3) % words.length]} question number ${i}`));
    const misses = await Promise.all(inputs.map((q) => h.engine.lookup(q)));
    for (const m of misses) expect(m.hit).toBe(false);
    const before = { ...h.engine.inserts!.stats };
    // as the pipeline does under load: every store started in the same turn, each awaited before its answer leaves
    await Promise.all(
      inputs.map(async (q, i) => {
        await h.engine.store(q, answer(`answer ${i}`), misses[i]);
        // read-your-writes: this entry is committed, indexed and in the exact tier now
        const r = await h.engine.lookup(q);
        expect(r.hit).toBe(true);
        if (r.hit) expect(r.payload.body).toEqual(answer(`answer ${i}`).body);
      }),
    );
    expect(h.engine.inserts!.stats.groups - before.groups).toBe(1);
    expect(h.engine.inserts!.stats.jobs - before.jobs).toBe(inputs.length);
    // the semantic tier finds them through the index: the same question up to case and punctuation
    const r = await h.engine.lookup(ask("t-group", "Delta, Garnet: question number 3?"));
    expect(r.hit).toBe(true);
    if (r.hit) expect(r.tier).toBe("semantic");
    expect((await h.engine.stats("t-group")).entries).toBe(inputs.length);
    // and they are in the database: a new engine on the same file serves them
    const again = openEngine(t.dir, new HashEmbedder());
    try {
      for (const [i, q] of inputs.entries()) {
        const hit = await again.engine.lookup(q);
        expect(hit.hit).toBe(true);
        if (hit.hit) expect(hit.payload.body).toEqual(answer(`answer ${i}`).body);
      }
    } finally {
      await again.engine.close();
    }
  });

  test("a repeated exact key stored in the same turn replaces the first entry", async () => {
    const q = ask("t-group-same", "one question stored twice");
    const miss = await h.engine.lookup(q);
    await Promise.all([h.engine.store(q, answer("first"), miss), h.engine.store(q, answer("second"), miss)]);
    const r = await h.engine.lookup(q);
    expect(r.hit).toBe(true);
    if (r.hit) expect(r.payload.body).toEqual(answer("second").body);
    expect((await h.engine.stats("t-group-same")).entries).toBe(1);
    expect((await h.engine.listEntries("t-group-same", 10, 0)).total).toBe(1);
  });
});

describe("GroupCommit", () => {
  const t = tempDir();
  let s: AsyncStorage;
  beforeAll(async () => {
    s = openStorage({ path: join(t.dir, "g.db") });
    await s.global("test table").run("CREATE TABLE g (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
  });
  afterAll(async () => {
    await s.close();
    t.cleanup();
  });
  const insert = (k: string, v: number | null) => () => s.global("test").run("INSERT INTO g (k, v) VALUES ($k, $v)", { k, v });
  const rows = async () => (await s.global("test").all<{ k: string }>("SELECT k FROM g ORDER BY k")).map((r) => r.k);

  test("a failing job fails alone: the group rolls back and every job runs again on its own", async () => {
    const g = new GroupCommit((fn) => s.tx(fn));
    const results = await Promise.allSettled([g.run(insert("a", 1)), g.run(insert("b", null)), g.run(insert("c", 3))]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(StorageConstraintError);
    expect(await rows()).toEqual(["a", "c"]);
    expect(g.stats).toEqual({ groups: 1, jobs: 3 });
  });

  test("a job of a flow inside an open transaction runs in it at once (no wait for the group)", async () => {
    const g = new GroupCommit((fn) => s.tx(fn));
    await s.tx(async () => {
      await g.run(insert("d", 4));
      expect(await rows()).toContain("d");
    });
    expect(g.stats.groups).toBe(0);
    // and rolls back with it
    await expect(
      s.tx(async () => {
        await g.run(insert("e", 5));
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    expect(await rows()).not.toContain("e");
  });

  test("an unavailable database fails the whole group at once: no job is tried again on its own", async () => {
    const busy = new StorageUnavailableError("database is locked", 1);
    const g = new GroupCommit(() => Promise.reject(busy));
    let ran = 0;
    const job = () => {
      ran++;
      return Promise.resolve();
    };
    const results = await Promise.allSettled([g.run(job), g.run(job), g.run(job)]);
    expect(results.map((r) => (r.status === "rejected" ? r.reason : r.status))).toEqual([busy, busy, busy]);
    expect(ran).toBe(0);
    // any other failure of the group: each job again on its own
    const h = new GroupCommit(() => Promise.reject(new Error("disk I/O error")));
    expect(await Promise.all([h.run(job), h.run(job)])).toEqual([undefined, undefined]);
    expect(ran).toBe(2);
  });

  test("jobs of later turns form their own groups", async () => {
    const g = new GroupCommit((fn) => s.tx(fn));
    await Promise.all([g.run(insert("f", 1)), g.run(insert("g", 1))]);
    await g.run(insert("h", 1));
    expect(g.stats).toEqual({ groups: 2, jobs: 3 });
    expect(await rows()).toEqual(expect.arrayContaining(["f", "g", "h"]));
  });
});
