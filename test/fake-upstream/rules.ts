/**
 * What the real APIs refuse, so the fake upstream refuses it too: a request svc builds (a fallback's
 * translation above all, which only this fake ever sees in the tests) that the real provider would
 * answer with a 400 fails here the same way. Each rule is one the provider's API reference states;
 * the source is named next to it. Behaviour seen only in error messages, not in a reference, is
 * left out (a wrong rule here would hide the real API instead of standing in for it).
 *
 * `refusal` answers the message of the 400, or undefined when the request passes.
 */

const isObject = (v: unknown): v is Record<string, any> => !!v && typeof v === "object" && !Array.isArray(v);

/** chat-completions (platform.openai.com/docs/api-reference/chat/create, as the openai SDK's types carry it) */
function chat(body: any): string | undefined {
  const reasoning = /^o\d/.test(String(body.model));
  // max_tokens: "deprecated in favor of max_completion_tokens, and is not compatible with o-series models"
  if (reasoning && body.max_tokens !== undefined) return "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
  // stop: "Up to 4 sequences"; "Not supported with latest reasoning models o3 and o4-mini"
  if (Array.isArray(body.stop) && body.stop.length > 4) return "'stop': expected an array of at most 4 items";
  if (body.stop != null && /^o(3|4-mini)/.test(String(body.model))) return "Unsupported parameter: 'stop' is not supported with this model.";
  return undefined;
}

/** messages (docs.anthropic.com/en/api/messages; @anthropic-ai/sdk types) */
function messages(body: any): string | undefined {
  // temperature: "Defaults to 1.0. Ranges from 0.0 to 1.0."
  if (typeof body.temperature === "number" && (body.temperature < 0 || body.temperature > 1)) return "temperature: range: 0..1";
  for (const m of body.messages ?? [])
    for (const b of Array.isArray(m.content) ? m.content : [])
      // Base64ImageSource.media_type: image/jpeg, image/png, image/gif, image/webp
      if (b?.type === "image" && b.source?.type === "base64" && !["image/jpeg", "image/png", "image/gif", "image/webp"].includes(b.source.media_type))
        return `messages: image media_type ${b.source.media_type} is not one of image/jpeg, image/png, image/gif, image/webp`;
  return undefined;
}

/** generateContent v1beta (ai.google.dev/api/generate-content, ai.google.dev/api/caching#Tool; @google/genai types) */
function generate(body: any): string | undefined {
  const g = body.generationConfig ?? {};
  // GenerationConfig.stopSequences: "The set of character sequences (up to 5)"
  if (Array.isArray(g.stopSequences) && g.stopSequences.length > 5) return "generationConfig.stopSequences: at most 5";
  for (const t of body.tools ?? [])
    for (const d of t.functionDeclarations ?? []) {
      // parametersJsonSchema "is mutually exclusive with parameters"; "the schema must describe an object"
      if (d.parameters !== undefined && d.parametersJsonSchema !== undefined) return `functionDeclarations[${d.name}]: parameters and parametersJsonSchema are mutually exclusive`;
      if (d.parametersJsonSchema !== undefined && d.parametersJsonSchema?.type !== "object") return `functionDeclarations[${d.name}].parametersJsonSchema: must describe an object`;
    }
  for (const c of body.contents ?? [])
    for (const p of c.parts ?? []) {
      // image understanding: PNG, JPEG, WEBP, HEIC, HEIF (ai.google.dev/gemini-api/docs/vision)
      const mime = p?.inlineData?.mimeType;
      if (typeof mime === "string" && mime.startsWith("image/") && !["image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"].includes(mime)) return `Unsupported MIME type: ${mime}`;
      // FunctionResponse.response: "The function response in JSON object format"
      if (p?.functionResponse && !isObject(p.functionResponse.response)) return "functionResponse.response: must be an object";
    }
  return undefined;
}

/** Cohere v2 chat (docs.cohere.com/reference/chat; cohere-ai V2ChatRequest and message types) */
function v2(body: any): string | undefined {
  // p: "min value of 0.01, max value of 0.99"
  if (typeof body.p === "number" && (body.p < 0.01 || body.p > 0.99)) return "p: must be between 0.01 and 0.99";
  // stop_sequences: "A list of up to 5 strings"
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 5) return "stop_sequences: at most 5";
  for (const m of body.messages ?? []) {
    if (!["system", "user", "assistant", "tool"].includes(m.role)) return `messages: unknown role ${m.role}`;
    // ToolCallV2Function.arguments is a string
    for (const c of m.tool_calls ?? []) if (typeof c?.function?.arguments !== "string") return "tool_calls[].function.arguments: must be a string";
    // tool content: "formatted as a JSON object string, or a list of tool content blocks" (text or document)
    if (m.role === "tool") {
      const c = m.content;
      const jsonObject = typeof c === "string" && (() => {
        try {
          return isObject(JSON.parse(c));
        } catch {
          return false;
        }
      })();
      if (!jsonObject && !(Array.isArray(c) && c.every((b: any) => (b?.type === "text" && typeof b.text === "string") || b?.type === "document")))
        return "tool message content: a JSON object string or a list of text/document blocks";
    }
  }
  return undefined;
}

export function refusal(kind: string, path: string, body: any): string | undefined {
  if (!isObject(body)) return undefined;
  if (kind === "openai" && path === "/v1/chat/completions") return chat(body);
  if (kind === "anthropic" && path === "/v1/messages") return messages(body);
  if (kind === "gemini" && /:(generateContent|streamGenerateContent)$/.test(path)) return generate(body);
  if (kind === "cohere-v2" && path === "/v2/chat") return v2(body);
  return undefined;
}
