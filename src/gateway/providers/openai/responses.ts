/**
 * The Responses API (POST /v1/responses, what the official SDK's `client.responses.create` calls),
 * through the same pipeline and cache as chat-completions. The request is forwarded to the
 * provider's /v1/responses as sent; the answer is the provider's Response object with
 * `svc_metadata` added. Streams are the provider's named SSE events (response.created,
 * response.in_progress, response.output_item.added, response.content_part.added,
 * response.output_text.delta, response.output_text.done, response.content_part.done,
 * response.output_item.done, response.completed), each with a `sequence_number`; a live miss
 * carries `svc_metadata` in the `response` of response.created, a hit is rebuilt from the stored
 * Response in the same event sequence. Only a `completed` response is stored.
 *
 * Cache key: style "openai-responses", the model, `instructions` (as the system prompt) and every
 * other parameter that changes the answer; `input` (a string, or message / function-call items)
 * becomes the turns. `previous_response_id` (provider-side conversation state) stays in the scope,
 * so a continuation never matches another conversation's entry.
 */
import { t } from "elysia";
import { uuid } from "../../../core/ids";
import { sseFrame, chunkText, parseJson, type SseEvent } from "../../sse";
import { compile, compact, scopeOf, estimateTokens, type Assembler, type CacheMeta, type Endpoint, type ProxyCall, type Turn, type Usage, JsonInteger } from "../types";
import { choiceOf, contentText, plainText } from "./adapter";
import { each, imageOfUrl, neutralCall, neutralRequest, neutralTool, only, sampling, userContent, type NeutralMessage, type NeutralPart, type NeutralRequest, type NeutralTool } from "../neutral";

export const ResponsesBody = t.Object(
  {
    model: t.String({ minLength: 1 }),
    input: t.Union([t.String(), t.Array(t.Object({}, { additionalProperties: true }), { minItems: 1 })]),
    instructions: t.Optional(t.Union([t.String(), t.Null()])),
    stream: t.Optional(t.Boolean()),
    temperature: t.Optional(t.Number()),
    max_output_tokens: t.Optional(JsonInteger({ minimum: 1 })),
    tools: t.Optional(t.Array(t.Object({ type: t.String() }, { additionalProperties: true }))),
    previous_response_id: t.Optional(t.Union([t.String({ minLength: 1 }), t.Null()])),
  },
  { additionalProperties: true },
);

/** The `input` as turns (system/developer messages go to the scope). */
function turnsOf(input: unknown): { system: string[]; turns: Turn[] } {
  if (typeof input === "string") return { system: [], turns: [{ role: "user", text: input }] };
  const system: string[] = [];
  const turns: Turn[] = [];
  for (const item of input as any[]) {
    const type = item.type ?? "message";
    if (type === "message") {
      if (item.role === "system" || item.role === "developer") system.push(contentText(item.content));
      else turns.push({ role: item.role === "assistant" ? "assistant" : "user", text: contentText(item.content) });
    } else if (type === "function_call") turns.push({ role: "assistant", text: `call ${item.name}(${item.arguments ?? ""})` });
    else if (type === "function_call_output") turns.push({ role: "tool", text: `result ${item.call_id}: ${compact(item.output)}` });
    else turns.push({ role: "user", text: compact(item) });
  }
  return { system, turns };
}

/** svc_metadata of the chat-completions style, without a session (the Responses API has none). */
function metadata(meta: CacheMeta) {
  const hit = meta.status === "HIT";
  return { cache_hit: hit, cache_tier: meta.tier ?? null, similarity: meta.similarity, context_similarity: hit ? (meta.contextSimilarity ?? 1) : null };
}

export function responseText(body: any): string {
  if (typeof body?.output_text === "string") return body.output_text;
  let out = "";
  for (const item of body?.output ?? []) if (item?.type === "message") for (const c of item.content ?? []) if (c?.type === "output_text") out += c.text ?? "";
  return out;
}

function usageOf(body: any): Usage {
  const u = body?.usage;
  if (u && typeof u.input_tokens === "number") return { inputTokens: u.input_tokens, outputTokens: u.output_tokens ?? 0 };
  return { inputTokens: 0, outputTokens: estimateTokens(responseText(body)) };
}

/** Request fields the neutral form carries (or that never change the answer). */
const RESPONSES_KEYS = ["model", "input", "instructions", "stream", "stream_options", "user", "metadata", "store", "temperature", "top_p", "max_output_tokens", "tools", "tool_choice", "parallel_tool_calls", "text"];

/** A Responses request in neutral terms, or undefined when anything in it would be lost (previous_response_id, reasoning, hosted tools, ...). */
function responsesInput(body: any): NeutralRequest | undefined {
  // text: only the default plain-text format (structured outputs cannot be said in every style)
  if (!only(body, RESPONSES_KEYS) || (body.text != null && !(only(body.text, ["format"]) && body.text.format?.type === "text"))) return undefined;
  return neutralRequest(
    { messages: responsesMessages(body), tools: each(body.tools ?? [], responsesTool), toolChoice: choiceOf(body.tool_choice), serial: body.parallel_tool_calls === false },
    sampling(body.temperature, body.top_p, body.max_output_tokens),
  );
}

/** A function tool; `strict` is the Responses API's default, so only `strict: false` translates (no other style enforces a schema). */
function responsesTool(t: any): NeutralTool | undefined {
  if (!only(t, ["type", "name", "description", "parameters", "strict"]) || t.type !== "function" || t.strict !== false) return undefined;
  return neutralTool(t.name, t.description, t.parameters);
}

/** `instructions` and the `input` items as neutral messages; function calls join the assistant turn before them. */
function responsesMessages(body: any): NeutralMessage[] | undefined {
  const messages: NeutralMessage[] = [];
  if (typeof body.instructions === "string" && body.instructions) messages.push({ role: "system", content: body.instructions });
  if (typeof body.input === "string") return [...messages, { role: "user", content: body.input }];
  for (const item of body.input) {
    const type = item.type ?? "message";
    if (type === "function_call") {
      const call = only(item, ["type", "id", "call_id", "name", "arguments", "status"]) ? neutralCall(item.call_id, item.name, item.arguments) : undefined;
      const last = messages.at(-1);
      if (!call) return undefined;
      if (last?.role === "assistant") last.toolCalls = [...(last.toolCalls ?? []), call];
      else messages.push({ role: "assistant", content: "", toolCalls: [call] });
      continue;
    }
    const m = type === "function_call_output" ? responsesOutput(item) : type === "message" ? responsesMessage(item) : undefined;
    if (!m) return undefined;
    messages.push(m);
  }
  return messages;
}

function responsesOutput(item: any): NeutralMessage | undefined {
  const text = plainText(item.output);
  if (!only(item, ["type", "id", "call_id", "output", "status"]) || typeof item.call_id !== "string" || text === undefined) return undefined;
  return { role: "tool", toolCallId: item.call_id, content: text };
}

function responsesMessage(item: any): NeutralMessage | undefined {
  if (!only(item, ["type", "id", "role", "content", "status"])) return undefined;
  if (item.role === "user") {
    const content = userContent(item.content, responsesPart);
    return content === undefined ? undefined : { role: "user", content };
  }
  const text = plainText(item.content);
  if (text === undefined) return undefined;
  if (item.role === "assistant") return { role: "assistant", content: text };
  return item.role === "system" || item.role === "developer" ? { role: "system", content: text } : undefined;
}

/** input_text, or input_image given by a URL (detail unset or "auto"; a file_id cannot be said elsewhere). */
function responsesPart(p: any): NeutralPart | undefined {
  if (p?.type === "input_text" && typeof p.text === "string") return { type: "text", text: p.text };
  if (p?.type !== "input_image" || !only(p, ["type", "image_url", "detail"]) || (p.detail ?? "auto") !== "auto") return undefined;
  return imageOfUrl(p.image_url);
}

const frame = (type: string, data: Record<string, unknown>, seq: number) => sseFrame({ type, sequence_number: seq, ...data }, type);

/** A stored Response replayed as the provider's event sequence. */
function replay(body: any, _call: ProxyCall, meta: CacheMeta): string[] {
  const decorated = { ...body, svc_metadata: metadata(meta) };
  let seq = 0;
  const frames: string[] = [];
  const pending = { ...decorated, status: "in_progress", output: [], usage: null };
  frames.push(frame("response.created", { response: pending }, seq++));
  frames.push(frame("response.in_progress", { response: pending }, seq++));
  (body.output ?? []).forEach((item: any, outputIndex: number) => {
    if (item?.type === "message") {
      frames.push(frame("response.output_item.added", { output_index: outputIndex, item: { ...item, status: "in_progress", content: [] } }, seq++));
      (item.content ?? []).forEach((part: any, contentIndex: number) => {
        const where = { item_id: item.id, output_index: outputIndex, content_index: contentIndex };
        if (part?.type === "output_text") {
          frames.push(frame("response.content_part.added", { ...where, part: { ...part, text: "" } }, seq++));
          for (const piece of chunkText(part.text ?? "")) frames.push(frame("response.output_text.delta", { ...where, delta: piece, logprobs: [] }, seq++));
          frames.push(frame("response.output_text.done", { ...where, text: part.text ?? "", logprobs: [] }, seq++));
        } else frames.push(frame("response.content_part.added", { ...where, part }, seq++));
        frames.push(frame("response.content_part.done", { ...where, part }, seq++));
      });
    } else if (item?.type === "function_call") {
      frames.push(frame("response.output_item.added", { output_index: outputIndex, item: { ...item, status: "in_progress", arguments: "" } }, seq++));
      frames.push(frame("response.function_call_arguments.delta", { item_id: item.id, output_index: outputIndex, delta: item.arguments ?? "" }, seq++));
      // the done event names the function (ResponseFunctionCallArgumentsDoneEvent: arguments, item_id, name, output_index)
      frames.push(frame("response.function_call_arguments.done", { item_id: item.id, name: item.name, output_index: outputIndex, arguments: item.arguments ?? "" }, seq++));
    } else frames.push(frame("response.output_item.added", { output_index: outputIndex, item }, seq++));
    frames.push(frame("response.output_item.done", { output_index: outputIndex, item }, seq++));
  });
  frames.push(frame("response.completed", { response: decorated }, seq++));
  return frames;
}

/** The complete Response of a stream: response.completed's; a failed or incomplete response is never stored. */
class ResponseAssembler implements Assembler {
  private final: any;
  private failed = false;
  push(ev: SseEvent) {
    const d = parseJson(ev.data);
    if (d === undefined) return;
    const type = d.type ?? ev.event;
    if (type === "response.completed" && d.response?.status === "completed") this.final = d.response;
    else if (type === "response.failed" || type === "response.incomplete" || type === "error") this.failed = true;
  }
  result() {
    return this.failed ? undefined : this.final;
  }
}

export const responses: Endpoint = compile({
  id: "openai.responses",
  provider: "openai",
  method: "POST",
  schema: ResponsesBody,
  parse({ body }) {
    const { system, turns } = turnsOf(body.input);
    const scope = scopeOf(body, ["input", "stream", "stream_options", "model", "user", "metadata", "store", "instructions", "background"]);
    const instructions = [...(typeof body.instructions === "string" && body.instructions ? [body.instructions] : []), ...system];
    if (instructions.length) scope.system = instructions;
    return {
      model: body.model,
      stream: body.stream === true,
      key: { style: "openai-responses", model: body.model, scope, turns },
      upstream: { method: "POST", path: "/v1/responses", body },
      meta: {},
    };
  },
  usageOf,
  textOf: responseText,
  decorate: (body, _call, meta) => ({ ...body, svc_metadata: metadata(meta) }),
  neutral: {
    input: responsesInput,
    answer: (body) => {
      const toolCalls = (body?.output ?? []).filter((i: any) => i?.type === "function_call").map((i: any) => ({ id: i.call_id, name: i.name, arguments: i.arguments ?? "{}" }));
      const reason = body?.status === "incomplete" ? body.incomplete_details?.reason : undefined;
      const finish = reason === "max_output_tokens" ? "length" : reason === "content_filter" ? "content_filter" : toolCalls.length ? "tool_calls" : "stop";
      return { text: responseText(body), toolCalls, finish, usage: usageOf(body) };
    },
    output: (a, call) => {
      const id = uuid().replace(/-/g, "");
      const message = { type: "message", id: `msg_${id}`, status: "completed", role: "assistant", content: [{ type: "output_text", text: a.text, annotations: [] }] };
      const calls = a.toolCalls.map((c, i) => ({ type: "function_call", id: `fc_${id}_${i}`, call_id: c.id, name: c.name, arguments: c.arguments, status: "completed" }));
      const incomplete = a.finish === "length" ? "max_output_tokens" : a.finish === "content_filter" ? "content_filter" : undefined;
      return {
        id: `resp_${id}`,
        object: "response",
        created_at: Math.floor(Date.now() / 1000),
        status: incomplete ? "incomplete" : "completed",
        error: null,
        incomplete_details: incomplete ? { reason: incomplete } : null,
        model: call.model,
        output: [...(a.text || !calls.length ? [message] : []), ...calls],
        usage: { input_tokens: a.usage.inputTokens, output_tokens: a.usage.outputTokens, total_tokens: a.usage.inputTokens + a.usage.outputTokens },
      };
    },
  },
  stream: {
    format: "sse",
    contentType: "text/event-stream",
    assembler: () => new ResponseAssembler(),
    replay,
    errorFrame: (message, type) => sseFrame({ type: "error", code: type ?? "proxy_error", message, param: null, sequence_number: 0 }, "error"),
    // a live miss carries svc_metadata in response.created's response, like a rebuilt hit
    liveHead(data, _call, meta) {
      const d = parseJson(data);
      if (!d || d.type !== "response.created" || typeof d.response !== "object") return undefined;
      return sseFrame({ ...d, response: { ...d.response, svc_metadata: metadata(meta) } }, "response.created");
    },
  },
});
