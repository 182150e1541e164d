/**
 * The engine's per-tenant in-memory state is bounded: idle tenants are unloaded (indexes saved),
 * the number of loaded tenants is capped (least recently used first), and an unloaded tenant's
 * next request reloads everything from the saved index / SQLite.
 */
import { describe, expect, test } from "bun:test";
import { tempDir, openEngine, ask, fill, HashEmbedder } from "./helpers";

describe("tenant memory bound", () => {
  test("idle tenants are unloaded with their index saved; the next lookup reloads them (exact, semantic, context)", async () => {
    const t = tempDir();
    const h = openEngine(t.dir, new HashEmbedder());
    try {
      h.engine.settings.tenantIdleSecs = 600;
      await fill(h.engine, ask("idle", "red green blue"), "colors");
      await fill(h.engine, ask("idle", "one two three", { history: [{ role: "user", text: "count with me" }] }), "numbers");
      const hitBefore = await h.engine.lookup(ask("idle", "Red, green, blue"));
      expect(hitBefore.hit).toBe(true); // a pending hit (touch) not yet written
      await fill(h.engine, ask("busy", "cats and dogs"), "pets");
      expect(h.engine.loadedTenants().sort()).toEqual(["busy", "idle"]);

      h.clock.t += 601_000;
      await h.engine.lookup(ask("busy", "cats and dogs")); // busy stays in use
      expect(await h.engine.unloadIdleTenants()).toBe(1);
      expect(h.engine.loadedTenants()).toEqual(["busy"]);
      // the unloaded tenant's indexes were saved and its pending hit written
      expect([...new Bun.Glob("cache-index/*/*.usearch").scanSync(t.dir)].length).toBe(2); // its two partitions
      const colors = (await h.engine.listEntries("idle", 10, 0)).entries.find((e) => e.query === "red green blue");
      expect(colors?.hits).toBe(1);

      await h.engine.unloadIdleTenants();
      h.clock.t += 601_000;
      expect(await h.engine.unloadIdleTenants()).toBe(2); // idle again (listEntries loaded it), and busy
      expect(h.engine.loadedTenants()).toEqual([]);

      const exact = await h.engine.lookup(ask("idle", "red green blue"));
      expect(exact.hit && exact.tier).toBe("exact");
      const semantic = await h.engine.lookup(ask("idle", "Red, green, blue"));
      expect(semantic.hit && semantic.tier).toBe("semantic");
      const context = await h.engine.lookup(ask("idle", "One, two, three", { history: [{ role: "user", text: "Count with me" }] }));
      expect(context.hit && context.tier).toBe("l2_context");
      expect((await h.engine.stats("idle")).entries).toBe(2);
      // writes after a reload keep counting correctly
      await fill(h.engine, ask("idle", "north south east west"), "directions");
      expect((await h.engine.stats("idle")).entries).toBe(3);
    } finally {
      await h.close();
      t.cleanup();
    }
  });

  test("at most maxLoadedTenants in memory: the least recently used is unloaded first, and reloads intact", async () => {
    const t = tempDir();
    const h = openEngine(t.dir, new HashEmbedder());
    try {
      h.engine.settings.maxLoadedTenants = 2;
      await fill(h.engine, ask("a", "alpha beta gamma"), "greek");
      await fill(h.engine, ask("b", "delta epsilon zeta"), "more greek");
      await h.engine.lookup(ask("a", "alpha beta gamma")); // a is now more recent than b
      await fill(h.engine, ask("c", "eta theta iota"), "even more greek");
      expect(h.engine.loadedTenants()).toEqual(["a", "c"]);
      const b = await h.engine.lookup(ask("b", "Delta, epsilon, zeta"));
      expect(b.hit && b.tier).toBe("semantic");
      expect(h.engine.loadedTenants()).toEqual(["c", "b"]);
      // tenants stay isolated across unload/reload
      const cross = await h.engine.lookup(ask("b", "alpha beta gamma"));
      expect(cross.hit).toBe(false);
    } finally {
      await h.close();
      t.cleanup();
    }
  });
});
