/**
 * The chat style's v2 API (what the official SDK's CohereClientV2 calls): POST /v2/chat and
 * POST /v2/embed, through the same pipeline and cache as v1. /v2/chat is forwarded to the
 * provider's /v2/chat as sent; the answer is the provider's v2 response
 * ({id, finish_reason, message{role, content[{type, text}], tool_calls?, citations?}, usage}) with
 * the `svc` object added. Its stream is Server-Sent Events named by their `type`: message-start,
 * content-start, content-delta, content-end, tool-plan-delta, tool-call-start/-delta/-end,
 * citation-start/-end, message-end (finish_reason and usage). A live miss carries `svc` in
 * message-start's `delta.message`; a hit is rebuilt in the same sequence. /v2/embed is forwarded,
 * never cached.
 *
 * Cache key: style "cohere-chat-v2" (v1 and v2 answers never share an entry: their bodies differ),
 * the model, system messages in the scope with every other parameter; the other messages are the turns.
 */
import { t } from "elysia";
import { chunkText, parseJson, sseFrame, type SseEvent } from "../../sse";
import { compile, compact, scopeOf, estimateTokens, svcObject, type Assembler, type CacheMeta, type Endpoint, type ProxyCall, type Turn, type Usage, JsonInteger } from "../types";
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
  type NeutralToolChoice,
} from "../neutral";

export const ChatV2Body = t.Object(
  {
    model: t.String({ minLength: 1 }),
    messages: t.Array(
      t.Object({ role: t.Union([t.Literal("system"), t.Literal("user"), t.Literal("assistant"), t.Literal("tool")]), content: t.Optional(t.Any()) }, { additionalProperties: true }),
      { minItems: 1 },
    ),
    stream: t.Optional(t.Boolean()),
    temperature: t.Optional(t.Number()),
    max_tokens: t.Optional(JsonInteger({ minimum: 1 })),
    tools: t.Optional(t.Array(t.Object({ type: t.String() }, { additionalProperties: true }))),
    documents: t.Optional(t.Array(t.Any())),
  },
  { additionalProperties: true },
);

export const EmbedV2Body = t.Object(
  {
    model: t.String({ minLength: 1 }),
    input_type: t.Union([t.Literal("search_document"), t.Literal("search_query"), t.Literal("classification"), t.Literal("clustering"), t.Literal("image")]),
    texts: t.Optional(t.Array(t.String(), { maxItems: 96 })),
    images: t.Optional(t.Array(t.String(), { maxItems: 1 })),
    inputs: t.Optional(t.Array(t.Any(), { maxItems: 96 })),
    embedding_types: t.Optional(t.Array(t.String())),
    truncate: t.Optional(t.Union([t.Literal("NONE"), t.Literal("START"), t.Literal("END")])),
  },
  { additionalProperties: true },
);

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content == null ? "" : compact(content);
  return content.map((p: any) => (p?.type === "text" ? p.text ?? "" : compact(p))).join("\n");
}

export function textOfV2(body: any): string {
  return (body?.message?.content ?? []).filter((c: any) => c?.type === "text").map((c: any) => c.text ?? "").join("");
}

function usageOf(body: any): Usage {
  const b = body?.usage?.billed_units ?? body?.usage?.tokens ?? {};
  return { inputTokens: b.input_tokens ?? 0, outputTokens: b.output_tokens ?? estimateTokens(textOfV2(body)) };
}

const FINISH_REASON: Record<NeutralFinish, string> = { stop: "COMPLETE", length: "MAX_TOKENS", tool_calls: "TOOL_CALL", content_filter: "ERROR" };
/** the API's other two, ERROR (an internal error) and TIMEOUT, are failed generations */
const FINISH_OF: Record<string, NeutralFinish> = { COMPLETE: "stop", STOP_SEQUENCE: "stop", MAX_TOKENS: "length", TOOL_CALL: "tool_calls" };

/** Request fields the neutral form carries (documents, citations, response formats, safety modes cannot be said elsewhere). */
const V2_KEYS = ["model", "messages", "stream", "temperature", "p", "max_tokens", "stop_sequences", "tools", "tool_choice", "strict_tools"];

/** A v2 chat request in neutral terms, or undefined when anything in it would be lost. */
function v2Input(body: any): NeutralRequest | undefined {
  if (!only(body, V2_KEYS) || body.strict_tools === true) return undefined;
  const choices: Record<string, NeutralToolChoice> = { REQUIRED: "required", NONE: "none" };
  return neutralRequest(
    { messages: each(body.messages, v2Message), tools: each(body.tools ?? [], toolOfFunction), toolChoice: body.tool_choice === undefined ? undefined : (choices[body.tool_choice] ?? null), stop: stopOf(body.stop_sequences) },
    sampling(body.temperature, body.p, body.max_tokens),
  );
}

function v2Message(m: any): NeutralMessage | undefined {
  const text = v2Text(m.content);
  switch (m.role) {
    case "system":
      return only(m, ["role", "content"]) && text !== undefined ? { role: "system", content: text } : undefined;
    case "user": {
      const content = only(m, ["role", "content"]) ? userContent(m.content, functionStylePart) : undefined;
      return content === undefined ? undefined : { role: "user", content };
    }
    case "assistant": {
      const toolCalls = only(m, ["role", "content", "tool_plan", "tool_calls"]) ? each(m.tool_calls ?? [], callOfFunction) : undefined;
      if (!toolCalls || text === undefined) return undefined;
      if (!toolCalls.length) return m.tool_plan == null ? { role: "assistant", content: text } : undefined;
      // the text of a tool-calling turn is its tool_plan (a turn with both has no one text)
      if (m.tool_plan != null && (text || typeof m.tool_plan !== "string")) return undefined;
      return { role: "assistant", content: m.tool_plan ?? text, toolCalls };
    }
    case "tool":
      return only(m, ["role", "content", "tool_call_id"]) && text !== undefined && typeof m.tool_call_id === "string" ? { role: "tool", toolCallId: m.tool_call_id, content: text } : undefined;
  }
  return undefined;
}

/** A content that is only text (a string, text parts, or none), or undefined. */
function v2Text(content: unknown): string | undefined {
  if (content == null) return "";
  const text = userContent(content, (p) => (p?.type === "text" && typeof p.text === "string" ? { type: "text", text: p.text } : undefined));
  return typeof text === "string" ? text : undefined;
}

/** Request body for fallbacks from other styles; undefined when v2 cannot say it (one named tool, no parallel calls, a top_p outside p's range). */
export function cohereV2Request(req: CompletionInput) {
  // no named tool choice, no one-call-at-a-time, up to 5 stop sequences, p "min value of 0.01, max value of 0.99" (top_p 1 cannot be said)
  if ((req.toolChoice && typeof req.toolChoice === "object") || req.parallelToolCalls === false || (req.stop?.length ?? 0) > 5 || !samplingWithin(req, [0, Infinity], [0.01, 0.99])) return undefined;
  const choice = req.toolChoice === "required" ? "REQUIRED" : req.toolChoice === "none" ? "NONE" : undefined;
  return {
    model: req.model,
    messages: req.messages.map(v2MessageOf),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.topP !== undefined ? { p: req.topP } : {}),
    ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
    ...(req.stop?.length ? { stop_sequences: req.stop } : {}),
    ...(req.tools?.length ? { tools: req.tools.map(functionTool), ...(choice ? { tool_choice: choice } : {}) } : {}),
  };
}

/**
 * An assistant turn that calls tools says its text as tool_plan. A tool result is a text block: a
 * string content is to be "a JSON object string", which a result's text need not be.
 */
const v2MessageOf = (m: NeutralMessage) =>
  m.role === "tool"
    ? { role: "tool", tool_call_id: m.toolCallId, content: [{ type: "text", text: m.content }] }
    : functionStyleMessage(m, (text, calls) => ({ ...(text ? { tool_plan: text } : {}), tool_calls: calls }));

const ev = (type: string, data: Record<string, unknown>) => sseFrame({ type, ...data }, type);

function replay(body: any, _call: ProxyCall, meta: CacheMeta): string[] {
  const msg = body.message ?? {};
  const frames = [ev("message-start", { id: body.id, delta: { message: { role: "assistant", content: [], tool_plan: "", tool_calls: [], citations: [], svc: svcObject(meta) } } })];
  if (msg.tool_plan) frames.push(ev("tool-plan-delta", { delta: { message: { tool_plan: msg.tool_plan } } }));
  (msg.content ?? []).forEach((c: any, index: number) => {
    if (c?.type !== "text") return;
    frames.push(ev("content-start", { index, delta: { message: { content: { type: "text", text: "" } } } }));
    for (const piece of chunkText(c.text ?? "")) frames.push(ev("content-delta", { index, delta: { message: { content: { text: piece } } } }));
    frames.push(ev("content-end", { index }));
  });
  (msg.tool_calls ?? []).forEach((tc: any, index: number) => {
    frames.push(ev("tool-call-start", { index, delta: { message: { tool_calls: { id: tc.id, type: tc.type ?? "function", function: { name: tc.function?.name, arguments: "" } } } } }));
    frames.push(ev("tool-call-delta", { index, delta: { message: { tool_calls: { function: { arguments: tc.function?.arguments ?? "" } } } } }));
    frames.push(ev("tool-call-end", { index }));
  });
  (msg.citations ?? []).forEach((citation: any, index: number) => {
    frames.push(ev("citation-start", { index, delta: { message: { citations: citation } } }));
    frames.push(ev("citation-end", { index }));
  });
  frames.push(ev("message-end", { delta: { finish_reason: body.finish_reason ?? "COMPLETE", usage: body.usage ?? null } }));
  return frames;
}

/** Rebuilds the non-streamed v2 response; complete only on message-end with a normal finish reason. */
class V2Assembler implements Assembler {
  private id = "";
  private plan = "";
  private content: Array<{ type: string; text: string }> = [];
  private tools: Array<{ id: string; type: string; function: { name: string; arguments: string } }> = [];
  private citations: unknown[] = [];
  private end: any;
  push(e: SseEvent) {
    const d = parseJson(e.data);
    if (d === undefined) return;
    const m = d.delta?.message ?? {};
    switch (d.type ?? e.event) {
      case "message-start":
        this.id = d.id ?? "";
        break;
      case "tool-plan-delta":
        this.plan += m.tool_plan ?? "";
        break;
      case "content-start":
        this.content[d.index ?? 0] = { type: m.content?.type ?? "text", text: m.content?.text ?? "" };
        break;
      case "content-delta": {
        const slot = (this.content[d.index ?? 0] ??= { type: "text", text: "" });
        slot.text += m.content?.text ?? "";
        break;
      }
      case "tool-call-start":
        this.tools[d.index ?? 0] = { id: m.tool_calls?.id ?? "", type: m.tool_calls?.type ?? "function", function: { name: m.tool_calls?.function?.name ?? "", arguments: m.tool_calls?.function?.arguments ?? "" } };
        break;
      case "tool-call-delta": {
        const slot = this.tools[d.index ?? 0];
        if (slot) slot.function.arguments += m.tool_calls?.function?.arguments ?? "";
        break;
      }
      case "citation-start":
        if (m.citations) this.citations.push(m.citations);
        break;
      case "message-end":
        this.end = d.delta ?? {};
        break;
    }
  }
  result() {
    const finish = this.end?.finish_reason;
    if (!this.end || this.end.error || !["COMPLETE", "MAX_TOKENS", "STOP_SEQUENCE", "TOOL_CALL"].includes(finish)) return undefined;
    const message: Record<string, unknown> = { role: "assistant", content: this.content.filter(Boolean) };
    if (this.plan) message.tool_plan = this.plan;
    if (this.tools.length) message.tool_calls = this.tools.filter(Boolean);
    if (this.citations.length) message.citations = this.citations;
    return { id: this.id, finish_reason: finish, message, ...(this.end.usage ? { usage: this.end.usage } : {}) };
  }
}

export const chatV2: Endpoint = compile({
  id: "cohere.chat_v2",
  provider: "cohere",
  method: "POST",
  schema: ChatV2Body,
  parse({ body }) {
    const system: string[] = [];
    const turns: Turn[] = [];
    for (const m of body.messages) {
      if (m.role === "system") system.push(contentText(m.content));
      else if (m.role === "tool") turns.push({ role: "tool", text: `result ${m.tool_call_id ?? ""}: ${contentText(m.content)}` });
      else {
        let text = contentText(m.content);
        if (Array.isArray(m.tool_calls) && m.tool_calls.length) text += (text ? "\n" : "") + m.tool_calls.map((c: any) => `call ${c.function?.name}(${c.function?.arguments ?? ""})`).join("\n");
        turns.push({ role: m.role === "assistant" ? "assistant" : "user", text });
      }
    }
    const scope = scopeOf(body, ["messages", "stream", "model"]);
    if (system.length) scope.system = system;
    return {
      model: body.model,
      stream: body.stream === true,
      key: { style: "cohere-chat-v2", model: body.model, scope, turns },
      upstream: { method: "POST", path: "/v2/chat", body },
      meta: {},
    };
  },
  usageOf,
  textOf: textOfV2,
  decorate: (body, _call, meta) => ({ ...body, svc: svcObject(meta) }),
  neutral: {
    input: v2Input,
    answer: (body) => {
      const toolCalls = answeredCalls(body?.message?.tool_calls);
      // a tool-calling answer says what it is about to do in tool_plan
      const text = textOfV2(body) || (toolCalls.length ? (body.message.tool_plan ?? "") : "");
      return { text, toolCalls, finish: finishOf("cohere", body?.finish_reason, FINISH_OF), usage: usageOf(body) };
    },
    output: (a) => ({
      id: crypto.randomUUID(),
      finish_reason: FINISH_REASON[a.finish],
      message: a.toolCalls.length
        ? { role: "assistant", ...(a.text ? { tool_plan: a.text } : {}), tool_calls: a.toolCalls.map(functionCall) }
        : { role: "assistant", content: [{ type: "text", text: a.text }] },
      usage: { billed_units: { input_tokens: a.usage.inputTokens, output_tokens: a.usage.outputTokens }, tokens: { input_tokens: a.usage.inputTokens, output_tokens: a.usage.outputTokens } },
    }),
  },
  stream: {
    format: "sse",
    contentType: "text/event-stream",
    assembler: () => new V2Assembler(),
    replay,
    errorFrame: (message) => ev("message-end", { delta: { finish_reason: "ERROR", error: message } }),
    liveHead(data, _call, meta) {
      const d = parseJson(data);
      if (!d || d.type !== "message-start") return undefined;
      return ev("message-start", { ...d, delta: { ...d.delta, message: { ...d.delta?.message, svc: svcObject(meta) } } });
    },
  },
});

export const embedV2: Endpoint = compile({
  id: "cohere.embed_v2",
  provider: "cohere",
  method: "POST",
  schema: EmbedV2Body,
  parse: ({ body }) => ({ model: body.model, stream: false, key: null, upstream: { method: "POST", path: "/v2/embed", body }, meta: {} }),
  usageOf: (body) => ({ inputTokens: body?.meta?.billed_units?.input_tokens ?? 0, outputTokens: 0 }),
});
