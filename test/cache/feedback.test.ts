/**
 * Wrong-hit feedback (POST /api/v1/cache/feedback) and the per-request cache headers
 * (X-Svc-Cache-Min-Similarity, X-Svc-Cache-Namespace), through the real chat-completions proxy
 * (official SDK) in front of the fake upstream, with the real local embedder.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { STEP_UP } from "../../src/cache/feedback";
import { defaultLearnedModel } from "../../src/cache";

let gw: TestGateway;
let fake: FakeUpstream;
let configured: number;

beforeAll(async () => {
  fake = await startFakeUpstream();
  gw = await startGateway({ rate_limits: { enabled: false }, providers: { openai: { base_url: fake.url, api_key: "sk-up" } } });
  // unset by default: the pair model's floor
  configured = gw.ctx.config.cache.similarity_threshold ?? defaultLearnedModel().minCosine;
  await gw.ctx.embedder!.load();
}, 60_000);
afterAll(async () => {
  await gw.stop();
  await fake.stop();
});

const client = (token: string, headers: Record<string, string> = {}) => new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1`, defaultHeaders: headers, maxRetries: 0 });

async function ask(token: string, content: string, headers: Record<string, string> = {}) {
  const { data, response } = await client(token, headers).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content }] }).withResponse();
  return { data: data as any, status: response.headers.get("x-cache-status"), requestId: response.headers.get("x-request-id")! };
}

async function feedback(token: string, requestId: string, verdict: string) {
  const r = await gw.api("/api/v1/cache/feedback", { method: "POST", token, json: { requestId, verdict } });
  return { status: r.status, body: (await r.json()) as any };
}

async function query(token: string, content: string, headers: Record<string, string> = {}) {
  const r = await gw.api("/api/v1/query", { method: "POST", token, headers, json: { model: "gpt-4o-mini", messages: [{ role: "user", content }] } });
  expect(r.status).toBe(200);
  return (await r.json()) as any;
}

async function stats(token: string) {
  return ((await (await gw.api("/api/v1/cache/stats", { token })).json()) as any).feedback;
}

// the same question up to case and punctuation: a semantic hit (not exact: the text differs)
const Q = "How do I reverse a list in Python?";
const Q_HIT = "how do I reverse a list in python";
const Q_NEAR = "HOW DO I REVERSE A LIST IN PYTHON!";

describe("POST /api/v1/cache/feedback", () => {
  test("wrong: the same and a near-identical question miss next time; the tenant's point tightens; another tenant is untouched", async () => {
    const a = await gw.token("tenant-fb-a", ["ViewMetrics"], "alice");
    const b = await gw.token("tenant-fb-b", ["ViewMetrics"], "bob");
    for (const t of [a, b]) expect((await ask(t, Q)).status).toBe("MISS");
    const hitA = await ask(a, Q_HIT);
    expect(hitA.status).toBe("HIT");
    expect(hitA.data.svc_metadata.cache_tier).toBe("semantic");
    expect(hitA.data.svc_metadata.decision_point_source).toBe("config");
    expect((await ask(b, Q_HIT)).status).toBe("HIT");

    const before = await stats(a);
    expect(before).toMatchObject({ wrong: 0, right: 0, point: configured, raisedBy: 0, maxWrongHitRate: 0.01 });
    const r = await feedback(a, hitA.requestId, "wrong");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ requestId: hitA.requestId, verdict: "wrong", wrong: 1, right: 0 });
    expect(r.body.point).toBeCloseTo(configured + STEP_UP, 6);

    // the same question, and a near-identical one, miss now (looked up without storing anything)
    for (const text of [Q_HIT, Q_NEAR]) {
      const q = await query(a, text);
      expect(q.hit).toBe(false);
      expect(q.pointSource).toBe("feedback");
      expect(q.decisionPoint).toBeCloseTo(configured + STEP_UP, 6);
    }
    // and through the proxy: answered upstream
    const upstream = fake.received("/v1/chat/completions").length;
    const again = await ask(a, Q_NEAR);
    expect(again.status).toBe("MISS");
    expect(again.data.svc_metadata.decision_point_source).toBe("feedback");
    expect(fake.received("/v1/chat/completions").length).toBe(upstream + 1);

    // tenant B: nothing changed
    expect(await stats(b)).toMatchObject({ wrong: 0, point: configured, raisedBy: 0 });
    const hitB = await ask(b, Q_NEAR);
    expect(hitB.status).toBe("HIT");
    expect(hitB.data.svc_metadata.decision_point_source).toBe("config");
    // nor can B report on A's request (another tenant's request id is unknown to it)
    expect((await feedback(b, hitA.requestId, "wrong")).status).toBe(404);
  }, 60_000);

  test("each further wrong tightens more; right is counted; a request is judged once", async () => {
    const a = await gw.token("tenant-fb-c", ["ViewMetrics"], "carol");
    await ask(a, "What is the boiling point of water at sea level?");
    const h1 = await ask(a, "what is the boiling point of water at sea level");
    expect(h1.status).toBe("HIT");
    await ask(a, "How do I make a paper airplane?");
    const h2 = await ask(a, "how do i make a paper airplane");
    expect(h2.status).toBe("HIT");
    await ask(a, "Why is the sky blue?");
    const h3 = await ask(a, "why is the sky blue");
    expect(h3.status).toBe("HIT");
    expect((await feedback(a, h1.requestId, "wrong")).body.raisedBy).toBeCloseTo(STEP_UP, 6);
    expect((await feedback(a, h2.requestId, "wrong")).body.raisedBy).toBeCloseTo(2 * STEP_UP, 6);
    const right = await feedback(a, h3.requestId, "right");
    expect(right.body).toMatchObject({ wrong: 2, right: 1 });
    expect(right.body.raisedBy).toBeCloseTo(2 * STEP_UP, 6); // loosening is slow: one verdict does not undo it
    expect((await feedback(a, h3.requestId, "wrong")).status).toBe(409);
    expect(await stats(a)).toMatchObject({ wrong: 2, right: 1 });
  }, 60_000);

  test("wrong on an exact hit deletes the entry: the identical request misses next time", async () => {
    const a = await gw.token("tenant-fb-d", ["ViewMetrics"], "dave");
    await ask(a, "Name three primary colours.");
    const hit = await ask(a, "Name three primary colours.");
    expect(hit.status).toBe("HIT");
    expect(hit.data.svc_metadata.cache_tier).toBe("exact");
    expect((await feedback(a, hit.requestId, "wrong")).status).toBe(200);
    expect((await ask(a, "Name three primary colours.")).status).toBe("MISS");
  }, 60_000);

  test("404 unknown request id, 409 a request that did not hit, 403 someone else's request, 400 a bad verdict", async () => {
    const a = await gw.token("tenant-fb-e", ["ViewMetrics"], "erin");
    const other = await gw.token("tenant-fb-e", [], "frank");
    const manager = await gw.token("tenant-fb-e", ["ManageConfig"], "grace");
    const unknown = await feedback(a, crypto.randomUUID(), "wrong");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.type).toBe("not_found");
    const miss = await ask(a, "What is the tallest mountain in Europe?");
    expect(miss.status).toBe("MISS");
    const c = await feedback(a, miss.requestId, "wrong");
    expect(c.status).toBe(409);
    expect(c.body.error.type).toBe("conflict");
    const hit = await ask(a, "what is the tallest mountain in europe");
    expect(hit.status).toBe("HIT");
    expect((await feedback(other, hit.requestId, "wrong")).status).toBe(403);
    expect((await feedback(a, hit.requestId, "maybe")).status).toBe(400);
    // ManageConfig may report on any request of its tenant
    expect((await feedback(manager, hit.requestId, "right")).status).toBe(200);
  }, 60_000);
});

describe("per-request cache headers", () => {
  test("X-Svc-Cache-Min-Similarity raises the point for one request (and says so); invalid values are 400", async () => {
    const a = await gw.token("tenant-hd-a", ["ViewMetrics"], "henry");
    await ask(a, Q);
    const strict = await query(a, Q_HIT, { "x-svc-cache-min-similarity": "1" });
    // surface-identical texts embed alike but not always bit-for-bit: a floor of 1 demands all the cosine can give
    if (strict.hit) expect(strict.similarity).toBe(1);
    expect(strict.decisionPoint).toBe(1);
    expect(strict.pointSource).toBe("request");
    const strictProxy = await ask(a, Q_NEAR, { "x-svc-cache-min-similarity": "0.9999999" });
    expect(strictProxy.data.svc_metadata.decision_point).toBe(0.9999999);
    expect(strictProxy.data.svc_metadata.decision_point_source).toBe("request");
    // a lower value than the configured point does not loosen anything: the configured point decides
    const loose = await ask(a, Q_HIT, { "x-svc-cache-min-similarity": "0" });
    expect(loose.status).toBe("HIT");
    expect(loose.data.svc_metadata.decision_point_source).toBe("config");
    expect(loose.data.svc_metadata.decision_point).toBe(configured);
    for (const bad of ["abc", "1.5", "-0.1", ""]) {
      const r = await gw.api("/v1/chat/completions", {
        method: "POST",
        token: a,
        headers: { "x-svc-cache-min-similarity": bad },
        json: { model: "gpt-4o-mini", messages: [{ role: "user", content: Q }] },
      });
      expect(r.status).toBe(400);
    }
    const q = await gw.api("/api/v1/query", { method: "POST", token: a, headers: { "x-svc-cache-min-similarity": "2" }, json: { model: "gpt-4o-mini", messages: [{ role: "user", content: Q_HIT }] } });
    expect(q.status).toBe(400);
  }, 60_000);

  test("X-Svc-Cache-Namespace partitions entries; invalid values are 400", async () => {
    const a = await gw.token("tenant-hd-b", ["ViewMetrics"], "iris");
    expect((await ask(a, Q, { "x-svc-cache-namespace": "team-1" })).status).toBe("MISS");
    expect((await ask(a, Q, { "x-svc-cache-namespace": "team-1" })).status).toBe("HIT");
    expect((await ask(a, Q_HIT, { "x-svc-cache-namespace": "team-1" })).status).toBe("HIT");
    expect((await ask(a, Q, { "x-svc-cache-namespace": "team-2" })).status).toBe("MISS");
    expect((await ask(a, Q_HIT)).status).toBe("MISS");
    const r = await gw.api("/v1/chat/completions", {
      method: "POST",
      token: a,
      headers: { "x-svc-cache-namespace": "no spaces allowed" },
      json: { model: "gpt-4o-mini", messages: [{ role: "user", content: Q }] },
    });
    expect(r.status).toBe(400);
  }, 60_000);
});
