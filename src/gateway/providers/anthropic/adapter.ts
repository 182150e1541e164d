/**
 * Messages style (doc1 §4.3): POST /v1/messages. Requires the `anthropic-version` header;
 * `x-api-key` may carry the caller's own provider key (pass-through, CONTRACT.md).
 * Streams are named SSE events message_start … message_stop.
 */
import { t } from "elysia";
import { sseFrame, chunkText, parseJson, type SseEvent } from "../../sse";
import { compile, compact, scopeOf, sha, type Assembler, type Endpoint, type ProviderWire, type Turn } from "../types";

export const anthropicWire: ProviderWire = {
  name: "anthropic",
  authHeaders: (key) => ({ "x-api-key": key }),
  forwardHeaders: ["anthropic-version", "anthropic-beta"],
  passThroughKey(headers, via, isGatewayCredential) {
    const k = headers.get("x-api-key");
    return via === "authorization" && k && !isGatewayCredential(k) ? k : undefined;
  },
};

const SystemBlock = t.Object(
  {
    type: t.String(),
    text: t.String(),
    cache_control: t.Optional(t.Object({ type: t.Literal("ephemeral") }, { additionalProperties: true })),
  },
  { additionalProperties: true },
);

/** `anthropic-version` (doc1 §4.3: required, a date-formatted version string); other headers pass. */
export const MessagesHeaders = t.Object(
  {
    "anthropic-version": t.String({
      pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
      description: "required: the date-formatted API version, e.g. 2023-06-01",
    }),
  },
  { additionalProperties: true },
);

export const MessagesBody = t.Object(
  {
    model: t.String({ minLength: 1 }),
    messages: t.Array(t.Object({ role: t.String({ minLength: 1 }), content: t.Any() }, { additionalProperties: true }), { minItems: 1 }),
    max_tokens: t.Integer({ minimum: 1 }),
    stream: t.Optional(t.Boolean()),
    system: t.Optional(t.Union([t.String(), t.Array(SystemBlock)])),
    temperature: t.Optional(t.Number()),
    tools: t.Optional(t.Array(t.Object({ name: t.String() }, { additionalProperties: true }))),
  },
  { additionalProperties: true },
);

function blocksText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content == null ? "" : compact(content);
  return content
    .map((b: any) => {
      switch (b?.type) {
        case "text":
          return b.text ?? "";
        case "tool_use":
          return `call ${b.name}(${compact(b.input ?? {})})`;
        case "tool_result":
          return `result ${b.tool_use_id}: ${blocksText(b.content)}`;
        case "image":
        case "document":
          return `[${b.type}:${sha(compact(b.source ?? {}))}]`;
        default:
          return compact(b);
      }
    })
    .join("\n");
}

const messages: Endpoint = compile({
  id: "anthropic.messages",
  provider: "anthropic",
  method: "POST",
  schema: MessagesBody,
  headerSchema: MessagesHeaders,
  parse({ body }) {
    const turns: Turn[] = body.messages.map((m: any) => ({ role: m.role === "assistant" ? "assistant" : "user", text: blocksText(m.content) }));
    const scope = scopeOf(body, ["messages", "stream", "model", "metadata", "system"]);
    // cache_control only steers the provider's prompt cache; it does not change the answer
    if (body.system !== undefined) scope.system = typeof body.system === "string" ? body.system : body.system.map((b: any) => b.text).join("\n");
    return {
      model: body.model,
      stream: body.stream === true,
      key: { style: "anthropic", model: body.model, scope, turns },
      upstream: { method: "POST", path: "/v1/messages", body },
      meta: {},
    };
  },
  usageOf: (body) => ({ inputTokens: body?.usage?.input_tokens ?? 0, outputTokens: body?.usage?.output_tokens ?? 0 }),
  textOf,
  neutral: {
    input: (body) => {
      if (body.tools?.length) return undefined;
      const messages: Array<{ role: "system" | "user" | "assistant"; content: string }> = [];
      if (body.system !== undefined) messages.push({ role: "system", content: typeof body.system === "string" ? body.system : body.system.map((b: any) => b.text).join("\n") });
      for (const m of body.messages) {
        const text = textOnly(m.content);
        if (text === undefined || (m.role !== "user" && m.role !== "assistant")) return undefined;
        messages.push({ role: m.role, content: text });
      }
      return { messages, maxTokens: body.max_tokens, ...(typeof body.temperature === "number" ? { temperature: body.temperature } : {}) };
    },
    output: (text, usage, call) => ({
      id: `msg_${crypto.randomUUID().replace(/-/g, "")}`,
      type: "message",
      role: "assistant",
      model: call.model,
      content: [{ type: "text", text }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
    }),
  },
  stream: {
    format: "sse",
    contentType: "text/event-stream",
    assembler: () => new MessageAssembler(),
    replay,
    errorFrame: (message) => sseFrame({ type: "error", error: { type: "api_error", message } }, "error"),
  },
});

/** A content that is only text (a string or text blocks), or undefined. */
function textOnly(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  if (!content.every((b: any) => b?.type === "text" && typeof b.text === "string")) return undefined;
  return content.map((b: any) => b.text).join("");
}

function textOf(body: any): string {
  return (body?.content ?? []).filter((b: any) => b.type === "text").map((b: any) => b.text).join("");
}

class MessageAssembler implements Assembler {
  private message: any;
  private json = new Map<number, string>();
  private done = false;
  private failed = false;

  push(ev: SseEvent) {
    const d = parseJson(ev.data);
    if (d === undefined) return;
    const type = d.type ?? ev.event;
    switch (type) {
      case "message_start":
        this.message = { ...d.message, content: [] };
        break;
      case "content_block_start":
        if (!this.message) return;
        this.message.content[d.index] = { ...d.content_block };
        if (d.content_block?.type === "tool_use") this.json.set(d.index, "");
        break;
      case "content_block_delta": {
        const b = this.message?.content[d.index];
        if (!b) return;
        const delta = d.delta ?? {};
        if (delta.type === "text_delta") b.text = (b.text ?? "") + delta.text;
        else if (delta.type === "input_json_delta") this.json.set(d.index, (this.json.get(d.index) ?? "") + delta.partial_json);
        else if (delta.type === "thinking_delta") b.thinking = (b.thinking ?? "") + delta.thinking;
        else if (delta.type === "signature_delta") b.signature = delta.signature;
        else if (delta.type === "citations_delta") (b.citations ??= []).push(delta.citation);
        break;
      }
      case "content_block_stop": {
        const b = this.message?.content[d.index];
        if (b && this.json.has(d.index)) {
          const raw = this.json.get(d.index)!;
          try {
            b.input = raw ? JSON.parse(raw) : {};
          } catch {
            this.failed = true;
          }
        }
        break;
      }
      case "message_delta":
        if (!this.message) return;
        Object.assign(this.message, d.delta ?? {});
        if (d.usage) this.message.usage = { ...this.message.usage, ...d.usage };
        break;
      case "message_stop":
        this.done = true;
        break;
      case "error":
        this.failed = true;
        break;
    }
  }

  result() {
    if (!this.done || this.failed || !this.message) return undefined;
    return this.message;
  }
}

function replay(body: any): string[] {
  const frames: string[] = [];
  const usage = body.usage ?? { input_tokens: 0, output_tokens: 0 };
  frames.push(
    sseFrame(
      { type: "message_start", message: { ...body, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } },
      "message_start",
    ),
  );
  (body.content ?? []).forEach((b: any, index: number) => {
    if (b.type === "text") {
      frames.push(sseFrame({ type: "content_block_start", index, content_block: { type: "text", text: "" } }, "content_block_start"));
      for (const piece of chunkText(b.text ?? ""))
        frames.push(sseFrame({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }, "content_block_delta"));
    } else if (b.type === "tool_use") {
      frames.push(sseFrame({ type: "content_block_start", index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } }, "content_block_start"));
      frames.push(
        sseFrame({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input ?? {}) } }, "content_block_delta"),
      );
    } else {
      frames.push(sseFrame({ type: "content_block_start", index, content_block: b }, "content_block_start"));
    }
    frames.push(sseFrame({ type: "content_block_stop", index }, "content_block_stop"));
  });
  frames.push(
    sseFrame(
      { type: "message_delta", delta: { stop_reason: body.stop_reason ?? "end_turn", stop_sequence: body.stop_sequence ?? null }, usage: { output_tokens: usage.output_tokens } },
      "message_delta",
    ),
  );
  frames.push(sseFrame({ type: "message_stop" }, "message_stop"));
  return frames;
}

export const anthropic = { wire: anthropicWire, messages };

export function anthropicRequest(req: { model: string; messages: Array<{ role: string; content: string }>; temperature?: number; maxTokens?: number }) {
  const system = req.messages.filter((m) => m.role === "system").map((m) => m.content).join("\n");
  return {
    model: req.model,
    max_tokens: req.maxTokens ?? 1024,
    ...(system ? { system } : {}),
    messages: req.messages.filter((m) => m.role !== "system"),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
  };
}
