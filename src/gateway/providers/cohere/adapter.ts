/**
 * Chat/generate/embed style (doc1 §4.5): POST /v1/chat, /v1/generate (legacy), /v1/embed.
 * The v1 chat stream is the provider's event format: one JSON event per line
 * (stream-start, text-generation, citation-generation, tool-calls-generation, stream-end whose
 * `response` is the complete non-streamed response) — what the official SDK's CohereClient parses.
 */
import { t } from "elysia";
import { chunkText, parseJson, sseFrame, type SseEvent } from "../../sse";
import { compile, compact, scopeOf, estimateTokens, svcObject, type Assembler, type Endpoint, type ProviderWire, type StreamCodec, type Turn, JsonInteger } from "../types";
import { only, sampling, type CompletionInput, type NeutralAnswer, type NeutralFinish, type NeutralMessage } from "../neutral";

export const cohereWire: ProviderWire = {
  name: "cohere",
  authHeaders: (key) => ({ authorization: `Bearer ${key}` }),
  forwardHeaders: ["x-client-name"],
};

export const ChatBody = t.Object(
  {
    message: t.String(),
    model: t.Optional(t.String({ minLength: 1 })),
    stream: t.Optional(t.Boolean()),
    preamble: t.Optional(t.String()),
    chat_history: t.Optional(
      t.Array(t.Object({ role: t.Union([t.Literal("USER"), t.Literal("CHATBOT")]), message: t.String() }, { additionalProperties: true })),
    ),
    conversation_id: t.Optional(t.String({ minLength: 1 })),
    temperature: t.Optional(t.Number()),
    max_tokens: t.Optional(JsonInteger({ minimum: 1 })),
    k: t.Optional(JsonInteger({ minimum: 0 })),
    p: t.Optional(t.Number()),
    stop_sequences: t.Optional(t.Array(t.String())),
    frequency_penalty: t.Optional(t.Number()),
    presence_penalty: t.Optional(t.Number()),
    tools: t.Optional(t.Array(t.Object({ name: t.String() }, { additionalProperties: true }))),
    documents: t.Optional(t.Array(t.Record(t.String(), t.Any()))),
    connectors: t.Optional(t.Array(t.Object({ id: t.String() }, { additionalProperties: true }))),
  },
  { additionalProperties: true },
);

export const GenerateBody = t.Object(
  {
    prompt: t.String(),
    model: t.Optional(t.String({ minLength: 1 })),
    num_generations: t.Optional(JsonInteger({ minimum: 1 })),
    max_tokens: t.Optional(JsonInteger({ minimum: 1 })),
    temperature: t.Optional(t.Number()),
    k: t.Optional(JsonInteger({ minimum: 0 })),
    p: t.Optional(t.Number()),
    frequency_penalty: t.Optional(t.Number()),
    presence_penalty: t.Optional(t.Number()),
    stop_sequences: t.Optional(t.Array(t.String())),
    return_likelihoods: t.Optional(t.Union([t.Literal("GENERATION"), t.Literal("ALL"), t.Literal("NONE")])),
    stream: t.Optional(t.Boolean()),
  },
  { additionalProperties: true },
);

export const EmbedBody = t.Object(
  {
    texts: t.Array(t.String(), { maxItems: 96 }),
    model: t.Optional(t.String({ minLength: 1 })),
    input_type: t.Optional(t.Union([t.Literal("search_document"), t.Literal("search_query"), t.Literal("classification"), t.Literal("clustering")])),
    truncate: t.Optional(t.Union([t.Literal("NONE"), t.Literal("START"), t.Literal("END")])),
  },
  { additionalProperties: true },
);

/** The cache key's model when the caller leaves the provider default. */
const DEFAULT_MODEL = "default";

const metaUsage = (body: any) => {
  const b = body?.meta?.billed_units ?? body?.meta?.tokens ?? {};
  return { inputTokens: b.input_tokens ?? 0, outputTokens: b.output_tokens ?? 0 };
};

/** Request fields the neutral form carries (a conversation_id's stored history, documents, connectors and tools cannot be said elsewhere). */
const CHAT_KEYS = ["model", "message", "stream", "preamble", "chat_history", "temperature", "p", "max_tokens"];
const FINISH_REASON: Record<NeutralFinish, string> = { stop: "COMPLETE", tool_calls: "COMPLETE", length: "MAX_TOKENS", content_filter: "ERROR_TOXIC" };
const FINISH_OF: Record<string, NeutralFinish> = { COMPLETE: "stop", STOP_SEQUENCE: "stop", MAX_TOKENS: "length", ERROR_TOXIC: "content_filter" };

/** /v1/chat without its stream framing (the two framings below share everything else) */
const chatBase = {
  id: "cohere.chat",
  provider: "cohere",
  method: "POST" as const,
  schema: ChatBody,
  parse({ body }) {
    const turns: Turn[] = (body.chat_history ?? []).map((h: any) => ({ role: h.role === "CHATBOT" ? "assistant" : "user", text: h.message }));
    turns.push({ role: "user", text: body.message });
    if (Array.isArray(body.tool_results) && body.tool_results.length) turns.push({ role: "tool", text: compact(body.tool_results) });
    // conversation_id makes the provider add its stored history: keep it in the partition
    const scope = scopeOf(body, ["message", "chat_history", "stream", "model", "tool_results"]);
    const model = body.model ?? DEFAULT_MODEL;
    return {
      model,
      stream: body.stream === true,
      key: { style: "cohere-chat", model, scope, turns, sessionId: body.conversation_id },
      upstream: { method: "POST", path: "/v1/chat", body },
      meta: {},
    };
  },
  usageOf: metaUsage,
  textOf: (body) => body?.text ?? "",
  decorate: (body, _call, meta) => ({ ...body, svc: svcObject(meta) }),
  neutral: {
    // v1's tools cannot be said exactly elsewhere (parameter_definitions instead of a JSON Schema, calls without ids): text only
    input: (body: any) => {
      if (!only(body, CHAT_KEYS) || !(body.chat_history ?? []).every((h: any) => only(h, ["role", "message"]))) return undefined;
      const messages: NeutralMessage[] = [];
      if (body.preamble) messages.push({ role: "system", content: body.preamble });
      for (const h of body.chat_history ?? []) messages.push({ role: h.role === "CHATBOT" ? "assistant" : "user", content: h.message });
      messages.push({ role: "user", content: body.message });
      return { messages, ...sampling(body.temperature, body.p, body.max_tokens) };
    },
    answer: (body: any) => ({ text: body?.text ?? "", toolCalls: [], finish: FINISH_OF[body?.finish_reason] ?? "stop", usage: metaUsage(body) }),
    output: (a: NeutralAnswer) => {
      const id = crypto.randomUUID();
      return { response_id: id, text: a.text, generation_id: id, finish_reason: FINISH_REASON[a.finish], meta: { billed_units: { input_tokens: a.usage.inputTokens, output_tokens: a.usage.outputTokens } } };
    },
  },
} satisfies Omit<Endpoint, "stream">;

/** /v1/chat answering streams as newline-delimited JSON (the official v1 SDK). */
const chat: Endpoint = compile({ ...chatBase, stream: chatStream((o) => JSON.stringify(o) + "\n", "application/stream+json") });

/**
 * The chat style's events (stream-start, text-generation, citation-generation,
 * tool-calls-generation, stream-end with the full response) in one framing: newline-delimited
 * JSON (the provider's default, what the official v1 SDK parses) or Server-Sent Events
 * (`event: <event_type>` + `data: <json>`, doc1 §4.5). The provider is always asked for the former.
 */
function chatStream(frame: (event: Record<string, unknown>) => string, contentType: string): StreamCodec {
  const sse = contentType === "text/event-stream";
  return {
    format: "ndjson",
    contentType,
    assembler: () => new ChatStreamAssembler(),
    replay(body, _call, meta) {
      const frames = [frame({ is_finished: false, event_type: "stream-start", generation_id: body.generation_id })];
      for (const piece of chunkText(body.text ?? "")) frames.push(frame({ is_finished: false, event_type: "text-generation", text: piece }));
      if (body.citations?.length) frames.push(frame({ is_finished: false, event_type: "citation-generation", citations: body.citations }));
      if (body.tool_calls?.length) frames.push(frame({ is_finished: false, event_type: "tool-calls-generation", text: body.text ?? "", tool_calls: body.tool_calls }));
      frames.push(frame({ is_finished: true, event_type: "stream-end", finish_reason: body.finish_reason ?? "COMPLETE", response: { ...body, svc: svcObject(meta) } }));
      return frames;
    },
    errorFrame: (message) => frame({ is_finished: true, event_type: "stream-end", finish_reason: "ERROR", error: message }),
    ...(sse ? { reframe: (ev: SseEvent) => (parseJson(ev.data) === undefined ? "" : frame(parseJson(ev.data))) } : {}),
  };
}

const sseFrameOf = (o: Record<string, unknown>) => sseFrame(o, typeof o.event_type === "string" ? o.event_type : undefined);

/** /v1/chat answering streams as Server-Sent Events (the default, doc1 §4.5). */
const chatSse: Endpoint = compile({ ...chatBase, stream: chatStream(sseFrameOf, "text/event-stream") });

/**
 * Which framing a /v1/chat stream gets: newline-delimited JSON for the official v1 SDK (it sends
 * X-Fern-SDK-Name: cohere-ai and parses only that, unless it passes accepts=text/event-stream) and
 * for clients that ask for it (Accept: application/stream+json or application/x-ndjson);
 * Server-Sent Events otherwise.
 */
export function wantsNdjson(headers: Headers): boolean {
  const accept = `${headers.get("accept") ?? ""} ${headers.get("accepts") ?? ""}`.toLowerCase();
  if (accept.includes("text/event-stream")) return false;
  if (accept.includes("application/stream+json") || accept.includes("application/x-ndjson")) return true;
  return headers.get("x-fern-sdk-name") === "cohere-ai";
}

class ChatStreamAssembler implements Assembler {
  private final: any;
  push(ev: SseEvent) {
    const d = parseJson(ev.data);
    if (d === undefined) return;
    if (d.event_type === "stream-end") this.final = d.finish_reason === "COMPLETE" || d.finish_reason === "MAX_TOKENS" ? d.response : undefined;
  }
  result() {
    return this.final;
  }
}

const generate: Endpoint = compile({
  id: "cohere.generate",
  provider: "cohere",
  method: "POST",
  schema: GenerateBody,
  parse({ body }) {
    const model = body.model ?? DEFAULT_MODEL;
    return {
      model,
      stream: body.stream === true,
      // streamed or not, one entry: a stream is assembled into the non-streamed body (GenerateStreamAssembler)
      key: { style: "cohere-generate", model, scope: scopeOf(body, ["prompt", "model", "stream"]), turns: [{ role: "user", text: body.prompt }] },
      upstream: { method: "POST", path: "/v1/generate", body },
      meta: {},
    };
  },
  usageOf: (body) => {
    const u = metaUsage(body);
    if (!u.outputTokens) u.outputTokens = estimateTokens((body?.generations ?? []).map((g: any) => g.text).join(""));
    return u;
  },
  textOf: (body) => body?.generations?.[0]?.text ?? "",
  // doc1 §4.5: "on a miss ... `similarity` 0.0" for the legacy generate
  decorate: (body, _call, meta) => ({ ...body, svc: svcObject(meta, "zero") }),
  // the provider's v1 generate stream (what CohereClient.generateStream parses): one JSON event per
  // line, text-generation {text, index?}, then stream-end {finish_reason, response: the full body}
  stream: {
    format: "ndjson",
    contentType: "application/stream+json",
    assembler: () => new GenerateStreamAssembler(),
    replay(body, _call, meta) {
      const ev = (o: unknown) => JSON.stringify(o) + "\n";
      const gens: any[] = body.generations ?? [];
      const many = gens.length > 1;
      const frames: string[] = [];
      gens.forEach((g, i) => {
        for (const piece of chunkText(g.text ?? "")) frames.push(ev({ text: piece, ...(many ? { index: g.index ?? i } : {}), is_finished: false, event_type: "text-generation" }));
      });
      const finish = gens.every((g) => g.finish_reason === "MAX_TOKENS") && gens.length ? "MAX_TOKENS" : "COMPLETE";
      frames.push(ev({ is_finished: true, event_type: "stream-end", finish_reason: finish, response: { ...body, svc: svcObject(meta, "zero") } }));
      return frames;
    },
    errorFrame: (message) => JSON.stringify({ is_finished: true, event_type: "stream-error", finish_reason: "ERROR", err: message }) + "\n",
  },
});

/** Rebuilds the non-streamed generate body from its stream; complete only on stream-end COMPLETE/MAX_TOKENS. */
class GenerateStreamAssembler implements Assembler {
  private texts = new Map<number, string>();
  private final: any;
  private failed = false;
  push(ev: SseEvent) {
    const d = parseJson(ev.data);
    if (d === undefined) {
      this.failed = true;
      return;
    }
    const type = d.event_type ?? (d.is_finished ? "stream-end" : "text-generation");
    if (type === "text-generation") {
      const i = d.index ?? 0;
      this.texts.set(i, (this.texts.get(i) ?? "") + (d.text ?? ""));
    } else if (type === "stream-end") {
      if (d.finish_reason !== "COMPLETE" && d.finish_reason !== "MAX_TOKENS") this.failed = true;
      else this.final = d;
    } else if (type === "stream-error") this.failed = true;
  }
  result() {
    if (this.failed || !this.final) return undefined;
    const r = this.final.response ?? {};
    const generations =
      Array.isArray(r.generations) && r.generations.length
        ? r.generations
        : [...this.texts.entries()].sort((a, b) => a[0] - b[0]).map(([index, text]) => ({ id: `${r.id ?? "gen"}-${index}`, text, index, finish_reason: this.final.finish_reason }));
    return { ...r, generations };
  }
}

const embed: Endpoint = compile({
  id: "cohere.embed",
  provider: "cohere",
  method: "POST",
  schema: EmbedBody,
  parse: ({ body }) => ({ model: body.model ?? DEFAULT_MODEL, stream: false, key: null, upstream: { method: "POST", path: "/v1/embed", body }, meta: {} }),
  usageOf: (body) => ({ inputTokens: body?.meta?.billed_units?.input_tokens ?? 0, outputTokens: 0 }),
});

export const cohere = { wire: cohereWire, chat: chatSse, chatNdjson: chat, generate, embed };

/** Request body for GatewayService.complete: text only (v1 cannot say tools, images or tool results exactly; fallbacks go to v2). */
export function cohereRequest(req: CompletionInput) {
  if (req.tools?.length || req.toolChoice || req.parallelToolCalls === false) return undefined;
  const convo: Array<{ role: string; content: string }> = [];
  for (const m of req.messages) {
    if (m.role === "tool" || typeof m.content !== "string" || (m.role === "assistant" && m.toolCalls?.length)) return undefined;
    if (m.role !== "system") convo.push({ role: m.role, content: m.content });
  }
  const system = req.messages.filter((m) => m.role === "system").map((m) => m.content).join("\n");
  const last = convo[convo.length - 1];
  return {
    model: req.model,
    message: last?.content ?? "",
    ...(system ? { preamble: system } : {}),
    ...(convo.length > 1 ? { chat_history: convo.slice(0, -1).map((m) => ({ role: m.role === "assistant" ? "CHATBOT" : "USER", message: m.content })) } : {}),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.topP !== undefined ? { p: req.topP } : {}),
    ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
  };
}
