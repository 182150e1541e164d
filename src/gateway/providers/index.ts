/**
 * The provider styles, one record. Everything per style derives from it: the proxy routes (and
 * their OpenAPI entries), the providers' configuration section (SVC_PROVIDERS__<NAME>__*), the
 * default model routing, the information document's `endpoints` and GatewayService.complete.
 * A new style is one folder beside these and one entry here.
 */
import type { ProviderDefinition } from "./types";
import { openaiProvider } from "./openai";
import { anthropicProvider } from "./anthropic";
import { geminiProvider } from "./gemini";
import { cohereProvider } from "./cohere";

export const PROVIDERS = {
  openai: openaiProvider,
  anthropic: anthropicProvider,
  gemini: geminiProvider,
  cohere: cohereProvider,
} satisfies Record<string, ProviderDefinition>;

export type ProviderName = keyof typeof PROVIDERS;
export const PROVIDER_NAMES = Object.keys(PROVIDERS) as ProviderName[];

/** Where svc picks the provider and no glob matches (CONTRACT.md: anything else -> openai). */
export const DEFAULT_PROVIDER: ProviderName = "openai";

/** The information document's `endpoints`: every style's requests. */
export const infoEndpoints = (): Record<string, { method: string; path: string }> =>
  Object.assign({}, ...PROVIDER_NAMES.map((n) => PROVIDERS[n].info));
