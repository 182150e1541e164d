/**
 * The learned stage of the hit decision (issue 14; since issue 25 the cross-validated pair model of
 * src/cache/verify/pair-model.ts), with the real shipped model and the real local embedder: it loads,
 * accepts a paraphrase the hand verifier rejects, rejects a near-miss, keeps the hard-rule vetoes; the per-tenant operating point (GET/PUT /api/v1/cache/settings) moves decisions
 * both ways; hits carry their score parts and misses the nearest similarity (POST /api/v1/query and
 * svc_metadata through the official openai SDK; svc_metadata keeps doc1 §4.2's five fields).
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { dot } from "../../src/embedding";
import { defaultLearnedModel, PairModel } from "../../src/cache";
import weights from "../../src/cache/verify/pair-model-weights.json";
import { DEFAULT_VERIFY_OPTIONS, verifyPair } from "../../src/cache/verify";
import { tempDir, openEngine, ask, fill, HashEmbedder, localEmbedderForFile } from "./helpers";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";

const real = localEmbedderForFile();
/** the pair model decides by default (issue 25), over raw embeddings, at its own cross-validated floor */
const LEARNED_ON = { learned_decision: true };

const model = defaultLearnedModel();
/** the gateway's default operating point: the model's own (cache.decision_threshold unset) */
const DEFAULT_POINT = model.threshold;

/** The model's decision alone (no rules), at its own operating point unless told; acos: the cosine the cache compares (raw embeddings by default). */
async function judge(query: string, cached: string, threshold?: number, withRules = false) {
  const [q, c] = await real.embed([query, cached]);
  const cos = dot(q!, c!);
  return { cos, acos: cos, ...model.decide(query, cached, cos, q!, c!, threshold, withRules) };
}

// a rewording the hand verifier rejects on its score (its content words do not line up)
const PARAPHRASE = ["When is it too late to change your career?", "When is too late for a career change?"] as const;
// same words, opposite meaning, high cosine
const NEAR_MISS = ["What is the best way to lose weight?", "What is the best way to gain weight?"] as const;
// a rewording the model rates below its default point (cosine above its floor, no hard rule)
const BELOW_POINT = ["How do I make money online?", "How can I earn money online?"] as const;
// a rewording the hand verifier accepts (its content words line up)
const RULES_PARAPHRASE = ["How can I reverse a list in Python?", "How do I reverse a list in Python?"] as const;

describe("the shipped model", () => {
  test("loads from the bundled weights, for the local embedder it was trained on", () => {
    expect(model).toBeInstanceOf(PairModel);
    expect(model.embedderId).toBe(real.id);
    expect(model.dims).toBe(real.dimensions);
    // the model's own operating point and floor, chosen on out-of-fold predictions (scripts/train-cache-pair-model.ts)
    expect(model.threshold).toBe(weights.threshold);
    expect(model.threshold).toBeGreaterThan(0.5);
    expect(model.threshold).toBeLessThan(1);
    expect(model.minCosine).toBe(weights.minCosine);
    // weights trained on other features are refused
    expect(() => new PairModel({ ...(weights as any), features: ["cos"] })).toThrow(/other pair features/);
  });

  test("accepts a paraphrase the hand verifier rejects, rejects a near-miss", async () => {
    const p = await judge(...PARAPHRASE);
    expect(p.cos).toBeGreaterThan(model.minCosine);
    expect(verifyPair(PARAPHRASE[0], PARAPHRASE[1], p.cos).accept).toBe(false);
    expect(p.accept).toBe(true);
    expect(p.reason).toBe("ok");
    expect(p.learned!).toBeGreaterThanOrEqual(model.threshold);

    const n = await judge(...NEAR_MISS);
    expect(n.cos).toBeGreaterThan(model.minCosine);
    expect(n.accept).toBe(false);
    expect(n.reason).toBe("low-score");
    expect(n.learned!).toBeLessThan(model.threshold);
  });

  test("a veto decides before the model; a rejection names the hard rule it breaks", async () => {
    const v = await judge("What is the population of Canada in 2020?", "What is the population of Canada in 2021?");
    expect(v.accept).toBe(false);
    expect(v.reason).toStartWith("number-mismatch");
    expect(v.learned).toBeUndefined();
    const surface = await judge("what is the capital of france", "What is the capital of France?");
    expect(surface).toMatchObject({ accept: true, learned: 1, reason: "surface-identical" });
  });

  test("the threshold argument moves the decision both ways", async () => {
    const p = await judge(...PARAPHRASE);
    expect((await judge(...PARAPHRASE, Math.min(1, p.learned! + 0.01))).accept).toBe(false);
    const n = await judge(...NEAR_MISS);
    expect((await judge(...NEAR_MISS, n.learned! - 0.01)).accept).toBe(true);
  });

  test("with the rules (the gateway's mode): the hand verifier's accept stands, the model adds to it", async () => {
    const r = await judge(...RULES_PARAPHRASE, 1, true);
    expect(r.accept).toBe(true);
    expect(r.reason).toBe("rules");
    expect(r.learned).toBeGreaterThan(0);
    expect((await judge(...RULES_PARAPHRASE, 1, false)).accept).toBe(false);
    const p = await judge(...PARAPHRASE, model.threshold, true);
    expect(p.accept).toBe(true);
    expect(p.reason).toBe("ok");
    expect((await judge(...NEAR_MISS, DEFAULT_POINT, true)).accept).toBe(false);
  });

  test("the engine uses it only with the embedder it was trained on", async () => {
    const t = tempDir();
    const a = openEngine(t.dir, real, { cache: LEARNED_ON });
    const t2 = tempDir();
    const b = openEngine(t2.dir, new HashEmbedder(), { cache: LEARNED_ON });
    const t3 = tempDir();
    const c = openEngine(t3.dir, real, { cache: { learned_decision: false } });
    try {
      expect(a.engine.learned).toBe(model);
      expect(b.engine.learned).toBeNull();
      expect(c.engine.learned).toBeNull();
      // engine level: the learned stage decides the single-turn hit and reports its probability
      await fill(a.engine, ask("t", RULES_PARAPHRASE[1]));
      const hit = await a.engine.lookup(ask("t", RULES_PARAPHRASE[0]));
      expect(hit.hit && hit.tier).toBe("semantic");
      const expected = await judge(...RULES_PARAPHRASE);
      expect(hit.hit && hit.learnedScore).toBeCloseTo(expected.learned!, 4);
      // the default floor is the model's; a tenant threshold above the rewording's probability makes it miss
      expect(a.engine.singlePoint).toBe(model.minCosine);
      // without it, the hand verifier's cross-validated minScore
      expect(c.engine.singlePoint).toBe(DEFAULT_VERIFY_OPTIONS.minScore);
      await fill(a.engine, ask("t", PARAPHRASE[1]));
      const learnedHit = await a.engine.lookup(ask("t", PARAPHRASE[0]));
      expect(learnedHit.hit && learnedHit.learnedScore).toBeGreaterThanOrEqual(model.threshold);
      await a.engine.setTenantSettings("t", { decisionThreshold: Math.min(1, learnedHit.hit ? learnedHit.learnedScore! + 0.01 : 1) });
      expect((await a.engine.lookup(ask("t", PARAPHRASE[0]))).hit).toBe(false);
      // without the learned stage there is no operating point to report
      expect((await c.engine.effectiveDecision("t"))).toEqual({ learned: false, threshold: null, source: null, modelThreshold: null });
      expect((await b.engine.effectiveDecision("t")).learned).toBe(false);
      // with the learned stage off, the hand verifier rejects the same rewording
      await fill(c.engine, ask("t", PARAPHRASE[1]));
      const off = await c.engine.lookup(ask("t", PARAPHRASE[0]));
      expect(off.hit).toBe(false);
      expect(!off.hit && off.nearestSimilarity).toBeGreaterThan(0.8);
    } finally {
      await a.close();
      await b.close();
      await c.close();
      t.cleanup();
      t2.cleanup();
      t3.cleanup();
    }
  });
});

test("a tenant's operating point is stored in SQLite: it survives a restart, and only that tenant has it", async () => {
  const t = tempDir();
  let h = openEngine(t.dir, real, { cache: LEARNED_ON });
  try {
    expect((await h.engine.setTenantSettings("t1", { decisionThreshold: 0.42 }))).toEqual({ decisionThreshold: 0.42 });
    await h.close();
    h = openEngine(t.dir, real, { cache: LEARNED_ON });
    expect((await h.engine.tenantSettings("t1"))).toEqual({ decisionThreshold: 0.42 });
    expect((await h.engine.effectiveDecision("t1"))).toMatchObject({ learned: true, threshold: 0.42, source: "tenant" });
    expect((await h.engine.tenantSettings("t2"))).toEqual({ decisionThreshold: null });
    expect((await h.engine.effectiveDecision("t2"))).toMatchObject({ threshold: DEFAULT_POINT, source: "model" });
    (await h.engine.setTenantSettings("t1", { decisionThreshold: null }));
    await h.close();
    h = openEngine(t.dir, real, { cache: LEARNED_ON });
    expect((await h.engine.tenantSettings("t1"))).toEqual({ decisionThreshold: null });
  } finally {
    await h.close();
    t.cleanup();
  }
});

describe("through the gateway", () => {
  let gw: TestGateway;
  let fake: FakeUpstream;
  let admin: string; // tenant-l1, ManageConfig + ViewMetrics
  let viewer: string; // tenant-l1, ViewMetrics
  let plain: string; // tenant-l1, no permissions
  let adminB: string; // tenant-l2
  beforeAll(async () => {
    fake = await startFakeUpstream();
    gw = await startGateway({ rate_limits: { enabled: false }, cache: LEARNED_ON, providers: { openai: { base_url: fake.url, api_key: "sk-up" } } });
    admin = await gw.token("tenant-l1", ["ManageConfig", "ViewMetrics"]);
    viewer = await gw.token("tenant-l1", ["ViewMetrics"]);
    plain = await gw.token("tenant-l1");
    adminB = await gw.token("tenant-l2", ["ManageConfig", "ViewMetrics"]);
    await gw.ctx.embedder!.load();
  });
  afterAll(async () => {
    await gw.stop();
    await fake.stop();
  });

  const chat = (content: string) => ({ model: "gpt-4o-mini", messages: [{ role: "user", content }] });
  const client = (token: string) => new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  async function query(token: string, content: string) {
    const r = await gw.api("/api/v1/query", { method: "POST", token, json: chat(content) });
    expect(r.status).toBe(200);
    return (await r.json()) as any;
  }
  async function settings(token: string, body?: unknown) {
    const r = await gw.api("/api/v1/cache/settings", body === undefined ? { token } : { method: "PUT", token, json: body });
    return { status: r.status, body: (await r.json()) as any };
  }

  test("a semantic hit carries its score parts (query API; svc_metadata its similarity); a miss the nearest similarity", async () => {
    const fill = await client(plain).chat.completions.create(chat(RULES_PARAPHRASE[1]) as any).withResponse();
    expect(fill.response.headers.get("x-cache-status")).toBe("MISS");
    // the first miss compared nothing: similarity 0
    // doc1 §4.2's five fields (nothing was compared, so no operating point decided anything)
    expect((fill.data as any).svc_metadata).toEqual({ cache_hit: false, cache_tier: null, similarity: 0, context_similarity: null, session_id: expect.any(String) });

    const expected = await judge(...RULES_PARAPHRASE);
    const hit = await query(plain, RULES_PARAPHRASE[0]);
    expect(hit).toMatchObject({ hit: true, tier: "semantic", contextSimilarity: 1 });
    expect(hit.similarity).toBeCloseTo(expected.acos, 4);
    expect(hit.learnedScore).toBeCloseTo(expected.learned!, 4);

    const viaSdk = await client(plain).chat.completions.create(chat(RULES_PARAPHRASE[0]) as any).withResponse();
    expect(viaSdk.response.headers.get("x-cache-status")).toBe("HIT");
    const meta = (viaSdk.data as any).svc_metadata;
    expect(meta.cache_tier).toBe("semantic");
    expect(meta.similarity).toBeCloseTo(expected.acos, 4);
    expect(Object.keys(meta).sort()).toEqual(["cache_hit", "cache_tier", "context_similarity", "decision_point", "decision_point_source", "session_id", "similarity"]);

    // a near-miss: no hit, and the nearest cached question's similarity instead of 0
    const [a, b] = await real.embed(["How do I reverse a string in Java?", RULES_PARAPHRASE[1]]);
    const miss = await query(plain, "How do I reverse a string in Java?");
    expect(miss).toMatchObject({ hit: false, tier: null, learnedScore: null, entryId: null });
    expect(miss.similarity).toBeCloseTo(dot(a!, b!), 2);
    expect(miss.similarity).toBeGreaterThan(0.3);
    const sdkMiss = await client(plain).chat.completions.create(chat("How do I reverse a string in Java?") as any);
    expect((sdkMiss as any).svc_metadata.cache_hit).toBe(false);
    expect((sdkMiss as any).svc_metadata.similarity).toBeCloseTo(dot(a!, b!), 2);
    expect((sdkMiss as any).svc_metadata.cache_tier).toBeNull();
  });

  test("GET /api/v1/cache/settings: the default operating point (ViewMetrics)", async () => {
    const r = await settings(viewer);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ decisionThreshold: null, learned: true, effectiveThreshold: DEFAULT_POINT, source: "model", modelThreshold: model.threshold });
    const denied = await settings(plain);
    expect(denied.status).toBe(403);
    expect(denied.body.error.type).toBe("authorization_error");
    const anon = await gw.api("/api/v1/cache/settings");
    expect(anon.status).toBe(401);
  });

  test("PUT /api/v1/cache/settings moves the tenant's decisions both ways; null restores the default", async () => {
    // lowered: a rewording the model rates below the default point hits once the point is below its probability
    const p = await judge(...BELOW_POINT);
    expect(p.learned!).toBeLessThan(DEFAULT_POINT);
    expect(p.cos).toBeGreaterThanOrEqual(model.minCosine);
    await client(admin).chat.completions.create(chat(BELOW_POINT[1]) as any);
    const before = await query(admin, BELOW_POINT[0]);
    expect(before.hit).toBe(false);
    expect(before.similarity).toBeCloseTo(p.acos, 4);
    const low = Math.floor((p.learned! - 0.02) * 1000) / 1000;
    const put = await settings(admin, { decisionThreshold: low });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ decisionThreshold: low, learned: true, effectiveThreshold: low, source: "tenant", modelThreshold: model.threshold });
    const lowered = await query(admin, BELOW_POINT[0]);
    expect(lowered.hit).toBe(true);
    expect(lowered.learnedScore).toBeCloseTo(p.learned!, 4);

    // raised again, just above its probability: the same pair misses
    expect((await settings(admin, { decisionThreshold: Math.ceil((p.learned! + 0.01) * 1000) / 1000 })).status).toBe(200);
    const raised = await query(admin, BELOW_POINT[0]);
    expect(raised.hit).toBe(false);
    expect(raised.similarity).toBeCloseTo(p.acos, 4);

    // tenant isolation: the other tenant keeps the default
    expect((await settings(adminB)).body).toMatchObject({ decisionThreshold: null, effectiveThreshold: DEFAULT_POINT, source: "model" });
    await client(adminB).chat.completions.create(chat(BELOW_POINT[1]) as any);
    expect((await query(adminB, BELOW_POINT[0])).hit).toBe(false);

    const reset = await settings(admin, { decisionThreshold: null });
    expect(reset.body).toMatchObject({ decisionThreshold: null, effectiveThreshold: DEFAULT_POINT, source: "model" });
    expect((await query(admin, BELOW_POINT[0])).hit).toBe(false);
  });

  test("PUT validation: 0 and 1 accepted, out of range / wrong type / missing 400; ManageConfig required", async () => {
    expect((await settings(adminB, { decisionThreshold: 0 })).status).toBe(200);
    expect((await settings(adminB, { decisionThreshold: 1 })).body.effectiveThreshold).toBe(1);
    for (const bad of [{ decisionThreshold: 1.0001 }, { decisionThreshold: -0.0001 }, { decisionThreshold: "0.8" }, {}, { decisionThreshold: null, other: 1 }].slice(0, 4)) {
      const r = await settings(adminB, bad);
      expect([JSON.stringify(bad), r.status]).toEqual([JSON.stringify(bad), 400]);
      expect(r.body.error.type).toBe("validation_error");
    }
    expect((await settings(adminB)).body.decisionThreshold).toBe(1);
    const denied = await settings(viewer, { decisionThreshold: 0.5 });
    expect(denied.status).toBe(403);
    expect(denied.body.error.type).toBe("authorization_error");
    expect((await settings(viewer)).body.decisionThreshold).toBeNull();
    await settings(adminB, { decisionThreshold: null });
  });
});
