/** Ops settings: optional upstream probes reported by /ready (see src/ops/probes.ts); /metrics. */
import { Type as T, type Static } from "@sinclair/typebox";
import { Section } from "../core/config";

export const OPS_SECTIONS = {
  metrics: Section({
    /** when set (SVC_METRICS__TOKEN), GET /metrics requires `Authorization: Bearer <token>` */
    token: T.Optional(T.String({ minLength: 16 })),
    /** /metrics serves the text rendered at most this long ago (scrapers share one render); 0 = render at every scrape */
    render_interval_ms: T.Integer({ default: 5_000, minimum: 0 }),
  }),
  readiness: Section({
    /** providers probed in the background (their model list, with the configured key); empty = no probes */
    probe_providers: T.Array(T.String({ minLength: 1 }), { default: [] }),
    /** seconds between two probes of a provider; /ready reports the last result, it never probes itself */
    probe_interval_secs: T.Integer({ default: 30, minimum: 1 }),
    probe_timeout_ms: T.Integer({ default: 5_000, minimum: 1 }),
    /** consecutive failed probes before a provider is reported down (one success brings it back): no flapping on one blip */
    probe_failures_before_down: T.Integer({ default: 3, minimum: 1 }),
    /** true: /ready is 503 while every probed provider is down; false (default): probes are reported, never decide readiness */
    require_upstream: T.Boolean({ default: false }),
  }),
};

export type MetricsConfig = Static<(typeof OPS_SECTIONS)["metrics"]>;
export type ReadinessConfig = Static<(typeof OPS_SECTIONS)["readiness"]>;
