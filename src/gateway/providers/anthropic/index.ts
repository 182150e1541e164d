/** The messages style (doc1 §4.3): /v1/messages, and /v1/messages/count_tokens (forwarded). */
import type { ProviderDefinition } from "../types";
import { anthropic, anthropicRequest, CountTokensBody, MessagesBody } from "./adapter";
import { MESSAGES_EXAMPLE } from "../examples";

export const anthropicProvider: ProviderDefinition = {
  defaultBaseUrl: "https://api.anthropic.com",
  wire: anthropic.wire,
  probe: { path: "/v1/models", headers: { "anthropic-version": "2023-06-01" } },
  modelGlobs: ["claude-*"],
  info: { messages: { method: "POST", path: "/v1/messages" } },
  completion: { endpoint: anthropic.messages, build: anthropicRequest, headers: { "anthropic-version": "2023-06-01" } },
  routes: [
    {
      method: "POST",
      path: "/v1/messages",
      endpoint: anthropic.messages,
      docs: [{ path: "/v1/messages", summary: "Messages proxy", examples: MESSAGES_EXAMPLE, description: "The Anthropic Messages API for the Anthropic SDK (base URL `<svc>`). Answered from the tenant's cache when an identical or close enough request was answered before (X-Cache-Status: HIT), otherwise forwarded to the provider (MISS) and the answer stored. Requires the anthropic-version header (YYYY-MM-DD). `stream: true` returns named SSE events. Headers X-Cache-Status, X-Request-ID.", body: MessagesBody, stream: "sse" }],
    },
    {
      method: "POST",
      path: "/v1/messages/count_tokens",
      endpoint: anthropic.countTokens,
      docs: [{ path: "/v1/messages/count_tokens", summary: "Count a message's tokens (forwarded, never cached)", description: "The Messages API's token count (the SDK's `messages.countTokens`), forwarded to the provider. Requires the anthropic-version header. Answers the provider's `{input_tokens}`; X-Cache-Status is BYPASS.", body: CountTokensBody }],
    },
  ],
};
