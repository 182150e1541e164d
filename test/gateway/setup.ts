/**
 * Test environment for the proxies: a fake upstream standing in for all four providers, a real
 * gateway pointed at it (configured provider keys), and the real cache engine (local embedder).
 */
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { createCacheEngine, embedderFromConfig } from "../../src/cache";

export const KEYS = { openai: "sk-up-openai", anthropic: "sk-up-anthropic", gemini: "up-gemini-key", cohere: "up-cohere-key" };

export interface ProxyEnv {
  fake: FakeUpstream;
  gw: TestGateway;
  token: string;
  stop(): Promise<void>;
}

export async function startProxyEnv(overrides: Record<string, any> = {}): Promise<ProxyEnv> {
  const fake = await startFakeUpstream();
  const providers = Object.fromEntries(
    (Object.keys(KEYS) as Array<keyof typeof KEYS>).map((p) => [p, { base_url: fake.url, api_key: KEYS[p], timeout_ms: 2_000 }]),
  );
  const gw = await startGateway({ rate_limits: { enabled: false }, ...overrides, providers: deepMerge(providers, overrides.providers ?? {}) });
  const ctx = gw.ctx;
  // the composition root creates the engine once the cache domain wires it; until then do it here
  if (!ctx.cache && ctx.config.cache.enabled) {
    const embedder = embedderFromConfig(ctx.config);
    ctx.embedder = embedder;
    ctx.cache = createCacheEngine(ctx.config, { db: ctx.db, embedder, log: ctx.log, metrics: ctx.metrics });
    ctx.closers.push(
      () => embedder.close(),
      () => ctx.cache!.close(),
    );
  }
  const token = await gw.token("tenant-a");
  return {
    fake,
    gw,
    token,
    async stop() {
      await gw.stop();
      await fake.stop();
    },
  };
}

function deepMerge(a: Record<string, any>, b: Record<string, any>): Record<string, any> {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = v && typeof v === "object" && !Array.isArray(v) && typeof a[k] === "object" ? deepMerge(a[k], v) : v;
  return out;
}

/** Read a whole streamed body as text. */
export const text = (r: Response) => r.text();
