/**
 * Test support for the prompts domain: a recording GatewayService double for service-level
 * tests (the HTTP-level execute tests use the real gateway and the fake upstream), the HTTP
 * tests' shared set-up (one gateway, tenants A and B), a tiny JSON fetch wrapper and the error
 * envelope check.
 */
import { expect } from "bun:test";
import { startGateway, type TestGateway } from "../helpers/gateway";
import type { Completer, Completion, Completed } from "../../src/prompts/ports";
import { ApiError } from "../../src/core/errors";

export class RecordingGateway implements Completer {
  readonly calls: Completion[] = [];
  /** reply for a request; default echoes the last message */
  constructor(
    private readonly reply: (req: Completion, n: number) => string | ApiError | Promise<string | ApiError> = (r) => `echo: ${r.messages.at(-1)!.content}`,
  ) {}
  async complete(req: Completion): Promise<Completed> {
    this.calls.push(structuredClone(req));
    const out = await this.reply(req, this.calls.length);
    if (out instanceof ApiError) throw out;
    const inputTokens = req.messages.reduce((s, m) => s + m.content.split(/\s+/).filter(Boolean).length, 0);
    return { text: out, usage: { inputTokens, outputTokens: out.split(/\s+/).filter(Boolean).length }, cacheHit: false, model: req.model, durationMs: 1 };
  }
}

export async function body(r: Response): Promise<any> {
  const text = await r.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * A gateway for one test file with a token for tenant-a (sub alice) and tenant-b (sub bob).
 * Rate limits are off: functional tests send bursts; rate limits have their own tests.
 */
export async function startTwoTenants(completer?: Completer): Promise<{ gw: TestGateway; A: string; B: string }> {
  const gw = await startGateway({ rate_limits: { enabled: false } }, {}, { completer });
  return { gw, A: await gw.token("tenant-a", ["ManageConfig", "ViewMetrics", "ViewLogs"], "alice"), B: await gw.token("tenant-b", ["ManageConfig", "ViewMetrics", "ViewLogs"], "bob") };
}

/** `call(method, path, token, json?)` against the gateway getGw() returns (read at call time: it starts in beforeAll) */
export function apiCaller(getGw: () => TestGateway) {
  return async (method: string, path: string, token: string | undefined, json?: unknown) => {
    const r = await getGw().api(path, { method, token, json });
    return { status: r.status, body: await body(r) };
  };
}

/** exact status and exactly the doc1 envelope {error:{message,type}}; optionally a substring of the message */
export function expectError(r: { status: number; body: any }, status: number, type: string, contains?: string) {
  expect(r.status).toBe(status);
  expect(r.body).toEqual({ error: { message: expect.any(String), type } });
  if (contains) expect(r.body.error.message).toContain(contains);
}
