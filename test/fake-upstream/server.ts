/**
 * A fake upstream that speaks the four providers' real wire formats (JSON and streaming),
 * records every request it receives (method, path + query, headers, body), and fails on demand:
 *   fake.failNext({ kind: "status", status: 500 })      5xx
 *   fake.failNext({ kind: "status", status: 429, retryAfter: "1" })   with a Retry-After header
 *   fake.failNext({ kind: "status", status: 400 })      4xx with the provider's own error body
 *   fake.failNext({ kind: "hang" })                     never answers (timeouts)
 *   fake.failNext({ kind: "hold", until })             answers normally once the promise `until` resolves
 *   fake.failNext({ kind: "cut" })                      stream cut mid-way (or a truncated JSON body)
 *   fake.failNext({ kind: "stall" })                    stream sends half its frames, then nothing (idle timeouts)
 *   fake.failNext({ kind: "drip", everyMs, by })        stream sends its first frame, then the rest one byte (by: "byte")
 *                                                       or one whole frame (by: "frame") every `everyMs`
 *   fake.failNext({ kind: "truncated" })                200 with a JSON body cut mid-way (not SSE, whatever was asked)
 *   fake.failNext({ kind: "finish", reason })           a JSON answer that ends with this finish reason (the provider's
 *                                                       own word: MALFORMED_FUNCTION_CALL, ERROR, pause_turn, ...)
 *   fake.reportUsage(n)                                 the next chat-completions answers report n prompt tokens
 *   fake.sparseModels(true)                             model list/get answers carry only an id/name (a minimal compatible server)
 * Also the newer surfaces in their real shapes: POST /v1/responses (the Responses API, JSON and its
 * named SSE events) and the chat style's v2 API, POST /v2/chat (JSON and SSE) and /v2/embed.
 * Model lookups know gpt-4o-mini, gpt-4o, gemini-2.0-flash, gemini-1.5-pro, text-embedding-004 and
 * answer anything else with the provider's own 404.
 * Each recorded request carries the client's source port (`remotePort`): one port for several
 * requests = the connection was reused (keep-alive).
 * Connection refused: point a provider at `closedPort()`.
 * A request the real API would refuse (rules.ts: each rule from the provider's API reference) gets
 * the provider's own 400 instead of an answer.
 * Answers are deterministic per request number: "answer #<n>: <last user text>", so a test can
 * tell a cached answer (same n) from a fresh one. A request with tools whose last user text
 * mentions "weather" gets a tool call instead of text; one that ends with a tool's result has no
 * user text after it ("answer #<n>: ").
 */
import type { Server } from "bun";
import { refusal } from "./rules";

export interface Recorded {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: any;
  /** source port of the connection the request came on */
  remotePort?: number;
}

export type Failure =
  | { kind: "status"; status: number; retryAfter?: string }
  | { kind: "hang" }
  | { kind: "hold"; until: Promise<unknown> }
  | { kind: "cut" }
  | { kind: "stall" }
  | { kind: "drip"; everyMs: number; by: "byte" | "frame" }
  | { kind: "truncated" }
  | { kind: "finish"; reason: string };

export interface FakeUpstream {
  url: string;
  requests: Recorded[];
  /** requests whose path starts with prefix */
  received(prefix: string): Recorded[];
  failNext(f: Failure): void;
  /** chat-completions answers (JSON and streamed usage) report this many prompt tokens until reset() */
  reportUsage(promptTokens: number | undefined): void;
  /** model list/get answers with only an id (openai) / a bare name (gemini) until reset() */
  sparseModels(on: boolean): void;
  reset(): void;
  stop(): Promise<void>;
  /** resolves once `n` stream cancellations (client went away) were seen */
  cancelled: number;
}

const enc = new TextEncoder();

/** How a streamed answer goes: whole (false), cut mid-way (true), stalled, or dripped. */
type Mode = boolean | "stall" | { everyMs: number; by: "byte" | "frame" };

function words(text: string): string[] {
  const out = text.match(/\S+\s*/g) ?? [text];
  return out;
}

function lastUserText(kind: string, body: any): string {
  const textOf = (c: any): string =>
    typeof c === "string" ? c : Array.isArray(c) ? c.map((p: any) => p.text ?? (p.inlineData ? `[${p.inlineData.mimeType}]` : "")).join(" ") : "";
  switch (kind) {
    case "openai":
    case "anthropic":
    case "cohere-v2": {
      if (typeof body.input === "string") return body.input;
      // a conversation that ends with a tool's result is answered about that result (no user text)
      if (body.messages?.at(-1)?.role === "tool" || body.input?.at?.(-1)?.type === "function_call_output") return "";
      if (Array.isArray(body.input)) {
        const users = body.input.filter((m: any) => m.role === "user");
        return textOf(users[users.length - 1]?.content);
      }
      const users = (body.messages ?? []).filter((m: any) => m.role === "user");
      return textOf(users[users.length - 1]?.content);
    }
    case "gemini": {
      const users = (body.contents ?? []).filter((c: any) => (c.role ?? "user") === "user");
      return textOf(users[users.length - 1]?.parts);
    }
    default:
      return body.message ?? body.prompt ?? "";
  }
}

const OPENAI_MODELS = ["gpt-4o-mini", "gpt-4o"];
const GEMINI_MODELS = ["gemini-2.0-flash", "gemini-1.5-pro", "text-embedding-004"];

/** the error types the real APIs give a status: OpenAI's 429 is `requests`, Anthropic's 404 `not_found_error` */
const OPENAI_TYPES: Record<number, string> = { 429: "requests" };
const ANTHROPIC_TYPES: Record<number, string> = { 401: "authentication_error", 403: "permission_error", 404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error" };
const ERROR_BODIES: Record<string, (status: number, message?: string) => unknown> = {
  openai: (s, m = `fake openai error ${s}`) => ({ error: { message: m, type: OPENAI_TYPES[s] ?? "invalid_request_error", param: null, code: "fake_error" } }),
  anthropic: (s, m = `fake anthropic error ${s}`) => ({ type: "error", error: { type: ANTHROPIC_TYPES[s] ?? "invalid_request_error", message: m } }),
  gemini: (s, m = `fake gemini error ${s}`) => ({ error: { code: s, message: m, status: "INVALID_ARGUMENT" } }),
  cohere: (s, m = `fake cohere error ${s}`) => ({ message: m }),
};

export async function startFakeUpstream(opts: { record?: boolean; port?: number } = {}): Promise<FakeUpstream> {
  const record = opts.record !== false;
  const requests: Recorded[] = [];
  const failures: Failure[] = [];
  let n = 0;
  const state = { cancelled: 0, promptTokens: undefined as number | undefined, sparse: false };

  const json = (v: unknown, status = 200) => new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json" } });

  /**
   * A stream of frames; "cut" errors it after the first half, "stall" stops sending (never closes),
   * a drip sends the first frame and then the rest slowly, byte by byte or frame by frame.
   */
  const streamOf = (frames: string[], contentType: string, cut: Mode) => {
    if (typeof cut === "object") {
      const drip = cut;
      const rest = drip.by === "byte" ? [...enc.encode(frames.slice(1).join(""))].map((b) => new Uint8Array([b])) : frames.slice(1).map((f) => enc.encode(f));
      let j = 0;
      let first = true;
      return new Response(
        new ReadableStream({
          async pull(c) {
            if (first) {
              first = false;
              c.enqueue(enc.encode(frames[0] ?? ""));
              return;
            }
            if (j >= rest.length) return c.close();
            await Bun.sleep(drip.everyMs);
            c.enqueue(rest[j++]!);
          },
          cancel() {
            state.cancelled++;
          },
        }),
        { headers: { "content-type": contentType } },
      );
    }
    let i = 0;
    const limit = cut ? Math.max(1, Math.floor(frames.length / 2)) : frames.length;
    return new Response(
      new ReadableStream({
        async pull(c) {
          if (i >= limit && cut === "stall") return new Promise<void>(() => {});
          if (i >= limit) {
            if (!cut) return c.close();
            // a connection reset drops what the peer has not read yet: give the frames sent a moment to arrive
            await Bun.sleep(50);
            c.error(new Error("cut"));
            return;
          }
          c.enqueue(enc.encode(frames[i++]!));
          await Bun.sleep(1);
        },
        cancel() {
          state.cancelled++;
        },
      }),
      { headers: { "content-type": contentType } },
    );
  };

  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: opts.port ?? 0,
    idleTimeout: 0,
    async fetch(req, srv) {
      const url = new URL(req.url);
      const remotePort = srv.requestIP(req)?.port;
      const text = req.method === "POST" ? await req.text() : "";
      let body: any = undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k] = v));
      const path = url.pathname + url.search;
      if (record) requests.push({ method: req.method, path, headers, body, remotePort });
      const kind = url.pathname.startsWith("/v2/")
        ? "cohere-v2"
        : url.pathname.startsWith("/v1beta/")
        ? "gemini"
        : url.pathname.startsWith("/v1/messages")
          ? "anthropic"
          : ["/v1/chat", "/v1/generate", "/v1/embed"].includes(url.pathname)
            ? "cohere"
            : "openai";
      const failure = failures.shift();
      if (failure?.kind === "hang") return new Promise<Response>(() => {});
      if (failure?.kind === "hold") {
        const held = ++n;
        return failure.until.then(() => route(kind, url, req.method, body, held, false));
      }
      if (failure?.kind === "status") {
        const extra: Record<string, string> = failure.retryAfter !== undefined ? { "retry-after": failure.retryAfter } : {};
        if (failure.status >= 500) return new Response("upstream exploded", { status: failure.status, headers: extra });
        return new Response(JSON.stringify(ERROR_BODIES[kind === "cohere-v2" ? "cohere" : kind]!(failure.status)), { status: failure.status, headers: { "content-type": "application/json", ...extra } });
      }
      if (failure?.kind === "truncated") return new Response('{"candidates": [{"content": {"role": "model", "parts": [{"text": "answer #', { headers: { "content-type": "application/json" } });
      const cut: Mode = failure?.kind === "stall" ? "stall" : failure?.kind === "drip" ? failure : failure?.kind === "cut";
      const num = ++n;
      return route(kind, url, req.method, body, num, cut, failure?.kind === "finish" ? failure.reason : undefined);
    },
  });

  function route(kind: string, url: URL, method: string, body: any, num: number, cut: Mode, finish?: string): Response {
    const p = url.pathname;
    // what the real API refuses (rules.ts), refused here with its own 400
    const refused = refusal(kind, p, body);
    if (refused !== undefined) return json(ERROR_BODIES[kind === "cohere-v2" ? "cohere" : kind]!(400, refused), 400);
    const answer = `answer #${num}: ${lastUserText(kind, body ?? {})}`;
    const wantsTool = (tools: unknown) => Array.isArray(tools) && tools.length > 0 && /weather/i.test(lastUserText(kind, body ?? {}));
    if (kind === "openai") {
      const openaiModel = (id: string) => (state.sparse ? { id } : { id, object: "model", created: 1700000000, owned_by: "fake" });
      if (p === "/v1/models" && method === "GET") return json(state.sparse ? { data: OPENAI_MODELS.map(openaiModel) } : { object: "list", data: OPENAI_MODELS.map(openaiModel) });
      if (p.startsWith("/v1/models/") && method === "GET") {
        const id = decodeURIComponent(p.slice(11));
        if (!OPENAI_MODELS.includes(id))
          return json({ error: { message: `The model '${id}' does not exist`, type: "invalid_request_error", param: null, code: "model_not_found" } }, 404);
        return json(openaiModel(id));
      }
      if (p === "/v1/embeddings") {
        const inputs = Array.isArray(body.input) ? body.input : [body.input];
        return json({ object: "list", data: inputs.map((_: unknown, i: number) => ({ object: "embedding", index: i, embedding: [0.1 * (i + 1), 0.2, 0.3] })), model: body.model, usage: { prompt_tokens: 3, total_tokens: 3 } });
      }
      if (p === "/v1/chat/completions") {
        const id = `chatcmpl-${num}`;
        const tool = wantsTool(body.tools);
        const toolCalls = tool ? [{ id: `call_${num}`, type: "function", function: { name: body.tools[0].function?.name ?? "get_weather", arguments: JSON.stringify({ city: "Paris" }) } }] : undefined;
        const pt = state.promptTokens ?? 10;
        const usage = { prompt_tokens: pt, completion_tokens: words(answer).length, total_tokens: pt + words(answer).length };
        if (!body.stream)
          return json({
            id,
            object: "chat.completion",
            created: 1700000000 + num,
            model: body.model,
            choices: [{ index: 0, message: { role: "assistant", content: tool ? null : answer, ...(tool ? { tool_calls: toolCalls } : {}), refusal: null }, logprobs: null, finish_reason: finish ?? (tool ? "tool_calls" : "stop") }],
            usage,
          });
        const base = { id, object: "chat.completion.chunk", created: 1700000000 + num, model: body.model, system_fingerprint: null };
        const frames = [`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }] })}\n\n`];
        if (tool) {
          const args = toolCalls![0]!.function.arguments;
          frames.push(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: toolCalls![0]!.id, type: "function", function: { name: toolCalls![0]!.function.name, arguments: "" } }] }, finish_reason: null }] })}\n\n`);
          for (const part of [args.slice(0, 5), args.slice(5)])
            frames.push(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: part } }] }, finish_reason: null }] })}\n\n`);
        } else for (const w of words(answer)) frames.push(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: w }, logprobs: null, finish_reason: null }] })}\n\n`);
        frames.push(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: tool ? "tool_calls" : "stop" }] })}\n\n`);
        if (body.stream_options?.include_usage) frames.push(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
        frames.push("data: [DONE]\n\n");
        return streamOf(frames, "text/event-stream", cut);
      }
    }
    // token counting (docs.anthropic.com/en/api/messages-count-tokens): {input_tokens}, no max_tokens in the body
    if (kind === "anthropic" && p === "/v1/messages/count_tokens") return json({ input_tokens: lastUserText("anthropic", body).split(/\s+/).length });
    if (kind === "anthropic" && p === "/v1/messages") {
      const id = `msg_${num}`;
      const tool = wantsTool(body.tools);
      const content = tool ? [{ type: "tool_use", id: `toolu_${num}`, name: body.tools[0].name, input: { city: "Paris" } }] : [{ type: "text", text: answer }];
      const usage = { input_tokens: 12, output_tokens: words(answer).length };
      const message = { id, type: "message", role: "assistant", model: body.model, content, stop_reason: finish ?? (tool ? "tool_use" : "end_turn"), stop_sequence: null, usage };
      if (!body.stream) return json(message);
      const ev = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
      const frames = [ev("message_start", { type: "message_start", message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } } })];
      frames.push(ev("ping", { type: "ping" }));
      if (tool) {
        frames.push(ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: `toolu_${num}`, name: body.tools[0].name, input: {} } }));
        const js = JSON.stringify({ city: "Paris" });
        for (const part of [js.slice(0, 4), js.slice(4)]) frames.push(ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: part } }));
      } else {
        frames.push(ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }));
        for (const w of words(answer)) frames.push(ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: w } }));
      }
      frames.push(ev("content_block_stop", { type: "content_block_stop", index: 0 }));
      frames.push(ev("message_delta", { type: "message_delta", delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }));
      frames.push(ev("message_stop", { type: "message_stop" }));
      return streamOf(frames, "text/event-stream", cut);
    }
    if (kind === "gemini") {
      const geminiModel = (m: string) => (state.sparse ? { name: m } : { name: `models/${m}`, displayName: m, description: `fake ${m}`, inputTokenLimit: 1048576, outputTokenLimit: 8192 });
      if (p === "/v1beta/models" && method === "GET") return json({ models: ["gemini-2.0-flash", "gemini-1.5-pro"].map(geminiModel) });
      const m = /^\/v1beta\/models\/([^:/]+)(?::(\w+))?$/.exec(decodeURIComponent(p));
      if (m && method === "GET" && !m[2]) {
        if (!GEMINI_MODELS.includes(m[1]!)) return json({ error: { code: 404, message: `models/${m[1]} is not found for API version v1beta`, status: "NOT_FOUND" } }, 404);
        return json(geminiModel(m[1]!));
      }
      if (m && m[2] === "countTokens") return json({ totalTokens: lastUserText("gemini", body).split(/\s+/).length });
      if (m && m[2] === "embedContent") return json({ embedding: { values: [0.1, 0.2, 0.3] } });
      if (m && m[2] === "batchEmbedContents") return json({ embeddings: body.requests.map((_: unknown, i: number) => ({ values: [0.1 * (i + 1), 0.2, 0.3] })) });
      if (m && (m[2] === "generateContent" || m[2] === "streamGenerateContent")) {
        const tool = wantsTool(body.tools);
        const parts = tool ? [{ functionCall: { name: body.tools[0].functionDeclarations?.[0]?.name ?? "get_weather", args: { city: "Paris" } } }] : [{ text: answer }];
        // thinking models (2.5 and later think by default) count their thoughts apart from the answer
        const thoughts = /^gemini-(2\.5|[3-9])/.test(m[1]!) ? 12 : 0;
        const usageMetadata = { promptTokenCount: 8, candidatesTokenCount: words(answer).length, ...(thoughts ? { thoughtsTokenCount: thoughts } : {}), totalTokenCount: 8 + words(answer).length + thoughts };
        // a failed generation (MALFORMED_FUNCTION_CALL, ...) comes with no content
        if (m[2] === "generateContent" && finish)
          return json({ candidates: [{ finishReason: finish, index: 0 }], usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 }, modelVersion: m[1], responseId: `resp-${num}` });
        if (m[2] === "generateContent")
          return json({ candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }], usageMetadata, modelVersion: m[1], responseId: `resp-${num}` });
        const pieces = tool ? [parts[0]] : words(answer).map((w) => ({ text: w }));
        const frames = pieces.map((part, i) => {
          const last = i === pieces.length - 1;
          const chunk: any = { candidates: [{ content: { role: "model", parts: [part] }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }], modelVersion: m[1], responseId: `resp-${num}` };
          if (last) chunk.usageMetadata = usageMetadata;
          return chunk;
        });
        if (url.searchParams.get("alt") === "sse") return streamOf(frames.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`), "text/event-stream", cut);
        // without alt=sse the REST API streams one JSON array, pretty-printed, elements separated by ",\r\n"
        const array = frames.map((c, i) => (i === 0 ? "[" : "\n,\r\n") + JSON.stringify(c, null, 2));
        array.push("\n]");
        return streamOf(array, "application/json; charset=UTF-8", cut);
      }
    }
    if (kind === "openai" && p === "/v1/responses") {
      // the Responses API: a Response object; streamed as named events with sequence numbers
      const id = `resp_${num}`;
      const tool = wantsTool(body.tools);
      const usage = { input_tokens: 11, input_tokens_details: { cached_tokens: 0 }, output_tokens: words(answer).length, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 11 + words(answer).length };
      const item: any = tool
        ? { type: "function_call", id: `fc_${num}`, call_id: `call_${num}`, name: body.tools[0].name ?? "get_weather", arguments: JSON.stringify({ city: "Paris" }), status: "completed" }
        : { type: "message", id: `msg_${num}`, status: "completed", role: "assistant", content: [{ type: "output_text", text: answer, annotations: [] }] };
      const response = {
        id,
        object: "response",
        created_at: 1700000000 + num,
        status: "completed",
        error: null,
        incomplete_details: null,
        instructions: body.instructions ?? null,
        max_output_tokens: body.max_output_tokens ?? null,
        model: body.model,
        output: [item],
        parallel_tool_calls: true,
        previous_response_id: body.previous_response_id ?? null,
        reasoning: { effort: null, summary: null },
        store: true,
        temperature: body.temperature ?? 1,
        text: { format: { type: "text" } },
        tool_choice: "auto",
        tools: body.tools ?? [],
        top_p: 1,
        truncation: "disabled",
        usage,
        user: null,
        metadata: {},
      };
      if (!body.stream) return json(response);
      let seq = 0;
      const ev = (type: string, data: Record<string, unknown>) => `event: ${type}
data: ${JSON.stringify({ type, sequence_number: seq++, ...data })}

`;
      const pending = { ...response, status: "in_progress", output: [], usage: null };
      const frames = [ev("response.created", { response: pending }), ev("response.in_progress", { response: pending })];
      if (tool) {
        frames.push(ev("response.output_item.added", { output_index: 0, item: { ...item, arguments: "", status: "in_progress" } }));
        for (const part of [item.arguments.slice(0, 5), item.arguments.slice(5)]) frames.push(ev("response.function_call_arguments.delta", { item_id: item.id, output_index: 0, delta: part }));
        frames.push(ev("response.function_call_arguments.done", { item_id: item.id, name: item.name, output_index: 0, arguments: item.arguments }));
      } else {
        const where = { item_id: item.id, output_index: 0, content_index: 0 };
        frames.push(ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } }));
        frames.push(ev("response.content_part.added", { ...where, part: { type: "output_text", text: "", annotations: [] } }));
        for (const w of words(answer)) frames.push(ev("response.output_text.delta", { ...where, delta: w, logprobs: [] }));
        frames.push(ev("response.output_text.done", { ...where, text: answer, logprobs: [] }));
        frames.push(ev("response.content_part.done", { ...where, part: item.content[0] }));
      }
      frames.push(ev("response.output_item.done", { output_index: 0, item }));
      frames.push(ev("response.completed", { response }));
      return streamOf(frames, "text/event-stream", cut);
    }
    if (kind === "cohere-v2") {
      if (p === "/v2/embed") {
        const texts: string[] = body.texts ?? [];
        return json({ id: `embed-${num}`, embeddings: { float: texts.map((_, i) => [0.1 * (i + 1), 0.2, 0.3]) }, texts, meta: { api_version: { version: "2" }, billed_units: { input_tokens: texts.length * 2 } }, response_type: "embeddings_by_type" });
      }
      if (p === "/v2/chat") {
        const v2answer = answer;
        const tool = wantsTool(body.tools);
        const usage = { billed_units: { input_tokens: 7, output_tokens: words(v2answer).length }, tokens: { input_tokens: 70, output_tokens: words(v2answer).length } };
        const message: any = tool
          ? { role: "assistant", tool_plan: "I will look up the weather.", tool_calls: [{ id: `call_${num}`, type: "function", function: { name: body.tools[0].function?.name ?? "get_weather", arguments: JSON.stringify({ city: "Paris" }) } }] }
          : { role: "assistant", content: [{ type: "text", text: v2answer }] };
        const response = { id: `v2-${num}`, finish_reason: finish ?? (tool ? "TOOL_CALL" : "COMPLETE"), message, usage };
        if (!body.stream) return json(response);
        const ev = (type: string, data: Record<string, unknown>) => `event: ${type}
data: ${JSON.stringify({ type, ...data })}

`;
        const frames = [ev("message-start", { id: response.id, delta: { message: { role: "assistant", content: [], tool_plan: "", tool_calls: [], citations: [] } } })];
        if (tool) {
          frames.push(ev("tool-plan-delta", { delta: { message: { tool_plan: message.tool_plan } } }));
          const tc = message.tool_calls[0];
          frames.push(ev("tool-call-start", { index: 0, delta: { message: { tool_calls: { id: tc.id, type: "function", function: { name: tc.function.name, arguments: "" } } } } }));
          for (const part of [tc.function.arguments.slice(0, 4), tc.function.arguments.slice(4)]) frames.push(ev("tool-call-delta", { index: 0, delta: { message: { tool_calls: { function: { arguments: part } } } } }));
          frames.push(ev("tool-call-end", { index: 0 }));
        } else {
          frames.push(ev("content-start", { index: 0, delta: { message: { content: { type: "text", text: "" } } } }));
          for (const w of words(v2answer)) frames.push(ev("content-delta", { index: 0, delta: { message: { content: { text: w } } } }));
          frames.push(ev("content-end", { index: 0 }));
        }
        frames.push(ev("message-end", { delta: { finish_reason: response.finish_reason, usage } }));
        return streamOf(frames, "text/event-stream", cut);
      }
    }
    if (kind === "cohere") {
      if (p === "/v1/embed")
        return json({ response_type: "embeddings_floats", id: `embed-${num}`, embeddings: body.texts.map((_: unknown, i: number) => [0.1 * (i + 1), 0.2]), texts: body.texts, meta: { api_version: { version: "1" }, billed_units: { input_tokens: body.texts.length } } });
      if (p === "/v1/generate" && body.stream) {
        // the provider's v1 generate stream: text-generation events, then stream-end with the full response
        const ev = (o: unknown) => JSON.stringify(o) + "\n";
        const frames = words(answer).map((w) => ev({ text: w, is_finished: false, event_type: "text-generation" }));
        frames.push(
          ev({
            is_finished: true,
            event_type: "stream-end",
            finish_reason: "COMPLETE",
            response: { id: `gen-${num}`, generations: [{ id: `g-${num}`, text: answer, finish_reason: "COMPLETE" }], prompt: body.prompt, meta: { api_version: { version: "1" }, billed_units: { input_tokens: 5, output_tokens: words(answer).length } } },
          }),
        );
        return streamOf(frames, "application/stream+json", cut);
      }
      if (p === "/v1/generate")
        return json({ id: `gen-${num}`, generations: [{ id: `g-${num}`, text: answer, finish_reason: "COMPLETE" }], prompt: body.prompt, meta: { api_version: { version: "1" }, billed_units: { input_tokens: 5, output_tokens: words(answer).length } } });
      if (p === "/v1/chat") {
        const tool = wantsTool(body.tools);
        const history = [...(body.chat_history ?? []), { role: "USER", message: body.message }, { role: "CHATBOT", message: tool ? "" : answer }];
        const response: any = {
          response_id: `resp-${num}`,
          text: tool ? "" : answer,
          generation_id: `gen-${num}`,
          chat_history: history,
          finish_reason: "COMPLETE",
          meta: { api_version: { version: "1" }, billed_units: { input_tokens: 9, output_tokens: words(answer).length }, tokens: { input_tokens: 20, output_tokens: words(answer).length } },
        };
        if (tool) response.tool_calls = [{ name: body.tools[0].name, parameters: { city: "Paris" } }];
        if (Array.isArray(body.documents) && body.documents.length) {
          response.citations = [{ start: 0, end: 6, text: "answer", document_ids: [body.documents[0].id ?? "doc_0"] }];
          response.documents = body.documents;
        }
        if (!body.stream) return json(response);
        const ev = (o: unknown) => JSON.stringify(o) + "\n";
        const frames = [ev({ is_finished: false, event_type: "stream-start", generation_id: `gen-${num}` })];
        if (!tool) for (const w of words(answer)) frames.push(ev({ is_finished: false, event_type: "text-generation", text: w }));
        if (response.citations) frames.push(ev({ is_finished: false, event_type: "citation-generation", citations: response.citations }));
        if (tool) frames.push(ev({ is_finished: false, event_type: "tool-calls-generation", text: "", tool_calls: response.tool_calls }));
        frames.push(ev({ is_finished: true, event_type: "stream-end", finish_reason: "COMPLETE", response }));
        return streamOf(frames, "application/stream+json", cut);
      }
    }
    return json({ error: { message: `fake upstream: no route ${method} ${p}` } }, 404);
  }

  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    received: (prefix) => requests.filter((r) => r.path.startsWith(prefix)),
    failNext: (f) => failures.push(f),
    reportUsage: (n) => {
      state.promptTokens = n;
    },
    sparseModels: (on) => {
      state.sparse = on;
    },
    reset() {
      requests.length = 0;
      failures.length = 0;
      state.promptTokens = undefined;
      state.sparse = false;
      n = 0;
    },
    get cancelled() {
      return state.cancelled;
    },
    async stop() {
      await server.stop(true);
    },
  };
}

/** A loopback port with nothing listening (connection refused). */
export async function closedPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const port = s.port!;
  await s.stop(true);
  return port;
}
