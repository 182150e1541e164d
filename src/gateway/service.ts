/**
 * GatewayService.complete: other domains (prompts, chains, memory) call a model through the
 * same pipeline the proxies use — model routing picks the provider style, the style's adapter
 * builds the request, and cache + upstream + usage accounting are shared.
 */
import { ApiError, embeddingUnavailable } from "../core/errors";
import { uuid } from "../core/ids";
import type { AppContext } from "../context";
import type { ProviderName } from "../core/config";
import type { CompletionRequest, CompletionResult, GatewayService } from "./types";
import type { Endpoint, ProviderWire } from "./adapter";
import type { Pipeline } from "./pipeline";
import { providerFor } from "./routing";
import { ProviderReply } from "./upstream";
import { openai, openaiRequest } from "./adapters/openai";
import { anthropic, anthropicRequest } from "./adapters/anthropic";
import { gemini, geminiRequest } from "./adapters/gemini";
import { cohere, cohereRequest } from "./adapters/cohere";

const STYLES: Record<ProviderName, { endpoint: Endpoint; wire: ProviderWire; build: (r: CompletionRequest) => unknown }> = {
  openai: { endpoint: openai.chatCompletions, wire: openai.wire, build: openaiRequest },
  anthropic: { endpoint: anthropic.messages, wire: anthropic.wire, build: anthropicRequest },
  gemini: { endpoint: gemini.generateContent, wire: gemini.wire, build: geminiRequest },
  cohere: { endpoint: cohere.chat, wire: cohere.wire, build: cohereRequest },
};

export class Gateway implements GatewayService {
  constructor(private readonly ctx: AppContext, private readonly pipeline: Pipeline) {}

  async complete(req: CompletionRequest): Promise<CompletionResult> {
    const startedAt = performance.now();
    const provider = providerFor(req.model, this.ctx.config.models.routes);
    const style = STYLES[provider];
    const body = style.build(req);
    const endpoint = style.endpoint;
    if (endpoint.check && !endpoint.check.Check(body)) {
      const first = endpoint.check.Errors(body).First();
      throw new ApiError("validation_error", `completion request: ${first?.path ?? ""} ${first?.message ?? "invalid"}`.trim());
    }
    const call = endpoint.parse({ body, params: { model: req.model }, url: new URL("http://svc.internal/"), headers: new Headers() });
    let result;
    try {
      result = await this.pipeline.execute({
        tenantId: req.tenantId,
        endpoint,
        wire: style.wire,
        call,
        skipCache: req.skipCache === true,
        workspaceContext: req.workspaceContext,
        clientHeaders: new Headers(provider === "anthropic" ? { "anthropic-version": "2023-06-01" } : {}),
        requestId: req.requestId ?? uuid(),
        startedAt,
      });
    } catch (e) {
      if (e instanceof ProviderReply) throw new ApiError("invalid_request_error", `${provider}: ${e.providerMessage()}`);
      throw embeddingUnavailable(e) ?? e;
    }
    if (result.kind !== "json") throw new ApiError("internal_error", "unexpected non-JSON completion result");
    return {
      text: endpoint.textOf!(result.raw),
      usage: { promptTokens: result.usage.inputTokens, completionTokens: result.usage.outputTokens },
      cacheHit: result.meta.status === "HIT",
      provider,
      model: req.model,
      durationMs: performance.now() - startedAt,
    };
  }
}
