/**
 * A team over its budget, seen through the official SDKs with their default retries: the refusal
 * says it is not worth retrying (`x-should-retry: false`), its Retry-After stays within the SDKs'
 * cap, and the SDK call fails at once with the budget message instead of sleeping until the
 * period's end. A rate-limit 429 (a real short wait) stays retryable.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { startProxyEnv, type ProxyEnv } from "./setup";

let env: ProxyEnv;
let teamKey: string;

beforeAll(async () => {
  // rate limits on: the answer carries X-RateLimit-* (the starter tier: 10 requests/s, more than these tests make)
  env = await startProxyEnv({ cache: { enabled: false }, rate_limits: { enabled: true } });
  const admin = await env.gw.token("tenant-a", ["WorkspaceAdmin"], "admin");
  const api = async (path: string, json: unknown) => (await env.gw.api(path, { method: "POST", token: admin, json })).json() as Promise<any>;
  // monthly budget of 0: over budget until the month ends (days away, or at least hours)
  const team = await api("/api/v1/teams", { name: "Frugal", maxBudgetCents: 0, budgetPeriod: "monthly" });
  teamKey = (await api("/api/v1/virtual-keys", { name: "frugal", teamId: team.id })).key;
});
afterAll(() => env.stop());

/** A fetch for the SDKs that counts the requests they make. */
function countingFetch() {
  const calls: string[] = [];
  const f = (async (input: any, init?: any) => {
    calls.push(String(input instanceof Request ? input.url : input));
    return fetch(input, init);
  }) as typeof fetch;
  return { f, calls };
}

/** The SDK call's error and how long it took; `undefined` error = it was still waiting after `limitMs`. */
async function timed(p: Promise<unknown>, limitMs = 5_000): Promise<{ err: any; ms: number }> {
  const t0 = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const gaveUp = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), limitMs)));
  const err = await Promise.race([p.then(() => new Error("unexpectedly succeeded"), (e) => e), gaveUp]);
  clearTimeout(timer);
  return { err, ms: performance.now() - t0 };
}

describe("budget refusal through the SDKs", () => {
  test("the refusal's headers: x-should-retry false, Retry-After within the SDKs' 8 s cap, no requests left", async () => {
    const r = await fetch(`${env.gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${teamKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hello" }] }),
    });
    expect(r.status).toBe(429);
    expect(r.headers.get("x-should-retry")).toBe("false");
    const retryAfter = Number(r.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(8);
    expect(r.headers.get("x-ratelimit-remaining")).toBe("0");
    const body = (await r.json()) as any;
    expect(body.error.type).toBe("rate_limit_error");
    expect(body.error.message).toContain('budget exceeded: team "Frugal"');
    // the body still says when retrying can succeed by itself: the period's end (beyond the header's cap)
    expect(body.error.retry_after_secs).toBeGreaterThanOrEqual(retryAfter);
    expect(Number(r.headers.get("x-ratelimit-reset"))).toBe(body.error.retry_after_secs);
    expect(env.fake.received("/v1/chat/completions")).toHaveLength(0);
  });

  test("openai SDK, default retries: fails within 1 s with the budget message, one request made", async () => {
    const { f, calls } = countingFetch();
    const client = new OpenAI({ apiKey: teamKey, baseURL: `${env.gw.url}/v1`, fetch: f });
    const { err, ms } = await timed(client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hello" }] }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.message).toContain("budget exceeded");
    // one request, no retry: the decisive check (a retry would sleep and call again); the time bound
    // is the 1 s with room for a loaded machine (1.8 s seen at load 12), far from the hours before
    expect(calls).toHaveLength(1);
    expect(ms).toBeLessThan(5_000);
  });

  test("anthropic SDK, default retries: fails within 1 s with the budget message, one request made", async () => {
    const { f, calls } = countingFetch();
    const client = new Anthropic({ apiKey: teamKey, baseURL: env.gw.url, fetch: f });
    const { err, ms } = await timed(client.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 20, messages: [{ role: "user", content: "hello" }] }));
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    expect(err.message).toContain("budget exceeded");
    // one request, no retry: the decisive check (a retry would sleep and call again); the time bound
    // is the 1 s with room for a loaded machine (1.8 s seen at load 12), far from the hours before
    expect(calls).toHaveLength(1);
    expect(ms).toBeLessThan(5_000);
  });

  test("a provider's rate-limit 429 (a short wait) is still retried by the SDK", async () => {
    env.fake.reset();
    const admin = await env.gw.token("tenant-a", ["WorkspaceAdmin"], "admin");
    const free = (await (await env.gw.api("/api/v1/virtual-keys", { method: "POST", token: admin, json: { name: "free", teamId: null } })).json()) as any;
    env.fake.failNext({ kind: "status", status: 429, retryAfter: "1" });
    const { f, calls } = countingFetch();
    const client = new OpenAI({ apiKey: free.key, baseURL: `${env.gw.url}/v1`, fetch: f });
    const out = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "retry me" }] });
    expect(out.choices[0]!.message.content).toContain("retry me");
    expect(calls).toHaveLength(2);
  }, 15_000);
});
