/**
 * Optional upstream probes (readiness.*): each configured provider's model list is probed in the
 * background with the configured key; /ready reports the cached results without probing itself;
 * a provider is reported down only after repeated failures (no flapping); readiness depends on
 * the probes only with require_upstream.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { startFakeUpstream, closedPort, type FakeUpstream } from "../fake-upstream/server";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { loadConfig, ConfigError } from "../../src/config";

describe("upstream probes reported by /ready", () => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    fake = await startFakeUpstream();
    gw = await startGateway({
      providers: { openai: { base_url: `${fake.url}/v1`, api_key: "sk-probe" }, gemini: { base_url: `http://127.0.0.1:${await closedPort()}`, api_key: "g" } },
      readiness: { probe_providers: ["openai", "gemini"], probe_interval_secs: 3600, probe_failures_before_down: 2, probe_timeout_ms: 1000 },
    });
    await gw.ctx.embedder.load();
  });
  afterAll(async () => {
    await gw.stop();
    await fake.stop();
  });
  const ready = async () => {
    const r = await fetch(gw.url + "/ready");
    return { status: r.status, body: (await r.json()) as any };
  };

  test("probes go to the model list with the configured key; a down provider is reported after 2 failures, never making /ready fail", async () => {
    await gw.ctx.probes.tick(); // the start-up probe may still run: a second tick is the deterministic one
    fake.reset();
    await gw.ctx.probes.tick();
    const sent = fake.received("/v1/models");
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers.authorization).toBe("Bearer sk-probe");
    const r = await ready();
    expect(r.status).toBe(200);
    expect(r.body.checks).toEqual({ database: true, migrations: true, embedder: true, cache: true });
    expect(r.body.upstreams.openai).toMatchObject({ status: "up", httpStatus: 200, consecutiveFailures: 0, error: null });
    expect(r.body.upstreams.openai.latencyMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(r.body.upstreams.openai.checkedAt)).toBeGreaterThan(0);
    expect(r.body.upstreams.gemini).toMatchObject({ status: "down", httpStatus: null, error: expect.stringContaining("unreachable") });
    expect(r.body.upstreams.gemini.consecutiveFailures).toBeGreaterThanOrEqual(2);
  });

  test("/ready reads the cache: polling it sends nothing upstream", async () => {
    fake.reset();
    for (let i = 0; i < 5; i++) expect((await ready()).status).toBe(200);
    expect(fake.requests).toHaveLength(0);
  });

  test("hysteresis: one failure keeps 'up'; the second reports it; one success brings it back; a refused key is 'error'", async () => {
    fake.failNext({ kind: "status", status: 503 });
    await gw.ctx.probes.tick();
    expect((await ready()).body.upstreams.openai).toMatchObject({ status: "up", consecutiveFailures: 1, httpStatus: 503, error: "answered 503" });
    fake.failNext({ kind: "status", status: 503 });
    await gw.ctx.probes.tick();
    expect((await ready()).body.upstreams.openai).toMatchObject({ status: "down", consecutiveFailures: 2 });
    await gw.ctx.probes.tick();
    expect((await ready()).body.upstreams.openai).toMatchObject({ status: "up", consecutiveFailures: 0, error: null });
    fake.failNext({ kind: "status", status: 401 });
    fake.failNext({ kind: "status", status: 401 });
    await gw.ctx.probes.tick();
    await gw.ctx.probes.tick();
    const e = (await ready()).body.upstreams.openai;
    expect(e).toMatchObject({ status: "error", httpStatus: 401 });
    expect(e.error).toContain("SVC_PROVIDERS__OPENAI__API_KEY");
    await gw.ctx.probes.tick();
  });
});

test("without probe_providers /ready has no upstreams and probes nothing", async () => {
  const fake = await startFakeUpstream();
  const gw = await startGateway({ providers: { openai: { base_url: fake.url } } });
  try {
    await gw.ctx.embedder.load();
    const body = (await (await fetch(gw.url + "/ready")).json()) as any;
    expect(body.upstreams).toBeUndefined();
    expect(gw.ctx.probes.enabled).toBe(false);
    expect(fake.requests).toHaveLength(0);
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

test("require_upstream: /ready is 503 only while every probed provider is down, and says which", async () => {
  const fake = await startFakeUpstream();
  const gw = await startGateway({
    providers: { openai: { base_url: fake.url, api_key: "k" } },
    readiness: { probe_providers: ["openai"], probe_interval_secs: 3600, probe_failures_before_down: 1, require_upstream: true },
  });
  try {
    await gw.ctx.embedder.load();
    await gw.ctx.probes.tick();
    expect((await fetch(gw.url + "/ready")).status).toBe(200);
    fake.failNext({ kind: "status", status: 500 });
    await gw.ctx.probes.tick();
    const down = await fetch(gw.url + "/ready");
    expect(down.status).toBe(503);
    const body = (await down.json()) as any;
    expect(body.error.type).toBe("service_unavailable");
    expect(body.error.message).toBe("not ready: upstreams");
    await gw.ctx.probes.tick();
    expect((await fetch(gw.url + "/ready")).status).toBe(200);
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

test("an unknown provider in SVC_READINESS__PROBE_PROVIDERS stops start-up naming the variable", () => {
  expect(() => loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_READINESS__PROBE_PROVIDERS: '["openai","mistral"]' })).toThrow(ConfigError);
  expect(() => loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_READINESS__PROBE_PROVIDERS: '["openai","mistral"]' })).toThrow('SVC_READINESS__PROBE_PROVIDERS: unknown provider "mistral"');
  expect(loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_READINESS__PROBE_PROVIDERS: "[openai, cohere]" }).readiness.probe_providers).toEqual(["openai", "cohere"]);
  expect(loadConfig({ SVC_STORAGE__PATH: ":memory:", SVC_READINESS__PROBE_PROVIDERS: "anthropic,gemini" }).readiness.probe_providers).toEqual(["anthropic", "gemini"]);
});
