/** The gateway's configuration sections; `providers` has one entry per style of the PROVIDERS record. */
import { Type as T, type Static, type TObject } from "@sinclair/typebox";
import { Section } from "../core/config";
import { PROVIDERS, PROVIDER_NAMES, type ProviderName } from "./providers";

const providerSection = (baseUrl: string) =>
  Section({
    /** the provider's origin, with or without the version segment (`http://host:8000` = `http://host:8000/v1`) */
    base_url: T.String({ default: baseUrl, format: "uri", minLength: 1 }),
    /** key svc sends upstream (callers never see it) */
    api_key: T.Optional(T.String()),
    /** upstream timeout: to the response headers (then 504 timeout_error), and the default of stream_idle_ms */
    timeout_ms: T.Integer({ default: 120_000, minimum: 1 }),
    /**
     * longest wait for the next complete event of a stream (default: timeout_ms); bytes that complete
     * no event (a partial event, an SSE comment, whitespace) are not progress, so a provider dripping
     * bytes cannot hold a stream open; then the stream ends with the style's error event (timeout_error)
     */
    stream_idle_ms: T.Optional(T.Integer({ minimum: 1 })),
    /**
     * longest a stream may last in all (0 = no bound); default 1 h, the time the messages SDK itself
     * allows a 128k-token answer; then the stream ends with the style's error event (timeout_error)
     */
    stream_max_ms: T.Optional(T.Integer({ minimum: 0 })),
    /** retries of one request on 429, 5xx and connection failures before a fallback deployment is tried (never once a stream has started) */
    max_retries: T.Integer({ default: 2, minimum: 0, maximum: 10 }),
    /** first retry delay; doubles per retry, with jitter (a Retry-After header wins) */
    retry_backoff_ms: T.Integer({ default: 250, minimum: 0 }),
    /** longest wait before a retry; a Retry-After beyond it is not waited for (the next deployment is tried, or the answer returned) */
    retry_max_wait_ms: T.Integer({ default: 10_000, minimum: 0 }),
  });

type ProviderSection = ReturnType<typeof providerSection>;

const providerName = T.Union(PROVIDER_NAMES.map((n) => T.Literal(n)));

/** One fallback deployment: unset fields are the provider's own settings and the requested model. */
const Deployment = T.Object(
  {
    /** label in usage records, metrics and logs (default: provider/model, plus @host when base_url is set) */
    name: T.Optional(T.String({ minLength: 1, maxLength: 64 })),
    provider: providerName,
    model: T.Optional(T.String({ minLength: 1 })),
    base_url: T.Optional(T.String({ format: "uri" })),
    api_key: T.Optional(T.String()),
    timeout_ms: T.Optional(T.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);
export type DeploymentConfig = Static<typeof Deployment>;

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
    /**
     * model name or glob -> ordered fallback deployments, tried when the primary (and its retries)
     * fail with 429, 5xx, a connection failure or a timeout: another base URL/key of the same
     * provider, or another provider and model
     */
    fallbacks: T.Record(T.String(), T.Array(Deployment, { minItems: 1 }), { default: {} }),
  }),
  usage: Section({
    /** label the token and cost counters of /metrics with the tenant too (off: tenants can be many) */
    metrics_tenant_label: T.Boolean({ default: false }),
    /** distinct values of the model (and tenant) labels kept; later ones are counted as "other" */
    metrics_max_label_values: T.Integer({ default: 100, minimum: 1, maximum: 10_000 }),
  }),
  prices: Section({
    /** model-name prefix -> USD per 1M tokens {input, output}; overrides and extends the built-in table (src/gateway/prices.ts) */
    overrides: T.Record(T.String(), T.Object({ input: T.Number({ minimum: 0 }), output: T.Number({ minimum: 0 }) }), { default: {} }),
  }),
};

export type ProvidersConfig = Static<(typeof GATEWAY_SECTIONS)["providers"]>;
export type UpstreamConfig = Static<(typeof GATEWAY_SECTIONS)["upstream"]>;
export type ModelsConfig = Static<(typeof GATEWAY_SECTIONS)["models"]>;
export type PricesConfig = Static<(typeof GATEWAY_SECTIONS)["prices"]>;
export type UsageConfig = Static<(typeof GATEWAY_SECTIONS)["usage"]>;

export interface GatewayConfig {
  providers: ProvidersConfig;
  upstream: UpstreamConfig;
  models: ModelsConfig;
  prices: PricesConfig;
  usage: UsageConfig;
}
