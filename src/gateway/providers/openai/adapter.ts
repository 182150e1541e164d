/**
 * Chat-completions style (doc1 §4.2): POST /v1/chat/completions, GET /v1/models[/{id}],
 * POST /v1/embeddings (forwarded, never cached). Streams are `data: {chunk}` + `data: [DONE]`.
 */
import { t } from "elysia";
import { uuid } from "../../../core/ids";
import { sseFrame, chunkText, parseJson, type SseEvent } from "../../sse";
import {
  compile,
  compact,
  scopeOf,
  estimateTokens,
  sha,
  type Assembler,
  type CacheMeta,
  type Endpoint,
  type ProviderWire,
  type ProxyCall,
  type Turn,
  type Usage,
  JsonInteger,
} from "../types";
import {
  answeredCalls,
  callOfFunction,
  each,
  finishOf,
  functionCall,
  functionStyleMessage,
  functionStylePart,
  functionTool,
  neutralRequest,
  only,
  sampling,
  samplingWithin,
  stopOf,
  toolOfFunction,
  userContent,
  type CompletionInput,
  type NeutralFinish,
  type NeutralMessage,
  type NeutralRequest,
  type NeutralTool,
  type NeutralToolChoice,
} from "../neutral";

export const openaiWire: ProviderWire = {
  name: "openai",
  authHeaders: (key) => ({ authorization: `Bearer ${key}` }),
  forwardHeaders: ["openai-organization", "openai-project"],
};

export const ChatCompletionBody = t.Object(
  {
    model: t.String({ minLength: 1 }),
    messages: t.Array(t.Object({ role: t.String({ minLength: 1 }), content: t.Optional(t.Any()) }, { additionalProperties: true }), { minItems: 1 }),
    stream: t.Optional(t.Boolean()),
    temperature: t.Optional(t.Number()),
    max_tokens: t.Optional(JsonInteger({ minimum: 1 })),
    tools: t.Optional(t.Array(t.Object({ type: t.String() }, { additionalProperties: true }))),
    tool_choice: t.Optional(t.Union([t.String(), t.Object({}, { additionalProperties: true })])),
    session_id: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: true },
);

/**
 * Text of an OpenAI message content (string or parts) — chat-completions parts and the Responses
 * API's (`input_text`, `output_text`, `input_image`). Images count by their hash.
 */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content == null ? "" : compact(content);
  return content
    .map((p: any) => {
      if (p?.type === "text" || p?.type === "input_text" || p?.type === "output_text") return p.text ?? "";
      if (p?.type === "image_url") return `[image:${sha(String(p.image_url?.url ?? ""))}]`;
      if (p?.type === "input_image") return `[image:${sha(String(p.image_url ?? p.file_id ?? ""))}]`;
      if (p?.type === "input_audio") return `[audio:${sha(String(p.input_audio?.data ?? ""))}]`;
      return compact(p);
    })
    .join("\n");
}

function turnsOf(messages: any[]): { system: string[]; turns: Turn[] } {
  const system: string[] = [];
  const turns: Turn[] = [];
  for (const m of messages) {
    const role = String(m.role);
    if (role === "system" || role === "developer") {
      system.push(contentText(m.content));
      continue;
    }
    let text = contentText(m.content);
    if (Array.isArray(m.tool_calls) && m.tool_calls.length)
      text += (text ? "\n" : "") + m.tool_calls.map((c: any) => `call ${c.function?.name}(${c.function?.arguments ?? ""})`).join("\n");
    turns.push({ role: role === "assistant" ? "assistant" : role === "tool" || role === "function" ? "tool" : "user", text });
  }
  return { system, turns };
}

/** the chat body's fields that are not its scope (the conversation, transport and bookkeeping fields) */
const CHAT_UNSCOPED = ["messages", "stream", "stream_options", "session_id", "model", "user", "metadata", "store"];

function withoutSessionId({ session_id: _s, ...rest }: Record<string, unknown>): Record<string, unknown> {
  return rest;
}

const chatCompletions: Endpoint = compile({
  id: "openai.chat_completions",
  provider: "openai",
  method: "POST",
  schema: ChatCompletionBody,
  parse({ body }) {
    const sessionId: string = body.session_id ?? uuid();
    // the body goes upstream as parsed, without svc's session_id (a copy only when it has one: nothing changes either object later)
    const upstreamBody = Object.hasOwn(body, "session_id") ? withoutSessionId(body) : body;
    const { system, turns } = turnsOf(body.messages);
    const scope = scopeOf(body, CHAT_UNSCOPED);
    if (system.length) scope.system = system;
    return {
      model: body.model,
      stream: body.stream === true,
      key: { style: "openai", model: body.model, scope, turns, sessionId },
      upstream: { method: "POST", path: "/v1/chat/completions", body: upstreamBody },
      meta: { sessionId, includeUsage: body.stream_options?.include_usage === true },
    };
  },
  usageOf,
  textOf,
  decorate(body, call, meta) {
    return { ...body, svc_metadata: metadata(call, meta) };
  },
  neutral: {
    input: chatInput,
    answer: (body) => {
      const c = body?.choices?.[0];
      return { text: textOf(body), toolCalls: answeredCalls(c?.message?.tool_calls), finish: finishOf("openai", c?.finish_reason, CHAT_FINISH), usage: usageOf(body) };
    },
    output: (a, call) => ({
      id: `chatcmpl-${uuid()}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: call.model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: a.toolCalls.length && !a.text ? null : a.text, refusal: null, ...(a.toolCalls.length ? { tool_calls: a.toolCalls.map(functionCall) } : {}) },
          logprobs: null,
          finish_reason: a.finish,
        },
      ],
      usage: { prompt_tokens: a.usage.inputTokens, completion_tokens: a.usage.outputTokens, total_tokens: a.usage.inputTokens + a.usage.outputTokens },
    }),
  },
  stream: {
    format: "sse",
    contentType: "text/event-stream",
    assembler: (call) => new ChatAssembler(call),
    replay,
    // svc's error type (timeout_error for an idle timeout, proxy_error otherwise), as in a JSON error
    errorFrame: (message, type) => sseFrame({ error: { message, type: type ?? "proxy_error" } }),
    // a live miss carries svc_metadata (with the session id) on its first chunk, like a rebuilt hit
    liveHead(data, call, meta) {
      if (!data || data === "[DONE]") return undefined;
      const chunk = parseJson(data);
      if (!chunk || typeof chunk !== "object" || chunk.error || !Array.isArray(chunk.choices)) return undefined;
      return sseFrame({ ...chunk, svc_metadata: metadata(call, meta) });
    },
  },
});

/** A message content that is only text (a string or text parts), or undefined. */
export function plainText(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  if (content == null) return "";
  if (!Array.isArray(content)) return undefined;
  let out = "";
  for (const p of content) {
    if (typeof p === "string") out += p;
    else if (p && typeof p === "object" && ["text", "input_text", "output_text"].includes((p as any).type) && typeof (p as any).text === "string") out += (p as any).text;
    else return undefined;
  }
  return out;
}

function textOf(body: any): string {
  const m = body?.choices?.[0]?.message;
  return typeof m?.content === "string" ? m.content : "";
}

function usageOf(body: any): Usage {
  const u = body?.usage;
  if (u && typeof u.prompt_tokens === "number") return { inputTokens: u.prompt_tokens, outputTokens: u.completion_tokens ?? 0 };
  return { inputTokens: 0, outputTokens: estimateTokens(textOf(body)) };
}

/**
 * The finish reasons chat-completions shares with the neutral form (its own words for them); the
 * API's fifth, `function_call` (deprecated), answers the legacy `functions`, which svc never sends.
 */
const CHAT_FINISH: Record<string, NeutralFinish> = { stop: "stop", length: "length", tool_calls: "tool_calls", content_filter: "content_filter" };

/** Request fields the neutral form carries (or that never change the answer: streaming, session, user, store). */
const CHAT_KEYS = ["model", "messages", "stream", "stream_options", "session_id", "user", "metadata", "store", "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "n", "tools", "tool_choice", "parallel_tool_calls"];

/** A chat-completions request in neutral terms, or undefined when anything in it would be lost. */
function chatInput(body: any): NeutralRequest | undefined {
  if (!only(body, CHAT_KEYS) || (body.n ?? 1) !== 1) return undefined;
  return neutralRequest(
    { messages: each(body.messages, chatMessage), tools: each(body.tools ?? [], toolOfFunction), toolChoice: choiceOf(body.tool_choice), serial: body.parallel_tool_calls === false, stop: stopOf(body.stop) },
    sampling(body.temperature, body.top_p, body.max_tokens ?? body.max_completion_tokens),
  );
}

/** A chat-completions or Responses `tool_choice` (a function named in either shape); undefined = none given, null = not translatable. */
export function choiceOf(choice: any): NeutralToolChoice | undefined | null {
  if (choice === undefined || choice === "auto" || choice === "none" || choice === "required") return choice;
  const name = choice?.type === "function" ? (choice.function?.name ?? choice.name) : undefined;
  return typeof name === "string" ? { name } : null;
}

function chatMessage(m: any): NeutralMessage | undefined {
  if (!only(m, ["role", "content", "tool_calls", "tool_call_id"])) return undefined;
  const text = plainText(m.content);
  switch (m.role) {
    case "system":
    case "developer":
      return text === undefined ? undefined : { role: "system", content: text };
    case "user": {
      const content = userContent(m.content, functionStylePart);
      return content === undefined ? undefined : { role: "user", content };
    }
    case "assistant": {
      const toolCalls = each(m.tool_calls ?? [], callOfFunction);
      if (text === undefined || !toolCalls) return undefined;
      return { role: "assistant", content: text, ...(toolCalls.length ? { toolCalls } : {}) };
    }
    case "tool":
      return text === undefined || typeof m.tool_call_id !== "string" ? undefined : { role: "tool", toolCallId: m.tool_call_id, content: text };
  }
  return undefined;
}

/**
 * doc1 §4.2's five fields. On a hit all are numbers/strings: context_similarity is the stage-2
 * similarity of an l2_context hit and 1 otherwise (the exact tier matched the identical
 * conversation; a single-turn hit has no earlier turns on either side). On a miss, similarity is
 * the nearest cached question's (0 when none was compared; so operators see how close it was);
 * cache_tier and context_similarity are null. Exactly the five fields: the learned stage's score is
 * in POST /api/v1/query's answer (learnedScore).
 */
function metadata(call: ProxyCall, meta: CacheMeta) {
  const hit = meta.status === "HIT";
  return {
    cache_hit: hit,
    cache_tier: meta.tier ?? null,
    similarity: meta.similarity,
    context_similarity: hit ? (meta.contextSimilarity ?? 1) : null,
    session_id: call.meta.sessionId as string,
    // the operating point of the semantic tiers (issue 25): config, feedback (raised by wrong-hit reports) or
    // request (X-Svc-Cache-Min-Similarity); absent when no semantic decision was made (exact hit, exact-only request)
    ...(meta.decisionPoint !== undefined && meta.pointSource !== "exact" ? { decision_point: meta.decisionPoint, decision_point_source: meta.pointSource } : {}),
  };
}

interface ChoiceAcc {
  index: number;
  role: string;
  content: string;
  hasContent: boolean;
  refusal: string | null;
  toolCalls: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  finish: string | null;
}

class ChatAssembler implements Assembler {
  private head: any;
  private choices = new Map<number, ChoiceAcc>();
  private usage: any;
  private done = false;
  constructor(private readonly call: ProxyCall) {}

  push(ev: SseEvent) {
    if (ev.data === "[DONE]") {
      this.done = true;
      return;
    }
    const chunk = parseJson(ev.data);
    if (chunk === undefined) return;
    if (chunk.error) {
      this.done = false;
      this.head = undefined;
      return;
    }
    this.head ??= { id: chunk.id, created: chunk.created, model: chunk.model, system_fingerprint: chunk.system_fingerprint };
    if (chunk.usage) this.usage = chunk.usage;
    for (const c of chunk.choices ?? []) {
      let acc = this.choices.get(c.index ?? 0);
      if (!acc) {
        acc = { index: c.index ?? 0, role: "assistant", content: "", hasContent: false, refusal: null, toolCalls: [], finish: null };
        this.choices.set(acc.index, acc);
      }
      const d = c.delta ?? {};
      if (d.role) acc.role = d.role;
      if (typeof d.content === "string") {
        acc.content += d.content;
        acc.hasContent = true;
      }
      if (typeof d.refusal === "string") acc.refusal = (acc.refusal ?? "") + d.refusal;
      for (const tc of d.tool_calls ?? []) {
        const i = tc.index ?? 0;
        acc.toolCalls[i] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
        const slot = acc.toolCalls[i]!;
        if (tc.id) slot.id = tc.id;
        if (tc.type) slot.type = tc.type;
        if (tc.function?.name) slot.function.name += tc.function.name;
        if (tc.function?.arguments) slot.function.arguments += tc.function.arguments;
      }
      if (c.finish_reason) acc.finish = c.finish_reason;
    }
  }

  result() {
    if (!this.done || !this.head) return undefined;
    const choices = [...this.choices.values()]
      .sort((a, b) => a.index - b.index)
      .map((c) => ({
        index: c.index,
        message: {
          role: c.role,
          content: c.hasContent || c.toolCalls.length === 0 ? c.content : null,
          refusal: c.refusal,
          ...(c.toolCalls.length ? { tool_calls: c.toolCalls.filter(Boolean) } : {}),
        },
        logprobs: null,
        finish_reason: c.finish,
      }));
    if (choices.some((c) => !c.finish_reason)) return undefined;
    const text = choices.map((c) => c.message.content ?? "").join("");
    // without stream_options.include_usage the provider sends no usage: estimate it
    const promptText = (this.call.key?.turns ?? []).map((t) => t.text).join("\n") + JSON.stringify(this.call.key?.scope ?? {});
    const usage = this.usage ?? {
      prompt_tokens: estimateTokens(promptText),
      completion_tokens: estimateTokens(text),
      total_tokens: estimateTokens(promptText) + estimateTokens(text),
    };
    return {
      id: this.head.id,
      object: "chat.completion",
      created: this.head.created,
      model: this.head.model ?? this.call.model,
      ...(this.head.system_fingerprint ? { system_fingerprint: this.head.system_fingerprint } : {}),
      choices,
      usage,
    };
  }
}

function replay(body: any, call: ProxyCall, meta: CacheMeta): string[] {
  const base = { id: body.id, object: "chat.completion.chunk", created: body.created, model: body.model, system_fingerprint: body.system_fingerprint ?? null };
  const frames: string[] = [];
  let first = true;
  const push = (choices: unknown[], extra: Record<string, unknown> = {}) => {
    frames.push(sseFrame({ ...base, choices, ...extra, ...(first ? { svc_metadata: metadata(call, meta) } : {}) }));
    first = false;
  };
  for (const c of body.choices ?? []) {
    const m = c.message ?? {};
    push([{ index: c.index, delta: { role: m.role ?? "assistant", content: m.tool_calls && m.content == null ? null : "" }, logprobs: null, finish_reason: null }]);
    for (const piece of chunkText(typeof m.content === "string" ? m.content : ""))
      push([{ index: c.index, delta: { content: piece }, logprobs: null, finish_reason: null }]);
    (m.tool_calls ?? []).forEach((tc: any, i: number) =>
      push([{ index: c.index, delta: { tool_calls: [{ index: i, id: tc.id, type: tc.type ?? "function", function: tc.function }] }, logprobs: null, finish_reason: null }]),
    );
    push([{ index: c.index, delta: {}, logprobs: null, finish_reason: c.finish_reason ?? "stop" }]);
  }
  if (call.meta.includeUsage) push([], { usage: body.usage ?? null });
  frames.push("data: [DONE]\n\n");
  return frames;
}

/**
 * GET /v1/models and /v1/models/{id}: forwarded, then normalised to the spec's shape (doc1 §4.2:
 * {object: "list", data: [{id, object: "model", created (integer), owned_by}]}) so a compatible
 * upstream that leaves fields out still gives SDKs what they parse; extra provider fields stay.
 * POST /v1/embeddings: forwarded as it is.
 */
export function modelObject(m: any, fallbackId = ""): Record<string, unknown> {
  const o = m && typeof m === "object" && !Array.isArray(m) ? m : {};
  return {
    ...o,
    id: typeof o.id === "string" && o.id ? o.id : typeof o.name === "string" && o.name ? o.name : fallbackId,
    object: "model",
    created: Number.isInteger(o.created) ? o.created : 0,
    owned_by: typeof o.owned_by === "string" ? o.owned_by : "unknown",
  };
}

/** The caller's query minus `key` (a gateway credential must never travel upstream). */
export function forwardQuery(url: URL): string {
  const q = new URLSearchParams(url.search);
  q.delete("key");
  const qs = q.toString();
  return qs ? `?${qs}` : "";
}

const models: Endpoint = compile({
  id: "openai.models",
  provider: "openai",
  method: "GET",
  parse: ({ url }) => ({ model: "", stream: false, key: null, upstream: { method: "GET", path: "/v1/models" + forwardQuery(url) }, meta: {} }),
  reshape: (body) => {
    const data = Array.isArray(body?.data) ? body.data : Array.isArray(body) ? body : [];
    return { ...(body && typeof body === "object" && !Array.isArray(body) ? body : {}), object: "list", data: data.map((m: unknown) => modelObject(m)) };
  },
});

const model: Endpoint = compile({
  id: "openai.model",
  provider: "openai",
  method: "GET",
  parse: ({ params }) => ({
    model: params.model!,
    stream: false,
    key: null,
    upstream: { method: "GET", path: `/v1/models/${encodeURIComponent(params.model!)}` },
    meta: {},
  }),
  reshape: (body, call) => modelObject(body, call.model),
});

export const EmbeddingsBody = t.Object(
  { model: t.String({ minLength: 1 }), input: t.Union([t.String(), t.Array(t.Any(), { minItems: 1 })]) },
  { additionalProperties: true },
);

const embeddings: Endpoint = compile({
  id: "openai.embeddings",
  provider: "openai",
  method: "POST",
  schema: EmbeddingsBody,
  parse: ({ body }) => ({ model: body.model, stream: false, key: null, upstream: { method: "POST", path: "/v1/embeddings", body }, meta: {} }),
  usageOf: (body) => ({ inputTokens: body?.usage?.prompt_tokens ?? 0, outputTokens: 0 }),
});

export const openai = { wire: openaiWire, chatCompletions, models, model, embeddings };

/**
 * Request body for GatewayService.complete and fallbacks from other styles (every neutral request
 * can be said). The output limit is `max_completion_tokens` for OpenAI's reasoning models (o-series,
 * gpt-5), which refuse the deprecated `max_tokens`, and `max_tokens` for every other model: the
 * OpenAI-compatible servers this style also reaches (Ollama, LM Studio, older vLLM) read only
 * `max_tokens` and would ignore the other, leaving the answer unlimited.
 */
const REASONING_MODEL = /^(o\d|gpt-5)/i;

export function openaiRequest(req: CompletionInput) {
  // temperature "between 0 and 2"; up to 4 stop sequences
  if (!samplingWithin(req, [0, 2]) || (req.stop && req.stop.length > 4)) return undefined;
  return {
    model: req.model,
    messages: req.messages.map(chatMessageOf),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.topP !== undefined ? { top_p: req.topP } : {}),
    ...(req.maxTokens !== undefined ? { [REASONING_MODEL.test(req.model) ? "max_completion_tokens" : "max_tokens"]: req.maxTokens } : {}),
    ...(req.stop?.length ? { stop: req.stop } : {}),
    ...(req.tools?.length ? toolsOf(req.tools, req) : {}),
  };
}

/** tools, and how they may be called (the API refuses tool_choice and parallel_tool_calls without tools) */
function toolsOf(tools: NeutralTool[], req: CompletionInput) {
  const c = req.toolChoice;
  return {
    tools: tools.map(functionTool),
    ...(c ? { tool_choice: typeof c === "string" ? c : { type: "function", function: { name: c.name } } } : {}),
    ...(req.parallelToolCalls === false ? { parallel_tool_calls: false } : {}),
  };
}

const chatMessageOf = (m: NeutralMessage) => functionStyleMessage(m, (text, calls) => ({ content: text || null, tool_calls: calls }));
