/**
 * Test support for the prompts domain: a recording GatewayService double for service-level
 * tests (the HTTP-level execute tests use the real gateway and the fake upstream), and a tiny
 * JSON fetch wrapper.
 */
import type { CompletionRequest, CompletionResult, GatewayService } from "../../src/gateway/types";
import { ApiError } from "../../src/core/errors";

export class RecordingGateway implements GatewayService {
  readonly calls: CompletionRequest[] = [];
  /** reply for a request; default echoes the last message */
  constructor(
    private readonly reply: (req: CompletionRequest, n: number) => string | ApiError = (r) => `echo: ${r.messages.at(-1)!.content}`,
  ) {}
  async complete(req: CompletionRequest): Promise<CompletionResult> {
    this.calls.push(structuredClone(req));
    const out = this.reply(req, this.calls.length);
    if (out instanceof ApiError) throw out;
    const promptTokens = req.messages.reduce((s, m) => s + m.content.split(/\s+/).filter(Boolean).length, 0);
    return { text: out, usage: { promptTokens, completionTokens: out.split(/\s+/).filter(Boolean).length }, cacheHit: false, provider: "double", model: req.model, durationMs: 1 };
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
