/** The messages style (doc1 §4.3): /v1/messages. */
import type { ProviderDefinition } from "../types";
import { anthropic, anthropicRequest, MessagesBody } from "./adapter";

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
  ],
};
