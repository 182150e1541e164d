/**
 * doc1 §4.7 settings, exactly: every SVC_CONTEXT_CACHE__* variable reaches the engine and changes
 * its decision; turn embeddings are reused within a session_id; MAX_TURNS bounds the fused context;
 * ENABLED=false turns the context tier off. A table embedder gives each text a chosen vector, so
 * query and context similarities are known numbers; an accept-all verifier isolates the stage math
 * (the verifier has its own tests in verify.test.ts and engine.test.ts).
 */
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config";
import { openStorage } from "../../src/storage/open";
import { createCacheEngine, engineSettings, SemanticCacheEngine } from "../../src/cache";
import { SingleFlight } from "../../src/cache/single-flight";
import type { Embedder } from "../../src/embedding/types";
import { tempDir, ask, fill, answer, HashEmbedder, cacheDb } from "./helpers";
import type { Turn } from "../../src/cache/types";
import { join } from "node:path";

/** Vectors by text; unknown texts get a fresh orthogonal axis. Records every text it embeds. */
class TableEmbedder implements Embedder {
  readonly id = "test:table";
  readonly dimensions = 32;
  readonly embedded: string[] = [];
  private next = 8;
  constructor(private readonly table: Record<string, number[]>) {}
  async load() {}
  isReady() {
    return true;
  }
  async embed(texts: string[]) {
    this.embedded.push(...texts);
    return texts.map((t) => {
      const v = new Float32Array(this.dimensions);
      const row = this.table[t];
      if (row) row.forEach((x, i) => (v[i] = x));
      else v[this.next++ % this.dimensions] = 1;
      let n = 0;
      for (const x of v) n += x * x;
      return v.map((x) => x / Math.sqrt(n));
    });
  }
  async close() {}
}

/** unit vector at cosine `c` to axis `a`, tilted towards axis `b` */
const at = (c: number, a: number, b: number) => {
  const v = new Array(8).fill(0);
  v[a] = c;
  v[b] = Math.sqrt(1 - c * c);
  return v;
};

function open(embedder: Embedder, env: Record<string, string> = {}, overrides: Record<string, unknown> = {}) {
  const t = tempDir();
  const config = loadConfig({ SVC_STORAGE__PATH: join(t.dir, "svc.db"), ...env }, overrides);
  const db = cacheDb(config.storage.path);
  const engine = createCacheEngine(config, { storage: openStorage({ path: config.storage.path, db }), embedder, timers: false, verify: () => ({ accept: true, score: 1, reason: "ok" }) });
  return {
    engine,
    async done() {
      await engine.close();
      db.close();
      t.cleanup();
    },
  };
}

/** a one-message history: its context embedding is the opener's own vector, so context similarity = cos(opener, opener') */
const conv = (opener: string): Turn[] => [{ role: "user", text: opener }];

// Stored: opener "A" (axis 1), question "Q" (axis 0). Lookups vary both by a known cosine.
const TABLE: Record<string, number[]> = {
  Q: at(1, 0, 2),
  "Q.99": at(0.99, 0, 2),
  "Q.9": at(0.9, 0, 2),
  "Q.84": at(0.84, 0, 2),
  "Q.79": at(0.79, 0, 2),
  "Q.-5": at(-0.5, 0, 2),
  A: at(1, 1, 3),
  "A.95": at(0.95, 1, 3),
  "A.9": at(0.9, 1, 3),
  "A.86": at(0.86, 1, 3),
};

async function scenario(env: Record<string, string>, query: string, opener: string) {
  const h = open(new TableEmbedder(TABLE), env);
  try {
    await fill(h.engine, ask("t", "Q", { history: conv("A") }));
    return await h.engine.lookup(ask("t", query, { history: conv(opener) }));
  } finally {
    await h.done();
  }
}

describe("SVC_CONTEXT_CACHE__* settings (doc1 §4.7)", () => {
  test("every variable is read from the environment into the engine settings; defaults are the spec's", () => {
    const d = engineSettings(loadConfig({ SVC_STORAGE__PATH: ":memory:" })).context;
    expect(d).toEqual({ enabled: true, stage1Threshold: 0.85, contextHitThreshold: 0.92, queryWeight: 0.3, contextWeight: 0.7, maxTurns: 20 });
    const s = engineSettings(
      loadConfig({
        SVC_STORAGE__PATH: ":memory:",
        SVC_CONTEXT_CACHE__ENABLED: "false",
        SVC_CONTEXT_CACHE__STAGE1_THRESHOLD: "0.8",
        SVC_CONTEXT_CACHE__CONTEXT_HIT_THRESHOLD: "0.95",
        SVC_CONTEXT_CACHE__QUERY_WEIGHT: "0.6",
        SVC_CONTEXT_CACHE__CONTEXT_WEIGHT: "0.4",
        SVC_CONTEXT_CACHE__MAX_TURNS: "7",
      }),
    ).context;
    expect(s).toEqual({ enabled: false, stage1Threshold: 0.8, contextHitThreshold: 0.95, queryWeight: 0.6, contextWeight: 0.4, maxTurns: 7 });
  });

  test("defaults: final = 0.3·q + 0.7·c >= 0.92 hits and reports both similarities", async () => {
    // 0.3·0.9 + 0.7·0.95 = 0.935
    const r = await scenario({}, "Q.9", "A.95");
    expect(r.hit).toBe(true);
    if (!r.hit) return;
    expect(r.tier).toBe("l2_context");
    expect(r.similarity).toBeCloseTo(0.9, 5);
    expect(r.contextSimilarity).toBeCloseTo(0.95, 5);
  });

  test("stage 2 below CONTEXT_HIT_THRESHOLD misses (0.3·0.9 + 0.7·0.9 = 0.90)", async () => {
    expect((await scenario({}, "Q.9", "A.9")).hit).toBe(false);
  });

  test("CONTEXT_HIT_THRESHOLD is honoured: 0.935 misses at 0.95", async () => {
    expect((await scenario({ SVC_CONTEXT_CACHE__CONTEXT_HIT_THRESHOLD: "0.95" }, "Q.9", "A.95")).hit).toBe(false);
  });

  test("STAGE1_THRESHOLD gates candidates: query similarity 0.84 misses at 0.85 even with an identical context, hits at 0.8", async () => {
    // 0.3·0.84 + 0.7·1 = 0.952 would pass stage 2
    expect((await scenario({}, "Q.84", "A")).hit).toBe(false);
    const r = await scenario({ SVC_CONTEXT_CACHE__STAGE1_THRESHOLD: "0.8" }, "Q.84", "A");
    expect(r.hit && r.tier).toBe("l2_context");
  });

  test("QUERY_WEIGHT / CONTEXT_WEIGHT are honoured: q 0.99, c 0.86 misses at 0.3/0.7 (0.899), hits at 0.7/0.3 (0.951)", async () => {
    expect((await scenario({}, "Q.99", "A.86")).hit).toBe(false);
    const r = await scenario({ SVC_CONTEXT_CACHE__QUERY_WEIGHT: "0.7", SVC_CONTEXT_CACHE__CONTEXT_WEIGHT: "0.3" }, "Q.99", "A.86");
    expect(r.hit && r.tier).toBe("l2_context");
  });

  test("ENABLED=false: no context tier (a reworded conversation misses and nothing is embedded), exact repeats and single questions still hit", async () => {
    const emb = new TableEmbedder(TABLE);
    const h = open(emb, { SVC_CONTEXT_CACHE__ENABLED: "false" });
    try {
      const first = ask("t", "Q", { history: conv("A") });
      await fill(h.engine, first);
      expect(emb.embedded).toEqual([]); // stored for the exact tier only
      const reworded = await h.engine.lookup(ask("t", "Q.9", { history: conv("A.95") }));
      expect(reworded.hit).toBe(false);
      expect(emb.embedded).toEqual([]);
      const again = await h.engine.lookup(ask("t", "Q", { history: conv("A") }));
      expect(again.hit && again.tier).toBe("exact");
      await fill(h.engine, ask("t", "Q"));
      const single = await h.engine.lookup(ask("t", "Q.99"));
      expect(single.hit && single.tier).toBe("semantic");
    } finally {
      await h.done();
    }
  });

  test("MAX_TURNS bounds the fused context: a conversation differing only before the window hits; with a wider window it misses", async () => {
    const table = { ...TABLE, X1: at(1, 5, 6), Y1: at(1, 6, 7), X2: at(1, 7, 5), Y2: at(1, 2, 6), C: at(1, 3, 1), D: at(1, 4, 7) };
    const history = (x: string, y: string): Turn[] => [
      { role: "user", text: x },
      { role: "assistant", text: y },
      { role: "user", text: "C" },
      { role: "assistant", text: "D" },
    ];
    for (const [maxTurns, hit] of [
      ["3", true],
      ["20", false],
    ] as const) {
      const emb = new TableEmbedder(table);
      const h = open(emb, { SVC_CONTEXT_CACHE__MAX_TURNS: maxTurns });
      try {
        await fill(h.engine, ask("t", "Q", { history: history("X1", "Y1") }));
        const r = await h.engine.lookup(ask("t", "Q", { history: history("X2", "Y2") }));
        expect(r.hit).toBe(hit);
        if (r.hit) expect(r.tier).toBe("l2_context");
        // MAX_TURNS = 3: the query and the 2 messages before it; older turns are never embedded
        if (maxTurns === "3") expect(emb.embedded.filter((t) => /^[XY]/.test(t))).toEqual([]);
      } finally {
        await h.done();
      }
    }
  });
});

describe("turn-embedding reuse within a session_id", () => {
  test("a growing conversation embeds only its new messages; another session or tenant embeds again", async () => {
    const emb = new HashEmbedder();
    const texts: string[] = [];
    const inner = emb.embed.bind(emb);
    emb.embed = async (t: string[]) => {
      texts.push(...t);
      return inner(t);
    };
    const t = tempDir();
    const config = loadConfig({ SVC_STORAGE__PATH: join(t.dir, "svc.db") });
    const db = cacheDb(config.storage.path);
    const engine: SemanticCacheEngine = createCacheEngine(config, { storage: openStorage({ path: config.storage.path, db }), embedder: emb, timers: false });
    try {
      const h1: Turn[] = [
        { role: "user", text: "plan a trip to rome" },
        { role: "assistant", text: "three days in rome" },
      ];
      await fill(engine, ask("t", "what about food", { history: h1, sessionId: "s1" }));
      expect(texts.sort()).toEqual(["plan a trip to rome", "three days in rome", "what about food"].sort());
      texts.length = 0;
      const h2: Turn[] = [...h1, { role: "user", text: "what about food" }, { role: "assistant", text: "try carbonara" }];
      await engine.store(ask("t", "and museums", { history: h2, sessionId: "s1" }), answer("vatican"), await engine.lookup(ask("t", "and museums", { history: h2, sessionId: "s1" })));
      expect(texts.sort()).toEqual(["and museums", "try carbonara"]);
      texts.length = 0;
      await engine.lookup(ask("t", "and museums today", { history: h2, sessionId: "s2" }));
      expect(texts.length).toBe(5); // a new session: every message embedded
      texts.length = 0;
      await engine.lookup(ask("u", "and museums today", { history: h2, sessionId: "s1" }));
      expect(texts.length).toBe(5); // the same session id in another tenant shares nothing
    } finally {
      await engine.close();
      db.close();
      t.cleanup();
    }
  });
});

describe("single-flight bound", () => {
  test("a waiter whose leader takes longer than the wait bound makes its own call; later arrivals still coalesce on the leader", async () => {
    const sf = new SingleFlight(20);
    let release!: (v: string) => void;
    const leader = sf.run("k", () => new Promise<string>((r) => (release = r)));
    const waiter = sf.run("k", async () => "own");
    expect(await waiter).toBe("own"); // did not wait for the stuck leader
    const late = sf.run("k", async () => "late-own");
    release("leader");
    expect(await leader).toBe("leader");
    expect(await late).toBe("leader");
    expect(sf.size).toBe(0);
  });

  test("SVC_CACHE__SINGLE_FLIGHT_WAIT_MS reaches the engine", () => {
    const s = engineSettings(loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_CACHE__SINGLE_FLIGHT_WAIT_MS: "1234" }));
    expect(s.singleFlightWaitMs).toBe(1234);
  });
});

describe("SVC_CACHE__SIMILARITY_THRESHOLD (single-turn semantic tier)", () => {
  /** stored "Q"; a lookup whose query is at a known cosine to it, verifier accepting everything */
  async function single(env: Record<string, string>, query: string) {
    const h = open(new TableEmbedder(TABLE), env);
    try {
      await fill(h.engine, ask("t", "Q"));
      return await h.engine.lookup(ask("t", query));
    } finally {
      await h.done();
    }
  }
  test("default 0.94 (cross-validated operating point, issue 25): cosine 0.99 hits, 0.9 misses", async () => {
    const hit = await single({}, "Q.99");
    expect(hit.hit && hit.tier).toBe("semantic");
    expect(hit.hit && hit.similarity).toBeCloseTo(0.99, 5);
    const miss = await single({}, "Q.9");
    expect(miss.hit).toBe(false);
    // the miss reports how close the nearest cached question was
    expect(!miss.hit && miss.nearestSimilarity).toBeCloseTo(0.9, 3);
  });
  test("a nearest question pointing the other way (cosine -0.5) is reported as 0: doc1's similarity is 0.0-1.0", async () => {
    const miss = await single({}, "Q.-5");
    expect(miss.hit).toBe(false);
    expect(!miss.hit && miss.nearestSimilarity).toBe(0);
  });
  test("raised to 0.95: cosine 0.9 misses, 0.99 hits; raised to 0.85: cosine 0.84 misses", async () => {
    expect((await single({ SVC_CACHE__SIMILARITY_THRESHOLD: "0.95" }, "Q.9")).hit).toBe(false);
    expect((await single({ SVC_CACHE__SIMILARITY_THRESHOLD: "0.95" }, "Q.99")).hit).toBe(true);
    expect((await single({ SVC_CACHE__SIMILARITY_THRESHOLD: "0.85" }, "Q.84")).hit).toBe(false);
    expect((await single({ SVC_CACHE__SIMILARITY_THRESHOLD: "0.85" }, "Q.9")).hit).toBe(true);
  });
});
