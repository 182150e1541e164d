/**
 * One semantic cache across three real svc processes (one PostgreSQL database, one real Redis; issue 24):
 * an answer stored through replica A is a hit through B and C (exact at once; semantic and
 * multi-turn once they indexed it, asserted within 1 s) — B and C had the partition's index loaded
 * before, so only the stream of entry changes can teach them the new entry; a deletion through A
 * stops B serving it from its memory; a purge and the tenant's settings reach them too; concurrent
 * identical misses on the three replicas reach upstream once; and a replica killed with SIGKILL while it holds
 * the upstream call of such a miss under load: the others keep serving, one of them takes the call
 * over when the lease lapses, and every answer acknowledged before the kill is still served; then
 * Redis killed: the cache keeps serving from the database and the local indexes (fail mode open
 * here), /ready names Redis, and sharing resumes by itself when Redis is back.
 * MCP: a tool-cache invalidation through A reaches B's in-flight read (its result is not stored), a
 * result stored through A is a semantic hit through B and C, and the activity and connection-event WebSocket streams of B and C carry events caused through A.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { TestRedis } from "../helpers/redis";
import { startCluster, until, type Cluster } from "./replicas";
import { startFakeMcpServer, type FakeMcpServer } from "../mcp/fake-server";
import { embeddingsAnswer } from "../fake-upstream/bag-of-words";

/** the chat answers' upstream: counts calls per question; questions starting with "hold" wait for release() */
let calls = new Map<string, number>();
let gate: { promise: Promise<void>; release: () => void } | undefined;
const newGate = () => {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  gate = { promise, release };
};
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const p = new URL(req.url).pathname;
    const body = (await req.json()) as any;
    if (p === "/v1/embeddings") {
      // bag of words in 64 buckets: the same words in another case or punctuation embed alike
      return embeddingsAnswer(body);
    }
    const q: string = body.messages.at(-1).content;
    calls.set(q, (calls.get(q) ?? 0) + 1);
    if (q.startsWith("hold") && gate) await gate.promise;
    return Response.json({
      id: `chatcmpl-${calls.get(q)}`,
      object: "chat.completion",
      created: 1700000000,
      model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: `answer to ${q} #${calls.get(q)}` }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
    });
  },
});
const up = `http://127.0.0.1:${upstream.port}`;

let redis: TestRedis;
let mcpServer: FakeMcpServer;
let cluster: Cluster;
let key: string;
let admin: string;
const LEASE_MS = 3_000;

/** a chat-completions body for replica i at `path` (the proxy, or the cache lookup POST /api/v1/query) */
const post = (i: number, path: string, messages: Array<{ role: string; content: string }>) =>
  fetch(`${cluster.replicas[i]!.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4", messages }),
  });
const chat = (i: number, messages: Array<{ role: string; content: string }>) => post(i, "/v1/chat/completions", messages);
/**
 * Whether replica i would serve `messages` from its cache now (POST /api/v1/query: a lookup that
 * neither calls upstream nor writes, so polling it does not store an answer of its own).
 */
const wouldHit = async (i: number, messages: Array<{ role: string; content: string }>) => {
  const r = await post(i, "/api/v1/query", messages);
  return r.status === 200 && ((await r.json()) as { hit: boolean }).hit === true;
};
const ask = async (i: number, messages: Array<{ role: string; content: string }>) => {
  const r = await chat(i, messages);
  expect(r.status).toBe(200);
  const body = (await r.json()) as any;
  return { status: r.headers.get("x-cache-status"), tier: body.svc_metadata?.cache_tier as string | null, text: body.choices[0].message.content as string };
};
const user = (content: string) => [{ role: "user", content }];
/** each replica's count of misses that waited for another replica's call */
const waits = async () => {
  return Promise.all([0, 1, 2].map((i) => metric(i, "svc_cache_replica_flight_waits_total")));
};
const metric = async (i: number, name: string) => {
  const text = await (await fetch(`${cluster.replicas[i]!.url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
};

beforeAll(async () => {
  redis = await TestRedis.start();
  mcpServer = startFakeMcpServer();
  cluster = await startCluster({
    n: 3,
    redisUrl: redis.url,
    upstreamUrl: up,
    env: { SVC_CACHE__ENABLED: "true", SVC_EMBEDDING__PROVIDER: "openai", SVC_EMBEDDING__BASE_URL: `${up}/v1`, SVC_EMBEDDING__MODEL: "bow-64", SVC_EMBEDDING__API_KEY: "sk-embed", SVC_METRICS__RENDER_INTERVAL_MS: "0", SVC_OUTBOUND__ALLOW_PRIVATE: "true", SVC_REDIS__FAIL_MODE: "open" },
  });
  admin = await cluster.token("tenant-admin", ["WorkspaceAdmin"], "admin");
  const put = await fetch(`${cluster.replicas[0]!.url}/api/v1/rate-limits/tenant-admin`, { method: "PUT", headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" }, body: JSON.stringify({ tier: "enterprise" }) });
  expect(put.status).toBe(200);
  const k = await fetch(`${cluster.replicas[0]!.url}/api/v1/virtual-keys`, { method: "POST", headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" }, body: JSON.stringify({ name: "cache", teamId: null }) });
  key = ((await k.json()) as any).key;
}, 120_000);

afterAll(async () => {
  gate?.release();
  await cluster?.stop();
  await redis?.stop();
  mcpServer?.release();
  await mcpServer?.stop();
  upstream.stop(true);
});

describe("one semantic cache across 3 replicas", () => {
  test("stored through A: an exact and a semantic hit through B and C, asked the moment A's answer arrived", async () => {
    // B and C load the single-turn partition's index (their own miss) before A stores
    for (const i of [1, 2]) expect((await ask(i, user(`How tall is Mount Everest, asked on replica ${i}?`))).status).toBe("MISS");
    const added = await metric(2, 'svc_cache_replica_changes_applied_total{kind="add"}');
    const a = await ask(0, user("What is the capital of France?"));
    expect(a.status).toBe("MISS");
    const t0 = performance.now();
    // the exact tier reads the shared database: a hit at once
    const exact = await ask(1, user("What is the capital of France?"));
    // the semantic index: C reads the entry's vector from the database once the stream names it
    // (another replica's earlier change may move the applied count too: ask C itself, without writing)
    await until("C indexed A's entry", async () => (await metric(2, 'svc_cache_replica_changes_applied_total{kind="add"}')) > added && (await wouldHit(2, user("what is the capital of france"))), 5_000);
    const semantic = await ask(2, user("what is the capital of france"));
    const ms = performance.now() - t0;
    expect(exact).toEqual({ status: "HIT", tier: "exact", text: a.text });
    expect(semantic).toEqual({ status: "HIT", tier: "semantic", text: a.text });
    expect(calls.get("What is the capital of France?")).toBe(1);
    expect(calls.get("what is the capital of france")).toBeUndefined();
    // the stream brought it (B's index was loaded before A stored)
    expect(await metric(2, "svc_cache_replica_changes_applied_total")).toBeGreaterThanOrEqual(2);
    // the delay each replica measured from A's append to applying it (Redis's clock to its own: one machine)
    const n = { all: 0, within100ms: 0, within1s: 0, sum: 0 };
    for (const i of [1, 2]) {
      n.all += await metric(i, "svc_cache_replica_change_delay_seconds_count");
      n.sum += await metric(i, "svc_cache_replica_change_delay_seconds_sum");
      n.within100ms += await metric(i, 'svc_cache_replica_change_delay_seconds_bucket{le="0.1"}');
      n.within1s += await metric(i, 'svc_cache_replica_change_delay_seconds_bucket{le="1"}');
    }
    expect(n.all).toBeGreaterThanOrEqual(2);
    // ≤ 100 ms is the target (measured in scripts/bench); a timed 100 ms assertion flakes on a loaded 2-core machine
    expect(n.within1s).toBe(n.all);
    console.log(`cross-replica hits: exact asked 0 ms after A's answer arrived, semantic once C indexed it, both served ${ms.toFixed(1)} ms after; stream delay on B and C: ${n.within100ms}/${n.all} changes applied within 100 ms, mean ${((n.sum / n.all) * 1000).toFixed(1)} ms`);
  }, 30_000);

  test("multi-turn (§4.7): a conversation answered through A is a context hit through B", async () => {
    const convo = (q: string) => [
      { role: "user", content: "I am planning a trip to Japan in April" },
      { role: "assistant", content: "Cherry blossom season, a good time to go." },
      { role: "user", content: q },
    ];
    // B loads the context partition first
    expect((await ask(1, convo("Which city should I visit first, B?"))).status).toBe("MISS");
    const added = await metric(1, 'svc_cache_replica_changes_applied_total{kind="add"}');
    const a = await ask(0, convo("What should I pack for the weather?"));
    expect(a.status).toBe("MISS");
    // (another replica's earlier change may move the applied count too: ask B itself, without writing)
    await until("B indexed A's entry", async () => (await metric(1, 'svc_cache_replica_changes_applied_total{kind="add"}')) > added && (await wouldHit(1, convo("what should i pack for the weather"))), 5_000);
    const b = await ask(1, convo("what should i pack for the weather"));
    expect(b).toEqual({ status: "HIT", tier: "l2_context", text: a.text });
  }, 30_000);

  test("an entry deleted through A is no longer served by B (its exact memory drops it through the stream)", async () => {
    const a = await ask(0, user("Who wrote Hamlet?"));
    expect((await ask(1, user("Who wrote Hamlet?"))).status).toBe("HIT"); // now in B's exact memory
    const list = (await (await fetch(`${cluster.replicas[0]!.url}/api/v1/cache/entries?limit=50`, { headers: { authorization: `Bearer ${admin}` } })).json()) as any;
    const entry = list.entries.find((e: any) => e.query === "Who wrote Hamlet?");
    const del = await fetch(`${cluster.replicas[0]!.url}/api/v1/cache/entries/${entry.id}`, { method: "DELETE", headers: { authorization: `Bearer ${admin}` } });
    expect(del.status).toBe(200);
    await until("B applied the deletion", async () => (await metric(1, 'svc_cache_replica_changes_applied_total{kind="drop"}')) >= 1, 5_000);
    const b = await ask(1, user("Who wrote Hamlet?"));
    expect(b.status).toBe("MISS");
    expect(b.text).not.toBe(a.text);
  }, 30_000);
});

describe("tenant-wide cache changes across 3 replicas", () => {
  test("the tenant's decision threshold set through A is what B and C apply (they had its settings loaded)", async () => {
    const settings = async (i: number) => (await api(i, "GET", "/api/v1/cache/settings")).body;
    const before = await Promise.all([1, 2].map(settings));
    expect((await api(0, "PUT", "/api/v1/cache/settings", { decisionThreshold: 0.93 })).status).toBe(200);
    for (const i of [1, 2]) await until(`replica ${i} applies the new threshold`, async () => (await settings(i)).decisionThreshold === 0.93, 3_000);
    expect(before.every((b) => b.decisionThreshold !== 0.93)).toBe(true);
    expect((await api(0, "PUT", "/api/v1/cache/settings", { decisionThreshold: null })).status).toBe(200);
    for (const i of [1, 2]) await until(`replica ${i} back to the default`, async () => (await settings(i)).source !== "tenant", 3_000);
  }, 30_000);

  test("the tenant's cache purged through A: B no longer serves what it held in memory", async () => {
    const a = await ask(0, user("What is the tallest tree species?"));
    expect((await ask(1, user("What is the tallest tree species?"))).status).toBe("HIT"); // in B's exact memory now
    const purged = await api(0, "DELETE", "/api/v1/cache");
    expect(purged.status).toBe(200);
    expect(purged.body.deleted).toBeGreaterThanOrEqual(1);
    await until("B applied the purge", async () => (await metric(1, 'svc_cache_replica_changes_applied_total{kind="purge"}')) >= 1, 5_000);
    const b = await ask(1, user("What is the tallest tree species?"));
    expect(b.status).toBe("MISS");
    expect(b.text).not.toBe(a.text);
  }, 30_000);
});

const api = async (i: number, method: string, path: string, json?: unknown) => {
  const r = await fetch(`${cluster.replicas[i]!.url}${path}`, { method, headers: { authorization: `Bearer ${admin}`, ...(json === undefined ? {} : { "content-type": "application/json" }) }, body: json === undefined ? undefined : JSON.stringify(json) });
  return { status: r.status, body: (await r.json()) as any };
};

/** a WebSocket on replica i collecting its JSON events */
async function socket(i: number, path: string) {
  const events: any[] = [];
  const ws = new WebSocket(`${cluster.replicas[i]!.url.replace("http", "ws")}${path}`, { headers: { authorization: `Bearer ${admin}` } } as any);
  ws.onmessage = (m) => events.push(JSON.parse(String(m.data)));
  await new Promise<void>((resolve, reject) => ((ws.onopen = () => resolve()), (ws.onerror = () => reject(new Error(`socket ${path} on replica ${i} failed to open`)))));
  const next = async (pred: (e: any) => boolean) => {
    await until(`an event on replica ${i}'s ${path}`, async () => events.some(pred), 5_000);
    return events.find(pred);
  };
  return { events, next, close: () => ws.close() };
}

describe("MCP across replicas", () => {
  test("an invalidation through A (a WRITE tool) reaches B's read in flight: its result is not stored; B's and C's activity streams carry A's events", async () => {
    const reg = await api(0, "POST", "/api/v1/mcp/servers", { name: "replicated", url: mcpServer.url });
    expect(reg.status).toBe(200);
    const disc = await api(0, "POST", `/api/v1/mcp/servers/${reg.body.server.id}/discover`);
    expect(disc.status).toBe(200);
    const tools: Record<string, any> = Object.fromEntries(disc.body.tools.map((t: any) => [t.name, t]));
    const streams = [await socket(1, "/api/v1/mcp/stream"), await socket(2, "/api/v1/mcp/stream")];
    // a read through A, served again through B from the shared entry
    expect((await api(0, "POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, { arguments: { issue_id: "7" } })).body.cache.status).toBe("MISS");
    expect((await api(1, "POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, { arguments: { issue_id: "7" } })).body.cache.status).toBe("HIT");
    for (const s of streams) expect((await s.next((e) => e.type === "cache_miss")).data.toolId).toBe(tools.get_issue.id);
    // B's read waits at the server while A runs a WRITE of the same server (the default: drops the server's results)
    const inFlight = api(1, "POST", `/api/v1/mcp/tools/${tools.slow_read.id}/call`, { arguments: { q: "in flight" } });
    await mcpServer.whenWaiting(1);
    expect((await api(0, "POST", `/api/v1/mcp/tools/${tools.update_issue.id}/call`, { arguments: { issue_id: "7", title: "changed" } })).status).toBe(200);
    for (const s of streams) expect((await s.next((e) => e.type === "invalidation")).data).toMatchObject({ reason: "write", triggeredBy: { toolId: tools.update_issue.id } });
    mcpServer.release();
    const r = (await inFlight).body;
    expect(r.cache).toMatchObject({ status: "MISS", stored: false });
    // nothing stale stored: C goes to the server again, and B's earlier entry is gone too
    const before = mcpServer.calls.get("slow_read") ?? 0;
    const again = api(2, "POST", `/api/v1/mcp/tools/${tools.slow_read.id}/call`, { arguments: { q: "in flight" } });
    await mcpServer.whenWaiting(1);
    mcpServer.release();
    expect((await again).body.cache.status).toBe("MISS");
    expect(mcpServer.calls.get("slow_read")).toBe(before + 1);
    expect((await api(2, "POST", `/api/v1/mcp/tools/${tools.get_issue.id}/call`, { arguments: { issue_id: "7" } })).body.cache.status).toBe("MISS");
    for (const s of streams) s.close();
  }, 30_000);

  test("semantic tool cache: a READ result stored through A is a semantic hit through B and C, whose indexes of the tool were loaded before", async () => {
    const servers = await api(0, "GET", "/api/v1/mcp/servers");
    const serverId = servers.body.servers.find((s: any) => s.name === "replicated").id;
    const tools = await api(0, "GET", `/api/v1/mcp/tools?serverId=${serverId}&name=search_docs`);
    const search = tools.body.tools.find((t: any) => t.name === "search_docs");
    expect((await api(0, "PATCH", `/api/v1/mcp/tools/${search.id}/config`, { semanticThreshold: 0.8 })).status).toBe(200);
    const call = async (i: number, query: string) => (await api(i, "POST", `/api/v1/mcp/tools/${search.id}/call`, { arguments: { query, limit: 5 } })).body.cache;
    // B and C build their index of the tool (a semantic lookup of their own) before A stores
    for (const q of [[1, "list the billing invoices"], [2, "rotate the signing certificate yearly"]] as const) expect((await call(q[0], q[1])).status).toBe("MISS");
    const a = await call(0, "how to configure the rate limiter tiers");
    expect(a).toMatchObject({ status: "MISS", stored: true });
    // the same words in another order: no exact match, a semantic one only through the entry A stored
    for (const i of [1, 2]) {
      const hit = await call(i, "configure the rate limiter tiers how to");
      expect(hit).toMatchObject({ status: "HIT", tier: "semantic" });
      expect(hit.cacheKey).toEqual(a.cacheKey);
    }
  }, 30_000);

  test("connection events through A reach a connection-events socket on C", async () => {
    const servers = await api(0, "GET", "/api/v1/mcp/servers");
    const serverId = servers.body.servers[0].id;
    const events = await socket(2, "/api/v1/mcp/connections/events");
    const c = await api(0, "POST", "/api/v1/mcp/connections", { serverId, clientId: "replicated-client" });
    expect(c.status).toBe(200);
    expect((await api(0, "PATCH", `/api/v1/mcp/connections/${c.body.id}/state`, { state: "CONNECTED" })).status).toBe(200);
    const e = await events.next((x) => x.type === "connection_state" && x.data.connectionId === c.body.id && x.data.to === "CONNECTED");
    expect(e.data).toMatchObject({ connectionId: c.body.id, serverId, from: "CONNECTING", to: "CONNECTED" });
    events.close();
  }, 30_000);
});

describe("single flight across replicas", () => {
  test("the same miss on 3 replicas at once reaches upstream once; every client gets the answer", async () => {
    newGate();
    const q = "hold: what is the boiling point of water?";
    const t1 = performance.now();
    const rs = [0, 1, 2].map((i) => ask(i, user(q)));
    await until("one upstream call and two replicas waiting for it", async () => calls.get(q) === 1 && (await waits()).reduce((a, b) => a + b) === 2, 10_000);
    console.log(`single flight: two replicas waiting after ${(performance.now() - t1).toFixed(0)} ms`);
    const t0 = performance.now();
    gate!.release();
    const got = await Promise.all(rs);
    console.log(`single flight: waiters answered ${(performance.now() - t0).toFixed(1)} ms after the upstream answer was released`);
    expect(calls.get(q)).toBe(1);
    for (const g of got) expect(g.text).toBe(`answer to ${q} #1`);
  }, 30_000);

  test("kill -9 of the replica holding the call, under load: the others keep serving, one takes the call over within the lease, answers acknowledged before are still served", async () => {
    const before = await ask(0, user("What is the speed of light?"));
    newGate();
    const q = "hold: how far away is the moon?";
    const waits0 = await waits();
    const rs = [0, 1, 2].map((i) => chat(i, user(q)));
    let holder = -1;
    await until("one replica holds the call, two wait", async () => {
      if (calls.get(q) !== 1) return false;
      const w = await waits();
      const waiting = w.map((n, i) => n > waits0[i]!);
      if (waiting.filter(Boolean).length !== 2) return false;
      holder = waiting.indexOf(false);
      return true;
    }, 10_000);
    const others = [0, 1, 2].filter((i) => i !== holder);
    // load on the survivors while the holder dies
    const load = Array.from({ length: 12 }, (_, n) => chat(others[n % 2]!, user(`load question ${n}`)));
    const killedAt = performance.now();
    cluster.replicas[holder]!.proc.kill(9);
    gate!.release();
    const [holderRes, ...waiterRes] = [await rs[holder]!.catch((e) => e), ...others.map((i) => rs[i]!)];
    expect(holderRes).toBeInstanceOf(Error); // its client lost the connection: nothing was acknowledged
    const answers = await Promise.all(waiterRes);
    const tookMs = performance.now() - killedAt;
    for (const r of answers) expect(r.status).toBe(200);
    const texts = await Promise.all(answers.map(async (r) => ((await r.json()) as any).choices[0].message.content));
    expect(texts[0]).toBe(texts[1]);
    expect(calls.get(q)).toBe(2); // the dead holder's call and the one taking over
    expect(tookMs).toBeLessThan(LEASE_MS + 5_000);
    for (const r of await Promise.all(load)) expect(r.status).toBe(200);
    for (const i of others) expect(await ask(i, user("What is the speed of light?"))).toEqual({ status: "HIT", tier: "exact", text: before.text });
    console.log(`lease takeover after kill -9: waiters answered ${tookMs.toFixed(0)} ms after the kill (lease ${LEASE_MS} ms)`);
  }, 60_000);
});

describe("Redis down (these replicas fail open), after the kill -9 above", () => {
  test("the cache keeps serving from the database and each replica's local index; /health 200, /ready names redis; all resumes by itself", async () => {
    const alive = [0, 1, 2].filter((i) => !cluster.replicas[i]!.proc.killed);
    expect(alive.length).toBe(2);
    const [x, y] = alive as [number, number];
    const url = (i: number) => cluster.replicas[i]!.url;
    const adds = () => metric(y, 'svc_cache_replica_changes_applied_total{kind="add"}');
    let before = await adds();
    const stored = await ask(x, user("How many moons does Mars have?"));
    expect(stored.status).toBe("MISS");
    await until("y indexed x's entry", async () => (await adds()) > before, 1_000);
    await redis.kill();
    for (const i of alive) await until(`replica ${i} sees Redis down`, async () => (await fetch(`${url(i)}/ready`)).status === 503, 10_000);
    expect(await ask(y, user("how many moons does mars have"))).toEqual({ status: "HIT", tier: "semantic", text: stored.text });
    expect(await ask(y, user("How many moons does Mars have?"))).toEqual({ status: "HIT", tier: "exact", text: stored.text });
    for (const i of alive) {
      expect((await fetch(`${url(i)}/health`)).status).toBe(200);
      expect(JSON.stringify(await (await fetch(`${url(i)}/ready`)).json())).toContain('"redis":false');
    }
    await redis.spawn();
    for (const i of alive) await until(`replica ${i} ready again`, async () => (await fetch(`${url(i)}/ready`)).status === 200, 20_000);
    // shared again: a new answer through x is a hit through y
    before = await adds();
    const again = await ask(x, user("Which planet has the most moons?"));
    expect(again.status).toBe("MISS");
    await until("y applied the new entry", async () => (await adds()) > before, 5_000);
    expect(await ask(y, user("which planet has the most moons"))).toEqual({ status: "HIT", tier: "semantic", text: again.text });
  }, 60_000);
});
