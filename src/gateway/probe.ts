/**
 * One readiness probe of a provider: its model list (ProviderDefinition.probe) at its effective
 * base URL with the configured key, within a timeout. Answers whether the provider is reachable
 * and accepts the key — never throws. Probes bypass the upstream semaphore and are not proxied
 * requests (no usage record, no cache).
 */
import { PROVIDERS, type ProviderName } from "./providers";
import type { ProvidersConfig } from "./config";
import { normaliseBaseUrl } from "../core/base-url";
import { credentialSafeFetch } from "../core/outbound";

export interface ProbeResult {
  /** up: 2xx; down: unreachable, timeout, 5xx or 429; error: a 4xx (usually the key) */
  status: "up" | "down" | "error";
  httpStatus?: number;
  latencyMs: number;
  error?: string;
}

export async function probeProvider(providers: ProvidersConfig, provider: ProviderName, timeoutMs: number): Promise<ProbeResult> {
  const def = PROVIDERS[provider];
  const settings = providers[provider];
  const headers: Record<string, string> = { accept: "application/json", ...(def.probe.headers ?? {}) };
  if (settings.api_key) Object.assign(headers, def.wire.authHeaders(settings.api_key));
  const started = performance.now();
  const ms = () => Math.round((performance.now() - started) * 10) / 10;
  try {
    const r = await credentialSafeFetch(normaliseBaseUrl(settings.base_url) + def.probe.path, { headers, signal: AbortSignal.timeout(timeoutMs) });
    await r.arrayBuffer().catch(() => undefined);
    if (r.ok) return { status: "up", httpStatus: r.status, latencyMs: ms() };
    if (r.status >= 500 || r.status === 429) return { status: "down", httpStatus: r.status, latencyMs: ms(), error: `answered ${r.status}` };
    return { status: "error", httpStatus: r.status, latencyMs: ms(), error: `answered ${r.status} (check SVC_PROVIDERS__${provider.toUpperCase()}__API_KEY)` };
  } catch (e) {
    const timedOut = (e as Error)?.name === "TimeoutError";
    const code = (e as { code?: string })?.code;
    return { status: "down", latencyMs: ms(), error: timedOut ? `no answer within ${timeoutMs} ms` : `unreachable${code ? ` (${code})` : ""}` };
  }
}
