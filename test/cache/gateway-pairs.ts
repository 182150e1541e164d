/**
 * Pairs of questions through a real gateway (local USE-lite, a fake upstream, the official `openai` SDK):
 * the first question fills a fresh tenant's cache (it must miss), the second is answered as the test
 * reads it. Registers its own beforeAll/afterAll in the calling test file.
 */
import { expect, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";

export interface SecondAnswer {
  status: string | null;
  meta: any;
}

/** `second(first, then, headers?)`: each call in a tenant of its own, named `${tenantPrefix}-<n>` */
export function gatewayPairs(tenantPrefix: string): (first: string, then: string, headers?: Record<string, string>) => Promise<SecondAnswer> {
  let gw: TestGateway;
  let fake: FakeUpstream;
  beforeAll(async () => {
    fake = await startFakeUpstream();
    gw = await startGateway({ rate_limits: { enabled: false }, providers: { openai: { base_url: fake.url, api_key: "sk-up" } } });
    await gw.ctx.embedder!.load();
  }, 60_000);
  afterAll(async () => {
    await gw.stop();
    await fake.stop();
  });
  let n = 0;
  return async (first, then, headers = {}) => {
    const token = await gw.token(`${tenantPrefix}-${n++}`);
    const c = new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const send = async (content: string, h: Record<string, string>): Promise<SecondAnswer> => {
      const { data, response } = await c.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content }] }, { headers: h }).withResponse();
      return { status: response.headers.get("x-cache-status"), meta: (data as any).svc_metadata };
    };
    expect((await send(first, {})).status).toBe("MISS");
    return send(then, headers);
  };
}
