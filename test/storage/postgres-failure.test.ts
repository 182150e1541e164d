/**
 * PostgreSQL failure behaviour of the async storage: an unreachable or silent server and a
 * statement that does not answer reject with StorageUnavailableError (503 + Retry-After in the
 * kernel) within a bound, never hang; after a server restart the same pool serves again by itself.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { AsyncStorage } from "../../src/storage/async";
import { StorageUnavailableError } from "../../src/storage/errors";
import { openStorage } from "../../src/storage/open";
import { freshDatabase, startPostgres, type OwnPostgres } from "../helpers/postgres";
import { SETUP_TIMEOUT } from "./backends";

const opened: AsyncStorage[] = [];
const servers: Server[] = [];
const sockets: Socket[] = [];
let own: OwnPostgres | undefined;
afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const s of servers) s.close();
  await Promise.all(opened.map((s) => s.close().catch(() => {})));
  await own?.destroy();
}, SETUP_TIMEOUT);

function open(url: string, opts: Parameters<typeof openStorage>[0] extends infer S ? Omit<S, "url" | "path"> : never = {}) {
  const s = openStorage({ ...opts, url, path: "" });
  opened.push(s);
  return s;
}

/** the error `p` rejects with, and how long it took */
async function failure(p: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const t0 = performance.now();
  try {
    await p;
  } catch (error) {
    return { error, ms: performance.now() - t0 };
  }
  throw new Error("expected a rejection");
}

function listen(onSocket: (s: Socket) => void): Promise<number> {
  const server = createServer((sock) => {
    sockets.push(sock);
    onSocket(sock);
  });
  servers.push(server);
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)));
}

test("nothing listening: every operation rejects StorageUnavailableError at once, with a Retry-After", async () => {
  const port = await listen(() => {});
  servers.pop()!.close(); // now nothing listens on the port
  await Bun.sleep(0);
  const s = open(`postgres://svc:x@127.0.0.1:${port}/svc`, { connectTimeoutSeconds: 2, retryAfterSeconds: 3 });
  for (const op of [() => s.ping(), () => s.tenant("t").get("SELECT $tenant AS t"), () => s.global("test").run("SELECT 1"), () => s.tx(async () => {}), () => s.migrate([])]) {
    const { error, ms } = await failure(op());
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect((error as StorageUnavailableError).retryAfterSeconds).toBe(3);
    expect((error as Error).message).toContain(`postgres 127.0.0.1:${port}/svc`);
    expect((error as Error).message).not.toContain(":x@"); // no password in messages
    expect(ms).toBeLessThan(3000);
  }
});

test("a server that accepts and never answers: rejects within the connect timeout", async () => {
  const port = await listen(() => {}); // reads the startup message, says nothing
  const s = open(`postgres://svc:x@127.0.0.1:${port}/svc`, { connectTimeoutSeconds: 1 });
  const { error, ms } = await failure(s.tenant("t").all("SELECT $tenant AS t"));
  expect(error).toBeInstanceOf(StorageUnavailableError);
  expect(ms).toBeLessThan(4000);
});

test(
  "a statement not answered within queryTimeoutMs rejects, is cancelled on the server, and the pool keeps serving",
  async () => {
    const url = await freshDatabase("failure");
    const s = open(url, { queryTimeoutMs: 300, poolSize: 2 });
    const { error, ms } = await failure(s.global("test").get("SELECT pg_sleep(30) AS slept, $x::text AS x", { x: "marker-of-the-slow-query" }));
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect((error as Error).message).toMatch(/no answer within 300 ms/);
    expect(ms).toBeLessThan(3000);
    expect(await s.global("test").get("SELECT 1 AS one")).toEqual({ one: 1 });
    // the server stopped running it (cancelled), it did not sleep on holding a connection
    const watcher = open(url);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const running = await watcher.global("test").all("SELECT pid FROM pg_stat_activity WHERE query LIKE '%pg_sleep(30)%' AND query NOT LIKE '%pg_stat_activity%' AND state = 'active'");
      if (running.length === 0) break;
      if (Date.now() > deadline) throw new Error("the timed-out statement still runs on the server");
      await Bun.sleep(50);
    }
  },
  SETUP_TIMEOUT,
);

test(
  "a PostgreSQL restart: operations reject typed while it is down, the same pool serves again when it is back, nothing committed is lost",
  async () => {
    own = await startPostgres();
    const s = open(own.url(), { poolSize: 3, connectTimeoutSeconds: 2 });
    await s.migrate([{ domain: "r", migrations: [{ id: "0001", up: "CREATE TABLE r (tenant_id TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (tenant_id, id))" }] }]);
    const t = s.tenant("t");
    for (let i = 0; i < 20; i++) await t.run("INSERT INTO r (tenant_id, id) VALUES ($tenant, $id)", { id: `before-${i}` });

    await own.stop();
    for (const op of [() => t.all("SELECT id FROM r WHERE tenant_id = $tenant"), () => t.run("INSERT INTO r (tenant_id, id) VALUES ($tenant, 'down')"), () => s.ping()]) {
      const { error, ms } = await failure(op());
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect(ms).toBeLessThan(5000);
    }

    await own.start();
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        await s.ping();
        break;
      } catch (e) {
        expect(e).toBeInstanceOf(StorageUnavailableError);
        if (Date.now() > deadline) throw e;
        await Bun.sleep(50);
      }
    }
    await t.run("INSERT INTO r (tenant_id, id) VALUES ($tenant, 'after')");
    const ids = (await t.all<{ id: string }>("SELECT id FROM r WHERE tenant_id = $tenant")).map((r) => r.id);
    expect(ids).toHaveLength(21);
    expect(ids).toContain("after");
    expect(ids).not.toContain("down");

    // the test's own cluster leaves nothing behind
    await s.close();
    await own.destroy();
    expect(existsSync(own.dir)).toBe(false);
    own = undefined;
  },
  SETUP_TIMEOUT,
);

/**
 * A TCP hop to the test's PostgreSQL that forwards both ways until the client sends a message
 * containing `freezeOn`, then forwards nothing more: a server that froze at that statement.
 */
async function freezingHop(url: string, freezeOn: string): Promise<string> {
  const target = new URL(url);
  const to = { host: target.hostname, port: Number(target.port) };
  const port = await listen((client) => {
    const server = createConnection(to);
    sockets.push(server);
    let frozen = false;
    client.on("data", (chunk: Buffer) => {
      if (frozen) return;
      if (chunk.includes(freezeOn)) frozen = true;
      else server.write(chunk);
    });
    server.on("data", (chunk: Buffer) => frozen || client.write(chunk));
    client.on("close", () => server.destroy());
    server.on("close", () => client.destroy());
    client.on("error", () => {});
    server.on("error", () => {});
  });
  target.port = String(port);
  return target.toString();
}

test(
  "a server that freezes at a nested transaction's SAVEPOINT: the transaction rejects within queryTimeoutMs instead of hanging",
  async () => {
    const url = await freshDatabase("savepoint");
    const s = open(await freezingHop(url, "SAVEPOINT"), { queryTimeoutMs: 1000, poolSize: 1 });
    expect(await s.global("test").get("SELECT 1 AS one")).toEqual({ one: 1 });
    let inner = false;
    const { error, ms } = await failure(
      s.tx(async () => {
        await s.global("test").get("SELECT 2 AS two");
        await s.tx(async () => {
          inner = true;
        });
      }),
    );
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect((error as Error).message).toMatch(/no answer within 1000 ms/);
    expect(ms).toBeLessThan(10_000);
    expect(inner).toBe(false); // the savepoint never answered, so its body never ran
  },
  SETUP_TIMEOUT,
);
