/**
 * The generate-content style (doc1 §4.4): /v1beta/models[/{model}[/{action} | :{action}]], the same
 * under /v1/ (CONTRACT.md), and /v1/models[/{model}] when called the way the Gemini SDK calls them
 * (x-goog-api-key or ?key=; otherwise those two paths are the chat-completions style's).
 */
import type { Endpoint, ProviderDefinition, ProxyRoute } from "../types";
import { gemini, geminiRequest, GEMINI_ACTIONS, GenerateContentBody, CountTokensBody, EmbedContentBody, BatchEmbedBody } from "./adapter";
import { safeDecodeURIComponent } from "../../../core/validation";
import { GENERATE_CONTENT_EXAMPLE, PROXY_CACHE_SENTENCE as CACHE } from "../examples";

/** `<rest>` after `/models/`: `{model}:{action}`, `{model}/{action}` or just `{model}`. */
export function splitModelPath(rest: string): { model: string; action?: string; colon: boolean } | undefined {
  const decoded = safeDecodeURIComponent(rest)?.replace(/^models\//, "");
  if (decoded === undefined || decoded === null) return undefined;
  const colon = decoded.lastIndexOf(":");
  if (colon > 0) return { model: decoded.slice(0, colon), action: decoded.slice(colon + 1), colon: true };
  const slash = decoded.lastIndexOf("/");
  if (slash > 0 && GEMINI_ACTIONS[decoded.slice(slash + 1)]) return { model: decoded.slice(0, slash), action: decoded.slice(slash + 1), colon: false };
  return { model: decoded, colon: false };
}

const modelRest = (path: string) => path.slice(path.indexOf("/models/") + "/models/".length);

/** A Gemini SDK call carries x-goog-api-key or ?key=; the OpenAI SDK uses Authorization. */
const looksGemini = (request: Request, url: URL) => request.headers.has("x-goog-api-key") || url.searchParams.has("key");

/**
 * POST actions. streamGenerateContent: the spec's slash form always streams Server-Sent Events
 * (doc1 §4.4); the SDKs' colon form keeps the provider's behaviour — SSE with ?alt=sse, else the
 * REST API's streamed JSON array.
 */
function postAction(_request: Request, url: URL): { endpoint: Endpoint; params: Record<string, string> } | undefined {
  const p = splitModelPath(modelRest(url.pathname));
  if (!p?.model || !p.action) return undefined;
  const endpoint = p.action === "streamGenerateContent" && p.colon && url.searchParams.get("alt") !== "sse" ? gemini.streamGenerateContentJson : GEMINI_ACTIONS[p.action];
  return endpoint ? { endpoint, params: { model: p.model } } : undefined;
}

function getModel(_request: Request, url: URL): { endpoint: Endpoint; params: Record<string, string> } | undefined {
  const p = splitModelPath(modelRest(url.pathname));
  if (!p?.model || p.action) return undefined;
  return { endpoint: gemini.model, params: { model: p.model } };
}

const ACTION_DOCS = (prefix: string) => [
  { path: `${prefix}/models/{model}/generateContent`, summary: "Generate content", description: `The Gemini API's generateContent (REST path form). ${CACHE}`, body: GenerateContentBody },
  { path: `${prefix}/models/{model}/streamGenerateContent`, summary: "Generate content as Server-Sent Events", description: `The Gemini API's streamGenerateContent: the answer as a stream (Server-Sent Events with \`?alt=sse\`), replayed from the cache on a hit. ${CACHE}`, body: GenerateContentBody, stream: "sse" as const },
  { path: `${prefix}/models/{model}/countTokens`, summary: "Count tokens (never cached)", description: "The Gemini API's countTokens, forwarded to the provider; the answer is never cached.", body: CountTokensBody },
  { path: `${prefix}/models/{model}/embedContent`, summary: "Embed content (forwarded, never cached)", description: "The Gemini API's embedContent, forwarded to the provider as is.", body: EmbedContentBody },
  { path: `${prefix}/models/{model}/batchEmbedContents`, summary: "Embed a batch of contents (forwarded, never cached)", description: "The Gemini API's batchEmbedContents, forwarded to the provider as is.", body: BatchEmbedBody },
  {
    path: `${prefix}/models/{model}:generateContent`,
    summary: "Generate content (the official SDK's colon form)",
    examples: GENERATE_CONTENT_EXAMPLE,
    description: `The Gemini API as the official SDK (@google/genai, base URL \`<svc>\`) calls it. ${CACHE} Also \`:streamGenerateContent\` (Server-Sent Events with \`?alt=sse\`, otherwise the REST API's streamed JSON array), \`:countTokens\`, \`:embedContent\`, \`:batchEmbedContents\`.`,
    body: GenerateContentBody,
  },
];

const modelRoutes = (prefix: "/v1beta" | "/v1"): ProxyRoute[] => [
  { method: "POST", path: `${prefix}/models/*`, dispatch: postAction, docs: ACTION_DOCS(prefix) },
  ...(prefix === "/v1beta"
    ? [
        { method: "GET" as const, path: "/v1beta/models", endpoint: gemini.models, docs: [{ path: "/v1beta/models", summary: "List models (generate-content style)", description: "The Gemini API's model list, forwarded to the provider." }] },
        { method: "GET" as const, path: "/v1beta/models/*", dispatch: getModel, docs: [{ path: "/v1beta/models/{model}", summary: "Get a model (generate-content style)", description: "One model of the Gemini API's list, forwarded to the provider." }] },
      ]
    : [
        // the Gemini SDK under apiVersion v1: the chat-completions style's paths, claimed by the SDK's credential
        { method: "GET" as const, path: "/v1/models", endpoint: gemini.models, claims: looksGemini, docs: [] },
        { method: "GET" as const, path: "/v1/models/*", dispatch: getModel, claims: looksGemini, docs: [] },
      ]),
];

export const geminiProvider: ProviderDefinition = {
  defaultBaseUrl: "https://generativelanguage.googleapis.com",
  wire: gemini.wire,
  probe: { path: "/v1beta/models" },
  modelGlobs: ["gemini-*"],
  info: { "generate-content": { method: "POST", path: "/v1beta/models/{model}/generateContent" } },
  completion: { endpoint: gemini.generateContent, build: geminiRequest },
  routes: [...modelRoutes("/v1beta"), ...modelRoutes("/v1")],
};
