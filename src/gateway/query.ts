/**
 * POST /api/v1/query (doc1 §4.1): look a chat-completions request up in the cache without
 * calling upstream and without writing. Body and key derivation are the chat-completions proxy's;
 * headers X-Svc-Workspace-Context / X-Svc-Code-Context as on the proxy.
 */
import { t } from "elysia";
import type { Kernel } from "../core/kernel";
import { ApiError, DOC1 } from "../core/errors";
import { openai, ChatCompletionBody } from "./providers/openai";
import { parseCodeContext } from "./serve";
import { cacheRequestHeaders } from "./pipeline";
import type { ResponseCache } from "./ports";
import { examples } from "../core/openapi";

const QueryResponse = t.Object({
  hit: t.Boolean(),
  tier: t.Union([t.Literal("exact"), t.Literal("semantic"), t.Literal("l2_context"), t.Null()]),
  similarity: t.Number(),
  contextSimilarity: t.Union([t.Number(), t.Null()]),
  learnedScore: t.Union([t.Number(), t.Null()]),
  /** the operating point (cosine floor) that decided and what set it */
  decisionPoint: t.Union([t.Number(), t.Null()]),
  pointSource: t.Union([t.Literal("config"), t.Literal("feedback"), t.Literal("request"), t.Literal("exact"), t.Null()]),
  entryId: t.Union([t.String(), t.Null()]),
  lookupMs: t.Number(),
  response: t.Any(),
});

export const queryRoutes = (kernel: Kernel, cache: ResponseCache, enabled: () => boolean) =>
  kernel.mount({ prefix: "/api/v1/query", envelope: DOC1 }).post(
    "",
    async ({ body, request, principal }) => {
      if (!enabled()) throw new ApiError("service_unavailable", "the cache is disabled");
      const call = openai.chatCompletions.parse({ body, params: {}, url: new URL(request.url), headers: request.headers });
      const r = await cache.lookup({
        tenantId: principal.tenantId,
        ...call.key!,
        workspaceContext: request.headers.get("x-svc-workspace-context") ?? undefined,
        codeContext: parseCodeContext(request.headers.get("x-svc-code-context")),
        ...cacheRequestHeaders(request.headers),
      });
      const point = { decisionPoint: r.decisionPoint ?? null, pointSource: r.pointSource ?? null };
      // a miss reports the nearest cached question's similarity (0 when none was compared)
      if (!r.hit) return { hit: false, tier: null, similarity: r.nearestSimilarity ?? 0, contextSimilarity: null, learnedScore: null, ...point, entryId: null, lookupMs: r.lookupMs, response: null };
      return { hit: true, tier: r.tier, similarity: r.similarity, contextSimilarity: r.contextSimilarity ?? 1, learnedScore: r.learnedScore ?? null, ...point, entryId: r.entryId, lookupMs: r.lookupMs, response: r.payload.body };
    },
    {
      body: ChatCompletionBody,
      response: QueryResponse,
      detail: {
        summary: "Look a chat-completions request up in the cache without calling upstream",
        description:
          "Answers whether the chat-completions proxy would serve this request from the tenant's cache, from which tier, with what similarity, and the cached answer; nothing is written and no provider is called. Body: a chat-completions request (`stream` ignored); headers X-Svc-Workspace-Context, X-Svc-Code-Context, X-Svc-Cache-Namespace and X-Svc-Cache-Min-Similarity as on the proxy.",
        ...examples({
          request: { model: "gpt-4o-mini", messages: [{ role: "user", content: "How do I reverse a list in Python?" }] },
          response: {
            hit: true,
            tier: "semantic",
            similarity: 0.962,
            contextSimilarity: 1,
            learnedScore: null,
            decisionPoint: 0.94,
            pointSource: "config",
            entryId: "6f1c2a9e-4b7d-4e21-9a3f-2d8c5e7b1a04",
            lookupMs: 3.4,
            response: {
              id: "chatcmpl-9x",
              object: "chat.completion",
              created: 1764230400,
              model: "gpt-4o-mini",
              choices: [{ index: 0, message: { role: "assistant", content: "Use reversed(items) or items[::-1]." }, finish_reason: "stop" }],
              usage: { prompt_tokens: 15, completion_tokens: 11, total_tokens: 26 },
            },
          },
        }),
        tags: ["cache"],
      },
    },
  );
