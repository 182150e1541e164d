/**
 * Wrong-hit feedback survives a restart of the gateway (issue 25: nothing acknowledged is lost),
 * through the real chat-completions proxy (official SDK), the fake upstream and the real local
 * embedder: a "wrong" answered 200 before the restart still holds after it — the same and a
 * near-identical question miss, the tenant's point and counters are what they were — and a hit
 * served before the restart can be judged after it. (Both backends: test/storage-domains/cache-feedback.test.ts.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { STEP_UP } from "../../src/cache/feedback";

let fake: FakeUpstream;
const dir = mkdtempSync(join(tmpdir(), "svc-feedback-restart-"));

beforeAll(async () => {
  fake = await startFakeUpstream();
});
afterAll(async () => {
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** a gateway on this file's database (the same one at every start) */
async function gateway(): Promise<TestGateway> {
  const gw = await startGateway({ rate_limits: { enabled: false }, providers: { openai: { base_url: fake.url, api_key: "sk-up" } } }, { SVC_STORAGE__PATH: join(dir, "svc.db") });
  await gw.ctx.embedder!.load();
  return gw;
}

async function ask(gw: TestGateway, token: string, content: string) {
  const client = new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const { data, response } = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content }] }).withResponse();
  return { data: data as any, status: response.headers.get("x-cache-status"), requestId: response.headers.get("x-request-id")! };
}

const feedback = async (gw: TestGateway, token: string, requestId: string, verdict: string) => {
  const r = await gw.api("/api/v1/cache/feedback", { method: "POST", token, json: { requestId, verdict } });
  return { status: r.status, body: (await r.json()) as any };
};
const stats = async (gw: TestGateway, token: string) => ((await (await gw.api("/api/v1/cache/stats", { token })).json()) as any).feedback;

test("a wrong verdict answered 200 holds after a restart: the question misses, the point and counters are unchanged", async () => {
  let gw = await gateway();
  const token = await gw.token("tenant-fb-restart", ["ViewMetrics"], "rita");
  let point: number;
  let later: string;
  try {
    expect((await ask(gw, token, "How do I reverse a list in Python?")).status).toBe("MISS");
    const hit = await ask(gw, token, "how do I reverse a list in python");
    expect(hit.status).toBe("HIT");
    const other = await ask(gw, token, "how do i reverse a list in python?");
    expect(other.status).toBe("HIT");
    later = other.requestId;
    const r = await feedback(gw, token, hit.requestId, "wrong");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ wrong: 1, right: 0, raisedBy: STEP_UP });
    point = r.body.point;
  } finally {
    await gw.stop();
  }

  gw = await gateway();
  try {
    expect(await stats(gw, token)).toMatchObject({ wrong: 1, right: 0, raisedBy: STEP_UP, point });
    // looked up without storing anything, then once through the proxy: answered upstream
    for (const text of ["how do I reverse a list in python", "HOW DO I REVERSE A LIST IN PYTHON!"]) {
      const r = await gw.api("/api/v1/query", { method: "POST", token, json: { model: "gpt-4o-mini", messages: [{ role: "user", content: text }] } });
      const q = (await r.json()) as any;
      expect(q.hit).toBe(false);
      expect(q.pointSource).toBe("feedback");
      expect(q.decisionPoint).toBe(point);
    }
    const upstream = fake.received("/v1/chat/completions").length;
    const again = await ask(gw, token, "HOW DO I REVERSE A LIST IN PYTHON!");
    expect(again.status).toBe("MISS");
    expect(again.data.svc_metadata.decision_point_source).toBe("feedback");
    expect(fake.received("/v1/chat/completions").length).toBe(upstream + 1);
    // the hit served before the restart is remembered, and judged once
    expect((await feedback(gw, token, later, "right")).body).toMatchObject({ wrong: 1, right: 1 });
    expect((await feedback(gw, token, later, "wrong")).status).toBe(409);
  } finally {
    await gw.stop();
  }
}, 120_000);
