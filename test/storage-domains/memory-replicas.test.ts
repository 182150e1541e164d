/**
 * Two replicas' Memory services on one database (both backends): what one stores, the other's
 * vector index finds at its next search — the index follows the database (memory/vectors.ts).
 * Without following, the second replica's loaded index never learns of the first one's milestones.
 */
import { afterAll, expect, test, beforeAll } from "bun:test";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import { memoryOver, releaseEmbedder, sharedEmbedder } from "../memory/backends";
import type { MemoryServices } from "../../src/memory";
import { MemoryStore } from "../../src/memory/store";
import type { AsyncStorage } from "../../src/storage/async";

afterAll(releaseEmbedder);
const T = "tenant-r";
const P = "shared-project";

eachBackend("memory-replicas", (backend) => {
  let a: MemoryServices;
  let b: MemoryServices;
  let bStorage: AsyncStorage;
  const embedder = sharedEmbedder();
  const store = (m: MemoryServices, text: string) =>
    m.memory.storeMilestone(T, P, { branchPurpose: "keep the gateway healthy", cumulativeProgress: text, thisContribution: text, agentId: "agent-r" });
  /** the keys b's vector index answers for a query (its nearest 10) */
  const bFinds = async (query: string) => {
    const [vec] = await embedder.embed([query]);
    const s = new MemoryStore(bStorage.tenant(T), undefined as never, bStorage.dialect);
    return (await b.vectors.search(s, P, "milestone", embedder.id, vec!, 10)).map((n) => n.key);
  };
  const keysOf = async (storage: AsyncStorage) =>
    (await storage.tenant(T).all<{ key: number }>("SELECT key FROM memory_milestones WHERE tenant_id = $tenant AND project_id = $p ORDER BY key", { p: P })).map((r) => r.key);

  beforeAll(async () => {
    const aStorage = await backend.open();
    bStorage = await backend.open();
    a = await memoryOver(aStorage);
    b = await memoryOver(bStorage);
    await a.memory.createProject(T, { projectId: P, name: "shared", roadmap: "" });
    await store(a, "Fixed the websocket reconnect loop leaking file descriptors");
  }, SETUP_TIMEOUT);

  test("a milestone stored through one replica is in the other's loaded vector index at its next search", async () => {
    expect(await bFinds("websocket reconnect")).toEqual(await keysOf(bStorage)); // b builds its index: one item
    await store(a, "Tuned the HNSW index parameters for recall at one million vectors");
    await store(a, "Moved the SSRF checks into the outbound policy");
    const all = await keysOf(bStorage);
    expect(all.length).toBe(3);
    expect((await bFinds("HNSW recall")).sort((x, y) => x - y)).toEqual(all);
    // and b's own writes keep a's index current too
    await store(b, "Documented the deploy checklist for replicas");
    const [vec] = await embedder.embed(["deploy checklist"]);
    const s = new MemoryStore((await backend.open()).tenant(T), undefined as never, bStorage.dialect);
    expect((await a.vectors.search(s, P, "milestone", embedder.id, vec!, 10)).length).toBe(4);
  }, 60_000);
});
