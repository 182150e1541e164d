/**
 * Request and response examples of the proxies' main operations, for the API reference
 * (/openapi.json, /docs). Each request validates against its route's body schema and each answer
 * has the shape the proxy returns (test/openapi-docs.test.ts checks both).
 */
import type { Examples } from "../../core/openapi";

/** How a cached proxy route answers (the same words on every style). */
export const PROXY_CACHE_SENTENCE =
  "Answered from the tenant's cache when an identical or close enough request was answered before (X-Cache-Status: HIT), otherwise forwarded to the provider (MISS) and the answer stored.";

const QUESTION = "How do I reverse a list in Python?";
const ANSWER = "Use `items.reverse()` to reverse in place, or `items[::-1]` for a reversed copy.";

export const CHAT_COMPLETIONS_EXAMPLE: Examples = {
  request: { model: "gpt-4o-mini", messages: [{ role: "system", content: "You are a concise assistant." }, { role: "user", content: QUESTION }], temperature: 0 },
  response: {
    id: "chatcmpl-AX1b2c3d4e5f",
    object: "chat.completion",
    created: 1764230400,
    model: "gpt-4o-mini",
    choices: [{ index: 0, message: { role: "assistant", content: ANSWER, refusal: null }, logprobs: null, finish_reason: "stop" }],
    usage: { prompt_tokens: 24, completion_tokens: 21, total_tokens: 45 },
    svc_metadata: { cache_hit: true, cache_tier: "semantic", similarity: 0.962, context_similarity: null, session_id: "6f1aa66e-93e2-4a4d-ad02-529d66a23c7e" },
  },
};

export const MESSAGES_EXAMPLE: Examples = {
  request: { model: "claude-sonnet-4-5", max_tokens: 256, messages: [{ role: "user", content: QUESTION }] },
  response: {
    id: "msg_01XFDUDYJgAACzvnptvVoYEL",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5",
    content: [{ type: "text", text: ANSWER }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 16, output_tokens: 21 },
  },
};

export const GENERATE_CONTENT_EXAMPLE: Examples = {
  request: { contents: [{ role: "user", parts: [{ text: QUESTION }] }], generationConfig: { temperature: 0 } },
  response: {
    candidates: [{ content: { role: "model", parts: [{ text: ANSWER }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 21, totalTokenCount: 30 },
    modelVersion: "gemini-2.0-flash",
    responseId: "resp-7Zq2a",
    svc: { cache_hit: false, similarity: 0, source: "provider", latency_ms: 412 },
  },
};

export const CHAT_V2_EXAMPLE: Examples = {
  request: { model: "command-r-plus", messages: [{ role: "user", content: QUESTION }] },
  response: {
    id: "c14c80c3-18eb-4519-9460-6c92edd8cfb4",
    finish_reason: "COMPLETE",
    message: { role: "assistant", content: [{ type: "text", text: ANSWER }] },
    usage: { billed_units: { input_tokens: 9, output_tokens: 21 }, tokens: { input_tokens: 72, output_tokens: 21 } },
    svc: { cache_hit: false, similarity: 0, source: "provider", latency_ms: 388 },
  },
};

export const GENERATE_EXAMPLE: Examples = {
  request: { model: "command", prompt: "Write a haiku about caching.", max_tokens: 60 },
  response: {
    id: "a3c6f2d4-3b8e-4f0c-9d51-2e7a4b6c8d10",
    generations: [{ id: "5f1e9c2a-7d3b-4e8f-a6c0-1b2d3e4f5a6b", text: "Answers kept close by,\nthe same question asked again:\nno need to ask twice.", finish_reason: "COMPLETE" }],
    prompt: "Write a haiku about caching.",
    meta: { api_version: { version: "1" }, billed_units: { input_tokens: 5, output_tokens: 17 } },
    svc: { cache_hit: false, similarity: 0, source: "provider", latency_ms: 640 },
  },
};
