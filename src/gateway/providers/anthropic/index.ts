/** The messages style (doc1 §4.3): /v1/messages, and /v1/messages/count_tokens (forwarded). */
import type { ProviderDefinition } from "../types";
import { anthropic, anthropicRequest, CountTokensBody, MessagesBody } from "./adapter";

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
      docs: [{ path: "/v1/messages", summary: "Messages proxy", description: "Requires the anthropic-version header (YYYY-MM-DD). `stream: true` returns named SSE events. Headers X-Cache-Status, X-Request-ID.", body: MessagesBody, stream: "sse" }],
    },
    {
      method: "POST",
      path: "/v1/messages/count_tokens",
      endpoint: anthropic.countTokens,
      docs: [{ path: "/v1/messages/count_tokens", summary: "Count a message's tokens (forwarded, never cached)", description: "Requires the anthropic-version header. Answers the provider's `{input_tokens}`; X-Cache-Status is BYPASS.", body: CountTokensBody }],
    },
  ],
};
