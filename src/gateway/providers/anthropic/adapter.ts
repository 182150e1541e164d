/**
 * Messages style (doc1 §4.3): POST /v1/messages. Requires the `anthropic-version` header;
 * `x-api-key` may carry the caller's own provider key (pass-through, CONTRACT.md).
 * Streams are named SSE events message_start … message_stop.
 */
import { t } from "elysia";
import { sseFrame, chunkText, parseJson, type SseEvent } from "../../sse";
import { compile, compact, scopeOf, sha, type Assembler, type Endpoint, type ProviderWire, type Turn, type Usage, JsonInteger } from "../types";
import {
  argsObject,
  base64Image,
  each,
  finishOf,
  imageOfUrl,
  neutralCall,
  neutralRequest,
  neutralTool,
  only,
  resultsThenUser,
  sampling,
  samplingWithin,
  stopOf,
  toolDeclaration,
  type CompletionInput,
  type NeutralFinish,
  type NeutralMessage,
  type NeutralPart,
  type NeutralRequest,
  type NeutralTool,
  type NeutralToolCall,
  type NeutralToolChoice,
} from "../neutral";

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
    max_tokens: JsonInteger({ minimum: 1 }),
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
  usageOf,
  textOf,
  neutral: {
    input: messagesInput,
    answer: (body) => {
      const toolCalls = (body?.content ?? []).filter((b: any) => b?.type === "tool_use").map((b: any) => ({ id: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}) }));
      return { text: textOf(body), toolCalls, finish: finishOf("anthropic", body?.stop_reason, FINISH_OF), usage: usageOf(body) };
    },
    output: (a, call) => ({
      id: `msg_${crypto.randomUUID().replace(/-/g, "")}`,
      type: "message",
      role: "assistant",
      model: call.model,
      content: [...(a.text || !a.toolCalls.length ? [{ type: "text", text: a.text }] : []), ...a.toolCalls.map((c) => ({ ...toolUse(c), caller: { type: "direct" } }))],
      stop_reason: STOP_REASON[a.finish],
      stop_sequence: null,
      usage: { input_tokens: a.usage.inputTokens, output_tokens: a.usage.outputTokens },
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

function usageOf(body: any): Usage {
  return { inputTokens: body?.usage?.input_tokens ?? 0, outputTokens: body?.usage?.output_tokens ?? 0 };
}

const STOP_REASON: Record<NeutralFinish, string> = { stop: "end_turn", length: "max_tokens", tool_calls: "tool_use", content_filter: "refusal" };
/** stop_reason: the answer was cut by the context window as by max_tokens; `pause_turn` (server tools, never asked for) has no word elsewhere */
const FINISH_OF: Record<string, NeutralFinish> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  refusal: "content_filter",
};

/** Request fields the neutral form carries (or that never change the answer). */
const MESSAGES_KEYS = ["model", "messages", "max_tokens", "system", "temperature", "top_p", "stop_sequences", "stream", "metadata", "tools", "tool_choice"];

/** A messages request in neutral terms, or undefined when anything in it would be lost (thinking, documents, server tools, ...). */
function messagesInput(body: any): NeutralRequest | undefined {
  if (!only(body, MESSAGES_KEYS)) return undefined;
  const system = body.system === undefined ? [] : systemMessage(body.system);
  const turns = each(body.messages, (m: any) => (!only(m, ["role", "content"]) ? undefined : m.role === "user" ? userTurn(m.content) : m.role === "assistant" ? assistantTurn(m.content) : undefined));
  return neutralRequest(
    {
      messages: system && turns && [...system, ...turns.flat()],
      tools: each(body.tools ?? [], messagesTool),
      toolChoice: body.tool_choice === undefined ? undefined : messagesChoice(body.tool_choice),
      serial: body.tool_choice?.disable_parallel_tool_use === true,
      stop: stopOf(body.stop_sequences),
    },
    sampling(body.temperature, body.top_p, body.max_tokens),
  );
}

/** The system prompt (text blocks joined by newlines; cache_control only steers the provider's prompt cache). */
function systemMessage(system: unknown): NeutralMessage[] | undefined {
  if (typeof system === "string") return [{ role: "system", content: system }];
  const texts = each(system as any[], (b) => (b?.type === "text" && only(b, ["type", "text", "cache_control"]) ? (b.text as string) : undefined));
  return texts && [{ role: "system", content: texts.join("\n") }];
}

/** A user turn: its tool results (the API puts them first), then what else it says, if anything. */
function userTurn(content: unknown): NeutralMessage[] | undefined {
  if (typeof content === "string") return [{ role: "user", content }];
  return Array.isArray(content) ? resultsThenUser(content, (b) => b?.type === "tool_result", toolResult, messagesPart) : undefined;
}

/** A tool result whose content is text (an error flag or images in it cannot be said in every style). */
function toolResult(b: any): NeutralMessage | undefined {
  const text = b.content === undefined ? "" : textOnly(b.content);
  if (!only(b, ["type", "tool_use_id", "content", "is_error", "cache_control"]) || b.is_error === true || typeof b.tool_use_id !== "string" || text === undefined) return undefined;
  return { role: "tool", toolCallId: b.tool_use_id, content: text };
}

/** A text block, or an image given as base64 data or by URL. */
function messagesPart(b: any): NeutralPart | undefined {
  if (b?.type === "text" && typeof b.text === "string" && only(b, ["type", "text", "cache_control"])) return { type: "text", text: b.text };
  if (b?.type !== "image" || !only(b, ["type", "source", "cache_control"])) return undefined;
  const src = b.source;
  if (src?.type === "base64" && only(src, ["type", "media_type", "data"])) return base64Image(src.media_type, src.data);
  return src?.type === "url" && only(src, ["type", "url"]) && /^https?:/i.test(src.url) ? imageOfUrl(src.url) : undefined;
}

/** An assistant turn: its text, then its tool calls (text after a tool call has no place in the other styles). */
function assistantTurn(content: unknown): NeutralMessage[] | undefined {
  if (typeof content === "string") return [{ role: "assistant", content }];
  if (!Array.isArray(content)) return undefined;
  let text = "";
  const toolCalls: NeutralToolCall[] = [];
  for (const b of content) {
    // a call the model made itself (caller "direct"); calls from code execution exist only here
    const direct = b?.caller === undefined || (only(b.caller, ["type"]) && b.caller.type === "direct");
    const call = b?.type === "tool_use" && direct && only(b, ["type", "id", "name", "input", "cache_control", "caller"]) ? neutralCall(b.id, b.name, b.input) : undefined;
    if (call) toolCalls.push(call);
    else if (b?.type === "text" && typeof b.text === "string" && only(b, ["type", "text", "cache_control"]) && !toolCalls.length) text += b.text;
    else return undefined;
  }
  return [{ role: "assistant", content: text, ...(toolCalls.length ? { toolCalls } : {}) }];
}

/** A client tool (`type` absent or "custom"); server tools (web search, computer use, ...) exist only here. */
function messagesTool(t: any): NeutralTool | undefined {
  if (!only(t, ["type", "name", "description", "input_schema", "cache_control"]) || (t.type ?? "custom") !== "custom") return undefined;
  return neutralTool(t.name, t.description, t.input_schema);
}

/** auto, any (required), none or one tool; null = not translatable. */
function messagesChoice(c: any): NeutralToolChoice | null {
  if (!only(c, ["type", "name", "disable_parallel_tool_use"])) return null;
  const choices: Record<string, NeutralToolChoice> = { auto: "auto", any: "required", none: "none" };
  return (c.type === "tool" && typeof c.name === "string" ? { name: c.name } : choices[c.type]) ?? null;
}

const toolUse = (c: NeutralToolCall) => ({ type: "tool_use", id: c.id, name: c.name, input: argsObject(c) });

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
      // the block as stored (id, name, caller, ...) with its input streamed after it
      frames.push(sseFrame({ type: "content_block_start", index, content_block: { ...b, input: {} } }, "content_block_start"));
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

/** POST /v1/messages/count_tokens: the messages body without max_tokens (the SDK's messages.countTokens). */
export const CountTokensBody = t.Object(
  {
    model: t.String({ minLength: 1 }),
    messages: t.Array(t.Object({ role: t.String({ minLength: 1 }), content: t.Any() }, { additionalProperties: true }), { minItems: 1 }),
    system: t.Optional(t.Union([t.String(), t.Array(SystemBlock)])),
    tools: t.Optional(t.Array(t.Object({ name: t.String() }, { additionalProperties: true }))),
  },
  { additionalProperties: true },
);

/**
 * Token counting: forwarded as is (the query too: the SDK's beta form adds `?beta=true`), never
 * cached and charged nothing (the API bills it as free), like generate-content's countTokens.
 */
const countTokens: Endpoint = compile({
  id: "anthropic.count_tokens",
  provider: "anthropic",
  method: "POST",
  schema: CountTokensBody,
  headerSchema: MessagesHeaders,
  parse: ({ body, url }) => ({ model: body.model, stream: false, key: null, upstream: { method: "POST", path: "/v1/messages/count_tokens" + url.search, body }, meta: {} }),
});

export const anthropic = { wire: anthropicWire, messages, countTokens };

/**
 * The messages API requires max_tokens; a request that sets no limit (another style's client, a
 * prompt without one) gets the largest that every Claude model accepts (Claude 3 Haiku's 4,096),
 * so an answer is cut only where the model itself would cut it.
 */
const DEFAULT_MAX_TOKENS = 4096;

/** Request body for GatewayService.complete and fallbacks from other styles (system messages join the one system prompt); undefined for a temperature over 1. */
export function anthropicRequest(req: CompletionInput) {
  // temperature "ranges from 0.0 to 1.0" (the other styles take up to 2)
  if (!samplingWithin(req, [0, 1])) return undefined;
  const system = req.messages.filter((m) => m.role === "system").map((m) => m.content).join("\n");
  return {
    model: req.model,
    max_tokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
    ...(system ? { system } : {}),
    messages: turnsOf(req.messages),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.topP !== undefined ? { top_p: req.topP } : {}),
    ...(req.stop?.length ? { stop_sequences: req.stop } : {}),
    ...(req.tools?.length ? { tools: req.tools.map((t) => toolDeclaration(t, "input_schema")) } : {}),
    ...toolChoiceOf(req),
  };
}

function turnsOf(messages: NeutralMessage[]) {
  const out: Array<{ role: "user" | "assistant"; content: any }> = [];
  for (const m of messages) {
    if (m.role === "tool") {
      const block = { type: "tool_result", tool_use_id: m.toolCallId, content: m.content };
      const last = out.at(-1);
      // the results of one turn's calls go back in one user turn
      if (last?.role === "user" && Array.isArray(last.content) && last.content.every((b: any) => b.type === "tool_result")) last.content.push(block);
      else out.push({ role: "user", content: [block] });
    } else if (m.role === "assistant")
      out.push({ role: "assistant", content: m.toolCalls?.length ? [...(m.content ? [{ type: "text", text: m.content }] : []), ...m.toolCalls.map(toolUse)] : m.content });
    else if (m.role === "user") out.push({ role: "user", content: typeof m.content === "string" ? m.content : m.content.map(blockOf) });
  }
  return out;
}

function blockOf(p: NeutralPart) {
  if (p.type === "text") return { type: "text", text: p.text };
  return { type: "image", source: p.type === "image" ? { type: "base64", media_type: p.mediaType, data: p.data } : { type: "url", url: p.url } };
}

/** tool_choice: auto, none, any (required) or one tool; "no parallel calls" rides on it. */
function toolChoiceOf(req: CompletionInput): { tool_choice?: Record<string, unknown> } {
  if (!req.tools?.length || (!req.toolChoice && req.parallelToolCalls !== false)) return {};
  const c = req.toolChoice ?? "auto";
  const choice: Record<string, unknown> = typeof c === "object" ? { type: "tool", name: c.name } : { type: c === "required" ? "any" : c };
  if (req.parallelToolCalls === false && c !== "none") choice.disable_parallel_tool_use = true;
  return { tool_choice: choice };
}
