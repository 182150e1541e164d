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
import { compile, compact, scopeOf, estimateTokens, svcObject, type Assembler, type CacheMeta, type Endpoint, type ProxyCall, type Turn } from "../types";

export const ChatV2Body = t.Object(
  {
    model: t.String({ minLength: 1 }),
    messages: t.Array(
      t.Object({ role: t.Union([t.Literal("system"), t.Literal("user"), t.Literal("assistant"), t.Literal("tool")]), content: t.Optional(t.Any()) }, { additionalProperties: true }),
      { minItems: 1 },
    ),
    stream: t.Optional(t.Boolean()),
    temperature: t.Optional(t.Number()),
    max_tokens: t.Optional(t.Integer({ minimum: 1 })),
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

const usageOf = (body: any) => {
  const b = body?.usage?.billed_units ?? body?.usage?.tokens ?? {};
  return { inputTokens: b.input_tokens ?? 0, outputTokens: b.output_tokens ?? estimateTokens(textOfV2(body)) };
};

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
    input: (body) => {
      if (body.tools?.length || body.documents?.length) return undefined;
      const messages: Array<{ role: "system" | "user" | "assistant"; content: string }> = [];
      for (const m of body.messages) {
        if (m.role === "tool" || m.tool_calls?.length) return undefined;
        if (Array.isArray(m.content) && !m.content.every((p: any) => p?.type === "text")) return undefined;
        messages.push({ role: m.role, content: contentText(m.content) });
      }
      return { messages, ...(typeof body.temperature === "number" ? { temperature: body.temperature } : {}), ...(body.max_tokens ? { maxTokens: body.max_tokens } : {}) };
    },
    output: (text, usage) => ({
      id: crypto.randomUUID(),
      finish_reason: "COMPLETE",
      message: { role: "assistant", content: [{ type: "text", text }] },
      usage: { billed_units: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens }, tokens: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens } },
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
