/**
 * Generate-content style (doc1 §4.4) under /v1beta/ and /v1/, both path forms
 * (`{model}/generateContent` per spec, `{model}:generateContent` as the official SDK calls).
 * Upstream is always called at `/v1beta/models/{model}:{action}` (CONTRACT.md).
 * Streams: with `?alt=sse` (what the SDKs send) SSE chunks `data: {GenerateContentResponse}`;
 * without it, as the REST API does, one JSON array of those objects streamed element by element
 * (`application/json`). Upstream is asked for the same form the client asked for; both forms
 * share cache entries. The stream's end is its EOF. Live streams are re-sent event by event (only
 * complete events); one that fails (cut, truncated, idle past stream_idle_ms) ends with an error
 * chunk in the API's shape — `data: {"error": {code, message, status}}`, or that object as the
 * array's last element — which the SDK throws.
 */
import { t } from "elysia";
import { sseFrame, chunkText, parseJson, type SseEvent } from "../../sse";
import { compile, compact, scopeOf, sha, svcObject, type Assembler, type CacheMeta, type Endpoint, type ProviderWire, type ProxyCall, type StreamFramer, type Turn, type Usage, JsonInteger } from "../types";
import {
  argsObject,
  finishOf,
  newCallId,
  type NeutralFinish,
} from "../neutral";
import { generateInput } from "./neutral";
export { geminiRequest } from "./neutral";

export const geminiWire: ProviderWire = {
  name: "gemini",
  authHeaders: (key) => ({ "x-goog-api-key": key }),
  forwardHeaders: [],
};

const Part = t.Object(
  {
    text: t.Optional(t.String()),
    inlineData: t.Optional(t.Object({ mimeType: t.String({ minLength: 1 }), data: t.String({ pattern: "^[A-Za-z0-9+/=_-]*$" }) }, { additionalProperties: true })),
  },
  { additionalProperties: true },
);
const Content = t.Object(
  { role: t.Optional(t.Union([t.Literal("user"), t.Literal("model")])), parts: t.Array(Part) },
  { additionalProperties: true },
);
const GenerationConfig = t.Object(
  { temperature: t.Optional(t.Number()), topP: t.Optional(t.Number()), maxOutputTokens: t.Optional(JsonInteger({ minimum: 1 })) },
  { additionalProperties: true },
);

export const GenerateContentBody = t.Object(
  { contents: t.Array(Content, { minItems: 1 }), generationConfig: t.Optional(GenerationConfig) },
  { additionalProperties: true },
);
export const CountTokensBody = t.Object({ contents: t.Array(Content) }, { additionalProperties: true });
export const EmbedContentBody = t.Object({ content: Content }, { additionalProperties: true });
export const BatchEmbedBody = t.Object({ requests: t.Array(t.Object({}, { additionalProperties: true }), { minItems: 1 }) }, { additionalProperties: true });

function partsText(parts: any[]): string {
  return (parts ?? [])
    .map((p: any) => {
      if (typeof p.text === "string") return p.text;
      if (p.inlineData) return `[inline:${p.inlineData.mimeType}:${sha(String(p.inlineData.data))}]`;
      if (p.fileData) return `[file:${p.fileData.fileUri}]`;
      if (p.functionCall) return `call ${p.functionCall.name}(${compact(p.functionCall.args ?? {})})`;
      if (p.functionResponse) return `result ${p.functionResponse.name}: ${compact(p.functionResponse.response ?? {})}`;
      return compact(p);
    })
    .join("\n");
}

const upstreamPath = (model: string, action: string) => `/v1beta/models/${encodeURIComponent(model)}:${action}`;

function parseGenerate(body: any, model: string, stream: boolean, sse = true): ProxyCall {
  const turns: Turn[] = body.contents.map((c: any) => ({ role: c.role === "model" ? "assistant" : "user", text: partsText(c.parts) }));
  const scope = scopeOf(body, ["contents"]);
  if (scope.systemInstruction) scope.systemInstruction = partsText((scope.systemInstruction as any).parts ?? []);
  return {
    model,
    stream,
    key: { style: "gemini", model, scope, turns },
    upstream: { method: "POST", path: stream ? upstreamPath(model, "streamGenerateContent") + (sse ? "?alt=sse" : "") : upstreamPath(model, "generateContent"), body },
    meta: {},
  };
}

function textOf(body: any): string {
  return (body?.candidates?.[0]?.content?.parts ?? []).filter((p: any) => typeof p.text === "string").map((p: any) => p.text).join("");
}

/**
 * Output is the answer's tokens and the thinking models' thoughts (`thoughtsTokenCount`, counted
 * apart from `candidatesTokenCount`: the total is their sum with the prompt's), as the other
 * styles count reasoning tokens in their output.
 */
function usageOf(body: any): Usage {
  const u = body?.usageMetadata;
  return { inputTokens: u?.promptTokenCount ?? 0, outputTokens: (u?.candidatesTokenCount ?? 0) + (u?.thoughtsTokenCount ?? 0) };
}

const FINISH_REASON: Record<NeutralFinish, string> = { stop: "STOP", tool_calls: "STOP", length: "MAX_TOKENS", content_filter: "SAFETY" };
/**
 * finishReason in neutral terms (STOP with functionCall parts is a tool call). CONTINUATION stopped
 * at a per-request token limit. The others (MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL,
 * TOO_MANY_TOOL_CALLS, LANGUAGE, OTHER, FINISH_REASON_UNSPECIFIED, NO_IMAGE, IMAGE_OTHER) end a
 * generation that failed: no other style has a word for them.
 */
const FINISH_OF: Record<string, NeutralFinish> = {
  STOP: "stop",
  MAX_TOKENS: "length",
  CONTINUATION: "length",
  ...Object.fromEntries(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"].map((r) => [r, "content_filter" as const])),
};
/** promptFeedback.blockReason: the content filters blocked the prompt (OTHER and an unspecified reason say nothing of why) */
const BLOCKED: Record<string, NeutralFinish> = Object.fromEntries(["SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "IMAGE_SAFETY", "MODEL_ARMOR", "JAILBREAK"].map((r) => [r, "content_filter" as const]));

/** Request fields the neutral form carries. */
class GenerateAssembler implements Assembler {
  private candidates = new Map<number, any>();
  private last: any;
  private failed = false;

  push(ev: SseEvent) {
    const d = parseJson(ev.data);
    if (d === undefined) {
      this.failed = true;
      return;
    }
    if (d.error) {
      this.failed = true;
      return;
    }
    this.last = d;
    for (const c of d.candidates ?? []) {
      const i = c.index ?? 0;
      let acc = this.candidates.get(i);
      if (!acc) {
        acc = { content: { role: "model", parts: [] as any[] }, index: i };
        this.candidates.set(i, acc);
      }
      for (const p of c.content?.parts ?? []) {
        const prev = acc.content.parts[acc.content.parts.length - 1];
        if (typeof p.text === "string" && prev && typeof prev.text === "string" && Object.keys(p).length === 1 && Object.keys(prev).length === 1) prev.text += p.text;
        else acc.content.parts.push({ ...p });
      }
      for (const [k, v] of Object.entries(c)) if (k !== "content" && k !== "index") acc[k] = v;
    }
  }

  result() {
    if (this.failed || !this.last || this.candidates.size === 0) return undefined;
    const candidates = [...this.candidates.values()].sort((a, b) => a.index - b.index);
    if (candidates.some((c) => !c.finishReason)) return undefined;
    const { candidates: _c, ...rest } = this.last;
    return { candidates, ...rest };
  }
}

/** A cached body as the stream's chunk objects (text split into pieces; usage and svc on the last). */
function replayChunks(body: any, meta: CacheMeta): any[] {
  const frames: any[] = [];
  const { candidates = [], usageMetadata, svc: _svc, ...rest } = body;
  candidates.forEach((c: any, ci: number) => {
    const pieces: any[] = [];
    for (const p of c.content?.parts ?? []) {
      if (typeof p.text === "string" && Object.keys(p).length === 1) for (const s of chunkText(p.text)) pieces.push({ text: s });
      else pieces.push(p);
    }
    if (pieces.length === 0) pieces.push({ text: "" });
    const lastCandidate = ci === candidates.length - 1;
    pieces.forEach((p, i) => {
      const final = i === pieces.length - 1;
      const { content: _content, ...cand } = c;
      const chunk: any = {
        candidates: [final ? { ...cand, content: { role: "model", parts: [p] }, index: c.index ?? ci } : { content: { role: "model", parts: [p] }, index: c.index ?? ci }],
        ...rest,
      };
      if (final && lastCandidate) {
        if (usageMetadata) chunk.usageMetadata = usageMetadata;
        chunk.svc = svcObject(meta);
      }
      frames.push(chunk);
    });
  });
  return frames;
}

const replaySse = (body: any, _call: ProxyCall, meta: CacheMeta): string[] => replayChunks(body, meta).map((c) => sseFrame(c));

/** The REST form: `[` + elements separated by `,\r\n` + `]`, as the API sends it. */
const replayJsonArray = (body: any, _call: ProxyCall, meta: CacheMeta): string[] => {
  const chunks = replayChunks(body, meta);
  const frames = chunks.map((c, i) => (i === 0 ? "[" : "\n,\r\n") + JSON.stringify(c, null, 2));
  frames.push(chunks.length ? "\n]" : "[]");
  return frames;
};

const generateContent: Endpoint = compile({
  id: "gemini.generate_content",
  provider: "gemini",
  method: "POST",
  schema: GenerateContentBody,
  parse: ({ body, params }) => parseGenerate(body, params.model!, false),
  usageOf,
  textOf,
  decorate: (body, _call, meta) => ({ ...body, svc: svcObject(meta) }),
  neutral: {
    input: generateInput,
    answer: (body) => {
      const candidate = body?.candidates?.[0];
      // no candidate: the prompt was blocked (promptFeedback.blockReason)
      if (!candidate) return { text: "", toolCalls: [], finish: finishOf("gemini", body?.promptFeedback?.blockReason ?? "(no candidate)", BLOCKED), usage: usageOf(body) };
      // a call without an id gets one: the client pairs its result with the call by it
      const toolCalls = (candidate.content?.parts ?? [])
        .filter((p: any) => p?.functionCall)
        .map((p: any) => ({ id: p.functionCall.id ?? newCallId(), name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) }));
      const finish = finishOf("gemini", candidate.finishReason, FINISH_OF);
      return { text: textOf(body), toolCalls, finish: finish === "stop" && toolCalls.length ? "tool_calls" : finish, usage: usageOf(body) };
    },
    output: (a, call) => ({
      candidates: [{ content: { role: "model", parts: [...(a.text || !a.toolCalls.length ? [{ text: a.text }] : []), ...a.toolCalls.map((c) => ({ functionCall: { id: c.id, name: c.name, args: argsObject(c) } }))] }, finishReason: FINISH_REASON[a.finish], index: 0 }],
      usageMetadata: { promptTokenCount: a.usage.inputTokens, candidatesTokenCount: a.usage.outputTokens, totalTokenCount: a.usage.inputTokens + a.usage.outputTokens },
      modelVersion: call.model,
    }),
  },
});

/**
 * The error a failed stream ends with, in the API's own error shape (what the SDK reads from a
 * stream chunk and throws as ApiError): svc's status for its type (504 timeout_error, else 502
 * proxy_error) with the nearest google.rpc status name.
 */
function streamError(message: string, type?: string) {
  const timeout = type === "timeout_error";
  return { error: { code: timeout ? 504 : 502, message, status: timeout ? "DEADLINE_EXCEEDED" : "UNAVAILABLE" } };
}

/** SSE chunks re-sent as complete events (a partial one never reaches the client), then the error chunk when the stream fails. */
const sseFramer = (): StreamFramer => ({
  event: (ev) => ev.data.split("\n").map((line) => `data: ${line}`).join("\n") + "\n\n",
  end: () => "",
  error: (message, type) => sseFrame(streamError(message, type)),
});

/** The JSON array re-sent element by element; a failed stream's array ends with the error object, so it stays valid JSON. */
const jsonArrayFramer = (): StreamFramer => {
  let sent = 0;
  return {
    event: (ev) => (sent++ === 0 ? "[" : "\n,\r\n") + ev.data,
    end: () => (sent ? "\n]" : "[]"),
    error: (message, type) => (sent ? "\n,\r\n" : "[") + JSON.stringify(streamError(message, type)) + "\n]",
  };
};

const streamGenerateContent: Endpoint = compile({
  ...generateContent,
  check: undefined,
  id: "gemini.stream_generate_content",
  parse: ({ body, params }) => parseGenerate(body, params.model!, true),
  stream: { format: "sse", contentType: "text/event-stream", assembler: () => new GenerateAssembler(), replay: replaySse, framer: sseFramer },
});

/** streamGenerateContent without `?alt=sse`: the JSON array form. */
const streamGenerateContentJson: Endpoint = compile({
  ...streamGenerateContent,
  check: undefined,
  id: "gemini.stream_generate_content",
  parse: ({ body, params }) => parseGenerate(body, params.model!, true, false),
  stream: { format: "json-array", contentType: "application/json; charset=UTF-8", assembler: () => new GenerateAssembler(), replay: replayJsonArray, framer: jsonArrayFramer },
});

const forward = (id: string, action: string, schema: any): Endpoint =>
  compile({
    id,
    provider: "gemini",
    method: "POST",
    schema,
    parse: ({ body, params }) => ({ model: params.model!, stream: false, key: null, upstream: { method: "POST", path: upstreamPath(params.model!, action), body }, meta: {} }),
  });

/**
 * The spec's model object (doc1 §4.4): name `models/<id>`, displayName, description,
 * inputTokenLimit, outputTokenLimit. Provider fields beyond these are kept; missing ones are
 * filled (displayName = the id, description "", unknown token limits null) so SDKs and raw
 * clients always find every field, whatever compatible server stands upstream.
 */
export function geminiModelObject(m: any, fallbackId = ""): Record<string, unknown> {
  const o = m && typeof m === "object" && !Array.isArray(m) ? m : {};
  const raw = typeof o.name === "string" && o.name ? o.name : typeof o.id === "string" && o.id ? o.id : fallbackId;
  const id = raw.replace(/^models\//, "");
  const limit = (v: unknown) => (Number.isInteger(v) ? v : typeof v === "string" && /^\d+$/.test(v) ? Number(v) : null);
  return {
    ...o,
    name: `models/${id}`,
    displayName: typeof o.displayName === "string" && o.displayName ? o.displayName : id,
    description: typeof o.description === "string" ? o.description : "",
    inputTokenLimit: limit(o.inputTokenLimit),
    outputTokenLimit: limit(o.outputTokenLimit),
  };
}

const models: Endpoint = compile({
  id: "gemini.models",
  provider: "gemini",
  method: "GET",
  parse: ({ url }) => {
    const q = new URLSearchParams(url.search);
    q.delete("key");
    const qs = q.toString();
    return { model: "", stream: false, key: null, upstream: { method: "GET", path: "/v1beta/models" + (qs ? `?${qs}` : "") }, meta: {} };
  },
  reshape: (body) => {
    const list = Array.isArray(body?.models) ? body.models : [];
    return { ...(body && typeof body === "object" && !Array.isArray(body) ? body : {}), models: list.map((m: unknown) => geminiModelObject(m)) };
  },
});

const model: Endpoint = compile({
  id: "gemini.model",
  provider: "gemini",
  method: "GET",
  parse: ({ params }) => ({ model: params.model!, stream: false, key: null, upstream: { method: "GET", path: `/v1beta/models/${encodeURIComponent(params.model!)}` }, meta: {} }),
  reshape: (body, call) => geminiModelObject(body, call.model),
});

export const gemini = {
  wire: geminiWire,
  generateContent,
  streamGenerateContent,
  streamGenerateContentJson,
  countTokens: forward("gemini.count_tokens", "countTokens", CountTokensBody),
  embedContent: forward("gemini.embed_content", "embedContent", EmbedContentBody),
  batchEmbedContents: forward("gemini.batch_embed_contents", "batchEmbedContents", BatchEmbedBody),
  models,
  model,
};

/** POST actions under models/{model}, by name. */
export const GEMINI_ACTIONS: Record<string, Endpoint> = {
  generateContent,
  streamGenerateContent,
  countTokens: gemini.countTokens,
  embedContent: gemini.embedContent,
  batchEmbedContents: gemini.batchEmbedContents,
};
