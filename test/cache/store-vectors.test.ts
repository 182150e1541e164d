/**
 * The vectors a CacheStore reads are the caller's own, on both backends, read the way the engine
 * reads them (bun:sqlite: the driver's own buffer, no second copy; PostgreSQL: copied): equal to
 * what was stored bit for bit, and changing one read changes neither another read nor the row.
 */
import { beforeAll, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { CACHE_MIGRATIONS } from "../../src/cache";
import { CacheStore, type NewEntry } from "../../src/cache/store";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";

const vec = (seed: number, d = 16) => Float32Array.from({ length: d }, (_, i) => Math.sin(seed * 3.7 + i) / (i + 1.25));

function entry(i: number, o: Partial<NewEntry> = {}): NewEntry {
  return {
    id: `e${i}-${crypto.randomUUID()}`,
    exactKey: `k${i}`,
    partition: "p1",
    mode: "context",
    style: "openai",
    model: "m",
    queryText: `question ${i}`,
    queryVec: vec(i),
    contextVec: vec(i + 100),
    contextUsers: [
      { text: "first", vec: vec(i + 200) },
      { text: "second", vec: vec(i + 300) },
    ],
    codeScope: null,
    codeHash: null,
    payload: JSON.stringify({ answer: i }),
    inputTokens: 1,
    outputTokens: 2,
    createdAt: 1_700_000_000_000 + i,
    expiresAt: null,
    ...o,
  };
}

eachBackend("cache store vectors", (b) => {
  let s: AsyncStorage;
  beforeAll(async () => {
    s = await b.open();
    await s.migrate([{ domain: "cache", migrations: CACHE_MIGRATIONS }]);
  }, SETUP_TIMEOUT);

  test("a candidate's vectors equal the stored ones and are private to each read", async () => {
    // as the engine builds it (engine-lookup.ts): no second copy where the driver owns each blob's buffer
    const st = new CacheStore(s.tenant("t-vec"), s.dialect.name === "sqlite");
    const e = entry(1);
    const { vecKey } = await st.insert(e);
    const a = (await st.candidate(vecKey))!;
    const b2 = (await st.candidate(vecKey))!;
    for (const c of [a, b2]) {
      expect(c.queryVec).toEqual(e.queryVec!);
      expect(c.contextVec).toEqual(e.contextVec!);
      expect(c.contextUsers!.map((u) => u.text)).toEqual(["first", "second"]);
      expect(c.contextUsers!.map((u) => [...u.vec])).toEqual(e.contextUsers!.map((u) => [...u.vec]));
    }
    a.queryVec.fill(9);
    a.contextVec!.fill(9);
    a.contextUsers![0]!.vec.fill(9);
    expect(b2.queryVec).toEqual(e.queryVec!);
    expect(b2.contextVec).toEqual(e.contextVec!);
    expect([...b2.contextUsers![0]!.vec]).toEqual([...e.contextUsers![0]!.vec]);
    const again = (await st.candidate(vecKey))!;
    expect(again.queryVec).toEqual(e.queryVec!);
    expect(again.contextVec).toEqual(e.contextVec!);
    expect([...again.contextUsers![0]!.vec]).toEqual([...e.contextUsers![0]!.vec]);
    const [row] = await st.partitionVectors("p1");
    expect(row!.vec).toEqual(e.queryVec!);
  });
});
