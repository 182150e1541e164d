/**
 * Tool-using requests falling back to another provider, through the official SDKs: the primary
 * (one fake upstream) fails, a deployment of another provider (a second fake) answers. Checked at
 * both ends: what the backup received (the tools, tool_choice, earlier tool calls and results with
 * their ids, in its own wire format) and what the SDK got (the tool call's id, name, arguments and
 * the finish reason in the client's words), JSON and streamed; a second turn carries the tool
 * result back with the id the client was given. The fakes answer a tool call when tools are given
 * and the last user text mentions the weather.
 *
 *   chat-completions -> messages        Responses -> generate-content     messages -> chat-completions
 *   generate-content -> Cohere v2       Cohere v2 -> messages             chat (v1) with tools: skipped
 */
import { describe, test, expect, beforeAll, afterAll, beforeEach } from "bun:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { FunctionCallingConfigMode, GoogleGenAI, Type } from "@google/genai";
import { CohereClient, CohereClientV2 } from "cohere-ai";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { KEYS } from "./setup";

const SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const DESCRIPTION = "Current weather of a city";
const ARGS = '{"city":"Paris"}';

let primary: FakeUpstream;
let backup: FakeUpstream;
let gw: TestGateway;
let token: string;
let oa: OpenAI;
let tenants = 0;

beforeAll(async () => {
  primary = await startFakeUpstream();
  backup = await startFakeUpstream();
  const at = { base_url: backup.url, api_key: "backup-key" };
  gw = await startGateway({
    providers: Object.fromEntries(Object.entries(KEYS).map(([p, k]) => [p, { base_url: primary.url, api_key: k }])),
    models: {
      fallbacks: {
        "gpt-4o": [{ provider: "anthropic", model: "claude-3-5-haiku-latest", ...at }],
        "gpt-4.1": [{ provider: "gemini", model: "gemini-2.5-flash", ...at }],
        // a reasoning model: it refuses the deprecated max_tokens (the fake upstream too)
        "claude-3-5-haiku-latest": [{ provider: "openai", model: "o4-mini", ...at }],
        "gemini-2.0-flash": [{ provider: "cohere", model: "command-a", ...at }],
        "command-r*": [{ provider: "anthropic", model: "claude-3-5-haiku-latest", ...at }],
      },
    },
  });
});
afterAll(async () => {
  await gw.stop();
  await primary.stop();
  await backup.stop();
});
// each test its own tenant, so no test meets another's cache entries
beforeEach(async () => {
  primary.reset();
  backup.reset();
  token = await gw.token(`tenant-${++tenants}`);
  oa = new OpenAI({ apiKey: token, baseURL: gw.url + "/v1", maxRetries: 0 });
});

/** the primary refuses the next request (its retries are off in tests) */
const primaryDown = () => primary.failNext({ kind: "status", status: 503 });
const lastBackup = () => backup.requests.at(-1)!;

describe("chat-completions falls back to the messages style", () => {
  const tools = [{ type: "function" as const, function: { name: "get_weather", description: DESCRIPTION, parameters: SCHEMA } }];
  const ask = { role: "user" as const, content: "What is the weather in Paris?" };

  test("JSON: the tool call comes back as tool_calls with the provider's id; a repeat is a cache hit", async () => {
    primaryDown();
    const r = await oa.chat.completions.create({ model: "gpt-4o", messages: [ask], tools, tool_choice: "required", max_tokens: 50 });
    expect(lastBackup().path).toBe("/v1/messages");
    expect(lastBackup().body).toEqual({
      model: "claude-3-5-haiku-latest",
      max_tokens: 50,
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [{ name: "get_weather", description: DESCRIPTION, input_schema: SCHEMA }],
      tool_choice: { type: "any" },
    });
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    expect(r.choices[0]!.message.content).toBeNull();
    expect(r.choices[0]!.message.tool_calls).toEqual([{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: ARGS } }]);
    expect(r.model).toBe("gpt-4o");

    // cached under the client's request like the primary's answer would be
    const again = await oa.chat.completions.create({ model: "gpt-4o", messages: [ask], tools, tool_choice: "required", max_tokens: 50 }).withResponse();
    expect(again.response.headers.get("x-cache-status")).toBe("HIT");
    expect(again.data.choices[0]!.message.tool_calls).toEqual(r.choices[0]!.message.tool_calls);
    expect(backup.requests).toHaveLength(1);
  });

  test("stop sequences (a list or one string) travel as the backup's stop_sequences", async () => {
    primaryDown();
    const r = await oa.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "Count to three." }], stop: ["END", "4"], max_tokens: 20 });
    expect(lastBackup().path).toBe("/v1/messages");
    expect(lastBackup().body).toMatchObject({ stop_sequences: ["END", "4"], max_tokens: 20 });
    expect(r.choices[0]!.finish_reason).toBe("stop");
    primaryDown();
    const one = await oa.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "Count to two." }], stop: "END" });
    expect(one.choices[0]!.message.content).toBeString();
    expect(lastBackup().body.stop_sequences).toEqual(["END"]);
  });

  test("stream: delta.tool_calls and finish_reason tool_calls, from a non-streamed answer", async () => {
    primaryDown();
    const final = await oa.chat.completions.stream({ model: "gpt-4o", messages: [{ role: "user", content: "Stream the weather in Paris." }], tools, stream: true }).finalChatCompletion();
    expect(lastBackup().body.stream).toBeUndefined();
    expect(lastBackup().body.tools).toEqual([{ name: "get_weather", description: DESCRIPTION, input_schema: SCHEMA }]);
    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    expect(final.choices[0]!.message.tool_calls).toEqual([{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: ARGS } }]);
  });

  test("two turns: the tool result goes back with the id the client was given, to whichever deployment answers", async () => {
    primaryDown();
    const first = await oa.chat.completions.create({ model: "gpt-4o", messages: [ask], tools });
    const message = first.choices[0]!.message;
    const id = message.tool_calls![0]!.id;
    const turn2 = [ask, message, { role: "tool" as const, tool_call_id: id, content: '{"temp":21}' }];

    primaryDown();
    const second = await oa.chat.completions.create({ model: "gpt-4o", messages: turn2, tools });
    expect(lastBackup().body.messages).toEqual([
      { role: "user", content: "What is the weather in Paris?" },
      { role: "assistant", content: [{ type: "tool_use", id, name: "get_weather", input: { city: "Paris" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: '{"temp":21}' }] },
    ]);
    expect(second.choices[0]!).toMatchObject({ finish_reason: "stop", message: { content: "answer #2: " } });

    // the primary, healthy again, gets the same turn as the client sent it
    await oa.chat.completions.create({ model: "gpt-4o", messages: turn2, tools });
    expect(primary.requests.at(-1)!.body.messages[2]).toEqual({ role: "tool", tool_call_id: id, content: '{"temp":21}' });
    expect(primary.requests.at(-1)!.body.messages[1].tool_calls[0].id).toBe(id);
  });

  test("a temperature the messages API refuses (over 1: it ranges 0..1) skips the deployment rather than meeting its 400", async () => {
    primaryDown();
    const e: any = await oa.chat.completions.create({ model: "gpt-4o", messages: [ask], tools, temperature: 1.5 }).catch((x) => x);
    expect(e.status).toBe(502);
    expect(backup.requests).toHaveLength(0);
    primaryDown();
    await oa.chat.completions.create({ model: "gpt-4o", messages: [ask], tools, temperature: 1 });
    expect(lastBackup().body.temperature).toBe(1);
  });

  test("something the messages style cannot say (logprobs) skips the deployment; a 400 never falls back", async () => {
    primaryDown();
    const e: any = await oa.chat.completions.create({ model: "gpt-4o", messages: [ask], tools, logprobs: true }).catch((x) => x);
    expect(e.status).toBe(502);
    primary.failNext({ kind: "status", status: 400 });
    const bad: any = await oa.chat.completions.create({ model: "gpt-4o", messages: [ask], tools }).catch((x) => x);
    expect(bad.status).toBe(400);
    expect(backup.requests).toHaveLength(0);
  });

  test("a tool-call stream cut after its first byte is neither retried nor fallen back from", async () => {
    primary.failNext({ kind: "cut" });
    const r = await gw.api("/v1/chat/completions", { method: "POST", token, json: { model: "gpt-4o", messages: [{ role: "user", content: "Cut the weather stream." }], tools, stream: true } });
    expect(r.status).toBe(200);
    await r.text().catch(() => "");
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(0);
  });
});

describe("Responses falls back to the generate-content style", () => {
  const tools = [{ type: "function" as const, name: "get_weather", description: DESCRIPTION, parameters: SCHEMA, strict: false }];

  test.each([false, true])("stream: %p — a function_call item with a generated call_id; the second turn pairs the output with it", async (stream) => {
    primaryDown();
    const req = { model: "gpt-4.1", input: "What is the weather in Paris?", tools, tool_choice: { type: "function" as const, name: "get_weather" } };
    // the stream's events as the SDK parsed them: response.function_call_arguments.done names the function
    // (ResponseFunctionCallArgumentsDoneEvent: arguments, item_id, name, output_index, sequence_number)
    const events: any[] = [];
    const out = stream
      ? await (async () => {
          const s = oa.responses.stream(req);
          for await (const ev of s) events.push(ev);
          return s.finalResponse();
        })()
      : await oa.responses.create(req);
    if (stream)
      expect(events.filter((e) => e.type.startsWith("response.function_call_arguments") || e.type.startsWith("response.output_item"))).toMatchObject([
        { type: "response.output_item.added", output_index: 0, item: { type: "function_call", name: "get_weather", arguments: "", status: "in_progress" } },
        { type: "response.function_call_arguments.delta", output_index: 0, delta: ARGS },
        { type: "response.function_call_arguments.done", output_index: 0, name: "get_weather", arguments: ARGS },
        { type: "response.output_item.done", output_index: 0, item: { type: "function_call", name: "get_weather", arguments: ARGS, status: "completed" } },
      ]);
    expect(lastBackup().path).toBe("/v1beta/models/gemini-2.5-flash:generateContent");
    expect(lastBackup().body).toEqual({
      contents: [{ role: "user", parts: [{ text: "What is the weather in Paris?" }] }],
      tools: [{ functionDeclarations: [{ name: "get_weather", description: DESCRIPTION, parametersJsonSchema: SCHEMA }] }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } },
    });
    expect(out.status).toBe("completed");
    const call = out.output.find((i) => i.type === "function_call");
    if (call?.type !== "function_call") throw new Error("no function_call item");
    expect(call.call_id).toMatch(/^call_[0-9a-f]{24}$/);
    expect([call.name, call.arguments, call.status]).toEqual(["get_weather", ARGS, "completed"]);
    // a thinking model's thoughts are output tokens (usageMetadata counts them apart: 8 answer + 12 thought tokens at the fake)
    expect(out.usage).toMatchObject({ input_tokens: 8, output_tokens: 20 });

    primaryDown();
    const second = await oa.responses.create({ model: "gpt-4.1", input: ["What is the weather in Paris?", call, { type: "function_call_output" as const, call_id: call.call_id, output: "21 C" }].map((i) => (typeof i === "string" ? { role: "user" as const, content: i } : i)), tools });
    expect(lastBackup().body.contents).toEqual([
      { role: "user", parts: [{ text: "What is the weather in Paris?" }] },
      { role: "model", parts: [{ functionCall: { id: call.call_id, name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "skip_thought_signature_validator" }] },
      { role: "user", parts: [{ functionResponse: { id: call.call_id, name: "get_weather", response: { output: "21 C" } } }] },
    ]);
    expect(second.output_text).toBe("answer #2: ");
  });

  test("a backup's failed generation (Gemini MALFORMED_FUNCTION_CALL: no content) is a 502 naming it, never an empty answer, and is not cached", async () => {
    const req = { model: "gpt-4.1", input: "What is the weather in Paris?", tools };
    primaryDown();
    backup.failNext({ kind: "finish", reason: "MALFORMED_FUNCTION_CALL" });
    const e: any = await oa.responses.create(req).catch((x) => x);
    expect(e.status).toBe(502);
    expect(e.message).toContain("MALFORMED_FUNCTION_CALL");
    // the next attempt is answered, not served an empty answer from the cache
    primaryDown();
    const out = await oa.responses.create(req);
    expect(out.output.find((i) => i.type === "function_call")).toMatchObject({ name: "get_weather", arguments: ARGS });
    expect(backup.requests).toHaveLength(2);
  });

  test("a strict function (the Responses API's default) skips the deployment", async () => {
    primaryDown();
    const e: any = await oa.responses.create({ model: "gpt-4.1", input: "What is the weather in Paris?", tools: [{ ...tools[0]!, strict: true }] }).catch((x) => x);
    expect(e.status).toBe(502);
    expect(backup.requests).toHaveLength(0);
  });
});

describe("messages falls back to chat-completions", () => {
  let claude: Anthropic;
  beforeEach(() => {
    claude = new Anthropic({ apiKey: token, baseURL: gw.url, maxRetries: 0 });
  });
  const tools = [{ name: "get_weather", description: DESCRIPTION, input_schema: SCHEMA as Anthropic.Tool.InputSchema }];

  test.each([false, true])("stream: %p — a tool_use block with the provider's id, stop_reason tool_use; the result goes back with it", async (stream) => {
    primaryDown();
    const req = { model: "claude-3-5-haiku-latest", max_tokens: 64, system: "Be brief.", messages: [{ role: "user" as const, content: "What is the weather in Paris?" }], tools, tool_choice: { type: "tool" as const, name: "get_weather", disable_parallel_tool_use: true } };
    const msg = stream ? await claude.messages.stream(req).finalMessage() : await claude.messages.create(req);
    expect(lastBackup().path).toBe("/v1/chat/completions");
    expect(lastBackup().headers.authorization).toBe("Bearer backup-key");
    expect(lastBackup().body).toEqual({
      model: "o4-mini",
      max_completion_tokens: 64,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "What is the weather in Paris?" },
      ],
      tools: [{ type: "function", function: { name: "get_weather", description: DESCRIPTION, parameters: SCHEMA } }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
    });
    expect(msg.stop_reason).toBe("tool_use");
    expect(msg.content).toHaveLength(1);
    expect(msg.content[0]).toMatchObject({ type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" }, caller: { type: "direct" } });

    primaryDown();
    const turn2: Anthropic.MessageParam[] = [...req.messages, { role: "assistant", content: msg.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "21 C" }] }];
    const second = await claude.messages.create({ ...req, messages: turn2, tool_choice: { type: "auto" } });
    expect(lastBackup().body.messages.slice(2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: ARGS } }] },
      { role: "tool", tool_call_id: "call_1", content: "21 C" },
    ]);
    expect(second.content as unknown[]).toEqual([{ type: "text", text: "answer #2: " }]);
    expect(second.stop_reason).toBe("end_turn");
  });
});

describe("generate-content falls back to Cohere v2", () => {
  let ai: GoogleGenAI;
  beforeEach(() => {
    ai = new GoogleGenAI({ apiKey: token, apiVersion: "v1beta", httpOptions: { baseUrl: gw.url } });
  });
  const config = {
    tools: [{ functionDeclarations: [{ name: "get_weather", description: DESCRIPTION, parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ["city"] } }] }],
    toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY } },
  };

  test.each([false, true])("stream: %p — a functionCall part with the provider's id; the functionResponse pairs with it", async (stream) => {
    primaryDown();
    const req = { model: "gemini-2.0-flash", contents: "What is the weather in Paris?", config };
    let calls: any[] = [];
    let finish: unknown;
    let content: any;
    if (stream)
      for await (const chunk of await ai.models.generateContentStream(req)) {
        calls.push(...(chunk.functionCalls ?? []));
        finish = chunk.candidates?.[0]?.finishReason ?? finish;
        content ??= chunk.candidates?.[0]?.content;
      }
    else {
      const r = await ai.models.generateContent(req);
      calls = r.functionCalls ?? [];
      finish = r.candidates?.[0]?.finishReason;
      content = r.candidates?.[0]?.content;
    }
    expect(lastBackup().path).toBe("/v2/chat");
    expect(lastBackup().body).toEqual({
      model: "command-a",
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [{ type: "function", function: { name: "get_weather", description: DESCRIPTION, parameters: SCHEMA } }],
      tool_choice: "REQUIRED",
    });
    expect(calls).toEqual([{ id: "call_1", name: "get_weather", args: { city: "Paris" } }]);
    expect(finish).toBe("STOP");

    primaryDown();
    const model = { role: "model", parts: [{ text: "I will look up the weather." }, { functionCall: calls[0] }] };
    if (!stream) expect(content).toEqual(model);
    const second = await ai.models.generateContent({
      model: "gemini-2.0-flash",
      contents: [{ role: "user", parts: [{ text: "What is the weather in Paris?" }] }, model, { role: "user", parts: [{ functionResponse: { id: "call_1", name: "get_weather", response: { output: "21 C" } } }] }],
      config: { tools: config.tools },
    });
    expect(lastBackup().body.messages.slice(1)).toEqual([
      { role: "assistant", tool_plan: "I will look up the weather.", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: ARGS } }] },
      // a plain text result: v2 takes a string only as "a JSON object string" (the fake refuses another), so it goes as a text block
      { role: "tool", tool_call_id: "call_1", content: [{ type: "text", text: "21 C" }] },
    ]);
    expect(second.text).toBe("answer #2: ");
  });

  test("a topP Cohere's p cannot take (its range is 0.01..0.99) skips the deployment rather than meeting its 400", async () => {
    primaryDown();
    const e: any = await ai.models.generateContent({ model: "gemini-2.0-flash", contents: "What is the weather in Paris?", config: { ...config, topP: 1 } }).catch((x) => x);
    expect(e.status).toBe(502);
    expect(backup.requests).toHaveLength(0);
    primaryDown();
    await ai.models.generateContent({ model: "gemini-2.0-flash", contents: "What is the weather in Paris?", config: { ...config, topP: 0.9 } });
    expect(lastBackup().body.p).toBe(0.9);
  });
});

test("an image as base64 data goes across; one by URL or a GIF cannot go to generate-content, so that deployment is skipped", async () => {
  const png = "iVBORw0KGgo=";
  primaryDown();
  await oa.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: [{ type: "text", text: "What is in this picture?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } }] }] });
  expect(lastBackup().body.messages).toEqual([{ role: "user", content: [{ type: "text", text: "What is in this picture?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: png } }] }]);
  primaryDown();
  const e: any = await oa.responses.create({ model: "gpt-4.1", input: [{ role: "user", content: [{ type: "input_text", text: "And in this one?" }, { type: "input_image", image_url: "https://example.com/cat.png", detail: "auto" }] }] }).catch((x) => x);
  expect(e.status).toBe(502);
  expect(backup.requests).toHaveLength(1);
  // the generate-content API takes no GIF (the fake refuses it as the API does)
  primaryDown();
  const gif: any = await oa.chat.completions.create({ model: "gpt-4.1", messages: [{ role: "user", content: [{ type: "text", text: "And this animation?" }, { type: "image_url", image_url: { url: `data:image/gif;base64,${png}` } }] }] }).catch((x) => x);
  expect(gif.status).toBe(502);
  expect(backup.requests).toHaveLength(1);
});

describe("Cohere v2 falls back to the messages style; v1 with tools does not", () => {
  const tools = [{ type: "function" as const, function: { name: "get_weather", description: DESCRIPTION, parameters: SCHEMA } }];

  test.each([false, true])("stream: %p — toolCalls with the provider's id, finish reason TOOL_CALL", async (stream) => {
    const co = new CohereClientV2({ token, baseUrl: gw.url, maxRetries: 0 } as any);
    primaryDown();
    const req = { model: "command-r-plus", messages: [{ role: "user" as const, content: "What is the weather in Paris?" }], tools, toolChoice: "REQUIRED" as const };
    let calls: any[] = [];
    let finish: unknown;
    if (stream) {
      for await (const ev of await co.chatStream(req)) {
        if (ev.type === "tool-call-start") calls.push({ ...ev.delta!.message!.toolCalls!, function: { ...ev.delta!.message!.toolCalls!.function } });
        if (ev.type === "tool-call-delta") calls.at(-1)!.function.arguments += ev.delta?.message?.toolCalls?.function?.arguments ?? "";
        if (ev.type === "message-end") finish = ev.delta?.finishReason;
      }
    } else {
      const r = await co.chat(req);
      calls = r.message.toolCalls ?? [];
      finish = r.finishReason;
    }
    expect(lastBackup().path).toBe("/v1/messages");
    expect(lastBackup().body).toEqual({
      model: "claude-3-5-haiku-latest",
      max_tokens: 4096,
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [{ name: "get_weather", description: DESCRIPTION, input_schema: SCHEMA }],
      tool_choice: { type: "any" },
    });
    expect(calls).toEqual([{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: ARGS } }]);
    expect(finish).toBe("TOOL_CALL");
  });

  test("chat (v1) with tools is not translated: the deployment is skipped", async () => {
    const co = new CohereClient({ token, baseUrl: gw.url, maxRetries: 0 } as any);
    primaryDown();
    const e: any = await co.chat({ model: "command-r-plus", message: "What is the weather in Paris?", tools: [{ name: "get_weather", description: DESCRIPTION, parameterDefinitions: { city: { type: "str", required: true } } }] }).catch((x) => x);
    expect(e.statusCode).toBe(502);
    expect(backup.requests).toHaveLength(0);
  });
});
