/** The gateway's configuration sections; `providers` has one entry per style of the PROVIDERS record. */
import { Type as T, type Static, type TObject } from "@sinclair/typebox";
import { Section } from "../core/config";
import { PROVIDERS, PROVIDER_NAMES, type ProviderName } from "./providers";

const providerSection = (baseUrl: string) =>
  Section({
    base_url: T.String({ default: baseUrl, format: "uri", minLength: 1 }),
    api_key: T.Optional(T.String()),
    timeout_ms: T.Integer({ default: 120_000, minimum: 1 }),
  });

type ProviderSection = ReturnType<typeof providerSection>;

const providerName = T.Union(PROVIDER_NAMES.map((n) => T.Literal(n)));

export const GATEWAY_SECTIONS = {
  providers: Section(Object.fromEntries(PROVIDER_NAMES.map((n) => [n, providerSection(PROVIDERS[n].defaultBaseUrl)])) as Record<ProviderName, ProviderSection>) as TObject<
    Record<ProviderName, ProviderSection>
  >,
  upstream: Section({
    /** bound on concurrent upstream requests across all providers */
    max_in_flight: T.Integer({ default: 1024, minimum: 1 }),
    /** how long a request waits for a free slot when max_in_flight are busy, then 503 service_unavailable (0 = fail at once) */
    queue_timeout_ms: T.Integer({ default: 5_000, minimum: 0 }),
  }),
  models: Section({
    /** model name or glob -> provider (one of the styles) */
    routes: T.Record(T.String(), providerName, { default: {} }),
  }),
};

export type ProvidersConfig = Static<(typeof GATEWAY_SECTIONS)["providers"]>;
export type UpstreamConfig = Static<(typeof GATEWAY_SECTIONS)["upstream"]>;
export type ModelsConfig = Static<(typeof GATEWAY_SECTIONS)["models"]>;

export interface GatewayConfig {
  providers: ProvidersConfig;
  upstream: UpstreamConfig;
  models: ModelsConfig;
}
