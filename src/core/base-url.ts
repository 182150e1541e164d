/**
 * One convention for every upstream base URL (CONTRACT.md): a BASE_URL is the provider's origin
 * (optionally with a path prefix, e.g. a provider proxy's `/openai`), written with or without the
 * API's version segment — `http://host:8000` and `http://host:8000/v1` mean the same. svc strips
 * trailing slashes and one trailing version segment (`/v1`, `/v2`, `/v1beta`, `/v1alpha2`, ...) and
 * then calls the provider's real paths below what remains (`/v1/chat/completions`, `/v2/chat`, ...).
 * vLLM, Ollama, LM Studio and most OpenAI-compatible servers document their URL with `/v1`.
 */
const VERSION_SEGMENT = /\/v\d+(?:(?:alpha|beta)\d*)?$/i;

export function normaliseBaseUrl(url: string): string {
  let u = url.trim().replace(/\/+$/, "");
  // a query or fragment has no place in a base URL; keep it out of the joined paths
  u = u.replace(/[?#].*$/, "").replace(/\/+$/, "");
  return u.replace(VERSION_SEGMENT, "");
}
