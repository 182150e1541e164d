/**
 * The provider-neutral form of a completion: what GatewayService.complete asks for, and what a
 * request becomes when a fallback deployment of another provider answers it (models.fallbacks).
 * Each style reads its requests into it (`Endpoint.neutral.input`: undefined when the request says
 * anything this form cannot carry exactly), builds requests from it (`completion.build`: undefined
 * when the style cannot say it exactly) and converts answers both ways (`neutral.answer` reads the
 * style's answer, `neutral.output` writes one). Nothing is approximated: a request that does not
 * translate exactly skips the deployment (docs/decisions.md, "Fallbacks").
 *
 * Also the helpers the styles share: field allow-lists, images, tool definitions and tool calls
 * (including the function-tool shape that chat-completions and Cohere v2 both use).
 */
import { ApiError } from "../../core/errors";
import type { TokenUsage } from "../../core/usage";
import { parseJson } from "../sse";

/** A function the model may call: its parameters are a JSON Schema (an object schema). */
export interface NeutralTool {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

/** auto (the default when tools are given), none, required (any tool), or one named tool. */
export type NeutralToolChoice = "auto" | "none" | "required" | { name: string };

/** A tool call the assistant made: `arguments` is the JSON text of an object. */
export interface NeutralToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A base64 image (`image`) or one given by an http(s) URL (`image_url`). */
export type NeutralImage = { type: "image"; mediaType: string; data: string } | { type: "image_url"; url: string };
export type NeutralPart = { type: "text"; text: string } | NeutralImage;

export type NeutralMessage =
  | { role: "system"; content: string }
  /** a string, or parts when it holds images */
  | { role: "user"; content: string | NeutralPart[] }
  | { role: "assistant"; content: string; toolCalls?: NeutralToolCall[] }
  | { role: "tool"; toolCallId: string; content: string };

/** A completion other domains ask for (GatewayService.complete), and a translated fallback request. */
export interface CompletionInput {
  model: string;
  messages: NeutralMessage[];
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  /** stop sequences: the answer ends before the first one it would contain */
  stop?: string[];
  tools?: NeutralTool[];
  toolChoice?: NeutralToolChoice;
  /** false: at most one tool call per answer (absent: the providers' default, several allowed) */
  parallelToolCalls?: false;
}

export type NeutralRequest = Omit<CompletionInput, "model">;

export type NeutralFinish = "stop" | "length" | "tool_calls" | "content_filter";

/** An answer in neutral terms. */
export interface NeutralAnswer {
  text: string;
  toolCalls: NeutralToolCall[];
  finish: NeutralFinish;
  usage: TokenUsage;
}

/**
 * True when every field of `o` that asks for something is one of `keys`. Asking for nothing: null,
 * an empty list, false (every such flag is off by default) and a zero penalty (the APIs' default).
 */
export function only(o: unknown, keys: readonly string[]): boolean {
  if (!o || typeof o !== "object" || Array.isArray(o)) return false;
  return Object.entries(o).every(([k, v]) => keys.includes(k) || v === undefined || v === null || v === false || (Array.isArray(v) && !v.length) || (v === 0 && PENALTY.test(k)));
}

const PENALTY = /^(frequency|presence)_?penalty$/i;

/** Every element read, or undefined when one cannot be. */
export function each<T, R>(items: T[], read: (item: T, index: number) => R | undefined): R[] | undefined {
  const out: R[] = [];
  for (const [i, item] of items.entries()) {
    const r = read(item, i);
    if (r === undefined) return undefined;
    out.push(r);
  }
  return out;
}

/**
 * A neutral request from what a style's reader found: undefined when the messages or tools could
 * not be read (undefined), the tool choice could not (null; undefined = none given), or a system
 * message stands between turns (stop sequences: see stopOf). `serial`: the request allows one tool call at a time.
 */
export function neutralRequest(
  read: { messages: NeutralMessage[] | undefined; tools: NeutralTool[] | undefined; toolChoice?: NeutralToolChoice | null; serial?: boolean; stop?: string[] | null },
  sampled: Pick<NeutralRequest, "temperature" | "topP" | "maxTokens">,
): NeutralRequest | undefined {
  const { messages, tools, toolChoice, stop } = read;
  if (!messages || !systemLeads(messages) || !tools || toolChoice === null || stop === null) return undefined;
  return { messages, ...sampled, ...(stop ? { stop } : {}), ...(tools.length ? { tools } : {}), ...(toolChoice ? { toolChoice } : {}), ...(read.serial ? { parallelToolCalls: false as const } : {}) };
}

/**
 * True when system messages only lead the conversation: the messages and generate-content styles
 * have one system prompt before every turn, so a system message between turns cannot be placed there.
 */
const systemLeads = (messages: NeutralMessage[]) => messages.every((m, i) => m.role !== "system" || i === 0 || messages[i - 1]!.role === "system");

/** temperature, top_p and the output limit, each only when the request gives it. */
export function sampling(temperature: unknown, topP: unknown, maxTokens: unknown): Pick<NeutralRequest, "temperature" | "topP" | "maxTokens"> {
  return {
    ...(typeof temperature === "number" ? { temperature } : {}),
    ...(typeof topP === "number" ? { topP } : {}),
    ...(Number.isInteger(maxTokens) ? { maxTokens: maxTokens as number } : {}),
  };
}

/**
 * True when temperature and top_p (each only if given) are within a target's documented ranges: a
 * value outside is refused there, so that target cannot say the request.
 */
export function samplingWithin(req: Pick<NeutralRequest, "temperature" | "topP">, temperature: readonly [number, number], topP: readonly [number, number] = [0, 1]): boolean {
  const inside = (v: number | undefined, [low, high]: readonly [number, number]) => v === undefined || (v >= low && v <= high);
  return inside(req.temperature, temperature) && inside(req.topP, topP);
}

/** Stop sequences given as one string or a list of non-empty strings; undefined = none; null = not translatable. */
export function stopOf(v: unknown): string[] | undefined | null {
  if (v === undefined || v === null || (Array.isArray(v) && v.length === 0)) return undefined;
  const list = typeof v === "string" ? [v] : v;
  return Array.isArray(list) && list.every((s) => typeof s === "string" && s.length > 0) ? (list as string[]) : null;
}

/**
 * A user content of text and images: a string when it is only text (text parts joined), parts
 * otherwise; `part` reads one part of the style (undefined = not translatable).
 */
export function userContent(content: unknown, part: (p: any) => NeutralPart | undefined): string | NeutralPart[] | undefined {
  if (typeof content === "string") return content;
  const parts = Array.isArray(content) ? each(content, part) : undefined;
  if (!parts) return undefined;
  return parts.every((p) => p.type === "text") ? parts.map((p) => (p as { text: string }).text).join("") : parts;
}

/**
 * A user turn that also carries tool results (messages, generate-content): the results first (the
 * other styles answer calls right after them), then what else it says as a user message.
 */
export function resultsThenUser(
  content: any[],
  isResult: (p: any) => boolean,
  result: (p: any) => NeutralMessage | undefined,
  part: (p: any) => NeutralPart | undefined,
): NeutralMessage[] | undefined {
  const results = each(content.filter(isResult), result);
  const rest = content.filter((p) => !isResult(p));
  const said = rest.length ? userContent(rest, part) : "";
  if (!results || said === undefined) return undefined;
  return [...results, ...(rest.length ? [{ role: "user" as const, content: said }] : [])];
}

/** A user content's parts (a string is one text part). */
export const partsOf = (content: string | NeutralPart[]): NeutralPart[] => (typeof content === "string" ? [{ type: "text", text: content }] : content);

/** The image types every style accepts. */
const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** A base64 image of a type every style accepts, or undefined. */
export function base64Image(mediaType: unknown, data: unknown): NeutralImage | undefined {
  return typeof mediaType === "string" && IMAGE_TYPES.includes(mediaType) && typeof data === "string" && BASE64.test(data) ? { type: "image", mediaType, data } : undefined;
}

/** An image given as a URL: a base64 `data:` URL, or an http(s) URL; undefined for anything else. */
export function imageOfUrl(url: unknown): NeutralImage | undefined {
  if (typeof url !== "string") return undefined;
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) return base64Image(data[1], data[2]);
  return /^https?:\/\//i.test(url) ? { type: "image_url", url } : undefined;
}

/** The URL form of an image (a `data:` URL for base64 data). */
const urlOfImage = (image: NeutralImage) => (image.type === "image_url" ? image.url : `data:${image.mediaType};base64,${image.data}`);

/** Names and ids every style accepts (the strictest providers' patterns). */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const CALL_ID = /^[A-Za-z0-9_-]{1,128}$/;

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** A tool definition, when every style can say it: a plain name and an object schema (absent = no parameters). */
export function neutralTool(name: unknown, description: unknown, parameters: unknown): NeutralTool | undefined {
  if (typeof name !== "string" || !TOOL_NAME.test(name)) return undefined;
  if (description !== undefined && description !== null && typeof description !== "string") return undefined;
  const schema = parameters ?? { type: "object", properties: {} };
  if (!isObject(schema) || schema.type !== "object") return undefined;
  return { name, ...(typeof description === "string" ? { description } : {}), parameters: schema };
}

/** A tool call, when its id and name are plain and its arguments (JSON text or an object) are a JSON object. */
export function neutralCall(id: unknown, name: unknown, args: unknown): NeutralToolCall | undefined {
  if (typeof id !== "string" || !CALL_ID.test(id) || typeof name !== "string" || !TOOL_NAME.test(name)) return undefined;
  const text = isObject(args) ? JSON.stringify(args) : args;
  return typeof text === "string" && isObject(parseJson(text)) ? { id, name, arguments: text } : undefined;
}

/**
 * A tool call's arguments as an object, for the styles that carry them so. A request's calls were
 * checked when read; an answer whose arguments are not a JSON object cannot be said in such a
 * style, and the provider is blamed for it (proxy_error) rather than the arguments dropped.
 */
export function argsObject(call: NeutralToolCall): Record<string, unknown> {
  const args = parseJson(call.arguments);
  if (!isObject(args)) throw new ApiError("proxy_error", `the fallback deployment's tool call ${call.name} has arguments that are not a JSON object`);
  return args;
}

/**
 * An answer's finish reason in neutral terms: the provider's word looked up in `known`; none given
 * (absent, null) is a plain stop. Any other word is a generation that failed (Gemini's
 * MALFORMED_FUNCTION_CALL, Cohere's ERROR or TIMEOUT, ...) or one svc does not know: it is the
 * deployment's failure (proxy_error, naming the word), never passed on as a plain stop.
 */
export function finishOf(provider: string, reason: unknown, known: Record<string, NeutralFinish>): NeutralFinish {
  if (reason === undefined || reason === null) return "stop";
  if (typeof reason === "string" && Object.hasOwn(known, reason)) return known[reason]!;
  throw new ApiError("proxy_error", `the fallback deployment's answer ended with ${provider} finish reason ${JSON.stringify(reason)}, which cannot be said as a completed answer`);
}

/** A tool call id for a style whose answers may carry none (generate-content). */
export const newCallId = () => `call_${crypto.randomUUID().replace(/-/g, "").slice(0, 24)}`;

/** The tool calls of a conversation by id (tool results name their call only by id in most styles). */
export function callsById(messages: NeutralMessage[]): Map<string, NeutralToolCall> {
  const calls = new Map<string, NeutralToolCall>();
  for (const m of messages) if (m.role === "assistant") for (const c of m.toolCalls ?? []) calls.set(c.id, c);
  return calls;
}

/** A tool declared as every style writes it: its name, its description if any, its JSON Schema under the style's `schemaKey`. */
export const toolDeclaration = (t: NeutralTool, schemaKey: "parameters" | "input_schema" | "parametersJsonSchema") => ({
  name: t.name,
  ...(t.description !== undefined ? { description: t.description } : {}),
  [schemaKey]: t.parameters,
});

/**
 * The function-tool shape chat-completions and Cohere v2 share: tools
 * `{type: "function", function: {name, description?, parameters}}`, calls
 * `{id, type: "function", function: {name, arguments}}`, image parts `{type: "image_url", image_url: {url}}`.
 */
export const functionTool = (t: NeutralTool) => ({ type: "function", function: toolDeclaration(t, "parameters") });
export const functionCall = (c: NeutralToolCall) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } });

export function toolOfFunction(t: any): NeutralTool | undefined {
  if (!only(t, ["type", "function"]) || t.type !== "function" || !only(t.function, ["name", "description", "parameters", "strict"]) || t.function.strict === true) return undefined;
  return neutralTool(t.function.name, t.function.description, t.function.parameters);
}

/** An answer's calls as the provider gave them (an answer is not refused; argsObject checks where it matters). */
export const answeredCalls = (calls: any[] | undefined): NeutralToolCall[] => (calls ?? []).map((c) => ({ id: c.id, name: c.function?.name, arguments: c.function?.arguments ?? "{}" }));

export function callOfFunction(c: any): NeutralToolCall | undefined {
  if (!only(c, ["id", "type", "function"]) || (c.type ?? "function") !== "function" || !only(c.function, ["name", "arguments"])) return undefined;
  return neutralCall(c.id, c.function.name, c.function.arguments);
}

/** An `image_url` part (detail unset or "auto": no other style can say another detail). */
function imageOfUrlPart(p: any): NeutralImage | undefined {
  if (p?.type !== "image_url" || !only(p, ["type", "image_url"]) || !only(p.image_url, ["url", "detail"]) || (p.image_url.detail ?? "auto") !== "auto") return undefined;
  return imageOfUrl(p.image_url.url);
}

/** A user content part in the function-tool shape: text or an `image_url`. */
export const functionStylePart = (p: any): NeutralPart | undefined => (p?.type === "text" && typeof p.text === "string" ? { type: "text", text: p.text } : imageOfUrlPart(p));

/** A message in the function-tool shape; `calling` writes the rest of an assistant turn that calls tools. */
export function functionStyleMessage(m: NeutralMessage, calling: (text: string, calls: ReturnType<typeof functionCall>[]) => Record<string, unknown>) {
  switch (m.role) {
    case "user":
      return { role: "user", content: functionStyleContent(m.content) };
    case "assistant":
      return m.toolCalls?.length ? { role: "assistant", ...calling(m.content, m.toolCalls.map(functionCall)) } : { role: "assistant", content: m.content };
    case "tool":
      return { role: "tool", tool_call_id: m.toolCallId, content: m.content };
    default:
      return m;
  }
}

/** A user content in the function-tool shape (a string stays a string). */
const functionStyleContent = (content: string | NeutralPart[]) =>
  typeof content === "string" ? content : content.map((p) => (p.type === "text" ? { type: "text", text: p.text } : { type: "image_url", image_url: { url: urlOfImage(p) } }));
