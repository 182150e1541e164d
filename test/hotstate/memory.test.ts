/**
 * Memory API search across replicas: two Memory services in this process on one PostgreSQL schema,
 * each with its own vector indexes, their buses on one real Redis. A milestone stored through A is
 * found by a semantic search through B whose index of the project was loaded before; deleting the
 * project through A drops B's index. The query shares no word with the milestone (the lexical half
 * of the search, shared through the database, cannot find it): only B's vector index can.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestRedis } from "../helpers/redis";
import { dropSchema, freshSchema } from "../helpers/postgres";
import { RedisHotState } from "../../src/core/redis";
import { Logger } from "../../src/core/log";
import { Metrics } from "../../src/core/metrics";
import { loadConfig } from "../../src/config";
import { memoryServices, type MemoryServices } from "../../src/memory";
import { MEMORY_MIGRATIONS } from "../../src/memory/migrations";
import type { Embedder } from "../../src/memory/ports";
import { openStorage } from "../../src/storage/open";
import type { AsyncStorage } from "../../src/storage/async";
import { until } from "./replicas";

/** words of one meaning share a dimension ("zeppelin" and "airship"); other words hash to the rest */
const SYNONYMS: Record<string, number> = { zeppelin: 0, airship: 0, blimp: 0 };
const embedder: Embedder = {
  id: "test-synonyms-32",
  dimensions: 32,
  async embed(texts) {
    return texts.map((t) => {
      const v = new Float32Array(32);
      for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) {
        let h = 2166136261;
        for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619);
        v[SYNONYMS[w] ?? 1 + ((h >>> 0) % 31)]! += w in SYNONYMS ? 4 : 1;
      }
      const n = Math.hypot(...v) || 1;
      return v.map((x) => x / n);
    });
  },
};

let redis: TestRedis;
let pg: { url: string; schema: string };
const storages: AsyncStorage[] = [];
const states: RedisHotState[] = [];

async function replica(): Promise<MemoryServices> {
  const storage = openStorage({ path: ":memory:", url: pg.url, schema: pg.schema });
  storages.push(storage);
  await storage.migrate([{ domain: "memory", migrations: MEMORY_MIGRATIONS }]);
  const hs = new RedisHotState({ url: redis.url, fail_mode: "closed", prefix: "m:", command_timeout_ms: 500 }, new Logger("error"), new Metrics().counter("x_total", "x", ["kind", "mode"]));
  states.push(hs);
  await until("bus connected", async () => hs.ready(), 10_000);
  const fail = () => Promise.reject(new Error("not in this test"));
  return memoryServices({ storage, embedder, completer: { complete: fail }, outbound: { fetch: fail, check: () => Promise.resolve() } as never, config: loadConfig({}).memory, env: {}, bus: hs });
}

beforeAll(async () => {
  redis = await TestRedis.start();
  pg = await freshSchema("memory_replicas");
}, 90_000);
afterAll(async () => {
  for (const s of states) s.close();
  for (const s of storages) await s.close();
  if (pg) await dropSchema(pg.url, pg.schema);
  await redis?.stop();
});

const milestone = (text: string) => ({ branchPurpose: "main line", cumulativeProgress: text, thisContribution: text, agentId: "agent-1" });

test("a milestone stored through A is found by meaning through B (its index loaded before); a project deleted through A drops B's index", async () => {
  const a = await replica();
  const b = await replica();
  await a.memory.createProject("t1", { projectId: "p1", name: "P1", roadmap: "fly" });
  await a.memory.storeMilestone("t1", "p1", milestone("painted the hangar doors green"));
  // B loads its index of the project's milestones (a search of its own)
  expect((await b.memory.search("t1", { query: "hangar doors" }, "p1")).count).toBe(1);
  const stored = await a.memory.storeMilestone("t1", "p1", milestone("inflated the zeppelin envelope with helium"));
  const found = async () => (await b.memory.search("t1", { query: "airship" }, "p1")).milestones.map((m) => m.milestoneId);
  await until("B finds A's milestone by meaning", async () => (await found()).includes(stored.milestone.milestoneId), 2_000);
  // the lexical half alone could not: no shared word
  expect((await a.memory.search("t1", { query: "airship" }, "p1")).milestones[0]!.lexicalRank ?? null).toBeNull();

  await a.memory.deleteProject("t1", "p1");
  await until("B dropped its index of the project", async () => b.vectors.loaded === 0, 2_000);
}, 60_000);
