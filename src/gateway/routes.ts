/**
 * The proxy surfaces. Served two ways from the same handlers:
 *  - `nativeRoutes()`: a Bun.serve `routes` table (src/server.ts) — the hot path, no framework
 *    hop (Elysia costs ~0.1 ms per request, the proxy budget is 0.2 ms);
 *  - `gatewayRoutes()`: the same paths as Elysia routes with their TypeBox schemas, so they are
 *    in the OpenAPI document and reachable through app.handle() (tests, embedding the app).
 * Both call Pipeline.serve, so auth, rate limits, cache, errors and request ids are identical.
 */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context";
import { ApiError, errorResponse } from "../core/errors";
import { requestIdOf, withBodyLimit } from "../core/http";
import type { Endpoint, ProviderWire } from "./adapter";
import { Pipeline } from "./pipeline";
import { Gateway } from "./service";
import { openai, ChatCompletionBody, EmbeddingsBody } from "./adapters/openai";
import { anthropic, MessagesBody } from "./adapters/anthropic";
import { gemini, GEMINI_ACTIONS, GenerateContentBody } from "./adapters/gemini";
import { cohere, ChatBody, GenerateBody, EmbedBody } from "./adapters/cohere";

type Handler = (request: Request) => Promise<Response>;
export type NativeRoutes = Record<string, Partial<Record<"GET" | "POST", Handler>>>;

/** Create the pipeline and GatewayService once per context. */
export function installGateway(ctx: AppContext): Pipeline {
  const existing = (ctx as { pipeline?: Pipeline }).pipeline;
  if (existing) return existing;
  const pipeline = new Pipeline(ctx);
  (ctx as { pipeline?: Pipeline }).pipeline = pipeline;
  ctx.gateway = new Gateway(ctx, pipeline);
  return pipeline;
}

const notFound = (request: Request, what: string) => {
  const path = new URL(request.url).pathname;
  return errorResponse(new ApiError("not_found", what), path, { "x-request-id": requestIdOf(request) });
};

/** `/v{1,1beta}/models/<rest>`: `{model}:{action}`, `{model}/{action}` or just `{model}`. */
export function splitModelPath(rest: string): { model: string; action?: string } {
  const decoded = decodeURIComponent(rest).replace(/^models\//, "");
  const colon = decoded.lastIndexOf(":");
  if (colon > 0) return { model: decoded.slice(0, colon), action: decoded.slice(colon + 1) };
  const slash = decoded.lastIndexOf("/");
  if (slash > 0 && GEMINI_ACTIONS[decoded.slice(slash + 1)]) return { model: decoded.slice(0, slash), action: decoded.slice(slash + 1) };
  return { model: decoded };
}

/** the part of a `/v{1,1beta}/models/<rest>` pathname after `/models/` */
const modelRest = (path: string) => path.slice(path.indexOf("/models/") + "/models/".length);

/** A Gemini SDK call carries x-goog-api-key or ?key=; the OpenAI SDK uses Authorization. */
const looksGemini = (request: Request) => request.headers.has("x-goog-api-key") || new URL(request.url).searchParams.has("key");

/**
 * Handlers shared by both servings. `native` = called from the Bun.serve routes table, so the
 * pipeline itself feeds the request observer (metrics, request log) that Elysia hooks feed otherwise.
 */
export function proxyHandlers(pipeline: Pipeline, native: boolean) {
  const route = (template: string) => (native ? template : undefined);
  const serve = (ep: Endpoint, wire: ProviderWire, template: string) => (request: Request, params: Record<string, string> = {}, body?: unknown) =>
    pipeline.serve(request, ep, wire, params, body, route(template));
  const geminiPost = (request: Request, body?: unknown) => {
    const url = new URL(request.url);
    const prefix = url.pathname.startsWith("/v1beta/") ? "/v1beta" : "/v1";
    const { model, action } = splitModelPath(modelRest(url.pathname));
    // streamGenerateContent: SSE with ?alt=sse (the SDKs), else the REST API's streamed JSON array
    const ep = action === "streamGenerateContent" && url.searchParams.get("alt") !== "sse" ? gemini.streamGenerateContentJson : action ? GEMINI_ACTIONS[action] : undefined;
    if (!ep || !model) return Promise.resolve(notFound(request, `unknown generate-content action '${action ?? ""}'`));
    return pipeline.serve(request, ep, gemini.wire, { model }, body, route(`${prefix}/models/*`));
  };
  const geminiGet = (request: Request) => {
    const path = new URL(request.url).pathname;
    const prefix = path.startsWith("/v1beta/") ? "/v1beta" : "/v1";
    const { model, action } = splitModelPath(modelRest(path));
    if (action || !model) return Promise.resolve(notFound(request, "model not found"));
    return pipeline.serve(request, gemini.model, gemini.wire, { model }, undefined, route(`${prefix}/models/*`));
  };
  const v1ModelGet = (request: Request) => {
    if (looksGemini(request)) return geminiGet(request);
    const id = decodeURIComponent(modelRest(new URL(request.url).pathname));
    return pipeline.serve(request, openai.model, openai.wire, { model: id }, undefined, route("/v1/models/*"));
  };
  return {
    chatCompletions: serve(openai.chatCompletions, openai.wire, "/v1/chat/completions"),
    embeddings: serve(openai.embeddings, openai.wire, "/v1/embeddings"),
    // the Gemini SDK under apiVersion v1 lists models at /v1/models with x-goog-api-key
    models: (request: Request) =>
      looksGemini(request) ? pipeline.serve(request, gemini.models, gemini.wire, {}, undefined, route("/v1/models")) : pipeline.serve(request, openai.models, openai.wire, {}, undefined, route("/v1/models")),
    messages: serve(anthropic.messages, anthropic.wire, "/v1/messages"),
    chat: serve(cohere.chat, cohere.wire, "/v1/chat"),
    generate: serve(cohere.generate, cohere.wire, "/v1/generate"),
    embed: serve(cohere.embed, cohere.wire, "/v1/embed"),
    geminiModels: serve(gemini.models, gemini.wire, "/v1beta/models"),
    geminiPost,
    geminiGet,
    v1ModelGet,
  };
}

/** Bun.serve `routes` table for the proxy paths. */
export function nativeRoutes(ctx: AppContext): NativeRoutes {
  const h = proxyHandlers(installGateway(ctx), true);
  const maxBody = ctx.config.server.max_body_bytes;
  // the same body limit as the server's fetch handler (src/core/http.ts)
  const g = (fn: Handler): Handler => (r) => Promise.resolve(withBodyLimit(r, maxBody, fn, ctx.requests));
  return {
    "/v1/chat/completions": { POST: g((r) => h.chatCompletions(r)) },
    "/v1/embeddings": { POST: g((r) => h.embeddings(r)) },
    "/v1/models": { GET: (r) => h.models(r) },
    "/v1/models/*": { GET: h.v1ModelGet, POST: g((r) => h.geminiPost(r)) },
    "/v1/messages": { POST: g((r) => h.messages(r)) },
    "/v1/chat": { POST: g((r) => h.chat(r)) },
    "/v1/generate": { POST: g((r) => h.generate(r)) },
    "/v1/embed": { POST: g((r) => h.embed(r)) },
    "/v1beta/models": { GET: (r) => h.geminiModels(r) },
    "/v1beta/models/*": { GET: h.geminiGet, POST: g((r) => h.geminiPost(r)) },
  };
}

const doc = (summary: string, description?: string) => ({ detail: { tags: ["Proxies"], summary, ...(description ? { description } : {}) } });

/** The same surfaces as Elysia routes (OpenAPI + app.handle). */
export function gatewayRoutes(ctx: AppContext) {
  const h = proxyHandlers(installGateway(ctx), false);
  const any = t.Any();
  return new Elysia()
    .post("/v1/chat/completions", ({ request, body }) => h.chatCompletions(request, {}, body), { body: ChatCompletionBody, ...doc("Chat-completions proxy", "Provider chat-completions request; `stream: true` returns SSE. Adds `svc_metadata`. Headers X-Cache-Status, X-Request-ID.") })
    .post("/v1/embeddings", ({ request, body }) => h.embeddings(request, {}, body), { body: EmbeddingsBody, ...doc("Embeddings (forwarded, never cached)") })
    .get("/v1/models", ({ request }) => h.models(request), doc("List models (chat-completions style, or generate-content style when called with x-goog-api-key)"))
    .get("/v1/models/*", ({ request }) => h.v1ModelGet(request), doc("Get a model (chat-completions style, or generate-content style when called with x-goog-api-key)"))
    .post("/v1/models/*", ({ request, body }) => h.geminiPost(request, body), { body: any, ...doc("Generate-content actions under /v1/ (same as /v1beta/)") })
    .post("/v1/messages", ({ request, body }) => h.messages(request, {}, body), { body: MessagesBody, ...doc("Messages proxy", "Requires the anthropic-version header. `stream: true` returns named SSE events.") })
    .post("/v1/chat", ({ request, body }) => h.chat(request, {}, body), { body: ChatBody, ...doc("Chat proxy", "`stream: true` returns the provider's event stream (one JSON event per line). Adds `svc`.") })
    .post("/v1/generate", ({ request, body }) => h.generate(request, {}, body), { body: GenerateBody, ...doc("Generate proxy (legacy)") })
    .post("/v1/embed", ({ request, body }) => h.embed(request, {}, body), { body: EmbedBody, ...doc("Embed (max 96 texts; forwarded, never cached)") })
    .get("/v1beta/models", ({ request }) => h.geminiModels(request), doc("List models (generate-content style)"))
    .get("/v1beta/models/*", ({ request }) => h.geminiGet(request), doc("Get a model (generate-content style)"))
    .post("/v1beta/models/*", ({ request, body }) => h.geminiPost(request, body), {
      body: any,
      ...doc(
        "Generate-content actions",
        "`{model}/generateContent` or `{model}:generateContent`; likewise streamGenerateContent (SSE with `?alt=sse`, else a streamed JSON array), countTokens (never cached), embedContent, batchEmbedContents. Body of generateContent: " +
          JSON.stringify(Object.keys(GenerateContentBody.properties)),
      ),
    });
}
