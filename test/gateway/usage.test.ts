/** Usage records are written off the request path: in batches of 500 rows, 200 ms after the first buffered row, and on shutdown. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import { UsageRecorder, type UsageRecord } from "../../src/gateway/usage";
import { GATEWAY_MIGRATIONS } from "../../src/gateway/migrations";
import { OVERVIEW_MIGRATIONS } from "../../src/gateway/rollups";
import { startProxyEnv } from "./setup";

// the gateway domain's whole schema: the recorder adds every batch to the overview's rollups too
const usageDb = () => new Db(":memory:", [{ domain: "gateway", migrations: [...GATEWAY_MIGRATIONS, ...OVERVIEW_MIGRATIONS] }]);
const over = (db: Db) => openStorage({ path: ":memory:", db });
const row = (i: number): UsageRecord => ({
  tenantId: "t",
  keyId: "k1",
  requestId: `r${i}`,
  style: "openai",
  provider: "openai",
  endpoint: "openai.chat_completions",
  model: "gpt-4o-mini",
  cacheStatus: i % 2 ? "HIT" : "MISS",
  streamed: false,
  inputTokens: 10,
  outputTokens: 5,
  latencyMs: 1,
});
const count = (db: Db) => db.get<{ n: number }>("SELECT count(*) AS n FROM usage_records")!.n;

describe("UsageRecorder", () => {
  test("the 500th buffered row writes the whole batch at once; fewer wait for the timer", async () => {
    const db = usageDb();
    const rec = new UsageRecorder(over(db));
    for (let i = 0; i < 499; i++) rec.record(row(i));
    expect(count(db)).toBe(0); // buffered, off the request path
    rec.record(row(499));
    await Bun.sleep(0); // one turn of the event loop, not the 200 ms timer: the 500th row started the write
    expect(count(db)).toBe(500); // in one transaction
    const listed = await rec.store("t").list(500);
    expect(listed.map((r) => r.requestId)).toEqual(Array.from({ length: 500 }, (_, i) => `r${499 - i}`)); // newest first, in recording order
    await rec.close();
    db.close();
  });
  test("a row is written by the timer about 200 ms later, with key, cost and cost saved", async () => {
    const db = usageDb();
    const rec = new UsageRecorder(over(db));
    rec.record(row(0));
    rec.record(row(1));
    expect(count(db)).toBe(0);
    for (let i = 0; i < 100 && count(db) < 2; i++) await Bun.sleep(10);
    expect(count(db)).toBe(2);
    const [hit, miss] = await rec.store("t").list(); // newest first
    expect(miss).toMatchObject({ keyId: "k1", cacheStatus: "MISS", costSavedUsd: 0 });
    expect(miss!.costUsd).toBeGreaterThan(0);
    expect(hit).toMatchObject({ cacheStatus: "HIT", costUsd: 0 });
    expect(hit!.costSavedUsd).toBe(miss!.costUsd);
    await rec.close();
    db.close();
  });
  test("closing writes what is buffered; nothing is recorded afterwards", async () => {
    const db = usageDb();
    const rec = new UsageRecorder(over(db));
    rec.record(row(0));
    await rec.close();
    expect(count(db)).toBe(1);
    rec.record(row(1));
    expect(count(db)).toBe(1);
    db.close();
  });
});

test("a request's usage row survives a graceful shutdown that comes before the timer", async () => {
  const env = await startProxyEnv();
  const path = join(env.gw.dir, "svc.db");
  const r = await env.gw.api("/v1/chat/completions", { method: "POST", token: env.token, json: { model: "gpt-4o-mini", messages: [{ role: "user", content: "Written at shutdown?" }] } });
  expect(r.status).toBe(200);
  const written = () => env.gw.ctx.db.get<{ n: number }>("SELECT count(*) AS n FROM usage_records WHERE tenant_id = 'tenant-a'")!.n;
  expect(written()).toBe(0); // still buffered: the timer has not fired yet
  // stop the server but keep its directory to read the file afterwards
  await env.gw.server.stop(true);
  const { closeApp } = await import("../../src/app");
  await closeApp(env.gw.ctx);
  await env.fake.stop();
  const db = new Db(path, []);
  try {
    expect(db.get<{ n: number }>("SELECT count(*) AS n FROM usage_records WHERE tenant_id = 'tenant-a'")!.n).toBe(1);
  } finally {
    db.close();
    (await import("node:fs")).rmSync(env.gw.dir, { recursive: true, force: true });
  }
});
