/** The chat-completions style (doc1 §4.2): /v1/chat/completions, /v1/models, /v1/embeddings. */
import type { ProviderDefinition } from "../types";
import { openai, openaiRequest, ChatCompletionBody, EmbeddingsBody } from "./adapter";

import { responses, ResponsesBody } from "./responses";
import { CHAT_COMPLETIONS_EXAMPLE } from "../examples";

export { openai, ChatCompletionBody } from "./adapter";

export const openaiProvider: ProviderDefinition = {
  defaultBaseUrl: "https://api.openai.com",
  wire: openai.wire,
  probe: { path: "/v1/models" },
  modelGlobs: ["gpt-*", "o1*", "o3*", "o4*"],
  info: { "chat-completions": { method: "POST", path: "/v1/chat/completions" }, responses: { method: "POST", path: "/v1/responses" } },
  completion: { endpoint: openai.chatCompletions, build: openaiRequest },
  routes: [
    {
      method: "POST",
      path: "/v1/chat/completions",
      endpoint: openai.chatCompletions,
      docs: [{ path: "/v1/chat/completions", summary: "Chat-completions proxy", examples: CHAT_COMPLETIONS_EXAMPLE, description: "The OpenAI Chat Completions API for the OpenAI SDK (base URL `<svc>/v1`). Answered from the tenant's cache when an identical or close enough request was answered before (X-Cache-Status: HIT), otherwise forwarded to the provider (MISS) and the answer stored. Provider chat-completions request; `stream: true` returns SSE. Adds `svc_metadata`. Headers X-Cache-Status, X-Request-ID.", body: ChatCompletionBody, stream: "sse" }],
    },
    {
      method: "POST",
      path: "/v1/responses",
      endpoint: responses,
      docs: [{ path: "/v1/responses", summary: "Responses API proxy", description: "The OpenAI Responses API for the OpenAI SDK's `responses.create`. Provider Responses API request; `stream: true` returns its named SSE events (response.created … response.completed). Cached like chat-completions; adds `svc_metadata`. Headers X-Cache-Status, X-Request-ID.", body: ResponsesBody, stream: "sse" }],
    },
    { method: "POST", path: "/v1/embeddings", endpoint: openai.embeddings, docs: [{ path: "/v1/embeddings", summary: "Embeddings (forwarded, never cached)", description: "The OpenAI Embeddings API: forwarded to the provider as is; the answer is never cached.", body: EmbeddingsBody }] },
    { method: "GET", path: "/v1/models", endpoint: openai.models, docs: [{ path: "/v1/models", summary: "List models (chat-completions style; generate-content style when called with x-goog-api-key or ?key=)", description: "The provider's model list, forwarded: OpenAI's, or Gemini's when the request carries the Gemini SDK's credential (the Gemini SDK under apiVersion v1)." }] },
    {
      method: "GET",
      path: "/v1/models/*",
      dispatch: (_request, url) => {
        const id = modelId(url.pathname);
        return id === undefined ? undefined : { endpoint: openai.model, params: { model: id } };
      },
      docs: [{ path: "/v1/models/{model}", summary: "Get a model (chat-completions style; generate-content style when called with x-goog-api-key or ?key=)", description: "One model of the provider's list, forwarded: OpenAI's, or Gemini's when the request carries the Gemini SDK's credential." }],
    },
  ],
};

/** The model id of `/v1/models/<id>` (percent-decoded), or undefined when it cannot be decoded. */
function modelId(pathname: string): string | undefined {
  try {
    return decodeURIComponent(pathname.slice("/v1/models/".length));
  } catch {
    return undefined;
  }
}
