/**
 * The generate-content wire (doc1 §4.4) in the neutral request shape and back: a client's
 * generateContent body as a NeutralRequest (what the cache keys and other providers' fallbacks
 * read), and a NeutralRequest as a generateContent body for this upstream. undefined when a body
 * says something the other side cannot.
 */
import {
  argsObject,
  base64Image,
  callsById,
  each,
  neutralCall,
  neutralRequest,
  neutralTool,
  only,
  partsOf,
  resultsThenUser,
  sampling,
  samplingWithin,
  stopOf,
  toolDeclaration,
  type CompletionInput,
  type NeutralMessage,
  type NeutralPart,
  type NeutralRequest,
  type NeutralTool,
  type NeutralToolCall,
  type NeutralToolChoice,
} from "../neutral";

const GENERATE_KEYS = ["contents", "systemInstruction", "generationConfig", "tools", "toolConfig"];
const CONFIG_KEYS = ["temperature", "topP", "maxOutputTokens", "stopSequences", "candidateCount"];

/** A generate-content request in neutral terms, or undefined when anything in it would be lost (files, safety settings, search, ...). */
export function generateInput(body: any): NeutralRequest | undefined {
  const g = body.generationConfig ?? {};
  if (!only(body, GENERATE_KEYS) || !only(g, CONFIG_KEYS) || (g.candidateCount ?? 1) !== 1) return undefined;
  const system = body.systemInstruction === undefined ? [] : systemOf(body.systemInstruction);
  const turns = contentsOf(body.contents);
  return neutralRequest(
    {
      messages: system && turns && [...system, ...turns],
      tools: each(body.tools ?? [], (t: any) => (only(t, ["functionDeclarations"]) ? each(t.functionDeclarations ?? [], declarationOf) : undefined))?.flat(),
      toolChoice: body.toolConfig === undefined ? undefined : choiceOfConfig(body.toolConfig),
      stop: stopOf(g.stopSequences),
    },
    sampling(g.temperature, g.topP, g.maxOutputTokens),
  );
}

function systemOf(si: any): NeutralMessage[] | undefined {
  const texts = only(si, ["role", "parts"]) && Array.isArray(si.parts) ? each(si.parts, (p: any) => (only(p, ["text"]) && typeof p.text === "string" ? (p.text as string) : undefined)) : undefined;
  return texts && [{ role: "system", content: texts.join("") }];
}

/**
 * The contents as neutral turns. A function call without an id gets one from its position; a
 * response without an id answers the earliest unanswered call of its name.
 */
function contentsOf(contents: any[]): NeutralMessage[] | undefined {
  const open: NeutralToolCall[] = [];
  const turns = each(contents, (c: any, i: number) => {
    if (!only(c, ["role", "parts"]) || !Array.isArray(c.parts)) return undefined;
    if (c.role === "model") return modelTurn(c.parts, i, open);
    return (c.role ?? "user") === "user" ? resultsThenUser(c.parts, (p) => !!p?.functionResponse, (p) => responseOf(p, open), partOf) : undefined;
  });
  return turns?.flat();
}

/** A model turn: text, then function calls (a thought signature means nothing to another provider; thoughts themselves are not translated). */
function modelTurn(parts: any[], turn: number, open: NeutralToolCall[]): NeutralMessage[] | undefined {
  let text = "";
  const toolCalls: NeutralToolCall[] = [];
  for (const [j, p] of parts.entries()) {
    const f = p?.functionCall;
    if (typeof p?.text === "string" && only(p, ["text", "thoughtSignature"]) && !toolCalls.length) text += p.text;
    else if (only(p, ["functionCall", "thoughtSignature"]) && only(f, ["id", "name", "args"])) {
      const call = neutralCall(f.id ?? `call_${turn}_${j}`, f.name, f.args ?? {});
      if (!call) return undefined;
      toolCalls.push(call);
      open.push(call);
    } else return undefined;
  }
  return [{ role: "assistant", content: text, ...(toolCalls.length ? { toolCalls } : {}) }];
}

function responseOf(p: any, open: NeutralToolCall[]): NeutralMessage | undefined {
  const r = p.functionResponse;
  if (!only(p, ["functionResponse"]) || !only(r, ["id", "name", "response"]) || !r.response || typeof r.response !== "object") return undefined;
  const i = open.findIndex((c) => (r.id !== undefined ? c.id === r.id : c.name === r.name));
  if (i < 0 || open[i]!.name !== r.name) return undefined;
  const [call] = open.splice(i, 1);
  const out = r.response;
  // {output: "..."} is the documented shape of a plain result; anything else is the result as JSON
  return { role: "tool", toolCallId: call!.id, content: only(out, ["output"]) && typeof out.output === "string" ? out.output : JSON.stringify(out) };
}

/** Text, or inline base64 image data (fileData URIs exist only here). */
function partOf(p: any): NeutralPart | undefined {
  if (only(p, ["text"]) && typeof p.text === "string") return { type: "text", text: p.text };
  return only(p, ["inlineData"]) && only(p.inlineData, ["mimeType", "data"]) ? base64Image(p.inlineData.mimeType, p.inlineData.data) : undefined;
}

function declarationOf(d: any): NeutralTool | undefined {
  if (!only(d, ["name", "description", "parameters", "parametersJsonSchema"]) || (d.parameters && d.parametersJsonSchema)) return undefined;
  return neutralTool(d.name, d.description, d.parametersJsonSchema ?? (d.parameters && jsonSchemaOf(d.parameters)));
}

/** The API's OpenAPI-style Schema as JSON Schema: type names in lower case, `nullable` as "or null". */
function jsonSchemaOf(s: any): any {
  if (Array.isArray(s)) return s.map(jsonSchemaOf);
  if (!s || typeof s !== "object") return s;
  const { nullable, type, properties, items, anyOf, ...rest } = s;
  const out = {
    ...rest,
    ...(type !== undefined ? { type: typeof type === "string" ? type.toLowerCase() : type } : {}),
    ...(properties ? { properties: Object.fromEntries(Object.entries(properties).map(([name, p]) => [name, jsonSchemaOf(p)])) } : {}),
    ...(items !== undefined ? { items: jsonSchemaOf(items) } : {}),
    ...(anyOf !== undefined ? { anyOf: jsonSchemaOf(anyOf) } : {}),
  };
  return nullable === true ? { anyOf: [out, { type: "null" }] } : out;
}

/** functionCallingConfig: AUTO, NONE, ANY (required), ANY of one name (that function); null = not translatable. */
function choiceOfConfig(tc: any): NeutralToolChoice | undefined | null {
  const f = tc?.functionCallingConfig;
  if (!only(tc, ["functionCallingConfig"]) || !only(f ?? {}, ["mode", "allowedFunctionNames"])) return null;
  const names: unknown[] = f?.allowedFunctionNames ?? [];
  const mode = f?.mode ?? "AUTO";
  if (mode === "ANY" && names.length === 1 && typeof names[0] === "string") return { name: names[0] };
  if (names.length) return null;
  return mode === "AUTO" || mode === "MODE_UNSPECIFIED" ? "auto" : mode === "NONE" ? "none" : mode === "ANY" ? "required" : null;
}

/**
 * Request body for GatewayService.complete and fallbacks from other styles; undefined when it
 * cannot be said here: an image by URL or a GIF (the API takes PNG, JPEG, WEBP, HEIC and HEIF),
 * no parallel tool calls, a result for a call not in the conversation.
 */
export function geminiRequest(req: CompletionInput) {
  // temperature up to 2.0; up to 5 stop sequences
  const contents = req.parallelToolCalls === false || !samplingWithin(req, [0, 2]) || (req.stop?.length ?? 0) > 5 ? undefined : contentsFor(req.messages);
  if (!contents) return undefined;
  const system = req.messages.filter((m) => m.role === "system").map((m) => m.content).join("\n");
  const generationConfig: Record<string, unknown> = {};
  if (req.temperature !== undefined) generationConfig.temperature = req.temperature;
  if (req.topP !== undefined) generationConfig.topP = req.topP;
  if (req.maxTokens !== undefined) generationConfig.maxOutputTokens = req.maxTokens;
  if (req.stop?.length) generationConfig.stopSequences = req.stop;
  const tools = req.tools?.length ? req.tools : undefined;
  const c = req.toolChoice;
  const mode = c === undefined ? undefined : typeof c === "object" ? "ANY" : ({ auto: "AUTO", none: "NONE", required: "ANY" } as const)[c];
  return {
    contents,
    ...(system ? { systemInstruction: { parts: [{ text: system }] } } : {}),
    ...(Object.keys(generationConfig).length ? { generationConfig } : {}),
    ...(tools ? { tools: [{ functionDeclarations: tools.map((t) => toolDeclaration(t, "parametersJsonSchema")) }] } : {}),
    ...(tools && mode ? { toolConfig: { functionCallingConfig: { mode, ...(typeof c === "object" ? { allowedFunctionNames: [c.name] } : {}) } } } : {}),
  };
}

/**
 * The documented thought signature for function calls another model made (Gemini 3 refuses a
 * call in the history without a signature; the first call of each model turn carries one).
 */
const FOREIGN_CALL_SIGNATURE = "skip_thought_signature_validator";

function contentsFor(messages: NeutralMessage[]): Array<{ role: string; parts: any[] }> | undefined {
  const calls = callsById(messages);
  const out: Array<{ role: string; parts: any[] }> = [];
  for (const m of messages) {
    if (m.role === "tool") {
      const call = calls.get(m.toolCallId);
      if (!call) return undefined;
      const part = { functionResponse: { id: m.toolCallId, name: call.name, response: { output: m.content } } };
      const last = out.at(-1);
      // the responses to one turn's calls go back in one turn
      if (last?.role === "user" && last.parts.every((p) => p.functionResponse)) last.parts.push(part);
      else out.push({ role: "user", parts: [part] });
    } else if (m.role === "assistant") {
      const fc = (m.toolCalls ?? []).map((c, i) => ({ functionCall: { id: c.id, name: c.name, args: argsObject(c) }, ...(i === 0 ? { thoughtSignature: FOREIGN_CALL_SIGNATURE } : {}) }));
      out.push({ role: "model", parts: [...(m.content || !fc.length ? [{ text: m.content }] : []), ...fc] });
    } else if (m.role === "user") {
      const parts = each(partsOf(m.content), (p) => (p.type === "text" ? { text: p.text } : p.type === "image" && p.mediaType !== "image/gif" ? { inlineData: { mimeType: p.mediaType, data: p.data } } : undefined));
      if (!parts) return undefined;
      out.push({ role: "user", parts });
    }
  }
  return out;
}
