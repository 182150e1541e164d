/**
 * Engine-level tests (no HTTP). Meaning-dependent cases use the real local embedding model
 * (USE-lite, loaded once); pure mechanics (TTL, eviction, restart, single-flight, failures)
 * use a deterministic hashed bag-of-words embedder.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import type { Embedder } from "../../src/embedding";
import { EmbeddingError } from "../../src/embedding/types";
import { tempDir, openEngine, ask, fill, answer, HashEmbedder, localEmbedderForFile, type Harness } from "./helpers";

const real = localEmbedderForFile();

function withEngine(embedder: () => Embedder, overrides: Record<string, unknown> = {}) {
  const t = tempDir();
  const h = openEngine(t.dir, embedder(), overrides);
  return { ...h, dir: t.dir, async done() { await h.close(); t.cleanup(); } };
}

describe("meaning (real embedder)", () => {
  let h: Harness & { done(): Promise<void> };
  beforeAll(() => {
    h = withEngine(() => real);
  });
  afterAll(() => h.done());

  test("exact repeat hits the exact tier with the stored body", async () => {
    const q = ask("t-exact", "What is the capital of France?");
    const stored = await fill(h.engine, q, "Paris");
    const r = await h.engine.lookup(ask("t-exact", "What is the capital of France?"));
    expect(r.hit).toBe(true);
    if (!r.hit) return;
    expect(r.tier).toBe("exact");
    expect(r.similarity).toBe(1);
    expect(r.payload).toEqual(stored);
  });

  test("paraphrase hits the semantic tier", async () => {
    await fill(h.engine, ask("t-para", "How do I reverse a list in Python?"), "use reversed()");
    const r = await h.engine.lookup(ask("t-para", "How can I reverse a list in Python?"));
    expect(r.hit).toBe(true);
    if (!r.hit) return;
    expect(r.tier).toBe("semantic");
    expect(r.similarity).toBeGreaterThan(0.9);
    expect(r.similarity).toBeLessThan(1);
    expect((r.payload.body as any).choices[0].message.content).toBe("use reversed()");
  });

  test("different meaning misses (entity swap and unrelated question)", async () => {
    await fill(h.engine, ask("t-diff", "What is the capital of France?"));
    expect((await h.engine.lookup(ask("t-diff", "What is the capital of Germany?"))).hit).toBe(false);
    expect((await h.engine.lookup(ask("t-diff", "How do I fix a flat bicycle tire?"))).hit).toBe(false);
  });

  test("a paraphrase under another model, system prompt, parameter or workspace context misses", async () => {
    const base = { scope: { system: "You are terse." }, workspaceContext: "ws-1" };
    await fill(h.engine, ask("t-part", "How do I reverse a list in Python?", base));
    const para = "How can I reverse a list in Python?";
    expect((await h.engine.lookup(ask("t-part", para, base))).hit).toBe(true);
    expect((await h.engine.lookup(ask("t-part", para, { ...base, model: "gpt-4o" }))).hit).toBe(false);
    expect((await h.engine.lookup(ask("t-part", para, { ...base, scope: { system: "You are a pirate." } }))).hit).toBe(false);
    expect((await h.engine.lookup(ask("t-part", para, { ...base, scope: { system: "You are terse.", max_tokens: 5 } }))).hit).toBe(false);
    expect((await h.engine.lookup(ask("t-part", para, { ...base, workspaceContext: "ws-2" }))).hit).toBe(false);
    expect((await h.engine.lookup(ask("t-part", para, { ...base, style: "anthropic" }))).hit).toBe(false);
    // the temperature is bucketed: 0 and 0.05 share answers, 0 and 1.0 do not
    await fill(h.engine, ask("t-part", "How do I sort a dict by value in Python?", { scope: { temperature: 0 } }));
    expect((await h.engine.lookup(ask("t-part", "How can I sort a dict by value in Python?", { scope: { temperature: 0.05 } }))).hit).toBe(true);
    expect((await h.engine.lookup(ask("t-part", "How can I sort a dict by value in Python?", { scope: { temperature: 1 } }))).hit).toBe(false);
  });

  test("tenant isolation: another tenant's identical question misses", async () => {
    await fill(h.engine, ask("t-iso-a", "What is the boiling point of water at sea level?"), "100 C");
    expect((await h.engine.lookup(ask("t-iso-b", "What is the boiling point of water at sea level?"))).hit).toBe(false);
    expect((await h.engine.stats("t-iso-b")).entries).toBe(0);
    expect((await h.engine.stats("t-iso-a")).entries).toBe(1);
    expect(await h.engine.purge("t-iso-b")).toBe(0);
    expect((await h.engine.lookup(ask("t-iso-a", "What is the boiling point of water at sea level?"))).hit).toBe(true);
  });

  const rustLang = [
    { role: "user" as const, text: "I am learning Rust, the programming language." },
    { role: "assistant" as const, text: "Rust is a systems language focused on memory safety and ownership." },
  ];
  const rustMetal = [
    { role: "user" as const, text: "My garden tools are covered in rust." },
    { role: "assistant" as const, text: "Rust is iron oxide; it forms when iron meets water and oxygen." },
  ];

  test("multi-turn: the same conversation again hits l2_context (after the exact tier is bypassed by a new session)", async () => {
    const first = ask("t-mt", "How do I get rid of it?", { history: rustMetal, sessionId: "s1" });
    await fill(h.engine, first, "vinegar and steel wool");
    const again = await h.engine.lookup(ask("t-mt", "How do I get rid of it?", { history: rustMetal, sessionId: "s2" }));
    expect(again.hit).toBe(true); // exact tier: identical request
    const reworded = await h.engine.lookup(
      ask("t-mt", "How do I get rid of it?", {
        history: [
          { role: "user", text: "My garden tools are covered with rust." },
          { role: "assistant", text: "Rust is iron oxide; it forms when iron meets water and oxygen." },
        ],
      }),
    );
    expect(reworded.hit).toBe(true);
    if (!reworded.hit) return;
    expect(reworded.tier).toBe("l2_context");
    expect(reworded.contextSimilarity).toBeGreaterThan(0.9);
  });

  test("multi-turn: the same last question after a different conversation misses", async () => {
    await fill(h.engine, ask("t-mt2", "How do I get rid of it?", { history: rustMetal }));
    expect((await h.engine.lookup(ask("t-mt2", "How do I get rid of it?", { history: rustLang }))).hit).toBe(false);
  });

  test("multi-turn: a reworded earlier turn hits when the context is very close; a changed name in it never does", async () => {
    const reply = { role: "assistant" as const, text: "The main causes were a fiscal crisis, food shortages, Enlightenment ideas and resentment of noble privilege." };
    await fill(h.engine, ask("t-mt5", "What happened next?", { history: [{ role: "user", text: "What were the main causes of the French Revolution?" }, reply] }));
    // The verifier alone rejects the reworded opener on its score (no hard rule), stage 2 is >= 0.96.
    const reworded = await h.engine.lookup(ask("t-mt5", "What happened next?", { history: [{ role: "user", text: "Why did the French Revolution happen?" }, reply] }));
    expect(reworded.hit && reworded.tier).toBe("l2_context");
    const forums = { role: "assistant" as const, text: "Reddit communities and a few national boards are the most visited." };
    await fill(h.engine, ask("t-mt6", "Translate your last answer into French.", { history: [{ role: "user", text: "What are the most popular online forums in Canada?" }, forums] }));
    const other = await h.engine.lookup(
      ask("t-mt6", "Translate your last answer into French.", { history: [{ role: "user", text: "What are the most popular online forums in Germany?" }, forums] }),
    );
    expect(other.hit).toBe(false);
  });

  test("a context-free question does not answer the same question after a conversation, nor vice versa", async () => {
    await fill(h.engine, ask("t-mt3", "Why is that?"));
    expect((await h.engine.lookup(ask("t-mt3", "Why is that?", { history: rustLang }))).hit).toBe(false);
    await fill(h.engine, ask("t-mt4", "Why is that?", { history: rustLang }));
    expect((await h.engine.lookup(ask("t-mt4", "Why is that?"))).hit).toBe(false);
  });
});

describe("mechanics (deterministic embedder)", () => {
  test("TTL: an entry expires after cache.ttl_secs (injectable clock)", async () => {
    const h = withEngine(() => new HashEmbedder(), { cache: { ttl_secs: 60 } });
    try {
      await fill(h.engine, ask("t", "alpha beta gamma"));
      h.clock.t += 59_000;
      expect((await h.engine.lookup(ask("t", "alpha beta gamma"))).hit).toBe(true);
      h.clock.t += 2_000;
      expect((await h.engine.lookup(ask("t", "alpha beta gamma"))).hit).toBe(false);
      expect((await h.engine.lookup(ask("t", "gamma beta alpha"))).hit).toBe(false);
      expect((await h.engine.stats("t")).entries).toBe(0);
    } finally {
      await h.done();
    }
  });

  test("TTL sweep removes expired entries of loaded tenants", async () => {
    const h = withEngine(() => new HashEmbedder(), { cache: { ttl_secs: 10 } });
    try {
      await fill(h.engine, ask("t", "one two three"));
      await fill(h.engine, ask("t", "four five six"));
      h.clock.t += 11_000;
      expect((await h.engine.sweepExpired())).toBe(2);
      expect((await h.engine.stats("t")).entries).toBe(0);
    } finally {
      await h.done();
    }
  });

  test("TTL_SECS=0: entries never expire, and the sweep leaves them", async () => {
    const h = withEngine(() => new HashEmbedder(), { cache: { ttl_secs: 0 } });
    try {
      await fill(h.engine, ask("t", "kept for ever"));
      h.clock.t += 400 * 86_400_000; // more than a year later
      expect((await h.engine.sweepExpired())).toBe(0);
      expect((await h.engine.lookup(ask("t", "kept for ever"))).hit).toBe(true);
      expect((await h.engine.listEntries("t", 10, 0)).entries[0]!.expiresAt).toBeNull();
    } finally {
      await h.done();
    }
  });

  test("the sweep timer removes expired entries by itself (no sweepExpired call)", async () => {
    const t = tempDir();
    const { loadConfig } = await import("../../src/config");
    const { createCacheEngine } = await import("../../src/cache");
    const { openStorage } = await import("../../src/storage/open");
    const { cacheDb } = await import("./helpers");
    const config = loadConfig({ SVC_STORAGE__PATH: `${t.dir}/svc.db` }, { cache: { ttl_secs: 10 } });
    const db = cacheDb(config.storage.path);
    const clock = { t: 1_700_000_000_000 };
    const engine = createCacheEngine(config, { storage: openStorage({ path: config.storage.path, db }), embedder: new HashEmbedder(), now: () => clock.t, timers: true, sweepIntervalMs: 20 });
    try {
      await fill(engine, ask("t", "swept away soon"));
      expect((await engine.stats("t")).entries).toBe(1);
      clock.t += 11_000;
      for (let i = 0; i < 100 && (await engine.stats("t")).entries > 0; i++) await Bun.sleep(10);
      expect((await engine.stats("t")).entries).toBe(0);
      expect(db.get<{ n: number }>("SELECT count(*) AS n FROM cache_entries")!.n).toBe(0);
    } finally {
      await engine.close();
      db.close();
      t.cleanup();
    }
  });

  test("an embedding failure at store time keeps the answer for the exact tier only", async () => {
    const emb = new HashEmbedder();
    const h = withEngine(() => emb);
    try {
      emb.fail = true;
      await h.engine.store(ask("t", "stored while the embedder failed"), answer("kept"));
      emb.fail = false;
      const exact = await h.engine.lookup(ask("t", "stored while the embedder failed"));
      expect(exact.hit && exact.tier).toBe("exact");
      // the same words reordered embed identically with this embedder: a semantic entry would hit
      expect((await h.engine.lookup(ask("t", "failed the embedder while stored"))).hit).toBe(false);
      expect((await h.engine.listEntries("t", 10, 0)).entries[0]!.mode).toBe("exact");
    } finally {
      await h.done();
    }
  });

  test("every documented code-context alias names the scope a newer context invalidates", async () => {
    const h = withEngine(() => new HashEmbedder());
    try {
      const cases: Array<[string, (v: number) => Record<string, unknown>]> = [
        ...["repo", "repository", "project", "repo_url", "repoUrl"].map((k): [string, (v: number) => Record<string, unknown>] => [k, (v) => ({ [k]: "acme/app", rev: v })]),
        ...["file", "path", "filePath", "file_path", "filename"].map((k): [string, (v: number) => Record<string, unknown>] => [k, (v) => ({ [k]: "src/a.ts", rev: v })]),
        ["files[] of strings", (v) => ({ files: ["src/b.ts", "src/a.ts"], rev: v })],
        ["files[] of {path}", (v) => ({ files: [{ path: "src/a.ts" }, { path: "src/b.ts" }], rev: v })],
      ];
      for (const [alias, ctx] of cases) {
        const tenant = `alias-${alias}`;
        await fill(h.engine, ask(tenant, "what does this do", { codeContext: ctx(1) }));
        expect(`${alias}: ${(await h.engine.lookup(ask(tenant, "what does this do", { codeContext: ctx(1) }))).hit}`).toBe(`${alias}: true`);
        await fill(h.engine, ask(tenant, "what does this do", { codeContext: ctx(2) }));
        expect(`${alias}: ${(await h.engine.lookup(ask(tenant, "what does this do", { codeContext: ctx(1) }))).hit}`).toBe(`${alias}: false`);
        expect(`${alias}: ${(await h.engine.stats(tenant)).entries}`).toBe(`${alias}: 1`);
      }
      // a context naming neither a repository nor a file has no scope: a newer one invalidates nothing
      await fill(h.engine, ask("alias-none", "what does this do", { codeContext: { branch: "main", rev: 1 } }));
      await fill(h.engine, ask("alias-none", "what does this do", { codeContext: { branch: "main", rev: 2 } }));
      expect((await h.engine.stats("alias-none")).entries).toBe(2);
    } finally {
      await h.done();
    }
  });

  test("LRU eviction at max_entries_per_tenant drops the coldest entry, per tenant", async () => {
    const h = withEngine(() => new HashEmbedder(), { cache: { max_entries_per_tenant: 3 } });
    try {
      for (const w of ["apple", "banana", "cherry"]) {
        await fill(h.engine, ask("t", `tell me about ${w}`));
        h.clock.t += 1000;
      }
      await fill(h.engine, ask("other", "tell me about durian"));
      // use "apple" so "banana" becomes the coldest
      expect((await h.engine.lookup(ask("t", "tell me about apple"))).hit).toBe(true);
      h.clock.t += 1000;
      await fill(h.engine, ask("t", "tell me about elderberry"));
      expect((await h.engine.stats("t")).entries).toBe(3);
      expect((await h.engine.stats("t")).evictions).toBe(1);
      expect((await h.engine.lookup(ask("t", "tell me about banana"))).hit).toBe(false);
      for (const w of ["apple", "cherry", "elderberry"]) expect((await h.engine.lookup(ask("t", `tell me about ${w}`))).hit).toBe(true);
      expect((await h.engine.stats("other")).entries).toBe(1);
    } finally {
      await h.done();
    }
  });

  test("restart keeps entries: exact and semantic hits after close + reopen (saved index and rebuild)", async () => {
    const t = tempDir();
    try {
      let h = openEngine(t.dir, new HashEmbedder());
      await fill(h.engine, ask("t", "red green blue"), "colors");
      await fill(h.engine, ask("t", "one two three", { history: [{ role: "user", text: "count with me" }] }), "numbers");
      await h.close();
      const saved = [...new Bun.Glob("cache-index/*/*.usearch").scanSync(t.dir)];
      expect(saved.length).toBe(2); // one single-turn and one context partition
      // reopen: saved index files match the database and are loaded
      h = openEngine(t.dir, new HashEmbedder());
      const r1 = await h.engine.lookup(ask("t", "red green blue"));
      expect(r1.hit && r1.tier).toBe("exact");
      const r2 = await h.engine.lookup(ask("t", "Red, green, blue"));
      expect(r2.hit && r2.tier).toBe("semantic");
      const r3 = await h.engine.lookup(ask("t", "One, two, three", { history: [{ role: "user", text: "Count with me" }] }));
      expect(r3.hit && r3.tier).toBe("l2_context");
      // add an entry, simulate a crash (no close -> no index save), reopen: rebuilt from SQLite
      await fill(h.engine, ask("t", "north south east west"), "directions");
      h.db.close();
      h = openEngine(t.dir, new HashEmbedder());
      const r4 = await h.engine.lookup(ask("t", "North, south, east, west"));
      expect(r4.hit && r4.tier).toBe("semantic");
      expect((await h.engine.stats("t")).entries).toBe(3);
      await h.close();
    } finally {
      t.cleanup();
    }
  });

  test("singleFlight: concurrent identical misses run the upstream once", async () => {
    const h = withEngine(() => new HashEmbedder());
    try {
      let calls = 0;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const fn = async () => {
        calls++;
        await gate;
        return "answer";
      };
      const q = ask("t", "same question");
      const all = Promise.all(Array.from({ length: 5 }, () => h.engine.singleFlight(q, fn)));
      // another tenant's identical request is not coalesced with these
      const other = h.engine.singleFlight(ask("u", "same question"), fn);
      release();
      expect(await all).toEqual(["answer", "answer", "answer", "answer", "answer"]);
      expect(await other).toBe("answer");
      expect(calls).toBe(2);
    } finally {
      await h.done();
    }
  });

  test("singleFlight: when the leader fails, each waiter proceeds on its own", async () => {
    const h = withEngine(() => new HashEmbedder());
    try {
      let calls = 0;
      const q = ask("t", "flaky question");
      const leader = h.engine.singleFlight(q, async () => {
        calls++;
        await Bun.sleep(5);
        throw new Error("upstream 500");
      });
      const waiters = Array.from({ length: 3 }, () =>
        h.engine.singleFlight(q, async () => {
          calls++;
          return "own answer";
        }),
      );
      await expect(leader).rejects.toThrow("upstream 500");
      expect(await Promise.all(waiters)).toEqual(["own answer", "own answer", "own answer"]);
      expect(calls).toBe(4);
    } finally {
      await h.done();
    }
  });

  test("embedder failure: EmbeddingError with fail-open off; exact tier still answers", async () => {
    const emb = new HashEmbedder();
    const h = withEngine(() => emb);
    try {
      await fill(h.engine, ask("t", "cached before the outage"));
      emb.fail = true;
      await expect(h.engine.lookup(ask("t", "a new question"))).rejects.toBeInstanceOf(EmbeddingError);
      const r = await h.engine.lookup(ask("t", "cached before the outage"));
      expect(r.hit && r.tier).toBe("exact");
    } finally {
      await h.done();
    }
  });

  test("embedder failure with fail-open on: miss, and store() writes nothing", async () => {
    const emb = new HashEmbedder();
    const h = withEngine(() => emb, { embedding: { fail_open: true } });
    try {
      emb.fail = true;
      const q = ask("t", "a question during the outage");
      const miss = await h.engine.lookup(q);
      expect(miss.hit).toBe(false);
      await h.engine.store(q, answer("x"), miss);
      expect((await h.engine.stats("t")).entries).toBe(0);
      emb.fail = false;
      expect((await h.engine.lookup(q)).hit).toBe(false);
    } finally {
      await h.done();
    }
  });

  test("code context: part of the partition; a newer context for the same file invalidates older entries", async () => {
    const h = withEngine(() => new HashEmbedder());
    try {
      const v1 = { repo: "acme/app", file: "src/a.ts", content: "let x = 1" };
      const v2 = { repo: "acme/app", file: "src/a.ts", content: "let x = 2" };
      const other = { repo: "acme/app", file: "src/b.ts", content: "let y = 1" };
      await fill(h.engine, ask("t", "explain this code", { codeContext: v1 }));
      await fill(h.engine, ask("t", "explain this code", { codeContext: other }));
      expect((await h.engine.lookup(ask("t", "explain this code", { codeContext: v2 }))).hit).toBe(false);
      expect((await h.engine.lookup(ask("t", "explain this code"))).hit).toBe(false);
      expect((await h.engine.lookup(ask("t", "explain this code", { codeContext: v1 }))).hit).toBe(true);
      await fill(h.engine, ask("t", "explain this code", { codeContext: v2 }));
      expect((await h.engine.lookup(ask("t", "explain this code", { codeContext: v1 }))).hit).toBe(false);
      expect((await h.engine.lookup(ask("t", "explain this code", { codeContext: other }))).hit).toBe(true);
      expect((await h.engine.stats("t")).entries).toBe(2);
    } finally {
      await h.done();
    }
  });

  test("purge and per-entry delete", async () => {
    const h = withEngine(() => new HashEmbedder());
    try {
      await fill(h.engine, ask("t", "first question here"));
      await fill(h.engine, ask("t", "second question here"));
      await fill(h.engine, ask("u", "first question here"));
      const { entries, total } = (await h.engine.listEntries("t", 10, 0));
      expect(total).toBe(2);
      expect((await h.engine.deleteEntry("u", entries[0]!.id))).toBe(false);
      expect((await h.engine.deleteEntry("t", entries[0]!.id))).toBe(true);
      expect((await h.engine.stats("t")).entries).toBe(1);
      expect(await h.engine.purge("t")).toBe(1);
      expect((await h.engine.lookup(ask("t", "first question here"))).hit).toBe(false);
      expect((await h.engine.lookup(ask("t", "second question here"))).hit).toBe(false);
      expect((await h.engine.lookup(ask("u", "first question here"))).hit).toBe(true);
    } finally {
      await h.done();
    }
  });

  test("a request ending in a tool result is exact-only", async () => {
    const h = withEngine(() => new HashEmbedder());
    try {
      const turns = [
        { role: "user" as const, text: "weather in Paris" },
        { role: "assistant" as const, text: '{"tool_calls":[{"name":"weather","arguments":{"city":"Paris"}}]}' },
        { role: "tool" as const, text: "18C sunny" },
      ];
      const q = { ...ask("t", "x"), turns };
      await fill(h.engine, q);
      expect((await h.engine.lookup(q)).hit).toBe(true);
      const changed = { ...q, turns: [...turns.slice(0, 2), { role: "tool" as const, text: "25C rain" }] };
      expect((await h.engine.lookup(changed)).hit).toBe(false);
    } finally {
      await h.done();
    }
  });
});
