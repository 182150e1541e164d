/**
 * The provider-neutral form without HTTP: every style reads the same tool conversation into the
 * same neutral request, every fallback target writes it back in its own wire format, answers
 * (text, tool calls, finish reasons, usage) convert both ways, Gemini's id-less calls pair with
 * their results, images translate only where nothing is lost, and anything else a request says
 * makes it untranslatable (undefined) instead of being dropped.
 */
import { describe, test, expect } from "bun:test";
import { openai, openaiRequest } from "../../src/gateway/providers/openai/adapter";
import { responses } from "../../src/gateway/providers/openai/responses";
import { anthropic, anthropicRequest } from "../../src/gateway/providers/anthropic/adapter";
import { gemini, geminiRequest } from "../../src/gateway/providers/gemini/adapter";
import { cohere, cohereRequest } from "../../src/gateway/providers/cohere/adapter";
import { chatV2, cohereV2Request } from "../../src/gateway/providers/cohere/v2";
import type { Endpoint, ProxyCall } from "../../src/gateway/providers/types";
import type { NeutralAnswer, NeutralRequest } from "../../src/gateway/providers/neutral";

const SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const ARGS = '{"city":"Paris"}';

/** system, user, assistant text + tool call, tool result; one tool, tool_choice auto, an output limit */
const NEUTRAL: NeutralRequest = {
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Weather in Paris?" },
    { role: "assistant", content: "Checking.", toolCalls: [{ id: "call_1", name: "get_weather", arguments: ARGS }] },
    { role: "tool", toolCallId: "call_1", content: '{"temp":21}' },
  ],
  maxTokens: 50,
  tools: [{ name: "get_weather", description: "Weather of a city", parameters: SCHEMA }],
  toolChoice: "auto",
};

/** NEUTRAL in each style's wire format, as its SDK sends it */
const WIRE: Record<"chat" | "responses" | "messages" | "generate" | "v2", any> = {
  chat: {
    model: "m",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: "Checking.", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: ARGS } }] },
      { role: "tool", tool_call_id: "call_1", content: '{"temp":21}' },
    ],
    // what svc sends a model other than OpenAI's reasoning models (which get max_completion_tokens)
    max_tokens: 50,
    tools: [{ type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: SCHEMA } }],
    tool_choice: "auto",
  },
  responses: {
    model: "m",
    instructions: "Be brief.",
    input: [
      { role: "user", content: "Weather in Paris?" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking.", annotations: [] }] },
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: ARGS },
      { type: "function_call_output", call_id: "call_1", output: '{"temp":21}' },
    ],
    max_output_tokens: 50,
    tools: [{ type: "function", name: "get_weather", description: "Weather of a city", parameters: SCHEMA, strict: false }],
    tool_choice: "auto",
  },
  messages: {
    model: "m",
    max_tokens: 50,
    system: "Be brief.",
    messages: [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: [{ type: "text", text: "Checking." }, { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: '{"temp":21}' }] },
    ],
    tools: [{ name: "get_weather", description: "Weather of a city", input_schema: SCHEMA }],
    tool_choice: { type: "auto" },
  },
  generate: {
    contents: [
      { role: "user", parts: [{ text: "Weather in Paris?" }] },
      { role: "model", parts: [{ text: "Checking." }, { functionCall: { id: "call_1", name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "skip_thought_signature_validator" }] },
      { role: "user", parts: [{ functionResponse: { id: "call_1", name: "get_weather", response: { output: '{"temp":21}' } } }] },
    ],
    systemInstruction: { parts: [{ text: "Be brief." }] },
    generationConfig: { maxOutputTokens: 50 },
    tools: [{ functionDeclarations: [{ name: "get_weather", description: "Weather of a city", parametersJsonSchema: SCHEMA }] }],
    toolConfig: { functionCallingConfig: { mode: "AUTO" } },
  },
  // v2 says "auto" by leaving tool_choice out
  v2: {
    model: "m",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", tool_plan: "Checking.", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: ARGS } }] },
      // a string content is to be "a JSON object string", so a result goes as a text block (docs.cohere.com/reference/chat, ToolMessageV2)
      { role: "tool", tool_call_id: "call_1", content: [{ type: "text", text: '{"temp":21}' }] },
    ],
    max_tokens: 50,
    tools: [{ type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: SCHEMA } }],
  },
};

const { toolChoice: _auto, ...NEUTRAL_NO_CHOICE } = NEUTRAL;
const input = (ep: Endpoint, body: unknown) => ep.neutral!.input(structuredClone(body));

describe("requests", () => {
  test("every style reads the tool conversation into the same neutral request", () => {
    expect(input(openai.chatCompletions, WIRE.chat)).toEqual(NEUTRAL);
    const { max_tokens: limit, ...rest } = WIRE.chat;
    expect(input(openai.chatCompletions, { ...rest, max_completion_tokens: limit })).toEqual(NEUTRAL);
    expect(input(responses, WIRE.responses)).toEqual(NEUTRAL);
    expect(input(anthropic.messages, WIRE.messages)).toEqual(NEUTRAL);
    expect(input(gemini.generateContent, WIRE.generate)).toEqual(NEUTRAL);
    expect(input(chatV2, WIRE.v2)).toEqual(NEUTRAL_NO_CHOICE);
    expect(input(chatV2, { ...WIRE.v2, messages: [...WIRE.v2.messages.slice(0, 3), { role: "tool", tool_call_id: "call_1", content: '{"temp":21}' }] })).toEqual(NEUTRAL_NO_CHOICE);
  });

  test("every fallback target writes it in its own wire format", () => {
    const req = { ...NEUTRAL, model: "m" };
    expect(openaiRequest(req)).toEqual(WIRE.chat);
    // OpenAI's reasoning models refuse the deprecated max_tokens; OpenAI-compatible servers (Ollama,
    // LM Studio) read only max_tokens (docs.ollama.com/api/openai-compatibility)
    for (const model of ["o4-mini", "o3", "gpt-5-mini"]) {
      const { max_tokens: limit, ...rest } = WIRE.chat;
      expect(openaiRequest({ ...req, model })).toEqual({ ...rest, model, max_completion_tokens: limit });
    }
    expect(anthropicRequest(req)).toEqual(WIRE.messages);
    expect(geminiRequest(req)).toEqual(WIRE.generate);
    expect(cohereV2Request(req)).toEqual(WIRE.v2);
  });

  test("the targets' bodies pass their own endpoints' schemas", () => {
    const req = { ...NEUTRAL, model: "m" };
    for (const [ep, body] of [
      [openai.chatCompletions, openaiRequest(req)],
      [anthropic.messages, anthropicRequest(req)],
      [gemini.generateContent, geminiRequest(req)],
      [chatV2, cohereV2Request(req)],
    ] as const)
      expect(`${ep.id}: ${ep.check!.Check(body)}`).toBe(`${ep.id}: true`);
  });

  test("tool_choice: named, required and none, and no parallel calls, in each vocabulary", () => {
    const named = { ...NEUTRAL, model: "m", toolChoice: { name: "get_weather" }, parallelToolCalls: false as const };
    expect(openaiRequest(named)).toMatchObject({ tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false });
    expect(anthropicRequest(named)).toMatchObject({ tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true } });
    // generate-content and v2 cannot promise one call at a time; v2 cannot name a tool
    expect(geminiRequest(named)).toBeUndefined();
    expect(cohereV2Request(named)).toBeUndefined();
    const { parallelToolCalls: _p, ...parallel } = named;
    expect(geminiRequest(parallel)).toMatchObject({ toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } } });
    expect(cohereV2Request(parallel)).toBeUndefined();
    for (const [choice, chat, messages, generate, v2] of [
      ["required", "required", { type: "any" }, "ANY", "REQUIRED"],
      ["none", "none", { type: "none" }, "NONE", "NONE"],
    ] as const) {
      const req = { ...NEUTRAL, model: "m", toolChoice: choice };
      expect(openaiRequest(req)!.tool_choice).toBe(chat);
      expect(anthropicRequest(req)!.tool_choice).toEqual(messages);
      expect(geminiRequest(req)!.toolConfig).toEqual({ functionCallingConfig: { mode: generate } });
      expect(cohereV2Request(req)!.tool_choice).toBe(v2);
    }
    // and read back from each style
    expect(input(anthropic.messages, { ...WIRE.messages, tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true } })).toMatchObject({ toolChoice: { name: "get_weather" }, parallelToolCalls: false });
    expect(input(openai.chatCompletions, { ...WIRE.chat, tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false })).toMatchObject({ toolChoice: { name: "get_weather" }, parallelToolCalls: false });
    expect(input(responses, { ...WIRE.responses, tool_choice: { type: "function", name: "get_weather" } })).toMatchObject({ toolChoice: { name: "get_weather" } });
    expect(input(gemini.generateContent, { ...WIRE.generate, toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } } })).toMatchObject({ toolChoice: { name: "get_weather" } });
    expect(input(gemini.generateContent, { ...WIRE.generate, toolConfig: { functionCallingConfig: { mode: "ANY" } } })).toMatchObject({ toolChoice: "required" });
    expect(input(chatV2, { ...WIRE.v2, tool_choice: "REQUIRED" })).toMatchObject({ toolChoice: "required" });
  });

  test("generate-content: calls without ids get one by position, results without ids answer the earliest open call of their name", () => {
    const body = {
      contents: [
        { role: "user", parts: [{ text: "Weather in Paris and Rome, and the time?" }] },
        {
          role: "model",
          parts: [
            { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "c2ln" },
            { functionCall: { name: "get_weather", args: { city: "Rome" } } },
            { functionCall: { name: "get_time", args: {} } },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "get_time", response: { output: "noon" } } },
            { functionResponse: { name: "get_weather", response: { temp: 21 } } },
            { functionResponse: { name: "get_weather", response: { temp: 25 } } },
          ],
        },
      ],
    };
    const n = input(gemini.generateContent, body)!;
    expect(n.messages[1]).toEqual({
      role: "assistant",
      content: "",
      toolCalls: [
        { id: "call_1_0", name: "get_weather", arguments: ARGS },
        { id: "call_1_1", name: "get_weather", arguments: '{"city":"Rome"}' },
        { id: "call_1_2", name: "get_time", arguments: "{}" },
      ],
    });
    expect(n.messages.slice(2)).toEqual([
      { role: "tool", toolCallId: "call_1_2", content: "noon" },
      { role: "tool", toolCallId: "call_1_0", content: '{"temp":21}' },
      { role: "tool", toolCallId: "call_1_1", content: '{"temp":25}' },
    ]);
    // a result for no open call of that name cannot be paired
    const orphan: any = structuredClone(body);
    orphan.contents[2].parts.push({ functionResponse: { name: "get_weather", response: { temp: 0 } } });
    expect(input(gemini.generateContent, orphan)).toBeUndefined();
    // and the target needs a result's call in the conversation (its name)
    expect(geminiRequest({ model: "m", messages: [{ role: "tool", toolCallId: "nowhere", content: "x" }] })).toBeUndefined();
  });

  test("generate-content's OpenAPI-style schemas become JSON Schema", () => {
    const body = {
      contents: [{ parts: [{ text: "hi" }] }],
      tools: [{ functionDeclarations: [{ name: "f", parameters: { type: "OBJECT", properties: { city: { type: "STRING", nullable: true }, days: { type: "ARRAY", items: { type: "INTEGER" } } }, required: ["city"] } }] }],
    };
    expect(input(gemini.generateContent, body)!.tools).toEqual([
      { name: "f", parameters: { type: "object", properties: { city: { anyOf: [{ type: "string" }, { type: "null" }] }, days: { type: "array", items: { type: "integer" } } }, required: ["city"] } },
    ]);
  });

  test("images: base64 data everywhere, an http(s) URL only to styles that take URLs", () => {
    const png = "iVBORw0KGgo=";
    const chat = (url: string) => ({ model: "m", messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url } }] }] });
    const data = input(openai.chatCompletions, chat(`data:image/png;base64,${png}`))!;
    expect(data.messages[0]).toEqual({ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image", mediaType: "image/png", data: png }] });
    expect(anthropicRequest({ ...data, model: "m" })!.messages[0]!.content).toEqual([{ type: "text", text: "What is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: png } }]);
    expect(geminiRequest({ ...data, model: "m" })!.contents[0]!.parts).toEqual([{ text: "What is this?" }, { inlineData: { mimeType: "image/png", data: png } }]);
    expect(cohereV2Request({ ...data, model: "m" })!.messages[0]).toEqual({ role: "user", content: chat(`data:image/png;base64,${png}`).messages[0]!.content });

    // generate-content takes PNG, JPEG, WEBP, HEIC and HEIF, not GIF (ai.google.dev/gemini-api/docs/vision); the others take GIF
    const gif = input(openai.chatCompletions, chat(`data:image/gif;base64,${png}`))!;
    expect(geminiRequest({ ...gif, model: "m" })).toBeUndefined();
    expect(anthropicRequest({ ...gif, model: "m" })!.messages[0]!.content[1]).toEqual({ type: "image", source: { type: "base64", media_type: "image/gif", data: png } });
    expect(cohereV2Request({ ...gif, model: "m" })).toBeDefined();

    const url = input(openai.chatCompletions, chat("https://example.com/cat.png"))!;
    expect(anthropicRequest({ ...url, model: "m" })!.messages[0]!.content[1]).toEqual({ type: "image", source: { type: "url", url: "https://example.com/cat.png" } });
    expect(geminiRequest({ ...url, model: "m" })).toBeUndefined();

    // read from the other styles
    expect(input(gemini.generateContent, { contents: [{ parts: [{ text: "What is this?" }, { inlineData: { mimeType: "image/png", data: png } }] }] })!.messages).toEqual(data.messages);
    expect(input(anthropic.messages, { model: "m", max_tokens: 5, messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: png } }] }] })!.messages).toEqual(data.messages);
    expect(input(responses, { model: "m", input: [{ role: "user", content: [{ type: "input_text", text: "What is this?" }, { type: "input_image", image_url: `data:image/png;base64,${png}`, detail: "auto" }] }] })!.messages).toEqual(data.messages);
    expect(input(chatV2, chat(`data:image/png;base64,${png}`))!.messages).toEqual(data.messages);
    expect(openaiRequest({ ...data, model: "m" })!.messages[0]).toEqual(chat(`data:image/png;base64,${png}`).messages[0]!);
  });
});

describe("answers", () => {
  const call = { model: "client-model", stream: false, key: null, upstream: { method: "POST", path: "/" }, meta: { sessionId: "s" } } as ProxyCall;
  const TOOL_ANSWER: NeutralAnswer = { text: "", toolCalls: [{ id: "call_9", name: "get_weather", arguments: ARGS }], finish: "tool_calls", usage: { inputTokens: 7, outputTokens: 3 } };
  const STYLES: Array<[string, Endpoint]> = [
    ["chat-completions", openai.chatCompletions],
    ["responses", responses],
    ["messages", anthropic.messages],
    ["generate-content", gemini.generateContent],
    ["cohere v2", chatV2],
  ];

  test("a tool-call answer in each style's words", () => {
    const out = (ep: Endpoint) => ep.neutral!.output(TOOL_ANSWER, call) as any;
    expect(out(openai.chatCompletions).choices[0]).toMatchObject({
      message: { role: "assistant", content: null, tool_calls: [{ id: "call_9", type: "function", function: { name: "get_weather", arguments: ARGS } }] },
      finish_reason: "tool_calls",
    });
    expect(out(responses)).toMatchObject({ status: "completed", output: [{ type: "function_call", call_id: "call_9", name: "get_weather", arguments: ARGS, status: "completed" }] });
    expect(out(anthropic.messages)).toMatchObject({ content: [{ type: "tool_use", id: "call_9", name: "get_weather", input: { city: "Paris" }, caller: { type: "direct" } }], stop_reason: "tool_use" });
    expect(out(gemini.generateContent).candidates[0]).toMatchObject({ content: { role: "model", parts: [{ functionCall: { id: "call_9", name: "get_weather", args: { city: "Paris" } } }] }, finishReason: "STOP" });
    expect(out(chatV2)).toMatchObject({ finish_reason: "TOOL_CALL", message: { role: "assistant", tool_calls: [{ id: "call_9", type: "function", function: { name: "get_weather", arguments: ARGS } }] } });
  });

  test("each style reads back what it wrote: text, tool calls with their ids, finish reason, usage", () => {
    const answers: NeutralAnswer[] = [
      TOOL_ANSWER,
      { ...TOOL_ANSWER, text: "Let me look." },
      ...(["stop", "length", "content_filter"] as const).map((finish) => ({ text: "Paris is sunny.", toolCalls: [], finish, usage: { inputTokens: 4, outputTokens: 5 } })),
    ];
    for (const [name, ep] of STYLES)
      for (const a of answers) {
        // v2 has no word for a filtered answer: it ends in ERROR, which a backup's answer uses for a failed generation
        if (name === "cohere v2" && a.finish === "content_filter") continue;
        expect(`${name}: ${JSON.stringify(ep.neutral!.answer(ep.neutral!.output(a, call)))}`).toBe(`${name}: ${JSON.stringify(a)}`);
      }
    expect(chatV2.neutral!.output({ ...answers[2]!, finish: "content_filter" }, call)).toMatchObject({ finish_reason: "ERROR" });
    // chat (v1) has no tool calls to carry
    for (const a of answers.slice(2)) expect(cohere.chat.neutral!.answer(cohere.chat.neutral!.output(a, call))).toEqual(a);
  });

  test("generate-content answers without call ids get one; a finish reason names why it stopped", () => {
    const a = gemini.generateContent.neutral!.answer({
      candidates: [{ content: { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } } }] }, finishReason: "STOP" }],
      usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 2 },
    });
    expect(a).toEqual({ text: "", toolCalls: [{ id: expect.stringMatching(/^call_[0-9a-f]{24}$/), name: "get_weather", arguments: ARGS }], finish: "tool_calls", usage: { inputTokens: 8, outputTokens: 2 } });
    expect(anthropic.messages.neutral!.answer({ content: [{ type: "text", text: "cut" }], stop_reason: "max_tokens", usage: { input_tokens: 1, output_tokens: 1 } }).finish).toBe("length");
    // a thinking model's thoughts are output tokens, counted apart from the answer's (totalTokenCount is the sum)
    const thought = gemini.generateContent.neutral!.answer({ candidates: [{ content: { role: "model", parts: [{ text: "42" }] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 2, thoughtsTokenCount: 30, totalTokenCount: 40 } });
    expect(thought.usage).toEqual({ inputTokens: 8, outputTokens: 32 });
    expect(chatV2.neutral!.answer({ finish_reason: "TOOL_CALL", message: { tool_plan: "Looking.", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }] } })).toMatchObject({ text: "Looking.", finish: "tool_calls" });
  });

  /**
   * Each provider's full list of finish reasons, as its API reference states it (read in the
   * official SDKs' generated types, which carry the reference text): chat-completions
   * `finish_reason` (openai: stop, length, tool_calls, content_filter, function_call "deprecated"),
   * messages `stop_reason` (@anthropic-ai/sdk StopReason: end_turn, max_tokens, stop_sequence,
   * tool_use, pause_turn, refusal, model_context_window_exceeded), generate-content `finishReason`
   * and `promptFeedback.blockReason` (@google/genai FinishReason, BlockedReason; "returns no
   * candidates at all only if there was something wrong with the prompt (check promptFeedback)",
   * ai.google.dev/api/rest/v1beta/GenerateContentResponse) and Cohere v2 `finish_reason`
   * (cohere-ai ChatFinishReason: COMPLETE, STOP_SEQUENCE, MAX_TOKENS, TOOL_CALL, ERROR "the
   * generation failed due to an internal error", TIMEOUT). A generation that failed, or a word svc
   * does not know, must not reach the client as a plain stop.
   */
  test("finish reasons: each provider's whole list; a failed generation or an unknown word is a proxy_error, never a plain stop", () => {
    const chat = (finish_reason: unknown) => openai.chatCompletions.neutral!.answer({ choices: [{ message: { role: "assistant", content: "x" }, finish_reason }] }).finish;
    const messages = (stop_reason: unknown) => anthropic.messages.neutral!.answer({ content: [{ type: "text", text: "x" }], stop_reason }).finish;
    const generate = (finishReason: unknown, parts: unknown[] = [{ text: "x" }]) => gemini.generateContent.neutral!.answer({ candidates: [{ content: { role: "model", parts }, finishReason }] }).finish;
    const v2 = (finish_reason: unknown) => chatV2.neutral!.answer({ finish_reason, message: { role: "assistant", content: [{ type: "text", text: "x" }] } }).finish;
    const cases: Array<[(r: unknown) => string, Record<string, string>, string[]]> = [
      [chat, { stop: "stop", length: "length", tool_calls: "tool_calls", content_filter: "content_filter" }, ["function_call", "brand_new"]],
      [
        messages,
        { end_turn: "stop", stop_sequence: "stop", max_tokens: "length", model_context_window_exceeded: "length", tool_use: "tool_calls", refusal: "content_filter" },
        ["pause_turn", "brand_new"],
      ],
      [
        generate,
        { STOP: "stop", MAX_TOKENS: "length", CONTINUATION: "length", SAFETY: "content_filter", RECITATION: "content_filter", BLOCKLIST: "content_filter", PROHIBITED_CONTENT: "content_filter", SPII: "content_filter", IMAGE_SAFETY: "content_filter", IMAGE_PROHIBITED_CONTENT: "content_filter", IMAGE_RECITATION: "content_filter" },
        ["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "LANGUAGE", "OTHER", "FINISH_REASON_UNSPECIFIED", "NO_IMAGE", "IMAGE_OTHER", "BRAND_NEW", "constructor"],
      ],
      [v2, { COMPLETE: "stop", STOP_SEQUENCE: "stop", MAX_TOKENS: "length", TOOL_CALL: "tool_calls" }, ["ERROR", "TIMEOUT", "BRAND_NEW"]],
    ];
    for (const [read, known, failed] of cases) {
      for (const [reason, finish] of Object.entries(known)) expect(`${reason}: ${read(reason)}`).toBe(`${reason}: ${finish}`);
      for (const reason of failed) expect(() => read(reason)).toThrow(`finish reason "${reason}"`);
      // none given is a plain stop
      expect(read(undefined)).toBe("stop");
    }
    expect(generate("STOP", [{ functionCall: { name: "f", args: {} } }])).toBe("tool_calls");
    // generate-content: no candidate at all is a blocked prompt
    const blocked = (promptFeedback: unknown) => gemini.generateContent.neutral!.answer({ promptFeedback, usageMetadata: { promptTokenCount: 5 } });
    expect(blocked({ blockReason: "SAFETY" })).toEqual({ text: "", toolCalls: [], finish: "content_filter", usage: { inputTokens: 5, outputTokens: 0 } });
    expect(blocked({ blockReason: "PROHIBITED_CONTENT" }).finish).toBe("content_filter");
    expect(() => blocked({ blockReason: "OTHER" })).toThrow('finish reason "OTHER"');
    expect(() => blocked(undefined)).toThrow("finish reason");
  });

  test("an answer whose arguments are not a JSON object cannot be said as an object: proxy_error, not a guess", () => {
    const bad = { ...TOOL_ANSWER, toolCalls: [{ id: "c", name: "f", arguments: "{not json" }] };
    expect(() => anthropic.messages.neutral!.output(bad, call)).toThrow("not a JSON object");
    expect(() => gemini.generateContent.neutral!.output(bad, call)).toThrow("not a JSON object");
  });
});

describe("stop sequences", () => {
  test("read from each style (chat's single string too) and written in each target's words, within its limit", () => {
    const stop = ["END", "\n\n"];
    const withStop = { ...NEUTRAL, stop };
    expect(input(openai.chatCompletions, { ...WIRE.chat, stop })).toEqual(withStop);
    expect(input(openai.chatCompletions, { ...WIRE.chat, stop: "END" })).toEqual({ ...NEUTRAL, stop: ["END"] });
    expect(input(openai.chatCompletions, { ...WIRE.chat, stop: [] })).toEqual(NEUTRAL);
    expect(input(anthropic.messages, { ...WIRE.messages, stop_sequences: stop })).toEqual(withStop);
    expect(input(gemini.generateContent, { ...WIRE.generate, generationConfig: { ...WIRE.generate.generationConfig, stopSequences: stop } })).toEqual(withStop);
    expect(input(chatV2, { ...WIRE.v2, stop_sequences: stop })).toEqual({ ...input(chatV2, WIRE.v2)!, stop });
    // the Responses API has no stop sequences; Cohere v1 stays text-only
    expect(input(responses, { ...WIRE.responses, stop })).toBeUndefined();
    const req = { ...withStop, model: "m" };
    expect(openaiRequest(req)!.stop).toEqual(stop);
    expect(anthropicRequest(req)!.stop_sequences).toEqual(stop);
    expect(geminiRequest(req)!.generationConfig).toMatchObject({ stopSequences: stop });
    expect(cohereV2Request(req)!.stop_sequences).toEqual(stop);
    expect(openaiRequest({ ...NEUTRAL, model: "m" })).not.toHaveProperty("stop");
    // more than a target takes: that target is skipped, not given a shorter list
    const five = { ...req, stop: ["a", "b", "c", "d", "e"] };
    const six = { ...req, stop: ["a", "b", "c", "d", "e", "f"] };
    expect(openaiRequest(five)).toBeUndefined();
    expect(geminiRequest(five)).toBeDefined();
    expect(cohereV2Request(five)).toBeDefined();
    expect(geminiRequest(six)).toBeUndefined();
    expect(cohereV2Request(six)).toBeUndefined();
    expect(anthropicRequest(six)!.stop_sequences).toEqual(six.stop);
  });
});

describe("sampling ranges", () => {
  /**
   * Each target's documented range: chat-completions temperature "between 0 and 2"; messages
   * temperature "ranges from 0.0 to 1.0"; generate-content temperature up to 2.0; Cohere v2 p
   * "min value of 0.01, max value of 0.99" (its temperature is any non-negative number). A value
   * outside is refused there, so that target is skipped (the fake upstream refuses it too).
   */
  test("a temperature or top_p outside a target's range skips that target", () => {
    const at = (temperature?: number, topP?: number) => ({ ...NEUTRAL, model: "m", ...(temperature !== undefined ? { temperature } : {}), ...(topP !== undefined ? { topP } : {}) });
    const said = (t?: number, p?: number) => [openaiRequest(at(t, p)), anthropicRequest(at(t, p)), geminiRequest(at(t, p)), cohereV2Request(at(t, p))].map((b) => b !== undefined);
    expect(said(0, 0.5)).toEqual([true, true, true, true]);
    expect(said(1, 0.99)).toEqual([true, true, true, true]);
    expect(said(1.5)).toEqual([true, false, true, true]);
    expect(said(2.5)).toEqual([false, false, false, true]);
    // top_p 1 (the chat-completions default) and 0 are outside Cohere's p
    expect(said(undefined, 1)).toEqual([true, true, true, false]);
    expect(said(undefined, 0)).toEqual([true, true, true, false]);
    expect(cohereV2Request(at(0.3, 0.75))).toMatchObject({ temperature: 0.3, p: 0.75 });
  });
});

describe("what does not translate stays undefined", () => {
  const cases: Array<[string, Endpoint, unknown]> = [
    ["chat: logprobs", openai.chatCompletions, { ...WIRE.chat, logprobs: true }],
    ["chat: n > 1", openai.chatCompletions, { ...WIRE.chat, n: 2 }],
    ["chat: response_format", openai.chatCompletions, { ...WIRE.chat, response_format: { type: "json_schema", json_schema: { name: "x", schema: {} } } }],
    ["chat: strict tool", openai.chatCompletions, { ...WIRE.chat, tools: [{ type: "function", function: { name: "get_weather", parameters: SCHEMA, strict: true } }] }],
    ["chat: allowed_tools choice", openai.chatCompletions, { ...WIRE.chat, tool_choice: { type: "allowed_tools", allowed_tools: { mode: "auto", tools: [] } } }],
    ["chat: audio part", openai.chatCompletions, { model: "m", messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }] }],
    ["chat: file part", openai.chatCompletions, { model: "m", messages: [{ role: "user", content: [{ type: "file", file: { file_id: "f" } }] }] }],
    ["chat: image detail high", openai.chatCompletions, { model: "m", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x.test/a.png", detail: "high" } }] }] }],
    ["chat: image type bmp", openai.chatCompletions, { model: "m", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/bmp;base64,AAAA" } }] }] }],
    ["chat: message name", openai.chatCompletions, { model: "m", messages: [{ role: "user", content: "hi", name: "bob" }] }],
    ["chat: system between turns", openai.chatCompletions, { model: "m", messages: [{ role: "user", content: "hi" }, { role: "system", content: "late" }] }],
    ["chat: arguments not JSON", openai.chatCompletions, { ...WIRE.chat, messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{x" } }] }] }],
    ["responses: previous_response_id", responses, { ...WIRE.responses, previous_response_id: "resp_1" }],
    ["responses: reasoning", responses, { ...WIRE.responses, reasoning: { effort: "high" } }],
    ["responses: strict by default", responses, { ...WIRE.responses, tools: [{ type: "function", name: "get_weather", parameters: SCHEMA }] }],
    ["responses: hosted tool", responses, { ...WIRE.responses, tools: [{ type: "web_search" }] }],
    ["responses: json format", responses, { ...WIRE.responses, text: { format: { type: "json_object" } } }],
    ["responses: image by file id", responses, { model: "m", input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1", detail: "auto" }] }] }],
    ["responses: reasoning item", responses, { model: "m", input: [{ type: "reasoning", id: "rs_1", summary: [] }] }],
    ["messages: thinking", anthropic.messages, { ...WIRE.messages, thinking: { type: "enabled", budget_tokens: 1024 } }],
    ["messages: an empty stop sequence", anthropic.messages, { ...WIRE.messages, stop_sequences: [""] }],
    ["chat: a stop that is not text", openai.chatCompletions, { ...WIRE.chat, stop: [1] }],
    ["messages: tool error", anthropic.messages, { ...WIRE.messages, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "boom", is_error: true }] }] }],
    ["messages: document", anthropic.messages, { model: "m", max_tokens: 5, messages: [{ role: "user", content: [{ type: "document", source: { type: "text", media_type: "text/plain", data: "x" } }] }] }],
    ["messages: server tool", anthropic.messages, { ...WIRE.messages, tools: [{ type: "web_search_20250305", name: "web_search" }] }],
    ["messages: a call from code execution", anthropic.messages, { model: "m", max_tokens: 5, messages: [{ role: "assistant", content: [{ type: "tool_use", id: "c", name: "f", input: {}, caller: { type: "code_execution_20250825", tool_id: "srv_1" } }] }] }],
    ["messages: text after a tool call", anthropic.messages, { model: "m", max_tokens: 5, messages: [{ role: "assistant", content: [{ type: "tool_use", id: "c", name: "f", input: {} }, { type: "text", text: "then" }] }] }],
    ["generate: safety settings", gemini.generateContent, { ...WIRE.generate, safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }] }],
    ["generate: response schema", gemini.generateContent, { ...WIRE.generate, generationConfig: { responseMimeType: "application/json" } }],
    ["generate: file data", gemini.generateContent, { contents: [{ parts: [{ fileData: { fileUri: "gs://b/f.png", mimeType: "image/png" } }] }] }],
    ["generate: search tool", gemini.generateContent, { ...WIRE.generate, tools: [{ googleSearch: {} }] }],
    ["generate: a subset of functions", gemini.generateContent, { ...WIRE.generate, toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["a", "b"] } } }],
    ["generate: thought part", gemini.generateContent, { contents: [{ role: "model", parts: [{ text: "hmm", thought: true }] }] }],
    ["v2: documents", chatV2, { ...WIRE.v2, documents: ["doc"] }],
    ["v2: response_format", chatV2, { ...WIRE.v2, response_format: { type: "json_object" } }],
    ["v2: strict tools", chatV2, { ...WIRE.v2, strict_tools: true }],
    ["v2: citations", chatV2, { ...WIRE.v2, messages: [{ role: "assistant", content: "x", citations: [{ start: 0, end: 1 }] }] }],
    ["v1: tools", cohere.chat, { message: "weather?", tools: [{ name: "get_weather", parameter_definitions: { city: { type: "str" } } }] }],
    ["v1: conversation_id", cohere.chat, { message: "hi", conversation_id: "c1" }],
    ["v1: documents", cohere.chat, { message: "hi", documents: [{ text: "x" }] }],
  ];
  test.each(cases)("%s", (_name, ep, body) => {
    expect(input(ep, body)).toBeUndefined();
  });

  test("and each case's request without that one thing does translate; a default asks for nothing", () => {
    expect(input(openai.chatCompletions, WIRE.chat)).toBeDefined();
    expect(input(openai.chatCompletions, { ...WIRE.chat, logprobs: false, frequency_penalty: 0, presence_penalty: 0, n: 1 })).toEqual(NEUTRAL);
    expect(input(openai.chatCompletions, { ...WIRE.chat, presence_penalty: 0.5 })).toBeUndefined();
    expect(input(gemini.generateContent, { ...WIRE.generate, generationConfig: { maxOutputTokens: 50, presencePenalty: 0, responseLogprobs: false } })).toEqual(NEUTRAL);
    expect(input(cohere.chat, { message: "hi", preamble: "Short." })).toEqual({ messages: [{ role: "system", content: "Short." }, { role: "user", content: "hi" }] });
    expect(input(openai.chatCompletions, { model: "m", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x.test/a.png", detail: "auto" } }] }] })).toBeDefined();
    expect(input(gemini.generateContent, { contents: [{ role: "model", parts: [{ text: "hmm", thoughtSignature: "c2ln" }] }] })).toBeDefined();
  });

  test("chat (v1) as GatewayService's request stays text only", () => {
    expect(cohereRequest({ model: "m", messages: [{ role: "user", content: "hi" }] })).toEqual({ model: "m", message: "hi" });
    expect(cohereRequest({ ...NEUTRAL, model: "m" })).toBeUndefined();
  });
});
