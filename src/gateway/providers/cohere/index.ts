/** The chat/generate/embed style (doc1 §4.5): /v1/chat, /v1/generate, /v1/embed. */
import type { ProviderDefinition } from "../types";
import { cohere, cohereRequest, wantsNdjson, ChatBody, GenerateBody, EmbedBody } from "./adapter";
import { chatV2, cohereV2Request, embedV2, ChatV2Body, EmbedV2Body } from "./v2";
import { CHAT_V2_EXAMPLE, GENERATE_EXAMPLE } from "../examples";

export const cohereProvider: ProviderDefinition = {
  defaultBaseUrl: "https://api.cohere.com",
  wire: cohere.wire,
  probe: { path: "/v1/models" },
  modelGlobs: ["command*"],
  info: {
    chat: { method: "POST", path: "/v1/chat" },
    generate: { method: "POST", path: "/v1/generate" },
    embed: { method: "POST", path: "/v1/embed" },
    "chat-v2": { method: "POST", path: "/v2/chat" },
  },
  completion: { endpoint: cohere.chat, build: cohereRequest },
  // v2 says tools and images exactly, v1 does not (adapter.ts)
  fallback: { endpoint: chatV2, build: cohereV2Request },
  routes: [
    {
      method: "POST",
      path: "/v1/chat",
      // Server-Sent Events by default; newline-delimited JSON for the official v1 SDK (adapter.ts wantsNdjson)
      dispatch: (request) => ({ endpoint: wantsNdjson(request.headers) ? cohere.chatNdjson : cohere.chat, params: {} }),
      docs: [{ path: "/v1/chat", summary: "Chat proxy", description: "The Cohere v1 Chat API for the Cohere SDK's `CohereClient` (base URL `<svc>`). Answered from the tenant's cache when an identical or close enough request was answered before (X-Cache-Status: HIT), otherwise forwarded to the provider (MISS) and the answer stored. `stream: true` returns the provider's events as Server-Sent Events (newline-delimited JSON for the official v1 SDK). Adds `svc`.", body: ChatBody, stream: "sse" }],
    },
    { method: "POST", path: "/v1/generate", endpoint: cohere.generate, docs: [{ path: "/v1/generate", summary: "Generate proxy (legacy)", examples: GENERATE_EXAMPLE, description: "Cohere's legacy v1 Generate API (the SDK's `generate`). Answered from the tenant's cache when an identical or close enough request was answered before (X-Cache-Status: HIT), otherwise forwarded to the provider (MISS) and the answer stored. On a miss `svc.similarity` is 0.", body: GenerateBody }] },
    { method: "POST", path: "/v1/embed", endpoint: cohere.embed, docs: [{ path: "/v1/embed", summary: "Embed (max 96 texts; forwarded, never cached)", description: "Cohere's v1 Embed API, forwarded to the provider as is.", body: EmbedBody }] },
    {
      method: "POST",
      path: "/v2/chat",
      endpoint: chatV2,
      docs: [{ path: "/v2/chat", summary: "Chat proxy, v2 API (CohereClientV2)", examples: CHAT_V2_EXAMPLE, description: "The Cohere v2 Chat API for the SDK's `CohereClientV2`. Answered from the tenant's cache when an identical or close enough request was answered before (X-Cache-Status: HIT), otherwise forwarded to the provider (MISS) and the answer stored. `stream: true` returns the provider's v2 Server-Sent Events (message-start … message-end). Cached like /v1/chat; adds `svc`.", body: ChatV2Body, stream: "sse" }],
    },
    { method: "POST", path: "/v2/embed", endpoint: embedV2, docs: [{ path: "/v2/embed", summary: "Embed, v2 API (max 96 texts; forwarded, never cached)", description: "Cohere's v2 Embed API, forwarded to the provider as is.", body: EmbedV2Body }] },
  ],
};
