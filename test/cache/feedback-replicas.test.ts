/**
 * Wrong-hit feedback across replicas (issue 25): two real svc processes on one SQLite file and one
 * real Redis. A "wrong" reported through the replica that served the hit reaches the other one
 * through the cache's change stream: it stops serving that pair and uses the raised point; a
 * verdict sent to the replica that did NOT serve the request is accepted (the hit is in the
 * database) and the serving replica stops serving the pair too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestRedis } from "../helpers/redis";
import { startCluster, until, type Cluster } from "../hotstate/replicas";
import { embeddingsAnswer } from "../fake-upstream/bag-of-words";

/** upstream: bag-of-words embeddings (64 buckets: the same words in another case or order embed alike) and chat answers */
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as any;
    if (new URL(req.url).pathname === "/v1/embeddings") {
      return embeddingsAnswer(body);
    }
    const q: string = body.messages.at(-1).content;
    return Response.json({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1700000000,
      model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: `answer to ${q}` }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
    });
  },
});
const up = `http://127.0.0.1:${upstream.port}`;

let redis: TestRedis;
let cluster: Cluster;
let token: string;

beforeAll(async () => {
  redis = await TestRedis.start();
  cluster = await startCluster({
    n: 2,
    redisUrl: redis.url,
    upstreamUrl: up,
    env: {
      SVC_CACHE__ENABLED: "true",
      SVC_RATE_LIMITS__ENABLED: "false",
      SVC_EMBEDDING__PROVIDER: "openai",
      SVC_EMBEDDING__BASE_URL: `${up}/v1`,
      SVC_EMBEDDING__MODEL: "bow-64",
      SVC_EMBEDDING__API_KEY: "sk-embed",
      SVC_OUTBOUND__ALLOW_PRIVATE: "true",
    },
  });
  token = await cluster.token("tenant-fb-replicas", ["ViewMetrics"], "paula");
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await redis?.stop();
  upstream.stop(true);
});

const headers = () => ({ authorization: `Bearer ${token}`, "content-type": "application/json" });
const messages = (content: string) => [{ role: "user", content }];

async function ask(i: number, content: string) {
  const r = await fetch(`${cluster.replicas[i]!.url}/v1/chat/completions`, { method: "POST", headers: headers(), body: JSON.stringify({ model: "gpt-4", messages: messages(content) }) });
  expect(r.status).toBe(200);
  await r.json();
  return { status: r.headers.get("x-cache-status"), requestId: r.headers.get("x-request-id")! };
}
/** a lookup that stores nothing (POST /api/v1/query) */
async function query(i: number, content: string) {
  const r = await fetch(`${cluster.replicas[i]!.url}/api/v1/query`, { method: "POST", headers: headers(), body: JSON.stringify({ model: "gpt-4", messages: messages(content) }) });
  expect(r.status).toBe(200);
  return (await r.json()) as { hit: boolean; pointSource?: string; decisionPoint?: number };
}
async function feedback(i: number, requestId: string, verdict: "wrong" | "right") {
  const r = await fetch(`${cluster.replicas[i]!.url}/api/v1/cache/feedback`, { method: "POST", headers: headers(), body: JSON.stringify({ requestId, verdict }) });
  return { status: r.status, body: (await r.json()) as any };
}
const stats = async (i: number) => ((await (await fetch(`${cluster.replicas[i]!.url}/api/v1/cache/stats`, { headers: headers() })).json()) as any).feedback;

test("a wrong reported through A reaches B through the stream; a verdict sent to B on A's hit is accepted and A stops serving the pair", async () => {
  // both replicas serve the pair from memory first
  expect((await ask(0, "How tall is Mount Everest?")).status).toBe("MISS");
  await until("B serves the entry stored through A", async () => (await query(1, "how tall is mount everest")).hit, 10_000);
  const hit = await ask(0, "how tall is mount everest");
  expect(hit.status).toBe("HIT");

  const r = await feedback(0, hit.requestId, "wrong");
  expect(r.status).toBe(200);
  expect(r.body.wrong).toBe(1);
  await until("B stops serving the reported pair", async () => !(await query(1, "how tall is mount everest")).hit, 10_000);
  const onB = await query(1, "MOUNT EVEREST: HOW TALL?");
  expect(onB.hit).toBe(false);
  expect(onB.pointSource).toBe("feedback");
  expect(onB.decisionPoint).toBe(r.body.point);
  expect(await stats(1)).toMatchObject({ wrong: 1, point: r.body.point });

  // a hit served by A, judged through B (which never saw the request): the hit is in the database within 200 ms
  expect((await ask(0, "What is the speed of light in vacuum?")).status).toBe("MISS");
  const hit2 = await ask(0, "what is the speed of light in vacuum");
  expect(hit2.status).toBe("HIT");
  let verdict = await feedback(1, hit2.requestId, "wrong");
  const deadline = performance.now() + 10_000;
  while (verdict.status === 404 && performance.now() < deadline) {
    await Bun.sleep(20);
    verdict = await feedback(1, hit2.requestId, "wrong");
  }
  expect(verdict.status).toBe(200);
  expect(verdict.body.wrong).toBe(2);
  // judged once, whichever replica is asked; A stops serving the pair
  expect((await feedback(0, hit2.requestId, "right")).status).toBe(409);
  await until("A stops serving the pair judged through B", async () => !(await query(0, "what is the speed of light in vacuum")).hit, 10_000);
  expect(await stats(0)).toMatchObject({ wrong: 2 });
}, 60_000);
