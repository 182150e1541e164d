/**
 * PostgreSQL stopped and started again under a client's traffic (issue 23), with a real svc process
 * and a PostgreSQL cluster of the test's own: while the database is down, requests that need it
 * answer 503 `service_unavailable` in their envelope with Retry-After within a few seconds (never
 * hang), /health stays 200 and /ready is 503 naming the database; once it is back the service
 * resumes by itself (the pool reconnects), and every write that answered 2xx is in the database.
 * A server that stops answering without closing its connections (frozen, or a network partition)
 * fails a transaction within the statement deadline too, instead of holding it forever.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startPostgres, type OwnPostgres } from "../helpers/postgres";
import { PostgresBackend } from "../../src/storage/postgres";
import { StorageUnavailableError } from "../../src/storage/errors";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { call, replicaEnv, spawnReplica, token, until, waitReady, type Replica } from "./cluster";

/** a request that needs the database must answer within this while it is down (the bound a client sees) */
const ANSWER_WITHIN_MS = 5_000;
const TENANT = "tenant-restart";

let pg: OwnPostgres;
let fake: FakeUpstream;
let svc: Replica;
let admin: string;

beforeAll(async () => {
  [pg, fake] = await Promise.all([startPostgres(), startFakeUpstream()]);
  svc = await spawnReplica("A", { ...replicaEnv({ url: pg.url() }, fake.url), SVC_RATE_LIMITS__ENABLED: "false" });
  await waitReady(svc);
  admin = await token(TENANT, ["WorkspaceAdmin"], "admin");
}, 120_000);

afterAll(async () => {
  await svc?.stop();
  await pg?.destroy();
  await fake?.stop();
});

interface Outcome {
  kind: "write" | "read" | "proxy";
  status: number;
  ms: number;
  id?: string;
  body?: any;
  retryAfter?: string | null;
}

test("PostgreSQL restarted mid-traffic: 503 with Retry-After while down, /ready names the database, resumes by itself, no acknowledged write lost", async () => {
  const outcomes: Outcome[] = [];
  let n = 0;
  let running = true;
  const once = async (kind: Outcome["kind"]) => {
    const t0 = performance.now();
    const i = n++;
    const r = await fetch(kind === "proxy" ? `${svc.url}/v1/chat/completions` : `${svc.url}/api/v1/prompts${kind === "read" ? "?limit=5" : ""}`, {
      method: kind === "read" ? "GET" : "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body:
        kind === "write"
          ? JSON.stringify({ name: `restart ${i}`, template: `write number ${i}` })
          : kind === "proxy"
            ? JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: `proxied ${i}` }] })
            : undefined,
      // a hang is a failure: the bound is well past the few seconds asked for, so the test reports the time
      signal: AbortSignal.timeout(20_000),
    });
    const body = (await r.json().catch(() => undefined)) as any;
    outcomes.push({ kind, status: r.status, ms: performance.now() - t0, id: r.ok && kind === "write" ? body?.id : undefined, body: r.ok ? undefined : body, retryAfter: r.headers.get("retry-after") });
  };
  // four clients, one request at a time each: two writing, one reading, one proxying (its usage
  // record is written behind the answer: a proxied request does not wait for the database)
  const clients = [0, 1, 2, 3].map(async (c) => {
    while (running) {
      if (c !== 3) await once(c === 2 ? "read" : "write");
      else {
        // paced by the others: one proxied request per answer they got (bounded queue of usage rows)
        const seen = outcomes.length;
        await once("proxy");
        await until("another client's answer", async () => !running || outcomes.length > seen + 1, 60_000);
      }
    }
  });
  const count = (pred: (o: Outcome) => boolean) => outcomes.filter(pred).length;
  try {
    await until("writes acknowledged before the stop", async () => count((o) => o.kind === "write" && o.status === 201) >= 20, 30_000);

    const stopAt = outcomes.length;
    await pg.stop();
    await until("requests answer 503 while the database is down", async () => outcomes.slice(stopAt).filter((o) => o.status === 503).length >= 6, 30_000);
    const health = await fetch(`${svc.url}/health`, { signal: AbortSignal.timeout(5_000) });
    expect(health.status).toBe(200);
    const ready = await fetch(`${svc.url}/ready`, { signal: AbortSignal.timeout(5_000) });
    expect(ready.status).toBe(503);
    const readyBody = (await ready.json()) as any;
    expect(readyBody.error.message).toContain("database");
    expect(readyBody.error.message).toContain(`127.0.0.1:${pg.port}/postgres`);

    const startAt = outcomes.length;
    await pg.start();
    // nothing restarts svc: the pool reconnects once the server answers again
    await until("writes acknowledged again after the start", async () => outcomes.slice(startAt).filter((o) => o.kind === "write" && o.status === 201).length >= 10, 60_000);
    await waitReady(svc, 30_000);
  } finally {
    running = false;
    await Promise.allSettled(clients);
  }
  await Promise.all(clients);

  // every answer was a 2xx or the database's 503 in doc1's envelope with Retry-After, and none took long
  const failures = outcomes.filter((o) => o.status >= 300);
  expect(failures.filter((o) => o.status !== 503).map((o) => ({ status: o.status, body: o.body }))).toEqual([]);
  for (const f of failures) {
    expect(f.body?.error?.type).toBe("service_unavailable");
    expect(Number(f.retryAfter)).toBeGreaterThanOrEqual(1);
  }
  const slowest = Math.max(...failures.map((o) => o.ms));
  expect(slowest).toBeLessThan(ANSWER_WITHIN_MS);

  // every acknowledged write is in the database
  const acknowledged = outcomes.filter((o) => o.id).map((o) => o.id!);
  const sql = new SQL(pg.url(), { max: 1 });
  try {
    const rows = (await sql`SELECT id FROM prompts WHERE tenant_id = ${TENANT}`) as Array<{ id: string }>;
    const stored = new Set(rows.map((r) => r.id));
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
  } finally {
    await sql.close();
  }
  // usage records queued while the database was down were kept and written once it was back
  const proxied = count((o) => o.kind === "proxy" && o.status === 200);
  expect(count((o) => o.kind === "proxy" && o.status !== 200)).toBe(0);
  let usage: any;
  await until("every proxied request is in the usage totals", async () => (usage = (await call(svc.url, "GET", "/api/v1/usage", admin)).body)?.totals?.requests === proxied, 15_000).catch((e) => {
    throw new Error(`${e}: usage ${JSON.stringify(usage?.totals)}, ${proxied} proxied`);
  });
  console.log(
    `PostgreSQL restart: ${outcomes.length} requests, ${acknowledged.length} writes acknowledged (all stored), ${failures.length} answered 503, slowest 503 ${Math.round(slowest)} ms; ${proxied} proxied (all counted in usage)`,
  );
}, 120_000);

/** the server's processes (postmaster and its children): SIGSTOP freezes it with its connections open */
function serverPids(): number[] {
  const postmaster = Number(readFileSync(join(pg.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  const children = readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return Number(readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" ")[1]) === postmaster;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

test("a frozen server (connections open, no answers): a transaction fails with StorageUnavailableError within the deadline, and one abandoned before BEGIN answered never runs", async () => {
  const QUERY_TIMEOUT_MS = 600;
  const backend = new PostgresBackend({ url: pg.url(), poolSize: 2, queryTimeoutMs: QUERY_TIMEOUT_MS });
  const pids: number[] = [];
  let thaw: ReturnType<typeof setTimeout> | undefined;
  try {
    await backend.run("CREATE TABLE IF NOT EXISTS frozen_writes (id TEXT PRIMARY KEY)");
    // both pooled connections open and idle: BEGIN goes to a server that will not answer
    await Promise.all([backend.tx(() => backend.run("INSERT INTO frozen_writes (id) VALUES ('warm-1')")), backend.tx(() => backend.run("INSERT INTO frozen_writes (id) VALUES ('warm-2')"))]);
    pids.push(...serverPids());
    for (const p of pids) process.kill(p, "SIGSTOP");
    // whatever happens below, the server is thawed again (a hang must fail this test, not the ones after it)
    thaw = setTimeout(() => pids.forEach((p) => process.kill(p, "SIGCONT")), 15_000);

    const t0 = performance.now();
    const failed = await Promise.race([
      backend.tx(() => backend.run("INSERT INTO frozen_writes (id) VALUES ('abandoned')")).then(
        () => undefined,
        (e: unknown) => e,
      ),
      Bun.sleep(12_000).then(() => "the transaction hung"),
    ]);
    const ms = performance.now() - t0;
    expect(failed).toBeInstanceOf(StorageUnavailableError);
    // the deadline plus one sweep of the deadline checker, with room for a busy machine
    expect(ms).toBeLessThan(QUERY_TIMEOUT_MS * 4);
    // a single statement was bounded already
    await expect(backend.get("SELECT 1 AS one")).rejects.toBeInstanceOf(StorageUnavailableError);
  } finally {
    clearTimeout(thaw);
    for (const p of pids) process.kill(p, "SIGCONT");
  }
  try {
    // the server answers again: the pool serves transactions, and the abandoned one never ran its body
    let last: unknown;
    const deadline = performance.now() + 30_000;
    for (;;) {
      try {
        await backend.tx(() => backend.run("INSERT INTO frozen_writes (id) VALUES ('after')"));
        break;
      } catch (e) {
        last = e;
        if (performance.now() > deadline) throw new Error(`no transaction succeeded after the server thawed: ${last}`);
        await Bun.sleep(50);
      }
    }
    const ids = (await backend.all<{ id: string }>("SELECT id FROM frozen_writes ORDER BY id")).map((r) => r.id);
    expect(ids).toEqual(["after", "warm-1", "warm-2"]);
  } finally {
    await backend.close();
  }
}, 60_000);
