/**
 * Test environment for the proxies: a fake upstream standing in for all four providers, a real
 * gateway pointed at it (configured provider keys) with its real cache engine (local embedder).
 */
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { merged } from "../../src/core/objects";

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
  const gw = await startGateway({ rate_limits: { enabled: false }, ...overrides, providers: merged(providers, overrides.providers ?? {}) });
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

/** Read a whole streamed body as text. */
export const text = (r: Response) => r.text();
