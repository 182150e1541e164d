/**
 * GatewayService.complete: other domains (prompts, chains, memory) call a model through the
 * same pipeline the proxies use — model routing picks the provider style, the style's adapter
 * builds the request, and cache + upstream + usage accounting are shared. Callers declare the
 * part they use as their own port (e.g. src/prompts/ports.ts).
 */
import { ApiError } from "../core/errors";
import { uuid } from "../core/ids";
import type { TokenUsage } from "../core/usage";
import { describeValueError } from "../core/validation";
import type { CompletionInput } from "./providers/types";
import { PROVIDERS, type ProviderName } from "./providers";
import type { Pipeline } from "./pipeline";
import { providerFor } from "./routing";
import { ProviderReply } from "./upstream";

export interface CompletionRequest extends CompletionInput {
  tenantId: string;
  /** who asks (usage records, team budgets) */
  sub?: string;
  keyId?: string;
  skipCache?: boolean;
  workspaceContext?: string;
  requestId?: string;
}

export interface CompletionResult {
  text: string;
  usage: TokenUsage;
  cacheHit: boolean;
  provider: string;
  model: string;
  durationMs: number;
}

export class GatewayService {
  constructor(private readonly pipeline: Pipeline, private readonly routes: () => Record<string, ProviderName>) {}

  /** Throws ApiError (proxy_error, timeout_error, embedding_error, or the provider's 4xx as invalid_request_error). */
  async complete(req: CompletionRequest): Promise<CompletionResult> {
    const startedAt = performance.now();
    const provider = providerFor(req.model, this.routes());
    const def = PROVIDERS[provider];
    const endpoint = def.completion.endpoint;
    const body = def.completion.build(req);
    if (endpoint.check && !endpoint.check.Check(body)) throw new ApiError("validation_error", describeValueError(endpoint.check.Errors(body).First(), "completion request"));
    const call = endpoint.parse({ body, params: { model: req.model }, url: new URL("http://svc.internal/"), headers: new Headers() });
    let result;
    try {
      result = await this.pipeline.execute({
        tenantId: req.tenantId,
        sub: req.sub,
        keyId: req.keyId,
        endpoint,
        wire: def.wire,
        call,
        skipCache: req.skipCache === true,
        workspaceContext: req.workspaceContext,
        clientHeaders: new Headers(def.completion.headers ?? {}),
        requestId: req.requestId ?? uuid(),
        startedAt,
      });
    } catch (e) {
      if (e instanceof ProviderReply) throw completionError(provider, e);
      throw e;
    }
    if (result.kind !== "json") throw new ApiError("internal_error", "unexpected non-JSON completion result");
    return {
      text: endpoint.textOf!(result.raw),
      usage: result.usage,
      cacheHit: result.meta.status === "HIT",
      provider,
      model: req.model,
      durationMs: performance.now() - startedAt,
    };
  }
}

/**
 * A provider's 4xx to a request svc built, as doc1 §7 names it: 404 `not_found` (an unknown
 * model, rule 2), 429 `rate_limit_error` with `retry_after_secs` (rule 3; retryable), 400/422 as
 * the request's fault. A 401/403 refuses svc's own configured provider key, which the caller can
 * neither see nor fix: `configuration_error` (500, not retryable), never the caller's 401.
 */
function completionError(provider: ProviderName, reply: ProviderReply): ApiError {
  const message = `${provider}: ${reply.providerMessage()}`;
  if (reply.status === 401 || reply.status === 403)
    return new ApiError("configuration_error", `${provider} refused svc's provider credentials (${reply.status}): ${reply.providerMessage()}`);
  if (reply.status === 429) {
    const secs = reply.retryAfterSecs();
    return new ApiError("rate_limit_error", message, { retry_after_secs: secs }, { "retry-after": String(secs) });
  }
  return new ApiError(reply.doc1Type(), message);
}
